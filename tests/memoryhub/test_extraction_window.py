"""Fact extraction in the summarise lane (docs/event-log.md#fact-extraction): a window of earlier
events as context, facts taken once, and a model's unusable reply recorded without stalling the
session."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memoryhub.models import Fact, RollingSummary, Session, StepFailure
from memoryhub.session_work import FACTS_STEP, STEP, work_on_session
from tests.base import post_events
from tests.memoryhub.test_summarisers import completion, fake_llm

# The fake model server listens on 127.0.0.1, refused unless allowed.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("allow_local_llm")]

QUESTION = "Which city should I move to for the new job, Lisbon or Porto?"
ANSWER = "Porto: the office of your new employer, Nortada, is there."


@pytest.fixture
def extractor_settings(settings):  # type: ignore[no-untyped-def]
    settings.MEMORYHUB_TASKS_EAGER = False  # nothing inline: the test works the session itself
    settings.MEMORYHUB_FACT_EXTRACTOR = "http"
    settings.MEMORYHUB_FACT_EXTRACTOR_MODEL = "m"
    settings.MEMORYHUB_FACT_EXTRACTOR_FORMAT = "lines"
    return settings


def work(session: str = "s1") -> dict[str, Any]:
    return work_on_session(Session.objects.get(external_id=session).pk)  # type: ignore[return-value]


def user_message(body: dict[str, Any]) -> str:
    return body["messages"][1]["content"]


def exchange_model(body: dict[str, Any]) -> tuple[int, Any]:
    """Says NONE to a lone question, and names the move once it reads the question's answer."""
    text = user_message(body)
    if QUESTION in text and ANSWER in text:
        return 200, completion("- moving_to: Porto\n- The user's new employer is Nortada")
    return 200, completion("NONE")


def test_a_question_and_its_answer_appended_apart_are_one_exchange(
    alice, extractor_settings
) -> None:  # type: ignore[no-untyped-def]
    with fake_llm(exchange_model) as llm:
        extractor_settings.MEMORYHUB_FACT_EXTRACTOR_URL = llm.url
        post_events(alice, "s1", {"role": "user", "content": QUESTION})
        assert work()["facts"] == 0  # NONE: the question alone says nothing durable
        post_events(alice, "s1", {"role": "assistant", "content": ANSWER})
        assert work()["facts"] == 2
    first, second = (user_message(r["body"]) for r in llm.requests)
    assert QUESTION in first and "Earlier messages" not in first
    # the question comes back as context, the answer is the new message
    context, new = second.split("\n\nNew messages:\n")
    assert context.startswith("Earlier messages (context only):") and QUESTION in context
    assert ANSWER in new and QUESTION not in new
    assert sorted(Fact.objects.values_list("key", "content")) == [
        ("", "The user's new employer is Nortada"),
        ("moving_to", "moving to: Porto"),
    ]
    fact = Fact.objects.get(key="moving_to")
    assert fact.source == "extraction" and fact.metadata["sequences"] == [2, 2]
    assert Session.objects.get().facts_extracted_to == 2


def test_the_window_is_the_n_events_before_the_new_ones(
    alice, extractor_settings, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("memoryhub.extractors.WINDOW_EVENTS", 2)
    with fake_llm(lambda body: (200, completion("NONE"))) as llm:
        extractor_settings.MEMORYHUB_FACT_EXTRACTOR_URL = llm.url
        post_events(
            alice, "s1", *[{"role": "user", "content": f"message {i}"} for i in range(1, 6)]
        )
        work()
        post_events(alice, "s1", {"role": "user", "content": "message 6"})
        work()
        monkeypatch.setattr("memoryhub.extractors.WINDOW_EVENTS", 0)
        post_events(alice, "s1", {"role": "user", "content": "message 7"})
        work()
    second, third = (user_message(r["body"]) for r in llm.requests[1:])
    context, new = second.split("\n\nNew messages:\n")
    assert [f"message {i}" in context for i in range(1, 6)] == [False, False, False, True, True]
    assert "message 6" in new
    # no window: the new events only
    assert third.endswith("message 7") and "Earlier messages" not in third


def test_a_fact_the_model_repeats_from_the_context_is_not_stored_twice(
    alice, extractor_settings
) -> None:  # type: ignore[no-untyped-def]
    with fake_llm(lambda body: (200, completion("- The user has a beagle called Biscuit."))) as llm:
        extractor_settings.MEMORYHUB_FACT_EXTRACTOR_URL = llm.url
        post_events(alice, "s1", {"role": "user", "content": "My beagle is called Biscuit"})
        assert work()["facts"] == 1
        post_events(alice, "s1", {"role": "user", "content": "Anyway, what's the weather?"})
        assert work()["facts"] == 0  # the same fact again (it read the first message as context)
    assert len(llm.requests) == 2 and Fact.objects.count() == 1


def test_a_reply_that_is_no_facts_is_recorded_and_the_lane_goes_on(
    alice, extractor_settings, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("memoryhub.summaries.BUDGET", 100)
    monkeypatch.setattr("memoryhub.session_work.MAX_ATTEMPTS", 1)
    garbage = "I'm sorry, as an AI I cannot decide what is worth remembering."
    with fake_llm(lambda body: (200, completion(garbage))) as llm:
        extractor_settings.MEMORYHUB_FACT_EXTRACTOR_URL = llm.url
        post_events(
            alice, "s1", *[{"role": "user", "content": f"step {i} " + "w " * 60} for i in range(5)]
        )
        outcome = work()
    assert outcome["facts"] == 0 and "failed" not in outcome  # not a crash, not a failed session
    # the summary still written
    assert outcome["summarised"] is True and RollingSummary.objects.exists()
    assert not Fact.objects.exists()
    record = StepFailure.objects.get()
    assert (
        record.step == FACTS_STEP
        and "neither facts nor NONE" in record.error
        and not record.set_aside
    )
    assert Session.objects.get().facts_extracted_to == 5  # the same model would answer the same
    # the next usable reply clears the record
    with fake_llm(
        lambda body: (200, completion(json.dumps({"facts": [{"content": "Walks in steps"}]})))
    ) as llm:
        extractor_settings.MEMORYHUB_FACT_EXTRACTOR_URL = llm.url
        post_events(alice, "s1", {"role": "user", "content": "one more step"})
        assert work()["facts"] == 1
    assert not StepFailure.objects.exists()


def test_an_unreachable_model_fails_the_step_and_keeps_the_cursor(
    alice, extractor_settings, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("memoryhub.plumbing.llm.RETRIES", 1)
    with fake_llm(lambda body: (503, {"error": "loading"})) as llm:
        extractor_settings.MEMORYHUB_FACT_EXTRACTOR_URL = llm.url
        post_events(alice, "s1", {"role": "user", "content": "I live in Lisbon"})
        outcome = work()
    assert len(llm.requests) == 2  # tried again once, then gave up for this pass
    assert "HTTP 503" in outcome["failed"]
    assert StepFailure.objects.get().step == STEP  # tried again on a later pass
    assert Session.objects.get().facts_extracted_to == 0 and not Fact.objects.exists()


def test_a_long_message_is_read_whole_in_parts(alice, extractor_settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("memoryhub.extractors.INPUT_CHARS", 4000)
    filler = " ".join(f"Paragraph {i} of the trip report says nothing durable." for i in range(300))
    # ~17k characters, the fact at the end
    message = f"{filler} By the way, my passport number is X1234567."

    def model(body: dict[str, Any]) -> tuple[int, Any]:
        text = user_message(body)
        if "X1234567" in text:
            return 200, completion("- passport_number: X1234567")
        return 200, completion("NONE")

    with fake_llm(model) as llm:
        extractor_settings.MEMORYHUB_FACT_EXTRACTOR_URL = llm.url
        post_events(alice, "s1", {"role": "user", "content": message})
        assert work()["facts"] == 1
    sent = [user_message(r["body"]) for r in llm.requests]
    # a request per group of parts
    assert len(sent) >= 5 and all(len(s) <= 4000 + 200 for s in sent)
    assert "(part 1/" in sent[0] and "X1234567" in sent[-1]
    # every part was sent
    assert "Paragraph 299 of" in "".join(sent) and "Paragraph 0 of" in sent[0]
    assert Fact.objects.get().content == "passport number: X1234567"
