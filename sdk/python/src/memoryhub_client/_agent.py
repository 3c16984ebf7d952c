"""remember(): chat messages in, events stored; the one multi-request operation (a flow)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memoryhub_client._core import Flow, RetryPolicy, body, chunked, exchange
from memoryhub_client._ops_sessions import append_events, create_session, keyed
from memoryhub_client.types import AppendResult

EVENT_FIELDS = frozenset({
    "role", "content", "sequence", "tool_name", "tool_args", "tool_result", "metadata", "importance",
    "created_at", "idempotency_key",
})
# Roles other chat APIs use, mapped onto the service's four (user, assistant, tool, system).
ROLE_ALIASES = {"developer": "system", "function": "tool", "human": "user", "ai": "assistant"}
TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})


@dataclass(frozen=True)
class ClientState:
    """What a flow may read from the client that drives it."""

    policy: RetryPolicy
    batch_size: int = 500  # events per request; the service takes at most 1000 by default


def message_event(message: Mapping[str, Any] | str) -> dict[str, Any]:
    """A chat message (an OpenAI-style dict, or a plain string meaning a user message) as an
    event with an idempotency key. Keys the service does not know go into `metadata`, so that a
    message from another API is stored whole instead of refused."""
    if isinstance(message, str):
        return keyed({"role": "user", "content": message})
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


def _content_text(content: Any) -> str:
    """Multi-part content ([{"type": "text", "text": …}, …]) as its text; anything else as JSON."""
    if isinstance(content, list):
        texts = [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") in TEXT_PART_TYPES]
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
    placement = body(user_id=user_id, agent=agent, channel=channel, workspace=workspace, title=title)
    if placement:
        yield from exchange(create_session(session, get_or_create=True, **placement), state.policy)
    result: AppendResult = {"session": session, "created": 0, "events": []}
    for batch in chunked(events, state.batch_size):
        part = yield from exchange(append_events(session, batch, user_id=user_id), state.policy)
        result = {"session": part["session"], "created": result["created"] + part["created"],
                  "events": result["events"] + part["events"]}
    return result
