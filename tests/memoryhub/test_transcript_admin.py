"""The session admin's transcript page, the readable task queue and the session forget page."""

from __future__ import annotations

import pytest
from django.utils import timezone
from django_q.models import Failure

from memoryhub.admin import queue, transcript
from memoryhub.models import RollingSummary, Session
from tests.base import Cast, add_memories, post_events


@pytest.fixture
def chat(cast: Cast) -> Session:
    post_events(
        cast.alice,
        "chat",
        {
            "role": "user",
            "content": "Caroline: I went to a support group.",
            "metadata": {"speaker": "Caroline"},
        },
        {"role": "assistant", "content": "How was it?"},
        {"role": "assistant", "content": "", "tool_name": "lookup", "tool_args": {"q": "groups"}},
        {
            "role": "tool",
            "content": "3 groups nearby",
            "tool_name": "lookup",
            "tool_result": {"n": 3},
        },
    )
    session = Session.objects.get(external_id="chat")
    Session.objects.filter(pk=session.pk).update(agent="helper-bot", user_id="caroline")
    session.refresh_from_db()
    RollingSummary.objects.create(
        session=session,
        tenant=cast.alice_tenant,
        text="Caroline talked about groups.",
        upper_sequence=2,
    )
    return session


def test_transcript_reads_as_a_conversation_with_tree_scratchpad_and_summary(
    staff_client, cast, chat
) -> None:
    made = add_memories(cast.alice_tenant, "chat", user_id="caroline")
    response = staff_client.get(f"/admin/memoryhub/session/{chat.pk}/transcript/")
    assert response.status_code == 200
    messages = response.context["messages_"]
    assert [m.event.sequence for m in messages] == [1, 2, 3, 4]  # oldest first
    assert [m.speaker for m in messages] == ["Caroline", "helper-bot", "helper-bot", "tool lookup"]
    assert [m.is_tool for m in messages] == [False, False, True, True]
    assert messages[0].leaf == made["leaves"][0] and messages[2].leaf is None
    tree = response.context["tree"]
    assert [(row.node.level, row.indent) for row in tree] == [
        ("branch", 0),
        ("leaf", 1),
        ("leaf", 1),
    ]
    html = response.content.decode()
    assert "<details><summary>Tool call: lookup</summary>" in html and "&quot;groups&quot;" in html
    assert "buy quinces" in html and "Caroline talked about groups." in html
    assert 'covers <a href="?page=1#m1">messages #1–#2</a>' in html
    change = staff_client.get(f"/admin/memoryhub/session/{chat.pk}/change/").content.decode()
    assert f"/admin/memoryhub/session/{chat.pk}/transcript/" in change


def test_transcript_pages_and_jumps_to_a_message(staff_client, cast, chat, monkeypatch) -> None:
    monkeypatch.setattr(transcript, "PAGE_SIZE", 2)
    second = staff_client.get(f"/admin/memoryhub/session/{chat.pk}/transcript/?around=3")
    assert second.context["page"].number == 2 and second.context["highlight"] == 3
    assert "later" not in second.content.decode() and "earlier" in second.content.decode()


def test_events_of_a_session_list_oldest_first_with_speakers(staff_client, chat) -> None:
    response = staff_client.get(f"/admin/memoryhub/event/?session__id__exact={chat.pk}")
    rows = list(response.context["cl"].result_list)
    assert [e.sequence for e in rows] == [1, 2, 3, 4]
    assert "Caroline" in response.content.decode() and "alice" in response.content.decode()


def test_sessions_have_no_plain_delete(staff_client, chat) -> None:
    actions = (
        staff_client.get("/admin/memoryhub/session/")
        .context["action_form"]
        .fields["action"]
        .choices
    )
    assert "delete_selected" not in [name for name, _ in actions]
    assert staff_client.get(f"/admin/memoryhub/session/{chat.pk}/delete/").status_code == 403


def test_queue_rows_say_what_each_task_is_about(staff_client, chat) -> None:
    assert queue.describe("retrieval.tasks.index_events", [chat.pk, [1, 2]]).startswith(
        "2 events of session"
    )
    assert queue.describe("retrieval.tasks.embed_chunks", [[1, 2, 3]]) == "3 chunks"
    assert queue.describe(
        "scheduling.tasks.execute_run", ["00000000-0000-0000-0000-000000000000"]
    ).startswith("a schedule run")
    now = timezone.now()
    Failure.objects.create(
        id="f" * 32,
        name="broken-task",
        func="retrieval.tasks.index_events",
        args=(chat.pk, [1]),
        started=now,
        stopped=now,
        success=False,
        result="boom",
    )
    listing = staff_client.get("/admin/django_q/failure/").content.decode()
    assert (
        "tasks.index_events" in listing
        and "1 event of session" in listing
        and ">chat</a>" in listing
    )
    page = staff_client.get(f"/admin/django_q/failure/{'f' * 32}/change/").content.decode()
    assert "Failure object" not in page.split("<title>")[1].split("</title>")[0]
    assert staff_client.get("/admin/django_q/ormq/").status_code == 200
