"""What a search is asked (SearchRequest, checked by validate), what ranking works on (Candidate)
and what it returns (SearchHit, or a SearchError the API turns into a 400)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from retrieval.embedders import DIMENSIONS

MODES = ("hybrid", "vector", "text", "exact", "fuzzy", "regex")
# Modes ranked on full text alone ("fuzzy": text search in which every query word also matches the
# scope's closest words; see fuzzy.py).
TEXT_MODES = ("text", "fuzzy")
LITERAL_MODES = ("exact", "regex")  # matched, not ranked: the newest matches first
FUSIONS = ("weighted", "rrf")
# default: fusion and re-ranking; memory: text, meaning and the decayed relevance (fusion.py);
# seed002: the formula as written, 0.3 BM25 + 0.3 cosine + 0.3 temporal + 0.1 importance.
PROFILES = ("default", "memory", "seed002")
SCOPES = ("conversation", "channel", "workspace", "account")
GROUPINGS = ("session",)
DEFAULT_HITS_PER_SESSION = 3
MAX_HITS_PER_SESSION = 10
# The largest top_k a search or context request may ask for (400 invalid_top_k past it).
MAX_TOP_K = 100
# Search mode "regex": the longest pattern accepted (400 invalid_regex past it); its scan's time
# limit is retrieval.search.regex.TIMEOUT_MS.
REGEX_MAX_LENGTH = 512


class SearchError(ValueError):
    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}


@dataclass
class SearchRequest:
    tenant_id: int
    query: str = ""
    query_embedding: list[float] | None = None
    scope: str = "account"
    key_workspace_id: int | None = None
    session_id: int | None = None  # Session pk
    session_channel_id: int | None = None
    session_workspace_id: int | None = None
    # A session's default recall (retrieval.scoping.read_as_session): its owner's whole memory,
    # what is nearer the session ranked first (retrieval.search.nearness).
    nearest_first: bool = False
    channel_ids: list[int] | None = None
    workspace_ids: list[int] | None = None
    tags: list[str] = field(default_factory=list)
    roles: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    agent: str | None = None
    user_id: str | None = None  # None: no end user named (every user's memories); "": shared only
    since: datetime | None = None
    until: datetime | None = None
    # when the question is asked: relative dates are read against it (None: now)
    as_of: datetime | None = None
    # With as_of: answer from the memory as it stood then (nothing written later; a fact's version
    # valid then). False only for a replay that reads relative dates against as_of over everything.
    history: bool = True
    top_k: int = 10
    mode: str = "hybrid"
    fusion: str = "weighted"
    vector_weight: float = 0.7
    text_weight: float = 0.3
    exact_weights: bool = False  # the caller chose the weights: no balancing, no feedback step
    profile: str = "default"
    # The default profile's share of the decayed relevance (0: none; bench/ranking.py measured it).
    decay_weight: float = 0.0
    # Only results at least this close in meaning (cosine; a published floor on meaning alone
    # is 0.655).
    min_cosine: float | None = None
    case_sensitive: bool = False  # modes exact and regex
    explain: bool = False  # each hit carries why it ranked (retrieval.search.explain)
    # False: an operator looking (the console) does not reinforce what it sees
    counts_as_use: bool = True
    # "session": top_k conversations, each with its best hits (rerank.top_sessions)
    group_by: str | None = None
    hits_per_session: int | None = None  # with group_by (DEFAULT_HITS_PER_SESSION)


def validate(req: SearchRequest) -> None:
    if req.mode not in MODES:
        raise SearchError("invalid_mode", f"mode must be one of {', '.join(MODES)}")
    if req.fusion not in FUSIONS:
        raise SearchError("invalid_fusion", f"fusion must be one of {', '.join(FUSIONS)}")
    if not 1 <= req.top_k <= MAX_TOP_K:
        raise SearchError("invalid_top_k", f"top_k must be within 1..{MAX_TOP_K}")
    if req.group_by is not None and req.group_by not in GROUPINGS:
        raise SearchError("invalid_group_by", f"group_by must be one of {', '.join(GROUPINGS)}")
    if req.hits_per_session is not None:
        if req.group_by is None:
            raise SearchError("group_by_required", "hits_per_session needs group_by 'session'.")
        if not 1 <= req.hits_per_session <= MAX_HITS_PER_SESSION:
            raise SearchError(
                "invalid_hits_per_session",
                f"hits_per_session must be within 1..{MAX_HITS_PER_SESSION}",
            )
    if req.profile not in PROFILES:
        raise SearchError("invalid_profile", f"profile must be one of {', '.join(PROFILES)}")
    if not 0.0 <= req.decay_weight <= 1.0:
        raise SearchError("invalid_decay_weight", "decay_weight must be within 0..1")
    if req.min_cosine is not None and not -1.0 <= req.min_cosine <= 1.0:
        raise SearchError("invalid_min_cosine", "min_cosine must be within -1..1")
    if req.query_embedding is not None and len(req.query_embedding) != DIMENSIONS:
        raise SearchError(
            "invalid_query_embedding", f"query_embedding must have {DIMENSIONS} dimensions"
        )
    has_text = bool(req.query.strip())
    if req.mode in (*TEXT_MODES, *LITERAL_MODES) and not has_text:
        raise SearchError("query_required", f"mode {req.mode!r} needs query text")
    limit = REGEX_MAX_LENGTH
    if req.mode == "regex" and len(req.query) > limit:
        raise SearchError(
            "invalid_regex",
            f"A regex pattern is at most {limit} characters.",
            {"max_length": limit},
        )
    if not has_text and req.query_embedding is None:
        raise SearchError("query_required", "Give query text or a query_embedding.")


@dataclass(frozen=True)
class SearchPlan:
    """A request's scope, owner and filters as SQL, each built once (plan.plan_search) and read by
    every statement of its search."""

    where: tuple[str, list[Any]]  # the WHERE clause every statement shares (sql.where_clause)
    # A user's view as its two halves (theirs; the shared memories, read only when the kept
    # statistics say the scope has any), each searched on its own; None without a user.
    halves: tuple[tuple[str, list[Any]], tuple[str, list[Any]]] | None
    # the scope's statistics rows (statistics.bucket_clause, alias "s")
    buckets: tuple[str, list[Any]]
    # a session's default range: the whole range's rows beside its channel's
    wide_buckets: tuple[str, list[Any]] | None
    # chunks in scope of the owner and shared (statistics.scope_size_sql)
    scope_size: tuple[str, list[Any]]
    statistics_size: tuple[str, list[Any]]  # chunks in scope, whoever owns them


@dataclass(slots=True)
class Candidate:
    """What ranking needs of a chunk; full rows are loaded only for the results kept. Slotted: a
    search makes one for each of ~200 candidates (bench/README.md, stop 39)."""

    pk: int
    session_id: int | None
    text: str
    contextual: bool
    created_ts: float  # created_at as epoch seconds (tie-break by recency)
    sequence_end: int | None
    importance: float
    relevance: float = 0.0  # decayed relevance (memory profile, decay_weight), the temporal score
    kind: str = "event"
    sequence_start: int | None = None
    split: bool = False  # it has sentence vectors of its own (ChunkSentence)
    channel_id: int | None = None  # where it was said or made (nearness.nearest_first)
    workspace_id: int | None = None

    @property
    def message(self) -> tuple[int, int, int] | None:
        """(session, first sequence, last sequence) of the message(s) this chunk is text of; None
        for a note, fact, document or summary."""
        if self.kind != "event" or self.session_id is None or self.sequence_start is None:
            return None
        return self.session_id, self.sequence_start, self.sequence_end or self.sequence_start


def one_per_message(ordered: Iterable[Candidate]) -> list[Candidate]:
    """Each message once, at the place of its best-ranked chunk: the chunks of one long message
    would otherwise fill the list with one message (other kinds keep every chunk)."""
    return list(each_message_once(ordered))


def each_message_once(ordered: Iterable[Candidate]) -> Iterator[Candidate]:
    """one_per_message, lazily (for a caller that wants only the first few)."""
    seen: set[tuple[int, int]] = set()
    for candidate in ordered:
        if (message := candidate.message) is not None:
            if message[:2] in seen:
                continue
            seen.add(message[:2])
        yield candidate


@dataclass(frozen=True)
class SessionRef:
    """A hit's conversation, by the name the API uses (hit.chunk.session.external_id)."""

    external_id: str


@dataclass
class HitRow:
    """A result row as the candidate statement returned it (no model instance): the attributes
    of a Chunk that hits, the API and context assembly read, under the same names."""

    pk: int
    text: str
    kind: str
    session_id: int | None
    session_name: str | None
    sequence_start: int | None
    sequence_end: int | None
    metadata_json: str  # parsed only for the rows shown
    created_at: datetime
    role: str
    tags: list[str]
    importance: float
    channel_name: str | None
    workspace_name: str | None
    embedded: bool  # embedded by the search's model (False while the chunk waits for its vector)
    user_id: str = ""  # its owner (empty: shared)

    @property
    def session(self) -> SessionRef | None:
        return SessionRef(self.session_name) if self.session_name is not None else None

    @cached_property
    def metadata(self) -> dict[str, Any]:
        return json.loads(self.metadata_json) if self.metadata_json else {}


@dataclass
class SearchHit:
    chunk: HitRow
    score: float
    vector_score: float | None
    text_score: float | None
    explain: dict[str, Any] | None = None  # only when the request asked to explain
    session_score: float | None = None  # group_by "session": its conversation's score
    # the relevance floor admits it (retrieval.search.relevance): context may inject it
    relevant: bool = True

    def as_dict(self) -> dict[str, Any]:
        c = self.chunk
        out = {
            "chunk_id": c.pk,
            "text": c.text,
            "score": round(self.score, 6),
            "session": c.session_name,
            "sequence_start": c.sequence_start,
            "sequence_end": c.sequence_end,
            "kind": c.kind,
            "metadata": c.metadata,
            "created_at": c.created_at,
            "role": c.role or None,
            "tags": c.tags,
            "importance": c.importance,
            "channel": c.channel_name,
            "workspace": c.workspace_name,
            "user_id": c.user_id,
            # False while the chunk waits for its vector (found by full text only until then).
            "embedded": c.embedded,
            "scores": {
                "vector": None if self.vector_score is None else round(self.vector_score, 6),
                "text": None if self.text_score is None else round(self.text_score, 6),
            },
        }
        if self.explain is not None:
            out["explain"] = self.explain
        return out
