"""remember(): chat messages in, events stored; the one multi-request operation (a flow)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memoryhub_client._core import Flow, RetryPolicy, body, chunked, exchange
from memoryhub_client._ops_sessions import append_events, create_session, keyed
from memoryhub_client.types import AppendResult

EVENT_FIELDS = frozenset(
    {
        "role",
        "content",
        "sequence",
        "tool_name",
        "tool_args",
        "tool_result",
        "metadata",
        "importance",
        "created_at",
        "idempotency_key",
    }
)
# Roles other chat APIs use, mapped onto the service's four (user, assistant, tool, system).
ROLE_ALIASES = {"developer": "system", "function": "tool", "human": "user", "ai": "assistant"}
TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})
# What the service reads of a chat message as sent (OpenAI or Anthropic shape): such a message is
# stored whole and comes back equal from list_events/restore(format="openai"|"anthropic").
CHAT_FIELDS = frozenset({"tool_calls", "tool_call_id", "name"})
CHAT_ROLES = frozenset({"user", "assistant", "tool", "system"})
PART_TYPES = frozenset(
    {
        "text",
        "refusal",
        "image_url",
        "input_audio",
        "file",
        "image",
        "document",
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
    }
)
CALL_KEYS = frozenset({"id", "type", "function", "name", "arguments"})


@dataclass(frozen=True)
class ClientState:
    """What a flow may read from the client that drives it."""

    policy: RetryPolicy
    batch_size: int = 500  # events per request; the service takes at most 1000 by default


def message_event(message: Mapping[str, Any] | str) -> dict[str, Any]:
    """A chat message (an OpenAI- or Anthropic-style dict, or a plain string meaning a user
    message) as an event with an idempotency key. A message of the service's roles, content parts
    and tool-call form is sent as it is (stored whole: list_events(format=…) gives it back equal);
    another (a "developer" role, Responses-API parts) is converted. Keys the service does not know
    go into `metadata`, so that a message from another API is stored instead of refused."""
    if isinstance(message, str):
        return keyed({"role": "user", "content": message})
    if _as_sent(message):
        event = {"role": "user"} | {
            k: v
            for k, v in message.items()
            if (k in EVENT_FIELDS or k in CHAT_FIELDS) and v is not None
        }
        if "content" in message and message["content"] is None:
            event["content"] = None
        extra = {
            k: v
            for k, v in message.items()
            if k not in EVENT_FIELDS | CHAT_FIELDS and v is not None
        }
        if extra:
            event["metadata"] = {**extra, **event.get("metadata", {})}
        return keyed(event)
    event = {k: v for k, v in message.items() if k in EVENT_FIELDS and v is not None}
    extra = {k: v for k, v in message.items() if k not in EVENT_FIELDS and v is not None}
    role = str(event.get("role", "user"))
    event["role"] = ROLE_ALIASES.get(role, role)
    if "content" in event and not isinstance(event["content"], str):
        event["content"] = _content_text(event["content"])
    calls = extra.pop("tool_calls", None)
    if calls:
        event.setdefault("tool_args", calls)
        names = [str(c.get("function", {}).get("name", "")) for c in calls if isinstance(c, dict)]
        if any(names):
            event.setdefault("tool_name", ",".join(n for n in names if n)[:200])
    if extra:
        event["metadata"] = {**extra, **event.get("metadata", {})}
    return keyed(event)


def _as_sent(message: Mapping[str, Any]) -> bool:
    """Whether the service takes the message as it is: one of its roles, content parts it knows,
    tool calls of the chat form. Anything else is converted (the older, lossy way) rather than
    refused."""
    content = message.get("content")
    calls = message.get("tool_calls")
    return (
        message.get("role", "user") in CHAT_ROLES
        and (
            content is None
            or isinstance(content, str)
            or (
                isinstance(content, list)
                and all(isinstance(p, dict) and p.get("type") in PART_TYPES for p in content)
            )
        )
        and (
            calls is None
            or (
                isinstance(calls, list)
                and all(
                    isinstance(c, dict)
                    and set(c) <= CALL_KEYS
                    and (
                        not isinstance(c.get("function"), dict)
                        or set(c["function"]) <= {"name", "arguments"}
                    )
                    for c in calls
                )
            )
        )
    )


def _content_text(content: Any) -> str:
    """Multi-part content ([{"type": "text", "text": …}, …]) as its text; anything else as JSON."""
    if isinstance(content, list):
        texts = [
            p.get("text", "")
            for p in content
            if isinstance(p, dict) and p.get("type") in TEXT_PART_TYPES
        ]
        if texts:
            return "\n".join(t for t in texts if isinstance(t, str))
    return json.dumps(content, default=str)


def remember(
    state: ClientState,
    session: str,
    messages: Sequence[Mapping[str, Any] | str],
    *,
    user_id: str | None = None,
    agent: str | None = None,
    channel: str | None = None,
    workspace: str | None = None,
    title: str | None = None,
) -> Flow[AppendResult]:
    """Store chat messages in `session`, creating it if needed; returns the stored events.

    With `user_id` (or agent/channel/workspace/title) the session is first got-or-created with
    those fields, so that a new session belongs to the user (two requests); without, the append
    creates an unknown session by itself (one request). With `user_id` the session must be that
    user's: another user's or an unowned session is a ConflictError (`owner_mismatch`) and nothing
    is stored. Every message carries an idempotency key,
    so retries never store a message twice. More than `batch_size` messages go in several
    requests, each atomic."""
    events = [message_event(m) for m in messages]
    placement = body(
        user_id=user_id, agent=agent, channel=channel, workspace=workspace, title=title
    )
    if placement:
        yield from exchange(create_session(session, get_or_create=True, **placement), state.policy)
    result: AppendResult = {"session": session, "created": 0, "events": []}
    for batch in chunked(events, state.batch_size):
        part = yield from exchange(append_events(session, batch, user_id=user_id), state.policy)
        result = {
            "session": part["session"],
            "created": result["created"] + part["created"],
            "events": result["events"] + part["events"],
        }
    return result
