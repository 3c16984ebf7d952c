"""The OpenAI Agents SDK's `Session` over a MemoryHub session (`pip install
memoryhub-client[openai-agents]`).

    from agents import Agent, Runner
    from memoryhub_client import AsyncMemoryHub
    from memoryhub_client.openai_agents import MemoryHubSession

    session = MemoryHubSession("chat-1", AsyncMemoryHub(), user_id="ann")
    result = await Runner.run(agent, "Hello", session=session)

Each Responses-API item the Runner adds (a message, a function call, a function call's output,
any other item) is one MemoryHub event, the item kept whole in the event's metadata ("item") and
given back exactly as added; its text, role and tool call also go into the event's own fields, so
search, summaries and context see the conversation. Events written by other clients come back as
plain messages, function calls and function call outputs.

The session acts for `user_id`: it reads and writes only that end user's session (another
user's, or one of no user, raises ConflictError `owner_mismatch`, also with a tenant-wide key).
`pop_item` deletes the newest event on the server and returns its last item; `clear_session`
deletes every event. Deleted means gone from every read (events, search, context, exports), with
the search chunks and summaries derived from them; a tenant with an immutable transcript refuses
(ConflictError `immutable_transcript`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from memoryhub_client import _frameworks as fw

try:
    from agents.memory.session import SessionABC
except ImportError as error:  # pragma: no cover - depends on the install
    raise fw.missing("openai-agents", error) from error

ITEM = "item"  # the event metadata key holding the Responses-API item as added
ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}


def _plain(item: Any) -> dict[str, Any]:
    if isinstance(item, Mapping):
        return json.loads(json.dumps(item, default=str))
    if hasattr(item, "model_dump"):
        return item.model_dump(mode="json", exclude_unset=True)
    raise TypeError(f"not a Responses-API item: {item!r}")


def item_event(item: Any) -> dict[str, Any]:
    """The MemoryHub event that stores `item` (kept whole in metadata["item"])."""
    item = _plain(item)
    kind = item.get("type", "message" if "role" in item else None)
    event: dict[str, Any] = {"metadata": {ITEM: item}}
    if kind == "message":
        event["role"] = ROLES.get(str(item.get("role")), "assistant")
        event["content"] = fw.text_of(item.get("content"))
    elif kind == "function_call":
        args = item.get("arguments")
        event.update(
            role="assistant",
            content="",
            tool_calls=[
                {
                    "id": item.get("call_id") or item.get("id") or "",
                    "name": item.get("name", ""),
                    "arguments": args,
                }
            ],
        )
    elif kind == "function_call_output":
        output = item.get("output")
        event.update(
            role="tool",
            tool_call_id=item.get("call_id", ""),
            content=output if isinstance(output, str) else fw.text_of(output) or json.dumps(output),
        )
    else:  # reasoning, hosted tool calls, …: kept whole, named by their type
        event.update(
            role="assistant",
            content=fw.text_of(item.get("content") or item.get("summary")),
            tool_name=str(kind or "item"),
        )
    if not str(event.get("content") or "").strip() and not (
        event.get("tool_calls") or event.get("tool_call_id") or event.get("tool_name")
    ):
        # an empty message is still stored (and given back)
        event["tool_name"] = str(kind or "item")
    return event


def event_items(event: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Responses-API items of a stored event: the one added, else built from its fields."""
    stored = (event.get("metadata") or {}).get(ITEM)
    if isinstance(stored, dict):
        return [stored]
    if event.get("tool_calls"):
        return [
            {
                "type": "function_call",
                "call_id": c.get("id", ""),
                "name": c.get("name", ""),
                "arguments": c["arguments"]
                if isinstance(c.get("arguments"), str)
                else json.dumps(c.get("arguments")),
            }
            for c in event["tool_calls"]
        ]
    if event.get("role") == "tool":
        output = event.get("content") or json.dumps(event.get("tool_result"))
        return [
            {
                "type": "function_call_output",
                "call_id": event.get("tool_call_id") or "",
                "output": output,
            }
        ]
    return [{"role": event.get("role", "user"), "content": event.get("content") or ""}]


class MemoryHubSession(SessionABC):
    """A conversation history for the Agents SDK's Runner, stored as the events of MemoryHub
    session `session_id` (created on the first add, owned by `user_id` when given). `hub`: an
    AsyncMemoryHub (a MemoryHub works too, its calls run in a worker thread)."""

    def __init__(
        self, session_id: str, hub: Any, *, user_id: str | None = None, session_settings: Any = None
    ) -> None:
        self.session_id = session_id
        self.hub = hub
        self.user_id = user_id
        self.session_settings = session_settings

    async def _visible(self) -> list[dict[str, Any]]:
        return await fw.adrive(self.hub, fw.visible_events(self.session_id, self.user_id))

    async def get_items(self, limit: int | None = None) -> list[Any]:
        items = [item for event in await self._visible() for item in event_items(event)]
        if limit is not None:
            return items[-limit:] if limit > 0 else []
        return items

    async def add_items(self, items: list[Any]) -> None:
        await fw.adrive(
            self.hub, fw.append(self.session_id, [item_event(i) for i in items], self.user_id)
        )

    async def pop_item(self) -> Any | None:
        """The last item, its event deleted. (An event written by another client with several tool
        calls is several items: the last one is returned and the whole event deleted.)"""
        event = await fw.adrive(self.hub, fw.pop(self.session_id, self.user_id))
        return event_items(event)[-1] if event is not None else None

    async def clear_session(self) -> None:
        await fw.adrive(self.hub, fw.clear(self.session_id, self.user_id))
