"""The framework adapters act for the end user they are given, and what they clear is gone.

Two users of one tenant, ann and bob, and a tenant-wide key: an adapter made for ann over bob's
session is refused (ConflictError owner_mismatch) on every read and write and leaves bob's messages
as they were; what a LangChain history clears and an Agents session pops or clears is deleted on
the server, so REST search and context no longer find it, for any key."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("agents")

from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from memoryhub_client import AsyncMemoryHub, ConflictError, MemoryHub  # noqa: E402
from memoryhub_client.langchain import MemoryHubChatMessageHistory, MemoryHubRetriever  # noqa: E402
from memoryhub_client.openai_agents import MemoryHubSession  # noqa: E402

from accounts.models import Tenant  # noqa: E402
from tests.base import make_key, make_tenant  # noqa: E402
from tests.sdk.conftest import FAST  # noqa: E402

BOB_SAID = [
    {"role": "user", "content": "Where do I live?"},
    {"role": "assistant", "content": "You live in Lyon."},
]


@pytest.fixture
def acme(transactional_db: None) -> dict[str, str]:
    tenant = make_tenant("acme")
    return {"all": make_key(tenant), "ann": make_key(tenant, user="ann")}


@pytest.fixture
def hub(live_server: Any, acme: dict[str, str]) -> Iterator[MemoryHub]:
    with MemoryHub(acme["all"], live_server.url, **FAST) as client:
        yield client


def run(coroutine_factory: Any, live_server: Any, key: str) -> Any:
    async def scenario() -> Any:
        async with AsyncMemoryHub(key, live_server.url, **FAST) as async_hub:
            return await coroutine_factory(async_hub)

    return asyncio.run(scenario())


def lyon_found(hub: MemoryHub, session: str | None = None, **body: Any) -> bool:
    """Whether search finds "Lyon" (in `session`'s messages when given)."""
    found = hub.search("Where does the user live? Lyon", scope="account", top_k=20, **body)
    return any(
        "Lyon" in r["text"] and session in (None, (r.get("metadata") or {}).get("session"))
        for r in found["results"]
    )


def context_mentions_lyon(hub: MemoryHub, **body: Any) -> bool:
    return "Lyon" in str(
        hub.context(query="Where does the user live? Lyon", scope="account", **body)
    )


def test_an_agents_session_for_ann_refuses_bobs_session(
    hub: MemoryHub, live_server: Any, acme: dict[str, str]
) -> None:
    hub.append_events("bob-session", BOB_SAID, user_id="bob")

    async def each_call(async_hub: AsyncMemoryHub) -> list[str]:
        session = MemoryHubSession("bob-session", async_hub, user_id="ann")
        codes = []
        for call in (
            session.get_items,
            session.pop_item,
            session.clear_session,
            lambda: session.add_items([{"role": "user", "content": "I am ann."}]),
        ):
            try:
                await call()
                codes.append("answered")
            except ConflictError as error:
                codes.append(error.code)
        return codes

    assert run(each_call, live_server, acme["all"]) == ["owner_mismatch"] * 4

    # With a key limited to ann, bob's session is not there to read, pop or clear.
    async def limited(async_hub: AsyncMemoryHub) -> tuple[Any, Any]:
        session = MemoryHubSession("bob-session", async_hub)
        await session.clear_session()
        return await session.get_items(), await session.pop_item()

    assert run(limited, live_server, acme["ann"]) == ([], None)
    assert [e["content"] for e in hub.iter_events("bob-session")] == [
        "Where do I live?",
        "You live in Lyon.",
    ]
    assert (
        run(
            lambda h: MemoryHubSession("bob-session", h, user_id="bob").get_items(),
            live_server,
            acme["all"],
        )
        == BOB_SAID
    )


def test_a_langchain_history_for_ann_refuses_bobs_session(hub: MemoryHub) -> None:
    hub.append_events("bob-session", BOB_SAID, user_id="bob")
    history = MemoryHubChatMessageHistory("bob-session", hub, user_id="ann")
    for call in (
        lambda: history.messages,
        history.clear,
        lambda: history.add_user_message("I am ann."),
    ):
        with pytest.raises(ConflictError) as refused:
            call()
        assert refused.value.code == "owner_mismatch"
    assert len(MemoryHubChatMessageHistory("bob-session", hub, user_id="bob").messages) == 2
    assert [e["content"] for e in hub.iter_events("bob-session")] == [
        "Where do I live?",
        "You live in Lyon.",
    ]


def test_a_retriever_for_ann_finds_none_of_bobs_memories(hub: MemoryHub) -> None:
    hub.append_events("bob-session", BOB_SAID, user_id="bob")
    hub.append_events(
        "ann-session", [{"role": "user", "content": "I live in Porto."}], user_id="ann"
    )
    retriever = MemoryHubRetriever(client=hub, user_id="ann", scope="account", k=10)
    texts = [d.page_content for d in retriever.invoke("Where do I live? Lyon Porto")]
    assert "I live in Porto." in texts and not any("Lyon" in t for t in texts)


def test_langchain_clear_deletes_what_it_cleared(hub: MemoryHub) -> None:
    hub.append_events("bob-session", BOB_SAID, user_id="bob")  # bob's words are not ann's to clear
    history = MemoryHubChatMessageHistory("ann-chat", hub, user_id="ann")
    history.add_messages([HumanMessage("Where do I live?"), AIMessage("You live in Lyon.")])
    assert lyon_found(hub, "ann-chat") and context_mentions_lyon(hub, session="ann-chat")
    history.clear()
    assert history.messages == [] and hub.list_events("ann-chat").results == []
    assert not lyon_found(hub, "ann-chat") and not lyon_found(hub, user_id="ann")
    assert not context_mentions_lyon(hub, session="ann-chat") and not context_mentions_lyon(
        hub, user_id="ann"
    )
    assert lyon_found(hub, "bob-session", user_id="bob") and context_mentions_lyon(
        hub, user_id="bob"
    )
    history.add_user_message("Hello again.")
    assert history.messages == [HumanMessage("Hello again.")]


def test_agents_pop_and_clear_delete_what_they_removed(
    hub: MemoryHub, live_server: Any, acme: dict[str, str]
) -> None:
    async def pop_then_clear(async_hub: AsyncMemoryHub) -> tuple[Any, list[Any]]:
        session = MemoryHubSession("ann-agent", async_hub, user_id="ann")
        await session.add_items([{"role": "user", "content": "What is my code?"}, *BOB_SAID[1:]])
        popped = await session.pop_item()
        return popped, await session.get_items()

    popped, left = run(pop_then_clear, live_server, acme["all"])
    assert popped == {"role": "assistant", "content": "You live in Lyon."}
    assert left == [{"role": "user", "content": "What is my code?"}]
    assert not lyon_found(hub) and not context_mentions_lyon(hub, session="ann-agent")
    assert [e["content"] for e in hub.iter_events("ann-agent")] == ["What is my code?"]

    async def clear(async_hub: AsyncMemoryHub) -> list[Any]:
        session = MemoryHubSession("ann-agent", async_hub, user_id="ann")
        await session.add_items(BOB_SAID[1:])
        await session.clear_session()
        return await session.get_items()

    assert run(clear, live_server, acme["all"]) == []
    assert not lyon_found(hub) and not context_mentions_lyon(hub, user_id="ann")
    found = hub.search("What is my code?", scope="account")["results"]
    assert not any("What is my code?" in r["text"] for r in found)


def test_an_immutable_transcript_refuses_to_clear(hub: MemoryHub) -> None:
    history = MemoryHubChatMessageHistory("ann-chat", hub, user_id="ann")
    history.add_messages([HumanMessage("Where do I live?"), AIMessage("You live in Lyon.")])
    Tenant.objects.filter(name="acme").update(immutable_transcript=True)
    with pytest.raises(ConflictError) as refused:
        history.clear()
    assert refused.value.code == "immutable_transcript"
    assert len(history.messages) == 2
