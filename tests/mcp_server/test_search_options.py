"""memory_search's filters and extras as an agent sends them through the official client, over
each transport: tags, agent, since/until, expand (a summary hit with what it condenses) and
synthesize (accepted: without a model it is REST's llm_not_configured); and scratchpad_clear."""

from __future__ import annotations

import json
from typing import Any

import pytest

from retrieval.mcp_server import catalog, server
from tests.base import add_memories, make_key, make_tenant
from tests.mcp_server.conftest import Mcp

pytestmark = pytest.mark.django_db(transaction=True)

SEARCH = {"query": "Lisbon", "scope": "account", "mode": "text"}


def _texts(result: Any) -> list[str]:
    assert not result.is_error, result.text
    return [r["text"] for r in result.data["results"]]


def test_search_filters_extras_and_scratchpad_clear(mcp: Mcp) -> None:
    tenant = make_tenant("alice")
    key = make_key(tenant)
    mcp.calls(
        key,
        [
            (
                "memory_remember",
                {
                    "session": "trip",
                    "user_id": "ann",
                    "agent": "travel-bot",
                    "events": [
                        {
                            "role": "user",
                            "content": "Ann wants an aisle seat to Lisbon.",
                            "created_at": "2026-03-01T10:00:00Z",
                        }
                    ],
                },
            ),
            (
                "memory_remember",
                {
                    "session": "cook",
                    "user_id": "ann",
                    "agent": "chef-bot",
                    "events": [
                        {
                            "role": "user",
                            "content": "Ann brings quince jam to Lisbon.",
                            "created_at": "2026-05-01T10:00:00Z",
                        }
                    ],
                },
            ),
            (
                "memory_note",
                {
                    "action": "create",
                    "user_id": "ann",
                    "content": "Lisbon hotel: Avenida.",
                    "tags": ["travel"],
                },
            ),
        ],
    )
    memories = add_memories(tenant, "cook", user_id="ann")
    tagged, by_agent, dated, expanded, synthesized, written, cleared, read = mcp.calls(
        key,
        [
            ("memory_search", {**SEARCH, "tags": ["travel"]}),
            ("memory_search", {**SEARCH, "agent": "chef-bot", "kinds": ["event"]}),
            (
                "memory_search",
                {
                    **SEARCH,
                    "since": "2026-02-01T00:00:00Z",
                    "until": "2026-04-01T00:00:00Z",
                    "kinds": ["event"],
                },
            ),
            (
                "memory_search",
                {
                    "query": "quinces",
                    "scope": "account",
                    "mode": "text",
                    "kinds": ["summary"],
                    "expand": True,
                },
            ),
            ("memory_search", {**SEARCH, "synthesize": True}),
            (
                "scratchpad_write",
                {"session": "trip", "items": [{"key": "plan", "value": "book the seat"}]},
            ),
            ("scratchpad_clear", {"session": "trip"}),
            ("scratchpad_read", {"session": "trip"}),
        ],
    )
    assert _texts(tagged) == ["Lisbon hotel: Avenida."]
    assert _texts(by_agent) == ["Ann brings quince jam to Lisbon."]
    assert _texts(dated) == ["Ann wants an aisle seat to Lisbon."]
    root = next(
        r
        for r in expanded.data["results"]
        if r["metadata"].get("summary_id") == memories["root"].pk
    )
    assert [c["text"] for c in root["expanded"]["children"]] == [
        "Leaf 1: quince talk",
        "Leaf 2: quince talk",
    ]
    # what the model reads carries the expansion too
    assert "   > Leaf 1: quince talk" in expanded.text
    assert synthesized.code == "llm_not_configured"  # taken, not refused as an option of REST only
    assert not written.is_error and cleared.data["cleared"] == 1 and cleared.data["items"] == []
    assert (
        read.data["items"] == []
        and read.data["version"] == cleared.data["version"] > written.data["version"]
    )


@pytest.fixture
def llm(settings: Any, monkeypatch: Any) -> Any:
    from tests.memoryhub.test_summarisers import completion, fake_llm

    settings.MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS = ("127.0.0.1/32",)
    settings.MEMORYHUB_SUMMARISER = "http"
    settings.MEMORYHUB_SUMMARISER_MODEL = "fake-7b"
    monkeypatch.setattr("memoryhub.plumbing.llm.RETRIES", 0)
    reply = completion(json.dumps({"answer": "An aisle seat.", "citations": [1]}))
    with fake_llm(lambda body: (200, reply)) as state:
        settings.MEMORYHUB_SUMMARISER_URL = state.url
        yield state


def test_synthesize_answers_first_in_what_the_model_reads(llm: Any) -> None:
    """With a model configured, memory_search's synthesize answers as POST /search/ does."""
    from accounts.models import ApiKey
    from memoryhub import event_log, sessions

    key = ApiKey.objects.get(prefix=ApiKey.parse_prefix(make_key(make_tenant("alice"))))
    sessions.create_session(key=key, data=sessions.SessionInput(id="trip"), get_or_create=True)
    event_log.append_events(
        key=key,
        session_id="trip",
        items=[event_log.EventInput(role="user", content="Ann wants an aisle seat to Lisbon.")],
    )
    spec = next(s for s in catalog.build() if s.name == "memory_search")
    result = server.call(spec, lambda: key, {**SEARCH, "synthesize": True})
    assert not result.is_error, result.content[0].text
    assert result.structured_content["synthesis"]["answer"] == "An aisle seat."
    assert result.content[0].text.splitlines()[0] == "Answer: An aisle seat. (from [1])"
