"""What the context block carries of a conversation and how it writes it: the rolling summary and
the summary-tree nodes over what the recent window no longer shows, every line dated to the
minute (recent messages too), and a memory of several chunks once, whole and in order."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from memoryhub.models import Fact, Session, SummaryNode
from memoryhub.summaries import write_summary
from retrieval.chunking import chunk_text, normalize_text
from retrieval.context_memories import Memory
from retrieval.indexing import CHUNK_CHARS, CHUNK_OVERLAP
from retrieval.models import Chunk
from tests.base import remember


def context(client: Any, **body: Any) -> dict[str, Any]:
    response = client.post("/api/v1/context/", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def _session(cast: Any, name: str) -> Session:
    return Session.objects.get(tenant=cast.alice_tenant, external_id=name)


ROLLING = "- user booked the Casa Azul guesthouse in Porto for three nights"


def test_the_rolling_summary_is_in_the_block(alice, index, cast) -> None:
    index(
        alice,
        "trip",
        *[{"role": "user", "content": f"trip planning message {i}"} for i in range(4)],
    )
    write_summary(_session(cast, "trip"), text=ROLLING, expected_epoch=None, upper_sequence=2)
    body = context(alice, session="trip", query="what is for dinner")
    assert [i["text"] for i in body["items"] if i["source"] == "summary"] == [ROLLING]
    assert (
        f"Earlier in this conversation (summary)\n- (summary {_said(cast, 'trip', 2)}) {ROLLING}"
        in body["markdown"]
    )
    # Before the recent messages it stands for the older ones of.
    assert body["markdown"].index(ROLLING) < body["markdown"].index("trip planning message 3")


def _said(cast: Any, session: str, sequence: int) -> str:
    event = _session(cast, session).events.get(sequence=sequence)
    return event.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def test_the_summary_goes_in_before_recent_messages_when_the_budget_is_tight(
    alice, index, cast
) -> None:
    index(
        alice,
        "trip",
        *[{"role": "user", "content": f"message {i} " + "words " * 30} for i in range(10)],
    )
    write_summary(_session(cast, "trip"), text=ROLLING, expected_epoch=None, upper_sequence=5)
    body = context(alice, session="trip", budget=150)
    assert body["items"][0]["text"] == ROLLING and body["tokens"] <= 150
    assert 0 < len([i for i in body["items"] if i["source"] == "recent"]) < 10


def _leaf(session: Session, start: int, end: int, text: str) -> SummaryNode:
    at = session.events.get(sequence=end).created_at
    return remember(
        SummaryNode.objects.create(
            tenant_id=session.tenant_id,
            workspace_id=session.workspace_id,
            channel_id=session.channel_id,
            session=session,
            user_id=session.user_id,
            level="leaf",
            text=text,
            sequence_start=start,
            sequence_end=end,
            earliest_at=at,
            latest_at=at,
        )
    )


def test_summary_nodes_cover_only_what_the_recent_window_no_longer_shows(
    alice, index, cast
) -> None:
    index(alice, "long", *[{"role": "user", "content": f"chatter number {i}"} for i in range(16)])
    session = _session(cast, "long")  # the recent window shows messages 7 to 16
    _leaf(session, 1, 8, "- the user chose the blue kayak")
    _leaf(session, 9, 16, "- the user asked about paddles")
    body = context(alice, session="long", query="kayak")
    assert [i["text"] for i in body["items"] if i["source"] == "summary"] == [
        "- the user chose the blue kayak"
    ]
    # not again as a related memory
    assert body["markdown"].count("the user chose the blue kayak") == 1


def test_same_day_messages_show_their_times(alice, index) -> None:
    index(
        alice,
        "seats",
        {"role": "user", "content": "Book me an aisle seat.", "created_at": "2026-03-05T09:15:00Z"},
        {"role": "user", "content": "Window seat after all.", "created_at": "2026-03-05T17:40:00Z"},
    )
    index(alice, "later", {"role": "user", "content": "hello again"})
    recent = context(alice, session="seats")["markdown"]
    assert "- (user, said 2026-03-05 09:15) Book me an aisle seat." in recent
    assert "- (user, said 2026-03-05 17:40) Window seat after all." in recent
    related = context(alice, session="later", query="aisle or window seat", scope="channel")[
        "markdown"
    ]
    assert "(user, said 2026-03-05 09:15) Book me an aisle seat." in related
    assert "(user, said 2026-03-05 17:40) Window seat after all." in related


def test_an_imported_message_shows_its_date_in_the_recent_lines(alice, index) -> None:
    index(
        alice,
        "old-chat",
        {
            "role": "user",
            "content": "My bike is a green Brompton.",
            "created_at": "2025-03-14T08:30:00Z",
        },
    )
    block = context(alice, session="old-chat")["markdown"]
    assert (
        "### Recent conversation\n- (user, said 2025-03-14 08:30) My bike is a green Brompton."
        in block
    )


CRITICAL = " ".join(
    f"Rule {i}: before any dose of medicine number {i}, check the patient's allergy card, the"
    f" kidney panel and the interaction list, and write the time of dose {i} in the chart."
    for i in range(1, 13)
)


def test_a_long_critical_fact_is_shown_once_whole_and_in_order(alice, index, cast) -> None:
    index(alice, "ward", {"role": "user", "content": "hello"})
    session = _session(cast, "ward")
    remember(
        Fact.objects.create(
            tenant=cast.alice_tenant,
            workspace_id=session.workspace_id,
            channel_id=session.channel_id,
            key="dosing",
            content=CRITICAL,
            importance=0.95,
            valid_from=datetime(2026, 1, 2, 3, 4, tzinfo=UTC),
        )
    )
    fact_id = Fact.objects.get(key="dosing").pk
    assert Chunk.objects.filter(kind="fact", source_id=str(fact_id)).count() >= 3
    body = context(alice, session="ward")
    critical = [i for i in body["items"] if i["source"] == "critical"]
    assert [i["text"] for i in critical] == [CRITICAL]
    assert f"- (fact since 2026-01-02 03:04) {CRITICAL}" in body["markdown"]
    assert body["markdown"].count("Rule 7:") == 1


LONG_ANSWER = " ".join(
    f"Step {i} of the sourdough routine: feed the starter named Bubbles at {i} o'clock."
    for i in range(1, 20)
)


def test_a_long_message_found_by_one_chunk_is_shown_whole(alice, index) -> None:
    index(alice, "bread", {"role": "assistant", "content": LONG_ANSWER})
    index(alice, "now", {"role": "user", "content": "hi"})
    body = context(
        alice, session="now", query="what is my sourdough starter called", scope="channel"
    )
    related = [i["text"] for i in body["items"] if i["source"] == "relevant"]
    assert related == [LONG_ANSWER]
    assert body["markdown"].count("Step 11 of") == 1


def test_chunks_of_a_memory_join_in_order_with_their_overlap_once() -> None:
    text = normalize_text(LONG_ANSWER)
    pieces = chunk_text(text, max_chars=CHUNK_CHARS, overlap=CHUNK_OVERLAP)
    assert len(pieces) >= 3
    memory = Memory(tuple(range(len(pieces))), tuple(p.text for p in pieces))
    assert memory.text_of() == text
    assert memory.text_of({1, 0}) == text[: pieces[1].start + len(pieces[1].text)]
    first_and_third = memory.text_of({0, 2})
    assert first_and_third == f"{pieces[0].text} … {pieces[2].text}"
