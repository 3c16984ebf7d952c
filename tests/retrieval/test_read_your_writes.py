"""Read-your-writes: an acknowledged append is findable by full text at once, before any lane ran.

The README's first-run example is run as written (its curl lines, against a live server with no
background process at all): the search right after the append finds the event.
"""

from __future__ import annotations

import json
import re
import shlex
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings

from tests.base import make_key, make_tenant


def readme_curls() -> list[dict[str, Any]]:
    """The curl commands of the README's "First start" section: method, path and body of each."""
    text = (Path(django_settings.BASE_DIR) / "README.md").read_text()
    block = text.split("## First start", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    commands = re.sub(r"\\\n\s*", " ", block).splitlines()
    calls = []
    for line in commands:
        if not line.strip().startswith("curl"):
            continue
        words = shlex.split(line.replace("$KEY", "KEY"))
        url = next(w for w in words if w.startswith("localhost:8000"))
        body = words[words.index("-d") + 1] if "-d" in words else None
        method = words[words.index("-X") + 1] if "-X" in words else "GET"
        calls.append(
            {
                "method": method,
                "path": url.removeprefix("localhost:8000"),
                "body": json.loads(body) if body else None,
            }
        )
    return calls


def call(base: str, key: str, method: str, path: str, body: Any) -> Any:
    request = urllib.request.Request(
        base + path,
        method=method,
        data=json.dumps(body).encode() if body else None,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


@pytest.mark.django_db(transaction=True)
def test_the_readme_first_run_example_finds_the_event(live_server, settings) -> None:  # type: ignore[no-untyped-def]
    # as under `make run`: nothing runs inline, no lane runs here
    settings.MEMORYHUB_TASKS_EAGER = False
    key = make_key(make_tenant("demo"))
    calls = readme_curls()
    assert [c["method"] for c in calls] == ["POST", "GET", "POST"] and calls[-1][
        "path"
    ] == "/api/v1/search/"
    replies = [call(live_server.url, key, **c) for c in calls]
    appended = calls[0]["body"]["content"]
    results = replies[-1]["results"]
    assert [r["text"] for r in results] == [appended]  # committed and findable in the same instant
    assert results[0]["embedded"] is False  # its vector is still to come: the reply says so


def test_a_text_search_right_after_an_append_finds_it(alice, settings) -> None:  # type: ignore[no-untyped-def]
    settings.MEMORYHUB_TASKS_EAGER = False
    for i in range(20):
        alice.post(
            "/api/v1/sessions/s1/events/",
            {"role": "user", "content": f"filler message number {i}"},
            format="json",
        )
        word = f"zebra{i}"
        alice.post(
            "/api/v1/sessions/s1/events/",
            {"role": "user", "content": f"the {word} escaped"},
            format="json",
        )
        found = alice.post(
            "/api/v1/search/", {"query": word, "mode": "text"}, format="json"
        ).json()["results"]
        assert [r["text"] for r in found] == [f"the {word} escaped"]
