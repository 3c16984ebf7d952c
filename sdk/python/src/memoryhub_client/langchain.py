"""LangChain: a chat message history and a retriever (`pip install memoryhub-client[langchain]`).

    from memoryhub_client import MemoryHub
    from memoryhub_client.langchain import MemoryHubChatMessageHistory, MemoryHubRetriever

    hub = MemoryHub()
    history = MemoryHubChatMessageHistory("chat-1", hub, user_id="ann")
    retriever = MemoryHubRetriever(client=hub, user_id="ann", k=4)

`MemoryHubChatMessageHistory` stores each message as one event of MemoryHub session `session_id`
(created on the first message, owned by `user_id` when given): its role, text and tool calls in
the event's fields (so search, summaries and context see the conversation) and the message
itself in the event's metadata ("langchain_message"), so it reads back equal. Events written by
other clients come back as Human/AI/System/Tool messages. The history acts for `user_id`: another
user's session (or one of no user) raises ConflictError `owner_mismatch`, also with a tenant-wide
key. `clear()` deletes the session's events on the server with the search chunks and summaries
derived from them: gone from every read (a tenant with an immutable transcript refuses).

`MemoryHubRetriever` runs `/search/` for the query as `user_id`: that end user's memories and the
shared ones (with a tenant-wide key and no `user_id`: every user's), in `scope`, with `tags`,
`kinds`, `session` and any other search field in `search_kwargs`; `k` results (also `invoke(query,
k=…)`). Each is a Document whose page_content is the matched text and whose metadata is the rest of
the search result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memoryhub_client import _frameworks as fw

try:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.documents import Document
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
        message_to_dict,
        messages_from_dict,
    )
    from langchain_core.retrievers import BaseRetriever
    from pydantic import ConfigDict
except ImportError as error:  # pragma: no cover - depends on the install
    raise fw.missing("langchain", error) from error


MESSAGE = "langchain_message"  # the event metadata key holding the message as added
ROLES = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "tool",
    "developer": "system",
}


def message_event(message: BaseMessage) -> dict[str, Any]:
    """The MemoryHub event that stores `message` (kept whole in metadata["langchain_message"])."""
    role = ROLES.get(message.type)
    if role is None:  # ChatMessage and other kinds: their own role when MemoryHub has it
        role = ROLES.get(str(getattr(message, "role", "")), "assistant")
    event: dict[str, Any] = {
        "role": role,
        "content": fw.text_of(message.content),
        "metadata": {MESSAGE: message_to_dict(message)},
    }
    if isinstance(message, AIMessage) and message.tool_calls:
        event["tool_calls"] = [
            {"id": c.get("id") or "", "name": c["name"], "arguments": c["args"]}
            for c in message.tool_calls
        ]
    if isinstance(message, ToolMessage):
        event["tool_call_id"] = message.tool_call_id
    if not event["content"].strip() and not (event.get("tool_calls") or event.get("tool_call_id")):
        event["tool_name"] = message.type  # an empty message is still stored (and given back)
    return event


def event_message(event: dict[str, Any]) -> BaseMessage:
    """The LangChain message of a stored event: the one added, else built from its fields."""
    stored = (event.get("metadata") or {}).get(MESSAGE)
    if isinstance(stored, dict):
        return messages_from_dict([stored])[0]
    role, content = event.get("role"), event.get("content") or ""
    if role == "user":
        return HumanMessage(content)
    if role == "system":
        return SystemMessage(content)
    if role == "tool":
        return ToolMessage(content, tool_call_id=event.get("tool_call_id") or "")
    calls = [
        {
            "id": c.get("id"),
            "name": c.get("name", ""),
            "args": c["arguments"] if isinstance(c.get("arguments"), dict) else {},
        }
        for c in event.get("tool_calls") or []
    ]
    return AIMessage(content, tool_calls=calls)


class MemoryHubChatMessageHistory(BaseChatMessageHistory):
    """LangChain's chat history over the events of MemoryHub session `session_id`."""

    def __init__(
        self, session_id: str, client: Any, *, user_id: str | None = None, async_client: Any = None
    ) -> None:
        self.session_id = session_id
        self.client = client  # a MemoryHub
        # an AsyncMemoryHub for the a* methods (else: client in a thread)
        self.async_client = async_client
        self.user_id = user_id

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        return [
            event_message(e)
            for e in fw.drive(self.client, fw.visible_events(self.session_id, self.user_id))
        ]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        fw.drive(
            self.client,
            fw.append(self.session_id, [message_event(m) for m in messages], self.user_id),
        )

    def clear(self) -> None:
        fw.drive(self.client, fw.clear(self.session_id, self.user_id))

    async def aget_messages(self) -> list[BaseMessage]:
        events = await fw.adrive(
            self.async_client or self.client, fw.visible_events(self.session_id, self.user_id)
        )
        return [event_message(e) for e in events]

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        await fw.adrive(
            self.async_client or self.client,
            fw.append(self.session_id, [message_event(m) for m in messages], self.user_id),
        )

    async def aclear(self) -> None:
        await fw.adrive(self.async_client or self.client, fw.clear(self.session_id, self.user_id))


class MemoryHubRetriever(BaseRetriever):
    """A LangChain retriever over MemoryHub's search (POST /search/)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: Any = None
    """A MemoryHub (sync calls)."""
    async_client: Any = None
    """An AsyncMemoryHub for ainvoke (without one, ainvoke runs the sync client in a thread)."""
    user_id: str | None = None
    scope: str | None = None
    session: str | None = None
    tags: list[str] | None = None
    kinds: list[str] | None = None
    k: int = 4
    search_kwargs: dict[str, Any] = {}
    """Any other field of the search request (mode, since, until, min_cosine, …)."""

    def _request(self, query: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        request = {
            "user_id": self.user_id,
            "scope": self.scope,
            "session": self.session,
            "tags": self.tags,
            "kinds": self.kinds,
            "top_k": kwargs.pop("k", self.k),
            **self.search_kwargs,
            **kwargs,
        }
        return {name: value for name, value in request.items() if value is not None}

    @staticmethod
    def _documents(response: dict[str, Any]) -> list[Document]:
        docs = []
        for result in response["results"]:
            metadata = {name: value for name, value in result.items() if name != "text"}
            docs.append(
                Document(page_content=result["text"], metadata=metadata, id=str(result["chunk_id"]))
            )
        return docs

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return self._documents(self.client.search(query, **self._request(query, kwargs)))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        if self.async_client is None:
            return await super()._aget_relevant_documents(query, run_manager=run_manager, **kwargs)
        return self._documents(
            await self.async_client.search(query, **self._request(query, kwargs))
        )
