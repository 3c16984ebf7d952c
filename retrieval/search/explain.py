"""Search explain: why each result ranked where it did.

A Trace rides along one search (engine.run_search with `explain`); each ranking stage hands it
what it had before and after. Per result it then answers, in stage order:

- `parts`: fusion's terms: each signal's raw score, its normalised value and weight, and the part
  it adds (fusion.fusion_parts: the same formulas as the ranking); the memory profile's decayed
  relevance (recency, importance, use) is one of them;
- `fused`: their sum, the score before any adjustment;
- `steps`: every stage that moved it, with its score or its rank before and after: feedback (the
  query vector moved toward the first pass's best results), date hint, summary
  expansion, MMR, dedup (results above it dropped), coverage;
- `score` and `rank`: where it ended.

Stages that only reorder record the candidate ids in order before and after; a result's rank is
its position in those lists (1 = first). Nothing here runs SQL, and a search without explain
builds no Trace (Trace.off() answers every call at once), so the response and the query path are
unchanged. The operator console's "why it ranked" reads the same data
(retrieval/console/explain.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from retrieval.search import weights
from retrieval.search.fusion import (
    base_scores,
    fusion_parts,
)
from retrieval.search.request import LITERAL_MODES, Candidate, SearchRequest
from retrieval.search.timehints import TimeHint, utc

DIGITS = 6


@dataclass
class _Scores:
    name: str
    before: dict[int, float]
    after: dict[int, float]
    detail: str = ""
    # per candidate, added to its step
    extra: dict[int, dict[str, Any]] = field(default_factory=dict)


@dataclass
class _Ranks:
    name: str
    before: dict[int, int]  # id -> rank (1-based)
    after: dict[int, int]
    detail: dict[int, str] = field(default_factory=dict)


@dataclass
class Trace:
    req: SearchRequest | None = None
    parts: dict[int, dict[str, Any]] = field(default_factory=dict)
    fused: dict[int, float] = field(default_factory=dict)
    stages: list[_Scores | _Ranks] = field(default_factory=list)
    replaced: dict[int, int] = field(default_factory=dict)  # summary expansion: message -> summary

    @classmethod
    def off(cls) -> Trace:
        return cls()

    @property
    def on(self) -> bool:
        return self.req is not None

    def fusion(
        self,
        chunks: dict[int, Candidate],
        vec: dict[int, float],
        ranking_vec: dict[int, float],
        txt: dict[int, float],
        fused: dict[int, float],
        sentences: dict[int, float] | None = None,
    ) -> None:
        """Fusion and what adjusts it: `vec` is the cosine to the query, `ranking_vec` what the
        ranking used (moved by feedback), `fused` what fusion returned."""
        if self.req is None:
            return
        req, ids = self.req, list(chunks)
        self.parts = fusion_parts(req, chunks, vec, txt, ids)
        for pk, best in (sentences or {}).items():  # what the vector side's raw score came from
            if "vector" in self.parts.get(pk, {}):
                self.parts[pk]["vector"]["best_sentence"] = best
        plain = base_scores(req, chunks, vec, txt)
        self.fused = plain
        moved = base_scores(req, chunks, ranking_vec, txt) if ranking_vec is not vec else plain
        if moved is not plain:
            extra = {
                i: {"vector_before": vec.get(i), "vector_after": ranking_vec.get(i)} for i in ids
            }
            self.scores(
                "feedback",
                plain,
                moved,
                "the query vector moved toward the best first-pass "
                f"results (weight {weights.FEEDBACK})",
                extra,
            )

    def scores(
        self,
        name: str,
        before: dict[int, float],
        after: dict[int, float],
        detail: str = "",
        extra: dict[int, dict[str, Any]] | None = None,
    ) -> None:
        if self.req is not None:
            self.stages.append(_Scores(name, dict(before), dict(after), detail, extra or {}))

    def date_hint(
        self, before: dict[int, float], after: dict[int, float], hints: list[TimeHint]
    ) -> None:
        if self.req is not None and hints:
            as_of = (
                f"{utc(self.req.as_of):%Y-%m-%d %H:%M} UTC"
                if self.req.as_of is not None
                else "the time of the search"
            )
            self.scores(
                "date_hint",
                before,
                after,
                "written within " + "; ".join(_hint_text(h, as_of) for h in hints),
            )

    def ranks(
        self,
        name: str,
        before: Sequence[Candidate],
        after: Sequence[Candidate],
        evidence: dict[int, float] | None = None,
        words: bool = False,
    ) -> None:
        """A stage that reorders; `evidence`: the conversations' evidence coverage ordered them by
        (`words`: blended with the query words they say)."""
        if self.req is None:
            return
        stage = _Ranks(name, _positions(before), _positions(after))
        if name == "summary_expansion":
            stage.detail = {
                m: f"took the place of summary chunk {s}, which ranked there"
                for m, s in self.replaced.items()
            }
        if evidence is not None:
            how = f"the {weights.COVERAGE_NORM:g}-norm of its messages' scores"
            if words:
                weight = weights.COVERAGE_WORDS
                how = (
                    f"{1 - weight:g} × {how} + {weight:g} × the query words its messages say, "
                    "each divided by the highest among the candidates"
                )
            stage.detail = {
                c.pk: f"its conversation's evidence {_round(evidence[c.session_id])} ({how})"
                for c in after
                if c.session_id in evidence
            }
        self.stages.append(stage)

    def explain(self, pk: int, score: float, rank: int) -> dict[str, Any] | None:
        """One result's explanation (None when the trace is off)."""
        if self.req is None:
            return None
        req = self.req
        out: dict[str, Any] = {"mode": req.mode, "fusion": req.fusion, "profile": req.profile}
        if req.mode in LITERAL_MODES:
            out.update(
                {
                    "parts": {},
                    "fused": 1.0,
                    "steps": [],
                    "note": "matched the pattern; matches are listed newest first, each scored 1",
                }
            )
        else:
            out.update(
                {
                    "parts": _rounded_parts(self.parts.get(pk, {})),
                    "fused": _round(self.fused.get(pk)),
                    "steps": [
                        step for stage in self.stages if (step := _step(stage, pk)) is not None
                    ],
                }
            )
        out.update({"score": _round(score), "rank": rank})
        return out


def _step(stage: _Scores | _Ranks, pk: int) -> dict[str, Any] | None:
    """The stage as it moved this candidate, or None where it did not."""
    if isinstance(stage, _Scores):
        before, after = stage.before.get(pk), stage.after.get(pk)
        if before is None or after is None or abs(after - before) < 1e-12:
            return None
        step = {
            "step": stage.name,
            "score_before": _round(before),
            "score_after": _round(after),
            "detail": stage.detail,
        }
        step.update({k: _round(v) for k, v in stage.extra.get(pk, {}).items()})
        return step
    rank_before, rank_after = stage.before.get(pk), stage.after.get(pk)
    if rank_before == rank_after:
        return None
    return {
        "step": stage.name,
        "rank_before": rank_before,
        "rank_after": rank_after,
        "detail": stage.detail.get(pk, ""),
    }


def _positions(ordered: Sequence[Candidate]) -> dict[int, int]:
    return {c.pk: rank for rank, c in enumerate(ordered, start=1)}


def _round(value: Any) -> Any:
    return round(value, DIGITS) if isinstance(value, float) else value


def _rounded_parts(parts: dict[str, Any]) -> dict[str, Any]:
    return {name: {k: _round(v) for k, v in part.items()} for name, part in parts.items()}


def _hint_text(hint: TimeHint, as_of: str) -> str:
    """A hint in words; a relative one with what the query said and the moment it was read
    against."""
    if hint.start is not None and hint.end is not None:
        said = f' ("{hint.said}", as of {as_of})' if hint.said else ""
        return f"{hint.start:%Y-%m-%d} to {hint.end:%Y-%m-%d}{said}"
    if hint.day is not None:
        return f"month {hint.month}, day {hint.day} (±1), any year"
    return f"month {hint.month}, any year"
