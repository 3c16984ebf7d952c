"""What the framework integrations share (no framework is imported here).

An integration's operation is written once, as a program: a generator that yields the client
calls it needs (`call("list_notes", ...)`) and receives their results (or has the client's
exception thrown into it). `drive` runs a program with a `MemoryHub`, `adrive` with an
`AsyncMemoryHub`, so the sync and async faces of an integration share one body.

The transcript of a session is MemoryHub's append-only event log. Integrations whose interface can
remove messages (a chat history's `clear`, an agent session's `pop_item` / `clear_session`) do not
delete events: they write a retraction into the session's metadata, under "transcript":
`{"cleared_through": N, "retracted": [sequence, ...]}`. Reads through the integration skip events
at or below `cleared_through` and those listed in `retracted`; the log, search, summaries and fact
extraction keep them (the transcript stays whole, also on a server that keeps an immutable
transcript). To forget a conversation for good, delete the session (`delete_session`).
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

from memoryhub_client.errors import MemoryHubError, NotFoundError

# A client call: (method name, positional arguments, keyword arguments).
Step = tuple[str, tuple[Any, ...], dict[str, Any]]
Program = Generator[Step, Any, Any]

TRANSCRIPT = "transcript"  # the session metadata key holding the retractions
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


def retractions(session: Mapping[str, Any] | None) -> tuple[int, set[int]]:
    """(cleared_through, retracted sequences) written in the session's metadata."""
    marks = ((session or {}).get("metadata") or {}).get(TRANSCRIPT) or {}
    return int(marks.get("cleared_through") or 0), {int(s) for s in marks.get("retracted") or []}


def visible_events(session_id: str) -> Program:
    """The session's events that the integration shows, oldest first ([] for an unknown session)."""
    try:
        session = yield call("get_session", session_id)
    except NotFoundError:
        return []
    cleared, retracted = retractions(session)
    events: list[dict[str, Any]] = []
    after = cleared
    while True:
        page = yield call("list_events", session_id, after=after, limit=EVENT_PAGE)
        events += [e for e in page.results if e["sequence"] not in retracted]
        if len(page.results) < EVENT_PAGE:
            return events
        after = page.results[-1]["sequence"]


def append(session_id: str, events: list[dict[str, Any]], user_id: str | None) -> Program:
    """Append the events in one request (the session is created on first use, owned by `user_id`)."""
    if events:
        yield call("append_events", session_id, events, user_id=user_id)


def _write_marks(session_id: str, change: Any) -> Program:
    try:
        session = yield call("get_session", session_id)
    except NotFoundError:
        return None
    metadata = dict(session.get("metadata") or {})
    marks = dict(metadata.get(TRANSCRIPT) or {})
    change(marks)
    metadata[TRANSCRIPT] = marks
    yield call("update_session", session_id, metadata=metadata)
    return None


def retract(session_id: str, sequence: int) -> Program:
    """Mark one event as removed for the integration's reads (the event itself stays)."""
    def change(marks: dict[str, Any]) -> None:
        marks["retracted"] = sorted({*marks.get("retracted", []), sequence})

    yield from _write_marks(session_id, change)


def clear(session_id: str) -> Program:
    """Hide every event stored so far from the integration's reads (the events themselves stay)."""
    try:
        page = yield call("list_events", session_id, limit=1)
    except NotFoundError:
        return None
    last = int(page.raw.get("last_sequence") or (page.results[-1]["sequence"] if page.results else 0))

    def change(marks: dict[str, Any]) -> None:
        marks["cleared_through"] = max(last, int(marks.get("cleared_through") or 0))
        marks["retracted"] = [s for s in marks.get("retracted", []) if s > marks["cleared_through"]]

    yield from _write_marks(session_id, change)
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
