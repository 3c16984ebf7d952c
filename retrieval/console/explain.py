"""The explorer's search: the real hybrid search (retrieval.scoping + retrieval.search, as
POST /search/ runs it, with the end user's ownership rule) and, per result, why it ranked there.

Why it ranked is the search's own explain data (retrieval.search.explain, what POST /search/
returns with "explain": true): fusion's parts and every step that moved the result, put in words
here. Beside it, read back for the results: which of the query's words the memory says itself,
its age and its decayed relevance now (recency, importance and use: what the "memory" profile
weighs at 40 %). The search runs in a transaction that is rolled back, so looking does not
reinforce what it finds (every search counts an access otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection
from django.utils import timezone
from django.utils.timesince import timesince

from accounts.models import Tenant
from retrieval import decay
from retrieval.admin_helpers import editable, note_pks, source_link
from retrieval.console.common import operator_key
from retrieval.models import Chunk
from retrieval.scoping import build_search_request
from retrieval.search import SearchHit, run_search

# tier and source are not search filters: fetch more, then keep those that fit
POST_FILTER_TOP_K = 50
SHOWN = 20


@dataclass
class ExplainedHit:
    rank: int
    chunk: Chunk
    score: float
    vector: float | None
    text: float | None
    words: list[str]
    relevance: float
    link: tuple[str, str] | None
    text_share: float = 0.0  # the BM25 score as a share of the best among the results (for the bar)
    # the search's explain data for this result
    explain: dict[str, Any] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)

    @property
    def pinned(self) -> bool:
        return (self.chunk.metadata or {}).get("pinned") is True

    @property
    def editable(self) -> bool:
        return editable(self.chunk)

    @property
    def source(self) -> str:
        return str((self.chunk.metadata or {}).get("source", ""))


def search_request(tenant: Tenant, user: str | None, filters: dict[str, Any]) -> Any:
    """The SearchRequest POST /search/ would build for these names (tenant-wide, the user's
    view)."""
    post_filter = bool(filters.get("tiers") or filters.get("source"))
    data = {
        "query": filters["q"],
        "user_id": user,
        "explain": True,
        "top_k": POST_FILTER_TOP_K if post_filter else SHOWN,
        "kinds": list(filters.get("kinds") or []),
        "tags": list(filters.get("tags") or []),
        "mode": filters.get("mode") or "hybrid",
        "profile": filters.get("profile") or "default",
        "since": _moment(filters.get("since")),
        "until": _moment(filters.get("until"), end=True),
    }
    return build_search_request(operator_key(tenant), data)


def _moment(day: Any, *, end: bool = False) -> datetime | None:
    if not day:
        return None
    moment = timezone.make_aware(datetime.combine(day, datetime.min.time()))
    return moment + timezone.timedelta(days=1) if end else moment


def explained_search(
    tenant: Tenant, user: str | None, filters: dict[str, Any]
) -> list[ExplainedHit]:
    req = search_request(tenant, user, filters)
    req.counts_as_use = False  # an operator looking is not a use: no reinforcement
    hits = run_search(req)
    hits = [h for h in _with_chunks(hits) if _fits(h.chunk, filters)][:SHOWN]
    return explain(hits, req.query)


def _with_chunks(hits: list[SearchHit]) -> list[SearchHit]:
    """The hits with their chunks as model instances: search returns rows, the console
    shows and edits more of a chunk (tier, uses, owner, source) than the API. One query."""
    chunks = (
        Chunk.objects.select_related("session", "channel", "workspace")
        .with_access()
        .in_bulk([h.chunk.pk for h in hits])
    )
    return [
        SearchHit(chunks[h.chunk.pk], h.score, h.vector_score, h.text_score, h.explain)  # type: ignore[arg-type]
        for h in hits
        if h.chunk.pk in chunks
    ]


def _fits(chunk: Chunk, filters: dict[str, Any]) -> bool:
    if filters.get("tiers") and chunk.tier not in filters["tiers"]:
        return False
    return (
        not filters.get("source")
        or str((chunk.metadata or {}).get("source", "")) == filters["source"]
    )


def _signals(ids: list[int], query: str) -> dict[int, tuple[list[str], float]]:
    """Per chunk: the query's words it says itself (stemmed, as full text matches them), and its
    decayed relevance now. One query."""
    if not ids:
        return {}
    relevance, params = decay.relevance_sql("c")
    sql = (
        "SELECT c.id, ARRAY(SELECT unnest(tsvector_to_array(ts_filter(c.search_vector, '{a}')))"
        " INTERSECT SELECT unnest(tsvector_to_array(to_tsvector('pg_catalog.english', %s)))),"
        f" {relevance} FROM retrieval_chunk c WHERE c.id = ANY(%s)"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [query[:4000], *params, ids])
        return {pk: (sorted(words or []), float(rel)) for pk, words, rel in cursor.fetchall()}


def explain(hits: list[SearchHit], query: str) -> list[ExplainedHit]:
    signals = _signals([h.chunk.pk for h in hits], query)
    best_text = max((h.text_score or 0.0 for h in hits), default=0.0) or 1.0
    notes = note_pks([h.chunk for h in hits])
    out = []
    for rank, hit in enumerate(hits, start=1):
        words, relevance = signals.get(hit.chunk.pk, ([], 0.0))
        item = ExplainedHit(
            rank,
            hit.chunk,
            hit.score,
            hit.vector_score,
            hit.text_score,
            words,
            relevance,
            source_link(hit.chunk, notes),
            text_share=(hit.text_score or 0.0) / best_text,
            explain=hit.explain or {},
        )
        item.reasons = reasons(item)
        out.append(item)
    return out


def reasons(item: ExplainedHit) -> list[str]:
    """Why it ranked, in words, strongest signal first."""
    found: list[str] = []
    if item.vector is not None:
        closeness = (
            "very close"
            if item.vector >= 0.6
            else "close"
            if item.vector >= 0.4
            else "loosely related"
        )
        found.append(f"meaning: {closeness} to the query (cosine {item.vector:.2f})")
    else:
        found.append("meaning: not embedded yet (no vector score)")
    if item.words:
        found.append(
            "words: says "
            + ", ".join(f"“{w}”" for w in item.words[:8])
            + f" (BM25 {item.text or 0:.2f})"
        )
    elif item.text:
        found.append(
            f"words: only its conversation context shares the query's words (BM25 {item.text:.2f})"
        )
    found.append(
        f"recency: written {timesince(item.chunk.created_at)} ago; relevance now"
        f" {item.relevance:.3f} (importance {item.chunk.importance:.2f}, {item.chunk.access_count}"
        f" uses, scope {item.chunk.tier})"
    )
    return found + explain_lines(item.explain)


SIGNALS = {"vector": "meaning", "text": "words", "relevance": "relevance"}
STEPS = {
    "feedback": "feedback (query moved toward the best results)",
    "date_hint": "date named in the query",
    "summary_expansion": "summary expansion",
    "one_per_message": "one result per message",
    "mmr": "MMR (variety)",
    "dedup": "near-duplicates above dropped",
    "coverage": "coverage (conversations not listed yet)",
}


def explain_lines(data: dict[str, Any]) -> list[str]:
    """The search's explain data in words: how the score was made, then each step that moved it."""
    if not data:
        return []
    if data.get("note"):
        return [f"{data['mode']}: {data['note']}"]
    terms = []
    for name, part in data["parts"].items():
        label = SIGNALS.get(name, name)
        if "rank" in part:  # rrf
            terms.append(f"{label} rank {part['rank'] or '—'} → {part['part']:.4f}")
        else:
            terms.append(f"{part['weight']:.2f} × {label} {part['normalised']:.2f}")
    lines = [
        f"score: {' + '.join(terms)} = {data['fused']:.4f} ({data['mode']}, {data['fusion']}, "
        f"{data['profile']} profile)"
    ]
    for step in data["steps"]:
        label = STEPS.get(step["step"], step["step"])
        if "score_before" in step:
            moved = f"score {step['score_before']:.4f} → {step['score_after']:.4f}"
        else:
            moved = f"rank {step['rank_before'] or '—'} → {step['rank_after'] or 'dropped'}"
        lines.append(f"{label}: {moved}" + (f" ({step['detail']})" if step.get("detail") else ""))
    lines.append(f"final: rank {data['rank']}, score {data['score']:.4f}")
    return lines
