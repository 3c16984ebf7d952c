"""The console's words without a browser (the browser tests check the same pages at 1280 px): lists
titled by what they list, filters each named once, a run's output in words, a person's sessions by
user_id, counts with their noun in the right number."""

from __future__ import annotations

import json
import re

import pytest

from memoryhub.admin.base import counted
from memoryhub.models import Session
from scheduling.admin import OUTPUT_WORDS_CHARS, output_words
from scheduling.models import Run, Schedule
from tests.base import make_client, make_key, post_events

pytestmark = pytest.mark.django_db


def test_counted_says_one_and_many() -> None:
    assert counted(1, "schedule") == "1 schedule" and counted(2, "schedule") == "2 schedules"
    assert (
        counted(0, "message") == "0 messages" and counted(3, "memory", "memories") == "3 memories"
    )


def test_a_runs_output_reads_as_words() -> None:
    output = json.dumps({"digest": "the ferry", "items": [1, 2]}, sort_keys=True)
    assert output_words(output, output[:20]) == "digest: the ferry; items: [1, 2]"
    assert output_words(json.dumps([{"a": 1}]), "") == "1 item"
    assert output_words("plain text", "plain") == "plain"  # not JSON: the summary as written
    long = output_words(json.dumps({"text": "word " * 100}), "")
    assert len(long) <= OUTPUT_WORDS_CHARS + 1 and long.endswith("…")


def test_lists_are_titled_by_what_they_list_and_name_each_filter_once(admin_client, cast) -> None:
    schedule = Schedule.objects.create(
        tenant=cast.alice_tenant,
        name="digest",
        action="summarise",
        cadence_type="cron",
        cadence_value="0 9 * * *",
        timezone="UTC",
    )
    Run.objects.create(
        tenant=cast.alice_tenant, schedule=schedule, status="failed", output_summary="x"
    )
    page = admin_client.get("/admin/scheduling/run/").content.decode()
    assert "<h1>Runs</h1>" in page and "Select run to" not in page
    titles = re.findall(r"<summary>\s*(.*?)\s*</summary>", page, re.S)
    assert len(titles) >= 4 and len(set(titles)) == len(titles), titles
    page = admin_client.get("/admin/memoryhub/enduser/").content.decode()
    assert "<h1>People (end users)</h1>" in page and "Select end user" not in page


def test_the_end_users_page_lists_a_persons_sessions_by_user_id(admin_client, cast) -> None:
    client = make_client(make_key(cast.alice_tenant))
    for session, user in (("sam-chat", "sam"), ("about-sam", "dana")):  # dana's id says "sam"
        assert post_events(client, session, {"role": "user", "content": "hello"}).status_code == 201
        Session.objects.filter(external_id=session).update(user_id=user)
    users = admin_client.get("/admin/memoryhub/enduser/").content.decode()
    link = next(
        href.replace("&amp;", "&")
        for href in re.findall(r'href="([^"]*session/\?[^"]*)"', users)
        if "user_id=sam" in href
    )
    sessions = admin_client.get(link).content.decode()
    assert "sam-chat" in sessions and "about-sam" not in sessions
