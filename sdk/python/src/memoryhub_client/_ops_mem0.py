"""The mem0-style calls on notes and facts alike (requests only): `get`/`update`/`delete`/`history`
on a memory ref, `get_all` of a user's notes and facts as Memory dicts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from memoryhub_client._agent import ClientState
from memoryhub_client._core import (
    Call,
    Flow,
    as_is,
    exchange,
    next_page,
    path,
)
from memoryhub_client._ops_memory import _note_fields, list_facts, list_notes
from memoryhub_client.types import (
    Deleted,
    FactHistory,
    Memory,
    Page,
)

# --- mem0-style: one call for notes and facts ----------------------------------------------------
# A memory is a note or a fact. Its id names the kind: "note:<note_id>" or "fact:<fact id>", as
# get_all() returns them; a search result (kind "note" or "fact", its note_id or fact_id in the
# metadata) or a Memory dict may be given instead.

MemoryRef = str | Mapping[str, Any]


def memory_ref(memory: MemoryRef) -> tuple[Literal["note", "fact"], str]:
    """("note" | "fact", its id) of "note:<id>", "fact:<id>", a Memory or a search result."""
    if isinstance(memory, Mapping):
        kind, metadata = memory.get("kind"), memory.get("metadata") or {}
        if isinstance(memory.get("id"), str) and ":" in memory["id"]:
            memory = memory["id"]
        elif kind in ("note", "fact") and metadata.get(f"{kind}_id") not in (None, ""):
            return kind, str(metadata[f"{kind}_id"])
        else:
            raise ValueError(
                f"not a note or a fact: kind {kind!r} (events, summaries and documents have "
                "calls of their own)"
            )
    kind, _, ident = str(memory).partition(":")
    if kind not in ("note", "fact") or not ident:
        raise ValueError(f"a memory id is 'note:<note_id>' or 'fact:<fact id>', not {memory!r}")
    return kind, ident  # type: ignore[return-value]


def delete(memory: MemoryRef) -> Call[Deleted]:
    """Delete a note or a fact: `memory` is "note:<note_id>", "fact:<fact id>" (as get_all returns
    them), or a search result or Memory dict. A fact's history goes with it."""
    kind, ident = memory_ref(memory)
    return Call("DELETE", path(f"{kind}s", ident), as_is, idempotent=True)


def history(memory: MemoryRef) -> Call[FactHistory]:
    """Every version of a fact, oldest first, with when each was true (GET /facts/{id}/history/).
    Notes keep no history: a note's id is a ValueError."""
    kind, ident = memory_ref(memory)
    if kind != "fact":
        raise ValueError("only facts keep a history; a note is as it was last written")
    return Call("GET", path("facts", ident, "history"), as_is, idempotent=True)


def get(memory: MemoryRef) -> Call[Memory]:
    """A note or a fact, as a Memory: `memory` is "note:<note_id>", "fact:<fact id>" (as get_all
    returns them), or a search result or Memory dict. Another user's or tenant's is
    NotFoundError."""
    kind, ident = memory_ref(memory)
    return Call("GET", path(f"{kind}s", ident), _reader(kind), idempotent=True)


def update(
    memory: MemoryRef,
    *,
    content: str | None = None,
    tags: Sequence[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
    importance: float | None = None,
) -> Call[Memory]:
    """Change the given fields of a note or a fact (its PATCH); the rest stays. A fact's new
    content opens a new version (history). Returns the Memory as it is now."""
    kind, ident = memory_ref(memory)
    fields = _note_fields(content=content, tags=tags, metadata=metadata, importance=importance)
    return Call("PATCH", path(f"{kind}s", ident), _reader(kind), json=fields, idempotent=True)


def _reader(kind: Literal["note", "fact"]) -> Any:
    def read(record: Any) -> Memory:
        return as_memory(kind, record)

    return read


def get_all(
    state: ClientState,
    user_id: str,
    *,
    kinds: Sequence[Literal["note", "fact"]] = ("note", "fact"),
    as_of: datetime | str | None = None,
    page_size: int = 200,
) -> Flow[list[Memory]]:
    """Every note and fact of the end user `user_id` (theirs, not the shared ones), notes first,
    each newest first, in one shape (Memory) whose `id` delete() and history() take. Summaries,
    documents and the conversations themselves are not included (list_summaries, list_documents,
    browse). `as_of`: the facts as they stood then; notes have no history and are as they are
    now."""
    found: list[Memory] = []
    calls = {
        "note": list_notes(user_id=user_id, limit=page_size),
        "fact": list_facts(user_id=user_id, as_of=as_of, limit=page_size),
    }
    for kind in ("note", "fact"):
        if kind not in kinds:
            continue
        call: Call[Page[Any]] | None = calls[kind]
        while call is not None:
            page = yield from exchange(call, state.policy)
            # A tenant-wide key sees shared memories too: get_all is the user's own.
            found += [
                as_memory(kind, record)
                for record in page.results
                if record.get("user_id") == user_id
            ]
            call = next_page(call, page)
    return found


def as_memory(kind: Literal["note", "fact"], record: Mapping[str, Any]) -> Memory:
    ident = record["note_id"] if kind == "note" else record["id"]
    return {
        "id": f"{kind}:{ident}",
        "kind": kind,
        "memory": record.get("content", ""),
        "user_id": record.get("user_id", ""),
        "tags": list(record.get("tags") or []),
        "metadata": dict(record.get("metadata") or {}),
        "created_at": record.get("created_at", ""),
        "updated_at": record.get("updated_at", ""),
        "record": dict(record),
    }
