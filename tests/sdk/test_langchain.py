"""LangChain: MemoryHubRetriever passes langchain-tests' standard retriever integration tests
against the live server; MemoryHubChatMessageHistory does what LangChain documents for a chat
message history (add, read back equal, clear) with LangChain's own message classes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_tests")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.messages import (  # noqa: E402
    AIMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_tests.integration_tests import RetrieversIntegrationTests  # noqa: E402
from memoryhub_client import AsyncMemoryHub, MemoryHub  # noqa: E402
from memoryhub_client.langchain import MemoryHubChatMessageHistory, MemoryHubRetriever  # noqa: E402

from tests.sdk.conftest import FAST  # noqa: E402

TRAINS = [
    "Ann takes the train to Lyon on Mondays.",
    "Ann's train pass expires in May.",
    "Ann prefers a window seat on the train.",
    "Ann missed the night train once.",
    "Ann books trains a week ahead.",
]


# The standard suite's async test runs on anyio's pytest plugin, as tests/sdk/test_async_native.py
# does.
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    monkeypatch.setenv("LANGCHAIN_TRACING_V2", "false")


@pytest.fixture
def sync_hub(live_server: Any, keys: dict[str, str]) -> Iterator[MemoryHub]:
    with MemoryHub(keys["alice"], live_server.url, **FAST) as hub:
        yield hub


class TestMemoryHubRetrieverStandard(RetrieversIntegrationTests):
    """langchain-tests' standard suite; the fixture stores Ann's memories in the live server."""

    @pytest.fixture(autouse=True)
    def _memories(self, sync_hub: MemoryHub) -> None:
        for text in TRAINS:
            sync_hub.create_note(text, user_id="ann")
        sync_hub.create_note("Bob's train leaves at noon.", user_id="bob")
        self._hub = sync_hub

    @property
    def retriever_constructor(self) -> type[MemoryHubRetriever]:
        return MemoryHubRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"client": self._hub, "user_id": "ann"}

    @property
    def retriever_query_example(self) -> str:
        return "train"


def test_retriever_filters_and_async_client(
    sync_hub: MemoryHub, live_server: Any, keys: dict[str, str]
) -> None:
    for text in TRAINS:
        sync_hub.create_note(text, user_id="ann", tags=["travel"])
    sync_hub.create_note("Bob's train leaves at noon.", user_id="bob", tags=["travel"])
    sync_hub.create_note("Ann's train ticket is in her email.", user_id="ann")

    retriever = MemoryHubRetriever(
        client=sync_hub, user_id="ann", tags=["travel"], kinds=["note"], k=10
    )
    docs = retriever.invoke("train")
    assert {d.page_content for d in docs} == set(TRAINS)  # Ann's, tagged travel; never Bob's
    assert all(
        isinstance(d, Document) and d.metadata["user_id"] == "ann" and d.metadata["kind"] == "note"
        for d in docs
    )
    assert len(retriever.invoke("train", k=2)) == 2

    async def via_async() -> list[Document]:
        async with AsyncMemoryHub(keys["alice"], live_server.url, **FAST) as hub:
            return await MemoryHubRetriever(
                client=sync_hub, async_client=hub, user_id="bob"
            ).ainvoke("train")

    assert [d.page_content for d in asyncio.run(via_async())] == ["Bob's train leaves at noon."]


def test_chat_history_add_read_back_clear(
    sync_hub: MemoryHub, live_server: Any, keys: dict[str, str]
) -> None:
    history = MemoryHubChatMessageHistory("lc-chat", sync_hub, user_id="ann")
    assert history.messages == []
    messages = [
        SystemMessage("You are a travel assistant."),
        HumanMessage("Book me a train to Lyon.", id="h1"),
        AIMessage(
            "",
            tool_calls=[{"id": "call_1", "name": "book_train", "args": {"to": "Lyon", "seats": 1}}],
        ),
        ToolMessage("Booked: seat 42.", tool_call_id="call_1"),
        AIMessage("Done: seat 42 on the 9:12.", response_metadata={"model": "x"}),
    ]
    history.add_messages(messages[:2])
    history.add_messages(messages[2:])
    assert history.messages == messages  # equal, tool calls and ids included
    assert MemoryHubChatMessageHistory("lc-chat", sync_hub).messages == messages

    events = sync_hub.list_events("lc-chat").results
    assert [e["role"] for e in events] == ["system", "user", "assistant", "tool", "assistant"]
    assert events[2]["tool_calls"] == [
        {"id": "call_1", "name": "book_train", "arguments": {"to": "Lyon", "seats": 1}}
    ]
    assert events[3]["tool_call_id"] == "call_1"
    assert sync_hub.get_session("lc-chat")["user_id"] == "ann"

    history.clear()
    assert history.messages == []
    assert sync_hub.list_events("lc-chat").results == []  # deleted on the server
    history.add_user_message("Hello again.")
    history.add_ai_message("Hi!")
    assert history.messages == [HumanMessage("Hello again."), AIMessage("Hi!")]

    async def via_async(async_client: Any) -> list[Any]:
        if async_client is not None:
            history.async_client = async_client
        await history.aadd_messages(
            [HumanMessage(f"One more ({history.async_client is not None}).")]
        )
        messages = await history.aget_messages()
        await history.aclear()
        return messages + await history.aget_messages()

    # the sync client, in a thread
    assert asyncio.run(via_async(None))[-1] == HumanMessage("One more (False).")

    async def with_async_client() -> list[Any]:
        async with AsyncMemoryHub(keys["alice"], live_server.url, **FAST) as hub:
            return await via_async(hub)

    assert asyncio.run(with_async_client()) == [HumanMessage("One more (True).")]
    assert sync_hub.list_events("lc-chat").results == []


def test_chat_history_reads_other_clients_events(sync_hub: MemoryHub) -> None:
    sync_hub.remember(
        "plain-chat",
        [
            {"role": "user", "content": "I moved to Lyon."},
            {"role": "assistant", "content": "Noted."},
        ],
    )
    assert MemoryHubChatMessageHistory("plain-chat", sync_hub).messages == [
        HumanMessage("I moved to Lyon."),
        AIMessage("Noted."),
    ]
