"""Tool calls described in a sentence (docs/event-log.md#indexing): with a summariser model
configured, the summarise lane has it write one past-tense sentence about each tool call with
empty content, and search finds the call by that sentence; without one, `Called <tool> with …`."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from memoryhub.models import Session, ToolCallSentence
from memoryhub.session_work import work_on_session
from memoryhub.tool_sentences import describe_tool_calls
from retrieval.models import Chunk
from tests.base import post_events, search_texts
from tests.memoryhub.test_summarisers import completion, fake_llm

CALL = {
    "role": "assistant",
    "content": "",
    "tool_name": "search_flights",
    "tool_args": {"from": "BER", "to": "LIS", "date": "2025-05-03"},
    "tool_result": {"cheapest": "TP 527"},
}
SENTENCE = "Searched for flights from Berlin to Lisbon on 3 May 2025; the cheapest was TP 527."


@pytest.fixture
def model(settings, allow_local_llm):  # type: ignore[no-untyped-def]
    def reply(body: dict[str, Any]) -> tuple[int, Any]:
        if "tool call" in body["messages"][0]["content"]:
            return 200, completion(f'"{SENTENCE}"')
        return 200, completion("- summary")

    with fake_llm(reply) as llm:
        settings.MEMORYHUB_SUMMARISER = "http"
        settings.MEMORYHUB_SUMMARISER_URL = llm.url
        settings.MEMORYHUB_SUMMARISER_MODEL = "qwen3-8b"
        yield llm


def event_texts(session: str) -> list[str]:
    return list(
        Chunk.objects.filter(kind="event", session__external_id=session).values_list(
            "text", flat=True
        )
    )


def test_the_model_writes_the_sentence_and_search_finds_it(
    alice, model, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    # the lane not run
    post_events(alice, "trip", {"role": "user", "content": "Find me a flight"}, CALL)
    session = Session.objects.get(external_id="trip")
    assert search_texts(alice, "Berlin", mode="text") == []  # only "Called search_flights with …"
    with django_capture_on_commit_callbacks(execute=True):
        assert work_on_session(session.pk)["tool_sentences"] == 1
    sentence = ToolCallSentence.objects.get()
    assert (sentence.text, sentence.model, sentence.event.sequence) == (SENTENCE, "qwen3-8b", 2)
    (request,) = [r for r in model.requests if "tool call" in r["body"]["messages"][0]["content"]]
    assert (
        'Called search_flights with {"date": "2025-05-03"'
        in request["body"]["messages"][1]["content"]
    )
    assert 'Result: {"cheapest": "TP 527"}' in request["body"]["messages"][1]["content"]
    (text,) = [t for t in event_texts("trip") if "search_flights" in t]
    assert text.startswith(SENTENCE) and 'Called search_flights with {"date": "2025-05-03"' in text
    assert search_texts(alice, "Berlin", mode="text")[0] == text
    assert describe_tool_calls(session) == 0  # each call is described once


def test_without_a_model_the_call_keeps_its_fixed_sentence(alice, settings) -> None:  # type: ignore[no-untyped-def]
    post_events(alice, "trip", CALL)
    session = Session.objects.get(external_id="trip")
    assert work_on_session(session.pk)["tool_sentences"] == 0
    assert not ToolCallSentence.objects.exists()
    assert event_texts("trip")[0].startswith("Called search_flights with")


def test_a_model_that_is_down_fails_the_step_and_describes_later(
    alice, settings, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("memoryhub.plumbing.llm.RETRIES", 0)
    with fake_llm(lambda body: (503, {"error": "down"})) as llm:
        settings.MEMORYHUB_SUMMARISER, settings.MEMORYHUB_SUMMARISER_URL = "http", llm.url
        post_events(alice, "trip", CALL)
        session = Session.objects.get(external_id="trip")
        assert "failed" in work_on_session(session.pk)
    assert not ToolCallSentence.objects.exists()
    assert event_texts("trip")[0].startswith("Called search_flights with")


def test_the_admin_lists_the_sentences(admin_client, alice, model) -> None:  # type: ignore[no-untyped-def]
    post_events(alice, "trip", CALL)
    describe_tool_calls(Session.objects.get(external_id="trip"))
    sentence = ToolCallSentence.objects.get()
    html = admin_client.get(reverse("admin:memoryhub_toolcallsentence_changelist")).content.decode()
    assert "Searched for flights from Berlin" in html and "qwen3-8b" in html
    page = admin_client.get(reverse("admin:memoryhub_toolcallsentence_change", args=[sentence.pk]))
    assert page.status_code == 200
