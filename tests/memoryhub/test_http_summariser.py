"""The HTTP summariser: a prompt per level, a conversation header, long
messages split into parts (never cut), long transcripts summarised a request at a time."""

from __future__ import annotations

import re
from typing import Any

import pytest

from memoryhub.condense import condense
from memoryhub.models import Session, SummaryNode
from memoryhub.summaries import build_tree, maybe_summarise
from memoryhub.summarisers import PROMPTS, HttpSummariser, Turn, split_text
from tests.base import new_session, post_events
from tests.memoryhub.test_summarisers import completion, fake_llm

# The fake model server listens on 127.0.0.1, refused unless allowed.
pytestmark = pytest.mark.usefixtures("allow_local_llm")

LEVEL_OF_PROMPT = {prompt: level for level, prompt in PROMPTS.items()}


def by_level(body: dict[str, Any]) -> tuple[int, Any]:
    """A fake model that says which prompt it was given."""
    level = LEVEL_OF_PROMPT.get(body["messages"][0]["content"], "unknown")
    return 200, completion(f"- {level} summary")


@pytest.fixture
def http_summariser(settings):  # type: ignore[no-untyped-def]
    with fake_llm(by_level) as llm:
        settings.MEMORYHUB_SUMMARISER = "http"
        settings.MEMORYHUB_SUMMARISER_URL = llm.url
        settings.MEMORYHUB_SUMMARISER_MODEL = "m"
        yield llm


def requests_of(llm: Any, level: str) -> list[str]:
    """The user messages of the requests made with `level`'s prompt."""
    return [
        r["body"]["messages"][1]["content"]
        for r in llm.requests
        if r["body"]["messages"][0]["content"] == PROMPTS[level]
    ]


def test_each_level_has_its_own_prompt() -> None:
    assert set(PROMPTS) == {"leaf", "branch", "root", "condense"}
    assert len(set(PROMPTS.values())) == 4
    assert "messages" in PROMPTS["leaf"] and "summaries of consecutive parts" in PROMPTS["branch"]
    assert (
        "overview of a whole conversation" in PROMPTS["root"] and "shorter" in PROMPTS["condense"]
    )
    for prompt in PROMPTS.values():  # the rules every level shares (docs/event-log.md#summaries)
        assert "never add outside knowledge" in prompt and "exactly as written" in prompt


def test_the_tree_asks_with_the_prompt_of_each_level_and_a_header(
    alice, settings, http_summariser, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("memoryhub.summaries.LEAF_EVENTS", 2)
    monkeypatch.setattr("memoryhub.summaries.BRANCH_CHILDREN", 2)
    new_session(alice, "trip", title="Lisbon trip", user_id="u-42", agent="planner")
    post_events(
        alice,
        "trip",
        *[
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} TKT-{i}"}
            for i in range(8)
        ],
    )
    assert build_tree(Session.objects.get(external_id="trip")) == 4 + 2 + 1
    llm = http_summariser
    leaves, branches, roots = (requests_of(llm, level) for level in ("leaf", "branch", "root"))
    assert (len(leaves), len(branches), len(roots)) == (4, 2, 1) and len(llm.requests) == 7
    texts = {n.level: n.text for n in SummaryNode.objects.all()}
    assert texts == {
        "leaf": "- leaf summary",
        "branch": "- branch summary",
        "root": "- root summary",
    }
    # a leaf reads messages; a branch reads the leaves; the root reads the branches
    assert "[#1 " in leaves[0] and " planner/user] turn 0 TKT-0" in leaves[0]
    assert "planner/assistant] turn 1 TKT-1" in leaves[0]
    assert "[#1–#2 " in branches[0] and " leaf] leaf summary" in branches[0]
    assert "[#1–#4 " in roots[0] and " branch] branch summary" in roots[0]
    # every request starts with the conversation's header: session, channel, participants, span
    header = leaves[1].split("\n\n")[0].splitlines()
    assert header[0].startswith('Conversation: session "trip" (ref ') and header[0].endswith(
        'title "Lisbon trip"'
    )
    assert header[1] == 'Workspace "default", channel "general"'
    assert header[2] == 'Participants: assistant "planner", user "u-42"'
    assert re.fullmatch(r"Time span: \S+Z to \S+Z, messages #3 to #4 \(2 messages\)", header[3])
    assert "messages #1 to #8 (8 messages)" in roots[0]


def test_the_rolling_summary_is_a_leaf_with_the_summary_so_far(
    alice, settings, http_summariser, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("memoryhub.summaries.BUDGET", 100)
    monkeypatch.setattr("memoryhub.summaries.MAX_SHARE", 1.0)
    post_events(
        alice, "s1", *[{"role": "user", "content": f"step {i} " + "w " * 60} for i in range(5)]
    )
    session = Session.objects.get(external_id="s1")
    assert maybe_summarise(session)["summariser"] == "http"
    post_events(
        alice, "s1", *[{"role": "user", "content": f"more {i} " + "w " * 60} for i in range(5)]
    )
    assert maybe_summarise(session)["summarised"] is True
    first, second = requests_of(http_summariser, "leaf")
    assert "Summary so far" not in first
    assert "Summary so far:\n- leaf summary" in second and "more 0" in second
    assert 'Conversation: session "s1"' in second


def test_an_overlong_rolling_summary_is_condensed_with_its_prompt(http_summariser) -> None:  # type: ignore[no-untyped-def]
    long = "\n".join(f"- user #{i}: item I-{i} " + "x" * 80 for i in range(30))
    assert condense(long, 100, header='Conversation: session "s9"') == "- condense summary"
    (request,) = requests_of(http_summariser, "condense")
    assert (
        request.startswith('Conversation: session "s9"')
        and "item I-0" in request
        and "item I-29" in request
    )


def test_split_text_covers_all_of_it_in_parts_cut_between_words() -> None:
    text = " ".join(f"w{i:04d}" for i in range(2000))  # 11,999 characters
    parts = split_text(text, 4000)
    # cut at the last space before each 4,000: 3,996 + 3,996 + 3,996 + the last 11 characters
    assert "".join(parts) == text and [len(p) for p in parts] == [3996, 3996, 3996, 11]
    assert all(len(p) <= 4000 for p in parts)
    assert all(p.endswith(" ") for p in parts[:-1])  # never inside a word
    # no space at all: cut anyway, still whole
    assert split_text("a" * 10, 4) == ["aaaa", "aaaa", "aa"]
    assert split_text("short", 4000) == ["short"]


def _parts_in(requests: list[str]) -> list[tuple[int, int, str]]:
    return [
        (int(m.group(1)), int(m.group(2)), m.group(3))
        for request in requests
        for m in re.finditer(
            r"\[#1 [^\]]*user, part (\d+)/(\d+)\] (\S.*?)(?=\n\[|\Z)", request, re.DOTALL
        )
    ]


def test_a_12000_character_message_is_sent_whole_in_parts(settings) -> None:  # type: ignore[no-untyped-def]
    words = [f"w{i:04d}" for i in range(2000)]
    message = " ".join(words)
    assert len(message) == 11_999
    with fake_llm(lambda body: (200, completion("- ok"))) as llm:
        HttpSummariser(url=llm.url, model="m", timeout=5).summarise([Turn("user", message, 1)])
    assert len(llm.requests) == 1  # 12k characters fit in one request (24k by default)
    parts = _parts_in([llm.requests[0]["body"]["messages"][1]["content"]])
    assert [(n, of) for n, of, _ in parts] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert " ".join(text for _, _, text in parts).split() == words  # every word, in order, once


def test_a_long_transcript_is_summarised_a_request_at_a_time(settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("memoryhub.summarisers.PART_CHARS", 4000)
    monkeypatch.setattr("memoryhub.summarisers.INPUT_CHARS", 5000)  # one part per request
    words = [f"w{i:04d}" for i in range(2000)]
    answers = iter(["- after request 1", "- after request 2", "- after request 3"])
    with fake_llm(lambda body: (200, completion(next(answers)))) as llm:
        text = HttpSummariser(url=llm.url, model="m", timeout=5).summarise(
            [Turn("user", " ".join(words), 1)], previous="- before"
        )
    assert text == "- after request 3"  # the last reply covers everything
    users = [r["body"]["messages"][1]["content"] for r in llm.requests]
    # parts of 3,996, 3,996, 3,996 and 11 characters: the last two fit in one request of 5,000
    assert [[(n, of) for n, of, _ in _parts_in([u])] for u in users] == [
        [(1, 4)],
        [(2, 4)],
        [(3, 4), (4, 4)],
    ]
    # each request carries the summary so far: the previous one, then each reply in turn
    assert [u.split("\n\n")[0] for u in users] == [
        "Summary so far:\n- before",
        "Summary so far:\n- after request 1",
        "Summary so far:\n- after request 2",
    ]
    parts = _parts_in(users)
    assert " ".join(text for _, _, text in parts).split() == words


def test_the_extractive_summariser_is_unchanged_by_levels_and_headers() -> None:
    from memoryhub.summarisers import ExtractiveSummariser

    turns = [Turn("user", "Book LH-442", 1)]
    plain = ExtractiveSummariser().summarise(turns)
    assert (
        ExtractiveSummariser().summarise(turns, level="branch", header="Conversation: x") == plain
    )


def test_post_summary_tries_the_model_once_and_falls_back_at_once(
    alice, settings, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """The client of POST .../summary/ waits for the answer: a model that is down costs one try,
    not the retries and backoff a background step may spend."""
    monkeypatch.setattr("memoryhub.plumbing.llm.RETRIES", 3)
    # a retry would make this test take 5 s or more
    monkeypatch.setattr("memoryhub.plumbing.llm.BACKOFF_SECONDS", 5.0)
    monkeypatch.setattr("memoryhub.summaries.BUDGET", 100)
    monkeypatch.setattr("memoryhub.summaries.MAX_SHARE", 1.0)
    post_events(
        alice, "s1", *[{"role": "user", "content": f"step {i} " + "w " * 60} for i in range(5)]
    )
    with fake_llm(lambda body: (503, {"error": "down"})) as llm:
        settings.MEMORYHUB_SUMMARISER = "http"
        settings.MEMORYHUB_SUMMARISER_URL = llm.url
        settings.MEMORYHUB_SUMMARISER_MODEL = "m"
        response = alice.post("/api/v1/sessions/s1/summary/", {}, format="json")
    assert response.status_code == 200, response.content
    # the extractive fallback
    assert response.json()["summarised"] is True and "step 0" in response.json()["text"]
    bodies = [str(r["body"]) for r in llm.requests]
    # no request was sent twice (the summary, then condensing)
    assert bodies and len(bodies) == len(set(bodies))


def test_every_message_line_names_the_sessions_agent(
    alice, settings, http_summariser, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    # The conversation header: each message numbered, timed and named by its speaker.
    monkeypatch.setattr("memoryhub.summaries.LEAF_EVENTS", 2)
    new_session(alice, "trip", agent="travel-bot")
    post_events(
        alice,
        "trip",
        {"role": "user", "content": "Lisbon?", "created_at": "2025-05-01T10:00:00Z"},
        {"role": "assistant", "content": "Booked.", "created_at": "2025-05-01T10:01:00Z"},
    )
    build_tree(Session.objects.get(external_id="trip"))
    (leaf,) = requests_of(http_summariser, "leaf")
    assert "[#1 2025-05-01T10:00Z travel-bot/user] Lisbon?" in leaf
    assert "[#2 2025-05-01T10:01Z travel-bot/assistant] Booked." in leaf


def test_each_level_asks_for_its_own_token_budget(
    alice, settings, http_summariser, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    # Token budgets per level (7k / 14k / 20k tokens for leaf / branch / root).
    monkeypatch.setattr("memoryhub.summaries.LEAF_EVENTS", 2)
    monkeypatch.setattr("memoryhub.summaries.BRANCH_CHILDREN", 2)
    post_events(alice, "s1", *[{"role": "user", "content": f"turn {i}"} for i in range(8)])
    build_tree(Session.objects.get(external_id="s1"))
    asked = {
        LEVEL_OF_PROMPT[r["body"]["messages"][0]["content"]]: r["body"]["max_tokens"]
        for r in http_summariser.requests
    }
    assert asked == {"leaf": 7000, "branch": 14000, "root": 20000}
