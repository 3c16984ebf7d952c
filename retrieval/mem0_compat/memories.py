"""mem0's memory operations on MemoryHub's own functions, with MemoryHub's ownership rules.

How mem0's entities map:
- `user_id` is a MemoryHub end user: the memory's owner (a user-limited key writes and reads as
  its own user only, as on every other path).
- `run_id` is a session (created on first use, owned by the user): a memory added with it is
  conversation-scoped in that session; as a filter it finds the memories placed in the session or
  extracted from it.
- `agent_id` is kept as the tag `agent:<id>` (lowercased: agent ids compare case-insensitively)
  and as metadata `agent_id`; as a filter it is that tag.
- A memory is a fact (`fact:<id>`) or a note (`note:<id>`): `add` writes facts; `get_all`,
  `search`, `get`, `update`, `delete` and `history` read and change both.

`add` with `infer=False` stores each message's text as a fact, verbatim (mem0's own meaning: the
messages are the memories; a fact keeps versions, so `update` and `history` work on it).
`infer=True` (mem0's default) with a fact extractor configured appends the messages to the run's
session (without `run_id`: a session of the user and agent) and runs the extractor over them there
and then; the facts it finds are the answer. With no extractor configured it stores the messages
verbatim, as `infer=False` does: what was said is kept and found, never dropped silently.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from typing import Any

from django.db import transaction

from accounts.models import ApiKey
from memoryhub import facts, notes
from memoryhub.errors import Invalid, NotFound
from memoryhub.event_log import EventInput, append_events
from memoryhub.extractors import extractor_configured
from memoryhub.models import Fact, Note, Session
from memoryhub.models.sessions import SESSION_ID_REGEX
from memoryhub.session_work import extract_events
from memoryhub.sessions import get_or_create_session_lazily, resolve_user
from memoryhub.summarisers import SummariserError
from retrieval.models import Chunk
from retrieval.scoping import build_search_request
from retrieval.search import SearchError, run_search

SOURCE = "mem0"
AGENT_TAG = "agent:"
MAX_AGENT_ID = 64 - len(AGENT_TAG)  # a tag holds 64 characters
ENTITY_FILTERS = ("user_id", "agent_id", "run_id")
ROLES = ("user", "assistant", "system", "tool")


@dataclass(frozen=True)
class Entities:
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None

    @property
    def any(self) -> bool:
        return bool(self.user_id or self.agent_id or self.run_id)


def entities_from(values: dict[str, Any], *, where: str) -> Entities:
    """mem0's entity ids from a body, a `filters` object ({"AND": [...]} is flattened) or a
    query."""
    flat = dict(values)
    if "AND" in flat:
        parts = flat.pop("AND")
        if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
            raise Invalid("invalid_filters", f"{where}: 'AND' takes a list of objects.")
        for part in parts:
            flat.update(part)
    unknown = sorted(set(flat) - set(ENTITY_FILTERS))
    if unknown:
        raise Invalid(
            "unsupported_filter",
            f"{where}: only user_id, agent_id and run_id are served, not "
            f"{', '.join(map(repr, unknown))}.",
            {"fields": unknown},
        )
    for name in ENTITY_FILTERS:
        value = flat.get(name)
        if value is not None and (
            not isinstance(value, str) or not value.strip() or len(value) > 200
        ):
            raise Invalid(
                "invalid_filters", f"{where}: {name} must be a string of 1–200 characters."
            )
    agent = flat.get("agent_id")
    if agent and len(agent) > MAX_AGENT_ID:
        raise Invalid(
            "invalid_filters", f"{where}: agent_id has at most {MAX_AGENT_ID} characters."
        )
    run = flat.get("run_id")
    if run and not re.fullmatch(SESSION_ID_REGEX, run):
        raise Invalid(
            "invalid_filters",
            f"{where}: a run_id has 1–200 characters: letters, digits and "
            ". _ : @ - (not starting with a symbol).",
        )
    return Entities(**{name: flat.get(name) for name in ENTITY_FILTERS})


def agent_tag(agent_id: str) -> str:
    return f"{AGENT_TAG}{agent_id.strip().lower()}"


# --- reading a memory ----------------------------------------------------------------------------


def memory_id(memory: Fact | Note) -> str:
    return f"fact:{memory.pk}" if isinstance(memory, Fact) else f"note:{memory.note_id}"


def find(key: ApiKey, mem_id: str, *, for_update: bool = False) -> Fact | Note:
    """The fact or note this mem0 id names, as the key may see it (404 otherwise)."""
    kind, _, ident = mem_id.partition(":")
    pk = _fact_pk(ident) if kind == "fact" else None
    if pk is not None:
        return facts.get_fact(key, pk, for_update=for_update)
    if kind == "note" and ident:
        return notes.get_note(key, ident, for_update=for_update)
    raise memory_not_found(mem_id)


def _fact_pk(ident: str) -> int | None:
    """A fact's id from the text after "fact:" (None: not one; "²" is a digit to str.isdigit)."""
    if not (ident.isascii() and ident.isdigit()) or int(ident) >= 2**63:
        return None
    return int(ident)


def memory_not_found(mem_id: str) -> NotFound:
    return NotFound("memory_not_found", f"Memory {mem_id!r} does not exist.")


def _run_of(memory: Fact | Note) -> str | None:
    session = memory.session or (memory.source_session if isinstance(memory, Fact) else None)
    return session.external_id if session else None


def as_mem0(memory: Fact | Note) -> dict[str, Any]:
    """A memory in mem0's shape."""
    metadata = memory.metadata if isinstance(memory.metadata, dict) else {}
    return {
        "id": memory_id(memory),
        "memory": memory.content,
        "user_id": memory.user_id or None,
        "agent_id": metadata.get("agent_id"),
        "run_id": _run_of(memory),
        "app_id": None,
        "metadata": metadata,
        "categories": [memory.category] if isinstance(memory, Fact) else list(memory.tags),
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
    }


def facts_of(key: ApiKey, who: Entities) -> Any:
    return facts.facts_filter(key, _filters(key, who), {})


def notes_of(key: ApiKey, who: Entities) -> Any:
    return notes.notes_filter(key, _filters(key, who), {})


def _filters(key: ApiKey, who: Entities) -> dict[str, Any]:
    # A user-limited key sees its user's memories and shared ones; it names no one else.
    resolve_user(key, who.user_id)  # a user-limited key naming another user: refused
    return {
        "user_id": who.user_id,
        "session": who.run_id,
        "tags": agent_tag(who.agent_id) if who.agent_id else None,
    }


def list_memories(
    key: ApiKey, who: Entities, *, offset: int, limit: int
) -> tuple[int, list[dict[str, Any]]]:
    """The memories (facts and notes) matching, newest change first: (count, this page)."""
    fact_rows, note_rows = facts_of(key, who), notes_of(key, who)
    count = fact_rows.count() + note_rows.count()
    wanted = offset + limit
    merged = sorted(
        [*fact_rows[:wanted], *note_rows[:wanted]], key=lambda m: m.updated_at, reverse=True
    )
    return count, [as_mem0(m) for m in merged[offset:wanted]]


# --- writing -------------------------------------------------------------------------------------


def _messages(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    out = []
    for index, message in enumerate(messages):
        role, content = message.get("role"), message.get("content")
        if role not in ROLES:
            raise Invalid(
                "invalid_message", f"Message {index}: role must be one of {', '.join(ROLES)}."
            )
        if not isinstance(content, str):
            raise Invalid(
                "invalid_message", f"Message {index}: content must be a string (text only)."
            )
        if "\x00" in content:
            raise Invalid("invalid_message", f"Message {index}: null characters are not allowed.")
        out.append((role, content))
    if not any(content.strip() for _, content in out):
        raise Invalid("invalid_message", "Give at least one message with text.")
    return out


def _placement(who: Entities) -> dict[str, Any]:
    if who.run_id:
        return {"scope": "conversation", "session": who.run_id}
    return {"scope": "workspace", "session": None}


def _tagged(who: Entities, metadata: dict[str, Any]) -> dict[str, Any]:
    """Tags and metadata that carry the agent."""
    if not who.agent_id:
        return {"tags": [], "metadata": metadata}
    return {"tags": [agent_tag(who.agent_id)], "metadata": {**metadata, "agent_id": who.agent_id}}


@transaction.atomic
def add(
    key: ApiKey,
    *,
    messages: list[dict[str, Any]],
    who: Entities,
    metadata: dict[str, Any],
    infer: bool,
) -> list[dict[str, Any]]:
    """mem0's add: the memories stored, each with event ADD (commits whole or not at all)."""
    if not who.any:
        raise Invalid("entity_required", "Give at least one of user_id, agent_id or run_id.")
    # a user-limited key writes as its user
    who = replace(who, user_id=resolve_user(key, who.user_id))
    read = _messages(messages)
    if who.run_id:
        get_or_create_session_lazily(key=key, session_id=who.run_id, user_id=who.user_id)
    if infer and extractor_configured():
        stored = _extract(key, read, who, metadata)
    else:
        stored = _store_verbatim(key, read, who, metadata)
    return [{**as_mem0(f), "event": "ADD"} for f in stored]


def _store_verbatim(
    key: ApiKey, read: list[tuple[str, str]], who: Entities, metadata: dict[str, Any]
) -> list[Fact]:
    stored = []
    for _, content in read:
        if not content.strip():
            continue
        data = {
            "content": content,
            "category": "general",
            "source": SOURCE,
            "user_id": who.user_id or "",
            **_placement(who),
            **_tagged(who, metadata),
        }
        fact, _ = facts.upsert_fact(key, data, set(data))
        stored.append(fact)
    return stored


def conversation_id(who: Entities) -> str:
    """The session of an add without run_id: one per user and agent (hashed when the ids do not
    make a session id)."""
    name = ":".join(["mem0", *(part for part in (who.user_id, who.agent_id) if part)])
    if re.fullmatch(SESSION_ID_REGEX, name):
        return name
    return "mem0-" + hashlib.sha256(name.encode()).hexdigest()[:32]


def _extract(
    key: ApiKey, read: list[tuple[str, str]], who: Entities, metadata: dict[str, Any]
) -> list[Fact]:
    session_id = who.run_id or conversation_id(who)
    result = append_events(
        key=key,
        session_id=session_id,
        user_id=who.user_id,
        items=[
            EventInput(role=role, content=content, metadata=metadata)
            for role, content in read
            if content.strip()
        ],
    )
    session = Session.objects.select_for_update().get(pk=result.session.pk)
    try:
        found = extract_events(session, [e.pk for e in result.events])
    except SummariserError:
        # The messages are stored; the background lane extracts them when the model answers again.
        return []
    tagging = _tagged(who, {})
    if not tagging["tags"]:
        return found
    return [
        facts.update_fact(
            key,
            f.pk,
            {
                "tags": sorted({*f.tags, *tagging["tags"]}),
                "metadata": {**f.metadata, **tagging["metadata"]},
            },
        )
        for f in found
    ]


@transaction.atomic
def update(
    key: ApiKey, mem_id: str, *, text: str | None, metadata: dict[str, Any] | None
) -> dict[str, Any]:
    memory = find(key, mem_id)
    changes: dict[str, Any] = {}
    if text is not None:
        changes["content"] = text
    if metadata is not None:
        kept = memory.metadata.get("agent_id") if isinstance(memory.metadata, dict) else None
        changes["metadata"] = {**metadata, **({"agent_id": kept} if kept else {})}
    if isinstance(memory, Fact):
        return as_mem0(facts.update_fact(key, memory.pk, changes))
    return as_mem0(notes.patch_note(key, memory.note_id, changes))


@transaction.atomic
def delete(key: ApiKey, mem_id: str) -> None:
    memory = find(key, mem_id)
    if isinstance(memory, Fact):
        facts.delete_fact(key, memory.pk)
    else:
        notes.delete_note(key, memory.note_id)


@transaction.atomic
def delete_all(key: ApiKey, who: Entities) -> int:
    """Every fact and note matching (at least one entity named): all deleted, or none."""
    if not who.any:
        raise Invalid(
            "entity_required", "Name at least one of user_id, agent_id or run_id to delete."
        )
    fact_ids = list(facts_of(key, who).values_list("pk", flat=True))
    note_ids = list(notes_of(key, who).values_list("note_id", flat=True))
    for pk in fact_ids:
        facts.delete_fact(key, pk)
    for note_id in note_ids:
        notes.delete_note(key, note_id)
    return len(fact_ids) + len(note_ids)


def history(key: ApiKey, mem_id: str) -> list[dict[str, Any]]:
    """A fact's versions as mem0's ADD / UPDATE / DELETE entries (also after its deletion); a note
    keeps no versions: one ADD entry with its text as it is now."""
    kind, _, ident = mem_id.partition(":")
    if kind == "note":
        note = find(key, mem_id)
        return [_entry(mem_id, None, note.content, "ADD", note.created_at, note.user_id)]
    pk = _fact_pk(ident) if kind == "fact" else None
    if pk is None:
        raise memory_not_found(mem_id)
    try:
        versions = facts.fact_history(key, pk)
    except NotFound:
        raise memory_not_found(mem_id) from None
    out, before = [], None
    for version in versions:
        out.append(
            _entry(
                mem_id,
                before,
                version.content,
                "ADD" if before is None else "UPDATE",
                version.valid_from,
                version.user_id,
            )
        )
        before = version.content
    last = versions[-1]
    if last.closed_by == "deleted":
        out.append(_entry(mem_id, last.content, None, "DELETE", last.valid_to, last.user_id))
    return out


def _entry(
    mem_id: str, old: str | None, new: str | None, event: str, at: Any, user_id: str
) -> dict[str, Any]:
    return {
        "id": f"{mem_id}@{at.isoformat() if at else ''}",
        "memory_id": mem_id,
        "old_memory": old,
        "new_memory": new,
        "event": event,
        "user_id": user_id or None,
        "created_at": at,
        "updated_at": at,
    }


# --- search --------------------------------------------------------------------------------------


def search(
    key: ApiKey, *, query: str, who: Entities, top_k: int, threshold: float | None
) -> list[dict[str, Any]]:
    """Hybrid search over facts and notes (MemoryHub's search: the key's and user's limits apply),
    as mem0 memories with their scores, best first. A run narrows to the memories placed in that
    session or extracted from it; the search looks a few times deeper so that `top_k` stays full."""
    data: dict[str, Any] = {
        "query": query,
        "kinds": ["fact", "note"],
        "top_k": top_k,
        "user_id": who.user_id,
        "tags": [agent_tag(who.agent_id)] if who.agent_id else [],
    }
    if who.run_id:
        if not Session.objects.visible_to(key).filter(external_id=who.run_id).exists():
            return []  # a run never written to has no memories (as get_all finds none)
        data.update(session=who.run_id, top_k=top_k * 4)
    req = build_search_request(key, data)
    try:
        hits = run_search(req)
    except SearchError as exc:
        raise Invalid(exc.code, exc.message, exc.details) from None
    sources = dict(
        Chunk.objects.filter(pk__in=[h.chunk.pk for h in hits]).values_list("pk", "source_id")
    )
    fact_ids = [
        int(sources[h.chunk.pk])
        for h in hits
        if h.chunk.kind == "fact" and sources.get(h.chunk.pk, "").isdigit()
    ]
    note_ids = [
        sources[h.chunk.pk] for h in hits if h.chunk.kind == "note" and h.chunk.pk in sources
    ]
    loaded: dict[tuple[str, str], Fact | Note] = {
        **{("fact", str(f.pk)): f for f in facts.facts_visible_to(key).filter(pk__in=fact_ids)},
        **{
            ("note", n.note_id): n for n in notes.notes_visible_to(key).filter(note_id__in=note_ids)
        },
    }
    results: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for hit in hits:
        ident = (hit.chunk.kind, sources.get(hit.chunk.pk, ""))
        memory = loaded.get(ident)
        if memory is None or ident in seen or (threshold is not None and hit.score < threshold):
            continue
        if who.run_id and _run_of(memory) != who.run_id:
            continue
        seen.add(ident)
        results.append({**as_mem0(memory), "score": round(hit.score, 6)})
    return results[:top_k]


# --- batches -------------------------------------------------------------------------------------


@transaction.atomic
def batch_update(key: ApiKey, changes: list[dict[str, Any]]) -> int:
    """mem0's batch_update: every memory changed, or none (one missing is a 404 for the batch)."""
    for change in changes:
        update(key, change["memory_id"], text=change.get("text"), metadata=change.get("metadata"))
    return len(changes)


@transaction.atomic
def batch_delete(key: ApiKey, mem_ids: list[str]) -> int:
    """mem0's batch_delete: every memory deleted, or none."""
    for mem_id in mem_ids:
        delete(key, mem_id)
    return len(mem_ids)
