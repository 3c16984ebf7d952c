"""Context assembly (S4, seeds 003 + 004): recency + critical memories + salience + relevance within
a token budget."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memoryhub.models import Session, estimate_tokens, iso
from retrieval.chunking import normalize_text
from retrieval.indexing import extract_event_text
from retrieval.models import Chunk
from retrieval.query_embedding import embed_query
from retrieval.search import SearchHit, SearchRequest, run_search, weights, where_clause
from retrieval.search.relevance import ranked_query
from retrieval.vectors import halfvec_text

RECENT_MESSAGES = 10
# Tokens of a context block when the request names no budget.
DEFAULT_BUDGET = 4000
# Critical memories (seed 004: importance >= 0.85 is always recalled; pinned ones too): in every
# context whatever the query, within a reserved share of the budget, at most CRITICAL_LIMIT.
CRITICAL_IMPORTANCE = 0.85
CRITICAL_LIMIT = 5
CRITICAL_BUDGET_SHARE = 0.15
# Ordinary salience (seed 003: nothing is injected when nothing is relevant): important memories
# below the critical line, only when they pass the relevance floor.
SALIENT_IMPORTANCE = 0.7
SALIENT_LIMIT = 10
RELEVANT_COSINE = 0.655
ITEM_OVERHEAD_TOKENS = 4


@dataclass
class ContextItem:
    source: str  # recent | critical | salient | relevant
    text: str
    score: float
    kind: str
    session: str | None
    sequence_start: int | None
    sequence_end: int | None
    created_at: Any
    role: str = ""
    chunk_id: int | None = None
    user_id: str = ""

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text) + ITEM_OVERHEAD_TOKENS

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source, "text": self.text, "score": round(self.score, 6), "kind": self.kind,
            "session": self.session, "sequence_start": self.sequence_start, "sequence_end": self.sequence_end,
            "created_at": iso(self.created_at), "role": self.role or None, "chunk_id": self.chunk_id,
            "user_id": self.user_id, "tokens": self.tokens,
        }


def _recent_items(session: Session) -> list[ContextItem]:
    events = list(session.events.order_by("-sequence")[:RECENT_MESSAGES])
    return [
        ContextItem("recent", extract_event_text(e), 1.0 + (RECENT_MESSAGES - i) / 100.0, "event",
                    session.external_id, e.sequence, e.sequence, e.created_at, e.role, user_id=session.user_id)
        for i, e in enumerate(events) if extract_event_text(e)
    ]


def _chunk_item(source: str, chunk: Chunk, score: float) -> ContextItem:
    return ContextItem(source, chunk.text, score, chunk.kind,
                       chunk.session.external_id if chunk.session_id else None,
                       chunk.sequence_start, chunk.sequence_end, chunk.created_at, chunk.role, chunk.pk,
                       chunk.user_id)


_CRITICAL_SQL = "(c.importance >= %s OR c.metadata @> '{\"pinned\": true}'::jsonb)"


def _critical_items(req: SearchRequest) -> list[ContextItem]:
    """Critical memories that apply to the request (the same scope and owner rule as search):
    importance >= 0.85 or pinned, whatever the query, most important and newest first."""
    where, params = where_clause(req)
    sql = (f"SELECT c.id FROM retrieval_chunk c WHERE {where} AND {_CRITICAL_SQL}"
           " ORDER BY c.importance DESC, c.created_at DESC, c.id DESC LIMIT %s")
    return _items("critical", sql, [*params, CRITICAL_IMPORTANCE, CRITICAL_LIMIT])


def _salient_items(req: SearchRequest, admitted: list[int]) -> list[ContextItem]:
    """Ordinary salient memories (importance >= 0.7, below the critical line). With a query, only
    those that pass the relevance floor: search admitted them (`admitted`: its results the floor
    admits, on words or meaning), or their meaning is close enough. Nothing is injected when
    nothing is relevant (seed 003)."""
    where, params = where_clause(req)
    sql = f"SELECT c.id FROM retrieval_chunk c WHERE {where} AND c.importance >= %s AND NOT {_CRITICAL_SQL}"
    params = [*params, SALIENT_IMPORTANCE, CRITICAL_IMPORTANCE]
    if req.query.strip():
        floor: list[str] = []
        if req.min_cosine is None:  # the request's floor is seed 004's: close enough in meaning, words or not
            floor.append("c.id = ANY(%s)")
            params.append(admitted)
        if req.query_embedding is not None:
            floor.append("(c.embedding IS NOT NULL AND 1 - (c.embedding <=> %s::halfvec) >= %s)")
            params += [halfvec_text(req.query_embedding), _floor(req)]
        sql += f" AND ({' OR '.join(floor or ['FALSE'])})"
    sql += " ORDER BY c.importance DESC, c.created_at DESC LIMIT %s"
    return _items("salient", sql, [*params, SALIENT_LIMIT])


def _items(source: str, sql: str, params: list[Any]) -> list[ContextItem]:
    ids = [row.pk for row in Chunk.objects.raw(sql, params)]
    chunks = Chunk.objects.filter(pk__in=ids).select_related("session").defer("search_vector", "embedding")
    return [_chunk_item(source, c, c.importance) for c in sorted(chunks, key=lambda c: ids.index(c.pk))]


def _floor(req: SearchRequest) -> float:
    return weights.RELEVANCE_MIN_COSINE if req.min_cosine is None else req.min_cosine


def _relevant(hit: SearchHit, req: SearchRequest) -> bool:
    """The relevance floor (seed 004): a memory pads no context unless the query's words match it or
    its meaning is close enough; nothing matching means nothing injected (seed 003). A request's
    min_cosine is seed 004's floor as written: the meaning must be that close, words or not (search
    has applied it already)."""
    if req.min_cosine is not None:
        return (hit.vector_score if hit.vector_score is not None else -1.0) >= req.min_cosine
    return hit.relevant


def _relevant_items(req: SearchRequest) -> list[ContextItem]:
    """Search's results for the same request, in search's order (S12: context and search agree),
    less those under the relevance floor."""
    return [_chunk_item("relevant", h.chunk, h.score) for h in run_search(req) if _relevant(h, req)]


def _admitted(items: list[ContextItem]) -> list[int]:
    return [item.chunk_id for item in items if item.chunk_id is not None]


def _covered(item: ContextItem, recent: list[ContextItem], seen: set[str]) -> bool:
    if normalize_text(item.text).casefold() in seen:
        return True
    if item.kind != "event" or item.sequence_start is None:
        return False
    return any(
        r.session == item.session and r.sequence_start is not None
        and item.sequence_start <= r.sequence_start <= (item.sequence_end or item.sequence_start)
        for r in recent
    )


@dataclass
class AssembledContext:
    items: list[ContextItem]
    tokens: int
    budget: int
    markdown: str


def assemble_context(*, session: Session | None, req: SearchRequest, budget: int | None = None) -> AssembledContext:
    """Critical memories first, within their reserved share of the budget; then recent messages
    (with a session), search's results for the query in search's order, and ordinary salient
    memories that pass the relevance floor, deduplicated, within the rest of the budget. The
    search request carries the scope and owner rules: never another user's, never a memory that
    does not apply here."""
    budget = budget or DEFAULT_BUDGET
    # The session's own messages follow the owner rule too: a user's read of a conversation
    # nobody owns (or another's) does not include it (sql.owner_clause).
    reads_session = session is not None and req.user_id in (None, session.user_id)
    recent = _recent_items(session) if reads_session else []
    has_query = bool(req.query.strip())
    if has_query and req.query_embedding is None and req.mode in ("hybrid", "vector"):
        req.query_embedding = embed_query(ranked_query(req))  # once: search and the salience floor share it
    seen = {normalize_text(r.text).casefold() for r in recent}
    picked: list[ContextItem] = []
    used = 0
    reserve = int(budget * CRITICAL_BUDGET_SHARE)
    for item in _critical_items(req):
        if _covered(item, recent, seen) or used + item.tokens > reserve:
            continue
        picked.append(item)
        used += item.tokens
        seen.add(normalize_text(item.text).casefold())
    relevant = _relevant_items(req) if has_query else []
    candidates = relevant + _salient_items(req, _admitted(relevant))
    for item in recent + candidates:
        if item.source != "recent" and _covered(item, recent, seen):
            continue
        if used + item.tokens > budget:
            continue
        picked.append(item)
        used += item.tokens
        seen.add(normalize_text(item.text).casefold())
    return AssembledContext(picked, used, budget, render_markdown(picked))


SECTIONS = (("critical", "Critical (always kept in mind)"), ("salient", "Important"), ("relevant", "Related memories"), ("recent", "Recent conversation"))


def render_markdown(items: list[ContextItem]) -> str:
    """The context block; empty when nothing was picked, so that nothing is injected."""
    if not items:
        return ""
    lines = ["## Relevant Memory"]
    for source, title in SECTIONS:
        chosen = [i for i in items if i.source == source]
        if source == "recent":
            chosen.sort(key=lambda i: i.sequence_start or 0)
        if not chosen:
            continue
        lines += ["", f"### {title}"]
        for item in chosen:
            text = " ".join(item.text.split())
            lines.append(f"- ({dated(item)}) {text}" if source != "recent" else f"- **{item.role or item.kind}**: {text}")
    return "\n".join(lines) + "\n"


def dated(item: ContextItem) -> str:
    """When a memory was said or became true, so that an agent tells old knowledge from new:
    "user, said 2025-03-02", "fact since 2025-03-04", "note 2025-03-01"."""
    when = iso(item.created_at)[:10]
    if item.kind == "event":
        return f"{item.role}, said {when}" if item.role else f"said {when}"
    if item.kind == "fact":
        return f"fact since {when}"
    return f"{item.kind} {when}"
