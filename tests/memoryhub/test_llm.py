"""Model calls (memoryhub.plumbing.llm): transient failures retried with backoff, within the step's
budget."""

from __future__ import annotations

import sys
import time
from typing import Any

import pytest

from memoryhub.plumbing import llm as llm_module
from memoryhub.plumbing.background import time_budget
from memoryhub.plumbing.llm import SummariserError, chat_completion
from memoryhub.summarisers import Turn, summarise_safely
from tests.memoryhub.test_summarisers import completion, fake_llm

# The fake model server listens on 127.0.0.1, refused unless allowed.
pytestmark = pytest.mark.usefixtures("allow_local_llm")

MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The backoff waits chat_completion asked for, in order (each still really slept). `time` is
    one module for everyone, so only chat_completion's own calls are recorded."""
    waits: list[float] = []
    sleep = time.sleep

    def record(seconds: float) -> None:
        if sys._getframe(1).f_code is chat_completion.__code__:
            waits.append(seconds)
        sleep(seconds)

    monkeypatch.setattr(llm_module.time, "sleep", record)
    return waits


def replies(*answers: tuple[int, Any]) -> Any:
    """A fake's reply function giving these answers in turn (the last one again after that)."""
    calls = {"n": 0}

    def reply(body: dict[str, Any]) -> tuple[int, Any]:
        calls["n"] += 1
        return answers[min(calls["n"], len(answers)) - 1]

    return reply


def call(url: str, timeout: float = 5.0) -> str:
    return chat_completion(url=url, model="m", api_key="", messages=MESSAGES, timeout=timeout)


@pytest.mark.parametrize("status", [503, 500, 502, 429])
def test_a_transient_status_is_retried(status: int) -> None:
    with fake_llm(replies((status, {"error": "busy"}), (200, completion("ok")))) as llm:
        assert call(llm.url) == "ok"
    assert len(llm.requests) == 2
    assert llm.requests[0]["body"] == llm.requests[1]["body"]  # the same request again


def test_a_timeout_is_retried() -> None:
    slow = {"first": True}

    def reply(body: dict[str, Any]) -> tuple[int, Any]:
        if slow.pop("first", False):
            time.sleep(1.0)  # past the 0.3 s timeout: the client gives up on this one
        return 200, completion("late but fine")

    with fake_llm(reply) as llm:
        assert call(llm.url, timeout=0.3) == "late but fine"
    assert len(llm.requests) == 2


def test_a_refused_connection_is_retried_then_reported(settings, slept, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("memoryhub.plumbing.llm.RETRIES", 2)
    monkeypatch.setattr("memoryhub.plumbing.llm.BACKOFF_SECONDS", 0.01)
    with fake_llm(replies((200, completion("x")))) as llm:
        url = llm.url  # the server is gone after this block: connections are refused
    with pytest.raises(SummariserError, match="after 3 attempts"):
        call(url)
    assert slept == [0.01, 0.02]  # it waited the backoff, doubled, between attempts


def test_retries_are_bounded_by_the_setting(settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("memoryhub.plumbing.llm.RETRIES", 3)
    with fake_llm(replies((503, {"error": "down"}))) as llm:
        with pytest.raises(SummariserError, match="HTTP 503"):
            call(llm.url)
    assert len(llm.requests) == 4  # the first try and three more


@pytest.mark.parametrize(
    "status,payload",
    [
        (400, {"error": "bad request"}),
        (401, {"error": "key"}),
        (200, "not json"),
        (200, {"choices": []}),
    ],
)
def test_a_client_error_or_bad_reply_is_not_retried(status: int, payload: Any) -> None:
    with fake_llm(replies((status, payload), (200, completion("never asked")))) as llm:
        with pytest.raises(SummariserError):
            call(llm.url)
    assert len(llm.requests) == 1


def test_retrying_never_waits_past_the_steps_budget(settings, slept, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("memoryhub.plumbing.llm.RETRIES", 3)
    # far longer than the step has
    monkeypatch.setattr("memoryhub.plumbing.llm.BACKOFF_SECONDS", 30.0)
    with fake_llm(replies((503, {"error": "down"}))) as llm:
        with time_budget(2.0), pytest.raises(SummariserError):
            call(llm.url)
    assert len(llm.requests) == 1 and slept == []  # gave up instead of sleeping 30 s


def test_a_step_with_no_budget_left_makes_no_call() -> None:
    with fake_llm(replies((200, completion("x")))) as llm:
        with time_budget(0.0), pytest.raises(SummariserError, match="budget"):
            call(llm.url)
    assert llm.requests == []


def test_the_summariser_gets_through_a_503(settings) -> None:  # type: ignore[no-untyped-def]
    with fake_llm(
        replies((503, {"error": "loading"}), (200, completion("- the user said hi")))
    ) as llm:
        settings.MEMORYHUB_SUMMARISER = "http"
        settings.MEMORYHUB_SUMMARISER_URL = llm.url
        text, used = summarise_safely([Turn("user", "hi", 1)])
    assert (text, used) == ("- the user said hi", "http")  # no fallback to the extractive one
    assert len(llm.requests) == 2
