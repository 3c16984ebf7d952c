"""Context assembly (S4, seeds 003 + 004): recency + salience + relevance within a token budget."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings

from memoryhub.models import Session, estimate_tokens, iso
from retrieval.chunking import normalize_text
from retrieval.indexing import extract_event_text
from retrieval.models import Chunk
from retrieval.search import SearchHit, SearchRequest, run_search, where_clause

RECENT_MESSAGES = 10
SALIENT_IMPORTANCE = 0.85
SALIENT_LIMIT = 10
RELEVANT_COSINE = 0.655
ITEM_OVERHEAD_TOKENS = 4


@dataclass
class ContextItem:
    source: str  # recent | salient | relevant
    text: str
    score: float
    kind: str
    session: str | None
    sequence_start: int | None
    sequence_end: int | None
    created_at: Any
    role: str = ""
    chunk_id: int | None = None

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text) + ITEM_OVERHEAD_TOKENS

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source, "text": self.text, "score": round(self.score, 6), "kind": self.kind,
            "session": self.session, "sequence_start": self.sequence_start, "sequence_end": self.sequence_end,
            "created_at": iso(self.created_at), "role": self.role or None, "chunk_id": self.chunk_id,
            "tokens": self.tokens,
        }


def _recent_items(session: Session) -> list[ContextItem]:
    events = list(session.events.order_by("-sequence")[:RECENT_MESSAGES])
    return [
        ContextItem("recent", extract_event_text(e), 1.0 + (RECENT_MESSAGES - i) / 100.0, "event",
                    session.external_id, e.sequence, e.sequence, e.created_at, e.role)
        for i, e in enumerate(events) if extract_event_text(e)
    ]


def _chunk_item(source: str, chunk: Chunk, score: float) -> ContextItem:
    return ContextItem(source, chunk.text, score, chunk.kind,
                       chunk.session.external_id if chunk.session_id else None,
                       chunk.sequence_start, chunk.sequence_end, chunk.created_at, chunk.role, chunk.pk)


def _salient_items(req: SearchRequest) -> list[ContextItem]:
    where, params = where_clause(req)
    ids = [
        row.pk for row in Chunk.objects.raw(
            f"SELECT c.id FROM retrieval_chunk c WHERE {where} AND c.importance >= %s "
            "ORDER BY c.importance DESC, c.created_at DESC LIMIT %s",
            [*params, SALIENT_IMPORTANCE, SALIENT_LIMIT],
        )
    ]
    chunks = Chunk.objects.filter(pk__in=ids).select_related("session").defer("search_vector", "embedding")
    return [_chunk_item("salient", c, c.importance) for c in chunks]


def _relevant(hit: SearchHit) -> bool:
    """The relevance floor (seed 004): a memory pads no context unless the query's words match it or
    its meaning is close enough; nothing matching means nothing injected (seed 003)."""
    return (hit.text_score or 0.0) > 0.0 or (hit.vector_score or 0.0) >= settings.MEMORYHUB_CONTEXT_MIN_COSINE


def _relevant_items(req: SearchRequest) -> list[ContextItem]:
    hits = run_search(req)
    return [
        _chunk_item("relevant", h.chunk, h.score) for rank, h in enumerate(hits)
        if (rank < req.top_k or (h.vector_score or 0.0) >= RELEVANT_COSINE) and _relevant(h)
    ]


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
    """Recent messages (with a session), salient and relevant memories, deduplicated, filled by
    score into the budget. The search request carries the owner filter: never another user's."""
    budget = budget or settings.MEMORYHUB_CONTEXT_BUDGET
    recent = _recent_items(session) if session is not None else []
    candidates = sorted(_salient_items(req) + (_relevant_items(req) if req.query.strip() else []),
                        key=lambda i: -i.score)
    seen = {normalize_text(r.text).casefold() for r in recent}
    picked: list[ContextItem] = []
    used = 0
    for item in recent + candidates:
        if item.source != "recent" and _covered(item, recent, seen):
            continue
        if used + item.tokens > budget:
            continue
        picked.append(item)
        used += item.tokens
        seen.add(normalize_text(item.text).casefold())
    return AssembledContext(picked, used, budget, render_markdown(picked))


SECTIONS = (("salient", "Important"), ("relevant", "Related memories"), ("recent", "Recent conversation"))


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
            when = iso(item.created_at)[:10]
            who = f"{item.role}, " if item.role else ""
            text = " ".join(item.text.split())
            lines.append(f"- ({who}{when}) {text}" if source != "recent" else f"- **{item.role or item.kind}**: {text}")
    return "\n".join(lines) + "\n"
