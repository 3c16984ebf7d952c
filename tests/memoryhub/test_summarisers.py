"""Summarisers (docs/event-log.md#summaries): the extractive default and the OpenAI-compatible HTTP
one (against a local fake)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from memoryhub.models import RollingSummary, Session
from memoryhub.summaries import maybe_summarise
from memoryhub.summarisers import (
    ExtractiveSummariser,
    HttpSummariser,
    SummariserError,
    Turn,
    get_summariser,
    summarise_safely,
)
from tests.base import post_events

# The fake model server listens on 127.0.0.1, refused unless allowed.
pytestmark = pytest.mark.usefixtures("allow_local_llm")

WHEN = datetime(2026, 3, 14, 9, 26, tzinfo=UTC)


# --- a fake OpenAI-compatible chat-completions server on 127.0.0.1 (also used by
# test_extractors) ---


@dataclass
class FakeLLM:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    reply: Callable[[dict[str, Any]], tuple[int, Any]] = lambda body: (200, {"choices": []})


@contextmanager
def fake_llm(reply: Callable[[dict[str, Any]], tuple[int, Any]]) -> Iterator[FakeLLM]:
    state = FakeLLM(url="", reply=reply)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            state.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
            status, payload = state.reply(body)
            data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (a timeout test): nobody is left to answer

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def completion(text: str) -> dict[str, Any]:
    return {
        "id": "x",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
    }


def test_extractive_one_line_per_turn_with_speaker_time_and_sequence() -> None:
    turns = [
        Turn("user", "Book flight LH-442 for 3 people on 2026-04-02.", 7, WHEN),
        Turn("assistant", "Booked. Confirmation code QX7-ZZ9, total 1,284.50 EUR.", 8, WHEN),
        Turn("tool", "   ", 9, WHEN),
    ]
    text = ExtractiveSummariser().summarise(turns)
    lines = text.splitlines()
    assert len(lines) == 2  # the empty turn is dropped
    assert (
        lines[0] == "- [2026-03-14 09:26] user #7: Book flight LH-442 for 3 people on 2026-04-02."
    )
    assert "assistant #8" in lines[1] and "QX7-ZZ9" in lines[1] and "1,284.50" in lines[1]


def test_extractive_clips_long_turns_but_keeps_numbers_and_identifiers() -> None:
    long = (
        "We talked about the roadmap for a long while and nothing concrete came of it. "
        * 6
        + "In the end the invoice INV-20931 of 4,200 USD goes to billing@acme.io via"
        " api/v2/invoices, " + "owner maria_lopez, due 2026-05-01."
    )
    line = ExtractiveSummariser(line_chars=200).summarise([Turn("user", long, 3, WHEN)])
    assert len(line) <= 200 + len("- [2026-03-14 09:26] user #3: ")
    assert line.count("\n") == 0
    for kept in ("INV-20931", "4,200", "2026-05-01"):
        assert kept in line, line
    assert "roadmap" in line  # the start of the turn is kept


def test_extractive_keeps_previous_lines_first() -> None:
    text = ExtractiveSummariser().summarise([Turn("user", "new", 5)], previous="- old line")
    assert text.splitlines() == ["- old line", "- user #5: new"]


def test_http_summariser_speaks_openai_chat_completions() -> None:
    with fake_llm(lambda body: (200, completion("- user asked for LH-442\n- booked"))) as llm:
        summariser = HttpSummariser(url=llm.url, model="tiny-model", api_key="sk-test", timeout=5)
        text = summariser.summarise([Turn("user", "Book LH-442", 1, WHEN)], previous="- earlier")
    assert text == "- user asked for LH-442\n- booked"
    request = llm.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    assert request["body"]["model"] == "tiny-model"
    roles = [m["role"] for m in request["body"]["messages"]]
    assert roles == ["system", "user"]
    assert "Book LH-442" in request["body"]["messages"][1]["content"]
    assert "- earlier" in request["body"]["messages"][1]["content"]


@pytest.mark.parametrize(
    "status,payload",
    [
        (500, {"error": "boom"}),
        (200, {"choices": []}),
        (200, "not json"),
        (200, {"choices": [{"message": {"content": None}}]}),
    ],
)
def test_http_summariser_errors_are_summariser_errors(status, payload) -> None:  # type: ignore[no-untyped-def]
    with fake_llm(lambda body: (status, payload)) as llm:
        with pytest.raises(SummariserError):
            HttpSummariser(url=llm.url, model="m", timeout=5).summarise([Turn("user", "x", 1)])


def test_unreachable_endpoint_is_a_summariser_error() -> None:
    with fake_llm(lambda body: (200, completion("x"))) as llm:
        url = llm.url
    with pytest.raises(SummariserError):
        HttpSummariser(url=url, model="m", timeout=2).summarise([Turn("user", "x", 1)])


def test_settings_select_the_summariser(settings) -> None:  # type: ignore[no-untyped-def]
    assert get_summariser().name == "extractive"
    settings.MEMORYHUB_SUMMARISER = "http"
    settings.MEMORYHUB_SUMMARISER_URL = "http://127.0.0.1:9/v1"
    assert isinstance(get_summariser(), HttpSummariser)


def test_configured_http_summariser_writes_the_rolling_summary(
    alice, settings, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("memoryhub.summaries.BUDGET", 100)
    post_events(
        alice, "s1", *[{"role": "user", "content": f"step {i} " + "w " * 60} for i in range(5)]
    )
    with fake_llm(lambda body: (200, completion("- the user walked through steps 0 to 3"))) as llm:
        settings.MEMORYHUB_SUMMARISER = "http"
        settings.MEMORYHUB_SUMMARISER_URL = llm.url
        settings.MEMORYHUB_SUMMARISER_MODEL = "m"
        outcome = maybe_summarise(Session.objects.get(external_id="s1"))
    assert outcome["summarised"] is True and outcome["summariser"] == "http"
    assert RollingSummary.objects.get().text == "- the user walked through steps 0 to 3"


def test_failing_http_summariser_falls_back_to_extractive(settings) -> None:  # type: ignore[no-untyped-def]
    with fake_llm(lambda body: (503, {"error": "down"})) as llm:
        settings.MEMORYHUB_SUMMARISER = "http"
        settings.MEMORYHUB_SUMMARISER_URL = llm.url
        text, used = summarise_safely([Turn("user", "order 66", 1)])
    assert used == "extractive" and text == "- user #1: order 66"


# --- no input can stall the extractive summariser -------------------------------------------------

# The expression before it was made linear (kept here to check the new one finds the same words).
QUADRATIC_KEEP_WORD = (
    r"(?:https?://\S+|\S*\d\S*|[A-Za-z]+_[\w]+|[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*|"
    r"\w+(?:[./@#:-]\w+)+|[#@]\w+|\b[A-Z]{2,}\b)"
)
PATHOLOGICAL = {
    "letters": "a" * 200_000,  # the old `\S*\d\S*` rescanned this from each of its characters
    "capitals": "A" * 200_000,
    "capitalised": "Aa" * 100_000,
    "dotted": "a." * 100_000,
    "dotted, no end": "a." * 100_000 + ".",
    "snake": "a_" * 100_000,
    "camel": "aB" * 100_000,
    "digits last": "x" * 199_999 + "1",
    "punctuation": "." * 200_000,
    "separators": "-:" * 100_000,
    "handles": "@" * 200_000,
    "many words with digits": "v1 " * 66_000,
    "url": "https://" + "a" * 200_000,
}


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
def test_a_200k_character_word_is_summarised(name: str) -> None:
    # Linear work: tens of milliseconds (bench/pathological.py times it). The old expressions took
    # 11.5 s for 16k characters (quadratic: about 30 minutes for 200k), which no run would sit out.
    text = "Start of the message. " + PATHOLOGICAL[name]
    line = ExtractiveSummariser(line_chars=200).summarise([Turn("user", text)])
    assert line.startswith("- user: Start of the message.") and len(line) <= 220


def test_the_linear_expression_keeps_the_same_words_as_before() -> None:
    import random
    import re

    from memoryhub.summarisers import _KEEP_WORD

    old = re.compile(QUADRATIC_KEEP_WORD)
    rng = random.Random(7)
    alphabet = "aAbBzZ_19.-/@#: (),'"
    samples = [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) for _ in range(5000)
    ]
    samples += [
        "see https://example.org/x?y=1 and v2.3.1, user@example.com, #launch, @anna, NASA, "
        "parse_args, camelCase, CamelCase, path/to/file.py at 09:40 on 2024-05-03"
    ]
    for text in samples:
        assert [m.group(0) for m in _KEEP_WORD.finditer(text)] == [
            m.group(0) for m in old.finditer(text)
        ], text


def test_a_summarising_step_that_runs_past_its_budget_stops() -> None:
    from memoryhub.plumbing.background import BudgetExceeded, time_budget

    turns = [Turn("user", f"turn {i}") for i in range(10)]
    with time_budget(0.0), pytest.raises(BudgetExceeded):
        ExtractiveSummariser().summarise(turns)
    assert len(ExtractiveSummariser().summarise(turns).splitlines()) == 10  # no budget, no limit
