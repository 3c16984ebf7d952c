"""remember/recall, search, context, browse and stats through both clients, end to end."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from memoryhub_client import BadRequestError

pytestmark = pytest.mark.django_db(transaction=True)

CHAT = [
    {"role": "system", "content": "You are a travel assistant."},
    {"role": "user", "content": "My passport number ends in 4471 and I fly to Osaka in May."},
    {"role": "assistant", "content": "Noted: Osaka in May."},
]


def test_remember_creates_the_session_for_the_user_and_recall_returns_the_block(
    hub: Any, keys: dict[str, str]
) -> None:
    alice = hub(keys["alice"])
    stored = alice.remember("trip", CHAT, user_id="u-42", agent="planner")
    assert stored["created"] == 3 and [e["role"] for e in stored["events"]] == [
        "system",
        "user",
        "assistant",
    ]
    session = alice.get_session("trip")
    assert (session["user_id"], session["agent"], session["event_count"]) == ("u-42", "planner", 3)

    # Again into the same session: the get-or-create keeps it, sequences continue.
    more = alice.remember(
        "trip",
        ["Also book a ryokan.", {"role": "developer", "content": "Be brief."}],
        user_id="u-42",
    )
    assert [(e["role"], e["sequence"]) for e in more["events"]] == [("user", 4), ("system", 5)]

    block = alice.recall("When do I fly to Osaka?", session="trip", budget=500)
    assert isinstance(block, str) and block.startswith("## Relevant Memory") and "Osaka" in block


def test_remember_without_user_creates_lazily_and_batches(hub: Any, keys: dict[str, str]) -> None:
    alice = hub(keys["alice"], batch_size=2)
    messages = [
        {"role": "user", "content": f"fact number {i}", "name": "alice", "tool_call_id": None}
        for i in range(5)
    ]
    stored = alice.remember("lazy", messages)
    assert stored["created"] == 5 and [e["sequence"] for e in stored["events"]] == [1, 2, 3, 4, 5]
    # A chat message is stored as sent (its `name` too); keys the service does not know travel in
    # metadata instead of being refused.
    assert stored["events"][0]["metadata"] == {}
    assert alice.list_events("lazy", limit=1, format="openai")[0] == {
        "role": "user",
        "content": "fact number 4",
        "name": "alice",
    }
    odd = alice.remember("lazy", [{"role": "user", "content": "hi", "mood": "fine"}])
    assert odd["events"][0]["metadata"] == {"mood": "fine"}
    assert alice.get_session("lazy")["user_id"] == ""
    assert alice.remember("lazy", []) == {"session": "lazy", "created": 0, "events": []}


def test_search_context_browse_stats(hub: Any, keys: dict[str, str]) -> None:
    alice = hub(keys["alice"])
    alice.remember("trip", CHAT)
    alice.remember(
        "work",
        [{"role": "user", "content": "The quarterly report is due Friday."}],
        channel="slack",
    )

    found = alice.search("passport Osaka", top_k=3, mode="hybrid")
    assert found["mode"] == "hybrid" and found["results"]
    assert "Osaka" in found["results"][0]["text"] and found["results"][0]["session"] == "trip"
    only_work = alice.search("report", session="work", mode="text", roles=["user"])
    assert {r["session"] for r in only_work["results"]} == {"work"}
    by_session = alice.search("Osaka passport", mode="text", group_by="session", hits_per_session=1)
    assert [(g["session"], g["hits"]) for g in by_session["sessions"]] == [("trip", 1)]
    assert [r["session"] for r in by_session["results"]] == ["trip"]
    future = datetime.now(UTC) + timedelta(days=1)
    assert alice.search("Osaka", since=future)["results"] == []
    with pytest.raises(BadRequestError) as bad:
        alice.search("Osaka", since=future, until=future - timedelta(days=2))
    assert bad.value.code == "invalid_time_range"

    context = alice.context("trip", "Osaka", budget=400, top_k=5)
    assert context["session"] == "trip" and context["tokens"] <= 400
    assert context["markdown"].startswith("## Relevant Memory")
    assert {i["source"] for i in context["items"]} >= {"recent"}

    browsed = alice.browse(session="trip", role="user")
    assert [e["content"] for e in browsed] == [CHAT[1]["content"]] and browsed[0]["channel"]
    assert [e["session"] for e in alice.iter_browse(limit=1)] == ["trip", "trip", "trip", "work"]
    assert [e["session"] for e in alice.browse(channel="slack")] == ["work"]

    stats = alice.stats()
    assert (stats["tenant"], stats["sessions"], stats["events"]) == ("alice", 2, 4)


def test_search_and_context_read_relative_dates_against_as_of(
    hub: Any, keys: dict[str, str]
) -> None:
    alice = hub(keys["alice"])
    alice.remember(
        "last-week",
        [
            {
                "role": "user",
                "content": "We went hiking in the hills.",
                "created_at": "2023-05-16T10:00:00Z",
            }
        ],
    )
    alice.remember(
        "this-week",
        [
            {
                "role": "user",
                "content": "We went hiking in the hills.",
                "created_at": "2023-05-23T10:00:00Z",
            }
        ],
    )
    asked = datetime(2023, 5, 24, 12, tzinfo=UTC)
    assert [
        r["session"] for r in alice.search("hiking last week", top_k=1, as_of=asked)["results"]
    ] == ["last-week"]
    assert [r["session"] for r in alice.search("hiking last week", top_k=1)["results"]] == [
        "this-week"
    ]
    items = alice.context(query="hiking last week", top_k=1, as_of=asked)["items"]
    assert [i["session"] for i in items if i["source"] == "relevant"] == ["last-week"]
    with pytest.raises(BadRequestError) as bad:
        alice.search("hiking", as_of="last week")
    assert bad.value.code == "validation_error"


def test_search_synthesize(hub: Any, keys: dict[str, str], settings: Any) -> None:
    import json

    from tests.memoryhub.test_summarisers import completion, fake_llm

    alice = hub(keys["alice"])
    alice.remember("trip", CHAT)
    with pytest.raises(BadRequestError) as refused:
        alice.search("Where does the traveller fly?", synthesize=True)
    assert refused.value.code == "llm_not_configured"
    reply = {"answer": "To Osaka, in May.", "citations": [1, 5]}
    with fake_llm(lambda body: (200, completion(json.dumps(reply)))) as fake:
        settings.MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS = ("127.0.0.1/32",)
        settings.MEMORYHUB_SUMMARISER, settings.MEMORYHUB_SUMMARISER_URL = "http", fake.url
        settings.MEMORYHUB_SUMMARISER_MODEL = "fake-7b"
        found = alice.search("Osaka", mode="text", synthesize=True)
    synthesis = found["synthesis"]
    assert synthesis["answer"] == "To Osaka, in May." and synthesis["model"] == "fake-7b"
    assert synthesis["citations"] == [{"index": 0, "chunk_id": found["results"][0]["chunk_id"]}]
    assert "synthesis" not in alice.search("Osaka", mode="text")


def test_seed_ranking_options(hub: Any, keys: dict[str, str]) -> None:
    """profile seed002, decay_weight and min_cosine reach the server; a bad value is a 400."""
    alice = hub(keys["alice"])
    alice.remember("trip", CHAT)
    assert alice.search("Osaka in May")["results"]
    assert alice.search("Osaka in May", min_cosine=1.0)["results"] == []  # nothing is that close
    assert alice.search("Osaka", profile="seed002")["profile"] == "seed002"
    assert alice.search("Osaka", decay_weight=0.5)["results"]
    relevant = [
        i
        for i in alice.context(query="Osaka in May", min_cosine=1.0)["items"]
        if i["source"] == "relevant"
    ]
    assert relevant == []
    assert [i for i in alice.context(query="Osaka in May")["items"] if i["source"] == "relevant"]
    with pytest.raises(BadRequestError) as bad:
        alice.search("Osaka", decay_weight=2)
    assert bad.value.code == "validation_error"
