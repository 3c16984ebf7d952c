"""What the framework integrations share (no framework is imported here).

An integration's operation is written once, as a program: a generator that yields the client
calls it needs (`call("list_notes", ...)`) and receives their results (or has the client's
exception thrown into it). `drive` runs a program with a `MemoryHub`, `adrive` with an
`AsyncMemoryHub`, so the sync and async faces of an integration share one body.

An integration acts for the end user it is given (`user_id`): every read and write of a session
names that user, so the server refuses another user's conversation (ConflictError
`owner_mismatch`), also with a tenant-wide key; a session that does not exist yet reads as empty.
What an integration removes (a chat history's `clear`, an agent session's `pop_item` /
`clear_session`) is deleted on the server with what was derived from it (its search chunks, the
summaries covering it): gone from every read, for every client. The server deletes only a
session's newest events, which is what those operations remove.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

from memoryhub_client.errors import MemoryHubError, NotFoundError

# A client call: (method name, positional arguments, keyword arguments).
Step = tuple[str, tuple[Any, ...], dict[str, Any]]
Program = Generator[Step, Any, Any]

EVENT_PAGE = 1000  # the most events one request returns


def missing(extra: str, error: ImportError) -> ImportError:
    """The ImportError raised when an integration's framework is not installed."""
    return ImportError(f"{error}: install the extra, pip install 'memoryhub-client[{extra}]'")


def call(name: str, *args: Any, **kwargs: Any) -> Step:
    return (name, args, kwargs)


def drive(hub: Any, program: Program) -> Any:
    """Run `program` with the sync client `hub`; its return value is the result."""
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = program.throw(error) if error is not None else program.send(send)
        except StopIteration as stop:
            return stop.value
        error = None
        name, args, kwargs = step
        try:
            send = getattr(hub, name)(*args, **kwargs)
        except MemoryHubError as exc:
            send, error = None, exc


async def adrive(hub: Any, program: Program) -> Any:
    """Run `program` with the async client `hub` (a sync MemoryHub runs it in a worker thread)."""
    if not is_async(hub):
        import asyncio

        return await asyncio.to_thread(drive, hub, program)
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = program.throw(error) if error is not None else program.send(send)
        except StopIteration as stop:
            return stop.value
        error = None
        name, args, kwargs = step
        try:
            send = await getattr(hub, name)(*args, **kwargs)
        except MemoryHubError as exc:
            send, error = None, exc


def is_async(hub: Any) -> bool:
    from memoryhub_client.client import AsyncMemoryHub

    return isinstance(hub, AsyncMemoryHub)


# --- the transcript as an integration reads it ---------------------------------------------------


def visible_events(session_id: str, user_id: str | None) -> Program:
    """The session's events, oldest first ([] for an unknown session); another user's is refused."""
    events: list[dict[str, Any]] = []
    after = 0
    while True:
        try:
            page = yield call(
                "list_events", session_id, after=after, limit=EVENT_PAGE, user_id=user_id
            )
        except NotFoundError:
            return events
        events += page.results
        if len(page.results) < EVENT_PAGE:
            return events
        after = page.results[-1]["sequence"]


def append(session_id: str, events: list[dict[str, Any]], user_id: str | None) -> Program:
    """Append the events in one request (the session is created on first use, owned by
    `user_id`)."""
    if events:
        yield call("append_events", session_id, events, user_id=user_id)


def pop(session_id: str, user_id: str | None) -> Program:
    """Delete the session's newest event; returns it (None: the session has none)."""
    try:
        deleted = yield call("delete_events", session_id, limit=1, user_id=user_id)
    except NotFoundError:
        return None
    return deleted["results"][-1] if deleted["results"] else None


def clear(session_id: str, user_id: str | None) -> Program:
    """Delete every event of the session (nothing to do for an unknown session)."""
    try:
        yield call("delete_events", session_id, user_id=user_id)
    except NotFoundError:
        return None
    return None


def text_of(content: Any) -> str:
    """The text of a message content: a string, or a list of parts with "text" fields."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, Mapping) and isinstance(part.get("refusal"), str):
                texts.append(part["refusal"])
        return "\n".join(texts)
    return str(content)
