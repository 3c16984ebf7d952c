"""Result shapes of search, context, documents, notes and facts (re-exported by types.py)."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from memoryhub_client._types_sessions import Event

# --- retrieval -----------------------------------------------------------------------------------


class SearchResult(TypedDict):
    chunk_id: int
    text: str
    score: float
    session: str | None
    sequence_start: int | None
    sequence_end: int | None
    kind: Literal["event", "note", "fact", "summary", "document"]
    metadata: dict[str, Any]
    created_at: str
    role: str | None
    tags: list[str]
    importance: float
    channel: str | None
    workspace: str | None
    user_id: str  # the end user it belongs to ("" for shared memories)
    embedded: bool  # False while the memory waits for its vector (found by full text meanwhile)
    scores: dict[str, float | None]


class SessionGroup(TypedDict):
    """A conversation of a grouped search (`group_by="session"`); its `hits` results follow one
    another."""

    session: str
    channel: str | None
    workspace: str | None
    score: float  # its evidence for the query, comparable within one response only
    hits: int


class Citation(TypedDict):
    index: int  # the cited result's position in `results`
    chunk_id: int


class SynthesisError(TypedDict):
    code: Literal["llm_unavailable", "llm_timeout", "llm_bad_reply"]
    message: str


class Synthesis(TypedDict, total=False):
    """search(synthesize=True): an answer with citations, or an error (the results still came
    back)."""

    answer: str
    citations: list[Citation]
    error: SynthesisError
    model: str


class _Grouped(TypedDict, total=False):
    group_by: Literal["session"]  # only when the request grouped
    sessions: list[SessionGroup]  # only when the request grouped: the conversations, best first
    synthesis: Synthesis  # only with synthesize=True


class SearchResponse(_Grouped):
    mode: str
    fusion: str
    scope: str
    profile: str
    results: list[SearchResult]


class ContextItem(TypedDict):
    source: Literal["recent", "critical", "summary", "salient", "relevant"]
    text: str
    score: float
    kind: str
    session: str | None
    sequence_start: int | None
    sequence_end: int | None
    created_at: str
    role: str | None
    chunk_id: int | None
    tokens: int


class Context(TypedDict):
    session: str
    budget: int
    tokens: int
    items: list[ContextItem]
    markdown: str


class BrowsedEvent(Event):
    session: str
    channel: str


class Document(TypedDict):
    id: int
    source_uri: str
    content_hash: str
    indexed: bool
    chunks: int
    metadata: dict[str, Any]
    session: str | None
    created_at: str
    updated_at: str


class DocumentDeleted(TypedDict):
    id: int
    deleted: bool
    chunks_deleted: int


Stats = dict[str, Any]


# --- notes and facts -----------------------------------------------------------------------------


class Note(TypedDict):
    id: str
    note_id: str
    content: str
    source: str
    tags: list[str]
    metadata: dict[str, Any]
    session: str | None
    workspace: str | None
    channel: str | None
    scope: str
    user_id: str
    importance: float
    created_at: str
    updated_at: str


class Fact(TypedDict):
    id: int
    external_id: str
    content: str
    category: str
    key: str
    scope: str
    lifetime: str
    source: str
    importance: float
    access_count: int
    accessed_at: str | None
    tags: list[str]
    metadata: dict[str, Any]
    session: str | None
    source_session: str | None
    workspace: str | None
    channel: str | None
    user_id: str
    created_at: str
    updated_at: str
    valid_from: str | None
    valid_to: str | None


class FactUpserted(Fact):
    created: bool


class FactVersion(TypedDict):
    fact_id: int
    content: str
    category: str
    key: str
    user_id: str
    source: str
    change: str
    valid_from: str
    valid_to: str | None
    closed_by: str
    current: bool


class FactHistory(TypedDict):
    fact_id: int
    versions: list[FactVersion]


class Deleted(TypedDict):
    id: str
    deleted: bool


class Memory(TypedDict):
    """A note or a fact in one shape (get_all): `id` is "note:<note_id>" or "fact:<fact id>", the
    form delete() and history() take; `record` is the note or fact as the service returns it."""

    id: str
    kind: Literal["note", "fact"]
    memory: str  # its text
    user_id: str
    tags: list[str]
    metadata: dict[str, Any]
    created_at: str
    updated_at: str
    record: dict[str, Any]
