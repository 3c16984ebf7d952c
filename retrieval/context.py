"""Context assembly (docs/ranking.md#context): recency + critical memories + the conversation's
summaries + salience + relevance within a token budget."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from memoryhub import summaries
from memoryhub.models import Session, estimate_tokens, iso
from retrieval.chunking import normalize_text
from retrieval.context_memories import Memory, memories_of
from retrieval.indexing import extract_event_text
from retrieval.models import IMPORTANT_FROM, PINNED, Chunk
from retrieval.query_embedding import embed_query
from retrieval.search import SearchHit, SearchPlan, SearchRequest, plan_search, run_search, weights
from retrieval.search.relevance import ranked_query
from retrieval.vectors import halfvec_text

RECENT_MESSAGES = 10
# Tokens of a context block when the request names no budget.
DEFAULT_BUDGET = 4000
# Critical memories (importance >= 0.85 is always recalled; pinned ones too): in every
# context whatever the query, within a reserved share of the budget, at most CRITICAL_LIMIT.
CRITICAL_IMPORTANCE = 0.85
CRITICAL_LIMIT = 5
CRITICAL_BUDGET_SHARE = 0.15
# Ordinary salience (nothing is injected when nothing is relevant): important memories
# below the critical line, only when they pass the relevance floor.
SALIENT_IMPORTANCE = IMPORTANT_FROM  # the partial index chunk_important starts here
SALIENT_LIMIT = 10
RELEVANT_COSINE = 0.655
ITEM_OVERHEAD_TOKENS = 4
# The conversation's summaries (its rolling summary, then the newest summary-tree nodes over what
# the recent window no longer shows: memoryhub.summaries.context_nodes) come right after the
# critical memories and before recent messages and search's results, within at most this share of
# the budget: a few lines that stand for many messages. It is the rolling summary's own ceiling
# (summaries.MAX_SHARE of a summary budget as large as the default context budget), so that such
# a summary fits whole.
SUMMARY_BUDGET_SHARE = 0.3
# A memory of several chunks (a long message, fact, note or document) is shown once: whole when its
# whole text costs at most this share of the budget and fits what is left, otherwise the chunks
# that were picked, in order, each overlap once (retrieval.context_memories).
WHOLE_MEMORY_SHARE = 0.25


@dataclass
class ContextItem:
    source: str  # recent | critical | summary | salient | relevant
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
    # of a memory of several chunks: the chunks its text shows
    shown: set[int] = field(default_factory=set)

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text) + ITEM_OVERHEAD_TOKENS

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "text": self.text,
            "score": round(self.score, 6),
            "kind": self.kind,
            "session": self.session,
            "sequence_start": self.sequence_start,
            "sequence_end": self.sequence_end,
            "created_at": iso(self.created_at),
            "role": self.role or None,
            "chunk_id": self.chunk_id,
            "user_id": self.user_id,
            "tokens": self.tokens,
        }


def _recent_items(session: Session) -> list[ContextItem]:
    events = list(session.events.order_by("-sequence")[:RECENT_MESSAGES])
    return [
        ContextItem(
            "recent",
            extract_event_text(e),
            1.0 + (RECENT_MESSAGES - i) / 100.0,
            "event",
            session.external_id,
            e.sequence,
            e.sequence,
            e.created_at,
            e.role,
            user_id=session.user_id,
        )
        for i, e in enumerate(events)
        if extract_event_text(e)
    ]


def _chunk_item(source: str, chunk: Chunk, score: float) -> ContextItem:
    return ContextItem(
        source,
        chunk.text,
        score,
        chunk.kind,
        chunk.session.external_id if chunk.session_id else None,
        chunk.sequence_start,
        chunk.sequence_end,
        chunk.created_at,
        chunk.role,
        chunk.pk,
        chunk.user_id,
    )


# Important, or pinned (the partial indexes chunk_important and chunk_pinned hold these chunks).
_CRITICAL_SQL = f"(c.importance >= %s OR c.metadata @> '{json.dumps(PINNED)}'::jsonb)"


def _critical_items(plan: SearchPlan) -> list[ContextItem]:
    """Critical memories that apply to the request (its search plan: the same scope and owner rule
    as search): importance >= 0.85 or pinned, whatever the query, most important and newest
    first."""
    where, params = plan.where
    sql = (
        f"SELECT c.id FROM retrieval_chunk c WHERE {where} AND {_CRITICAL_SQL}"
        " ORDER BY c.importance DESC, c.created_at DESC, c.id DESC LIMIT %s"
    )
    return _items("critical", sql, [*params, CRITICAL_IMPORTANCE, CRITICAL_LIMIT])


def _salient_items(req: SearchRequest, plan: SearchPlan, admitted: list[int]) -> list[ContextItem]:
    """Ordinary salient memories (importance >= 0.7, below the critical line). With a query, only
    those that pass the relevance floor: search admitted them (`admitted`: its results the floor
    admits, on words or meaning), or their meaning is close enough. Nothing is injected when
    nothing is relevant (docs/ranking.md#context)."""
    where, params = plan.where
    sql = (
        f"SELECT c.id FROM retrieval_chunk c WHERE {where} AND c.importance >= %s AND NOT"
        f" {_CRITICAL_SQL}"
    )
    params = [*params, SALIENT_IMPORTANCE, CRITICAL_IMPORTANCE]
    if req.query.strip():
        floor: list[str] = []
        if req.min_cosine is None:  # no floor on meaning alone asked: what search admitted
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
    chunks = (
        Chunk.objects.filter(pk__in=ids)
        .select_related("session")
        .defer("search_vector", "embedding")
    )
    return [
        _chunk_item(source, c, c.importance) for c in sorted(chunks, key=lambda c: ids.index(c.pk))
    ]


def _floor(req: SearchRequest) -> float:
    return weights.RELEVANCE_MIN_COSINE if req.min_cosine is None else req.min_cosine


def _relevant(hit: SearchHit, req: SearchRequest) -> bool:
    """The relevance floor (docs/ranking.md#relevance-floor): a memory pads no context unless the
    query's words match it or its meaning is close enough; nothing matching means nothing injected
    (docs/ranking.md#context). A request's min_cosine is the floor as written: the meaning must be
    that close, words or not (search has applied it already)."""
    if req.min_cosine is not None:
        return (hit.vector_score if hit.vector_score is not None else -1.0) >= req.min_cosine
    return hit.relevant


def _relevant_items(req: SearchRequest, plan: SearchPlan) -> list[ContextItem]:
    """Search's results for the same request, in search's order (context and search agree),
    less those under the relevance floor."""
    return [
        _chunk_item("relevant", h.chunk, h.score)
        for h in run_search(req, plan)
        if _relevant(h, req)
    ]


def _summary_items(session: Session, recent: list[ContextItem]) -> list[ContextItem]:
    """The conversation's rolling summary, then the newest summary-tree nodes over messages neither
    it nor the recent window shows; each dated by the last message it covers."""
    rolling = summaries.current_summary(session)
    shown_from = min((r.sequence_start or 0 for r in recent), default=None)
    items = []
    if rolling.text.strip():
        last = (
            session.events.filter(sequence__lte=rolling.upper_sequence)
            .order_by("-sequence")
            .first()
        )
        items.append(
            ContextItem(
                "summary",
                rolling.text,
                1.0,
                "summary",
                session.external_id,
                None,
                rolling.upper_sequence,
                last.created_at if last else rolling.updated_at,
                user_id=session.user_id,
            )
        )
    for node in summaries.context_nodes(
        session, summarised_to=rolling.upper_sequence, shown_from=shown_from
    ):
        items.append(
            ContextItem(
                "summary",
                node.text,
                1.0,
                "summary",
                session.external_id,
                node.sequence_start,
                node.sequence_end,
                node.latest_at or node.created_at,
                user_id=session.user_id,
            )
        )
    return items


def _admitted(items: list[ContextItem]) -> list[int]:
    return [item.chunk_id for item in items if item.chunk_id is not None]


def _covered(item: ContextItem, recent: list[ContextItem], seen: set[str]) -> bool:
    if normalize_text(item.text).casefold() in seen:
        return True
    if item.kind != "event" or item.sequence_start is None:
        return False
    return any(
        r.session == item.session
        and r.sequence_start is not None
        and item.sequence_start <= r.sequence_start <= (item.sequence_end or item.sequence_start)
        for r in recent
    )


@dataclass
class _Picker:
    """The items picked so far and the tokens they use; a memory of several chunks is one item."""

    budget: int
    recent: list[ContextItem]
    memories: dict[int, Memory]
    picked: list[ContextItem] = field(default_factory=list)
    used: int = 0
    seen: set[str] = field(default_factory=set)
    by_memory: dict[int, ContextItem] = field(default_factory=dict)

    def add(self, item: ContextItem, limit: int) -> None:
        """Pick `item` if it is new and fits in `limit` tokens in all; a chunk of a memory already
        picked joins that item's text instead, in the memory's order."""
        memory = self.memories.get(item.chunk_id) if item.chunk_id is not None else None
        held = self.by_memory.get(memory.key) if memory is not None else None
        if memory is not None and held is not None:
            self._extend(held, memory, item, limit)
            return
        if item.source != "recent" and _covered(item, self.recent, self.seen):
            return
        if memory is not None and item.chunk_id is not None:
            self._show_whole_or_chunk(item, memory, limit)
        if self.used + item.tokens > limit:
            return
        self.picked.append(item)
        self.used += item.tokens
        self.seen.add(normalize_text(item.text).casefold())
        if memory is not None:
            self.by_memory[memory.key] = item

    def _show_whole_or_chunk(self, item: ContextItem, memory: Memory, limit: int) -> None:
        whole = memory.text_of()
        room = min(limit - self.used, int(self.budget * WHOLE_MEMORY_SHARE))
        if estimate_tokens(whole) + ITEM_OVERHEAD_TOKENS <= room:
            item.text, item.shown = whole, set(memory.chunk_ids)
        else:
            item.shown = {item.chunk_id} if item.chunk_id is not None else set()

    def _extend(self, held: ContextItem, memory: Memory, item: ContextItem, limit: int) -> None:
        if item.chunk_id is None or item.chunk_id in held.shown:
            return
        shown = held.shown | {item.chunk_id}
        text = memory.text_of(shown)
        grows = estimate_tokens(text) - estimate_tokens(held.text)
        if self.used + grows > limit:
            return
        held.text, held.shown = text, shown
        self.used += grows
        self.seen.add(normalize_text(text).casefold())


@dataclass
class AssembledContext:
    items: list[ContextItem]
    tokens: int
    budget: int
    markdown: str


def assemble_context(
    *, session: Session | None, req: SearchRequest, budget: int | None = None
) -> AssembledContext:
    """Critical memories first, within their reserved share of the budget; then the conversation's
    summaries (with a session) within theirs; then recent messages (with a session), search's
    results for the query in search's order, and ordinary salient memories that pass the relevance
    floor, deduplicated, within the rest of the budget. A memory of several chunks is one item. The
    search request carries the scope and owner rules: never another user's, never a memory that
    does not apply here."""
    budget = budget or DEFAULT_BUDGET
    # The session's own messages follow the owner rule too: a user's read of a conversation
    # nobody owns (or another's) does not include it (sql.owner_clause).
    reads_session = session is not None and req.user_id in (None, session.user_id)
    recent = _recent_items(session) if reads_session else []
    has_query = bool(req.query.strip())
    if has_query and req.query_embedding is None and req.mode in ("hybrid", "vector"):
        # once: search and the salience floor share it
        req.query_embedding = embed_query(ranked_query(req))
    plan = plan_search(req)  # the scope, owner and filters every part reads, resolved once
    critical = _critical_items(plan)
    relevant = _relevant_items(req, plan) if has_query else []
    candidates = relevant + _salient_items(req, plan, _admitted(relevant))
    memories = memories_of([i.chunk_id for i in critical + candidates if i.chunk_id is not None])
    picker = _Picker(
        budget, recent, memories, seen={normalize_text(r.text).casefold() for r in recent}
    )
    for item in critical:
        picker.add(item, int(budget * CRITICAL_BUDGET_SHARE))
    if session is not None and reads_session and (not req.kinds or "summary" in req.kinds):
        summary_limit = picker.used + int(budget * SUMMARY_BUDGET_SHARE)
        for item in _summary_items(session, recent):
            picker.add(item, summary_limit)
    for item in recent + candidates:
        picker.add(item, budget)
    return AssembledContext(picker.picked, picker.used, budget, render_markdown(picker.picked))


SECTIONS = (
    ("critical", "Critical (always kept in mind)"),
    ("salient", "Important"),
    ("relevant", "Related memories"),
    ("summary", "Earlier in this conversation (summary)"),
    ("recent", "Recent conversation"),
)
HEADING = "## Relevant Memory (times in UTC)"


def render_markdown(items: list[ContextItem]) -> str:
    """The context block; empty when nothing was picked, so that nothing is injected. Every line
    is dated with its date and time, so that an agent orders what was said the same day."""
    if not items:
        return ""
    lines = [HEADING]
    for source, title in SECTIONS:
        chosen = [i for i in items if i.source == source]
        if source in ("summary", "recent"):
            chosen.sort(key=lambda i: i.sequence_end or i.sequence_start or 0)
        if not chosen:
            continue
        lines += ["", f"### {title}"]
        for item in chosen:
            text = " ".join(item.text.split())
            lines.append(f"- ({dated(item)}) {text}")
    return "\n".join(lines) + "\n"


def said_at(moment: datetime) -> str:
    """A moment as the block writes it: date and time to the minute, in UTC ("2026-12-07 14:05")."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def dated(item: ContextItem) -> str:
    """When a memory was said or became true, so that an agent tells old knowledge from new and
    orders what was said the same day: "user, said 2025-03-02 14:05", "fact since 2025-03-04
    09:00", "note 2025-03-01 18:30", a summary by the last message it covers."""
    when = said_at(item.created_at)
    if item.kind == "event":
        return f"{item.role}, said {when}" if item.role else f"said {when}"
    if item.kind == "fact":
        return f"fact since {when}"
    return f"{item.kind} {when}"
