"""Precision of recall: what a question lists and injects when asked of a memory that does not hold
its answer, next to its recall on the memory that does, with the same settings.

    BENCH_OWNED=1 is implied: each conversation (LoCoMo) or haystack (LongMemEval) belongs to one
    end user, as in `bench/recall.py --from-new-session`.
    .venv/bin/python bench/precision.py locomo --limit 4            # ingests once (kept database)
    .venv/bin/python bench/precision.py longmemeval --first 4
    .venv/bin/python bench/precision.py locomo --limit 4 --set weights.RELEVANCE_RELATIVE=0

Every question is asked twice with the product's defaults (hybrid search, top 10, the user's
whole memory: user_id, no scope, no session), through retrieval.search.hybrid_search and
retrieval.context.assemble_context (the /context/ block, its default budget):
- on the right memory (its own conversation's user): turn and session recall@10, results
  listed and context tokens;
- on a foreign memory (the next conversation's user in the file, the first's for the last):
  results listed and context tokens. Nothing there answers the question, so every result and
  every token injected is noise.
Figures per half of the file (by conversation) and overall. The searches do not count as use.
`--dump FILE` also writes, per question and side, each listed hit's cosine, text score and
whether it holds an evidence turn (JSON lines), for tuning the relevance rule offline.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["BENCH_OWNED"] = "1"  # before bench.common reads it: one end user per conversation

from bench import common, recall, runner  # noqa: E402

FIGURES = (
    "turn@10",
    "session@10",
    "right_results",
    "right_tokens",
    "foreign_results",
    "foreign_tokens",
)


class Tally:
    def __init__(self) -> None:
        self.sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))

    def add(self, q: recall.Question, values: dict[str, float]) -> None:
        for bucket in ("overall", *(b for b in q.buckets if b.startswith("half"))):
            s = self.sums[bucket]
            s["n"] += 1
            for name, value in values.items():
                s[name] += value

    def table(self) -> dict[str, dict[str, float]]:
        return {
            b: {k: v / s["n"] for k, v in s.items() if k != "n"} | {"n": s["n"]}
            for b, s in sorted(self.sums.items())
        }


def _recall_at_10(q: recall.Question, found: recall.Found) -> tuple[float, float]:
    evidence = set(q.question["evidence_turn_ids"])
    sessions = set(q.question["evidence_session_ids"])
    turns: set[str] = set().union(*[t for t, _ in found[:10]])
    return (
        len(evidence & turns) / len(evidence) if evidence else 0.0,
        len(sessions & {s for _, s in found[:10]}) / len(sessions) if sessions else 0.0,
    )


def _ask(tenant_id: int, question: str, vector: list[float], user: str) -> tuple[list[Any], int]:
    """The search's hits and the context block's tokens for one user's whole memory."""
    from retrieval.context import assemble_context
    from retrieval.search import SearchRequest, hybrid_search

    options = {
        "tenant_id": tenant_id,
        "query": question,
        "query_embedding": vector,
        "user_id": user,
        "top_k": 10,
        "counts_as_use": False,
    }
    hits = hybrid_search(**options)
    context = assemble_context(session=None, req=SearchRequest(**options))
    return hits, context.tokens


def _dumped(hits: list[Any], found: recall.Found, q: recall.Question) -> list[dict[str, Any]]:
    evidence = set(q.question["evidence_turn_ids"])
    sessions = set(q.question["evidence_session_ids"])
    return [
        {
            "cos": h.vector_score,
            "txt": h.text_score,
            "score": h.score,
            "evidence": bool(turns & evidence),
            "session": session in sessions,
        }
        for h, (turns, session) in zip(hits, found, strict=True)
    ]


def evaluate(
    conversations: list[dict[str, Any]],
    ingested: common.Ingested,
    questions: list[recall.Question],
    vectors: list[list[float]],
    dump: Any = None,
) -> dict[str, dict[str, float]]:
    tally = Tally()
    tenant_id = ingested.key.tenant_id
    ids = [c["conversation_id"] for c in conversations]
    for q, vector in zip(questions, vectors, strict=True):
        text = q.question["question"]
        foreign = ids[(q.conv_index + 1) % len(ids)]
        right_hits, right_tokens = _ask(tenant_id, text, vector, common.owner(q.conversation_id))
        foreign_hits, foreign_tokens = _ask(tenant_id, text, vector, common.owner(foreign))
        found, _ = recall._found(right_hits, ingested.turn_at, ingested.session_of)
        turn, session = _recall_at_10(q, found)
        tally.add(
            q,
            {
                "turn@10": turn,
                "session@10": session,
                "right_results": len(right_hits),
                "right_tokens": right_tokens,
                "foreign_results": len(foreign_hits),
                "foreign_tokens": foreign_tokens,
            },
        )
        if dump is not None:
            foreign_found, _ = recall._found(foreign_hits, ingested.turn_at, ingested.session_of)
            dump.write(
                json.dumps(
                    {
                        "q": text,
                        "half": q.buckets[-1],
                        "evidence": len(q.question["evidence_turn_ids"]),
                        "right": _dumped(right_hits, found, q),
                        "foreign": _dumped(foreign_hits, foreign_found, q),
                    }
                )
                + "\n"
            )
    return tally.table()


def print_table(table: dict[str, dict[str, float]]) -> None:
    print(f"\n{'bucket':10} {'n':>5} " + " ".join(f"{f:>15}" for f in FIGURES))
    for bucket, row in table.items():
        print(f"{bucket:10} {int(row['n']):5d} " + " ".join(f"{row[f]:15.3f}" for f in FIGURES))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("bench", choices=["locomo", "longmemeval"])
    parser.add_argument(
        "--dump", type=Path, default=None, help="also write each listed hit's signals (JSON lines)"
    )
    # the rest: the recall benchmark's options (--limit, --first, --set, ...)
    ours, rest = parser.parse_known_args()
    if ours.bench == "locomo":
        from bench.locomo import LOCOMO as bench
    else:
        from bench.longmemeval import LONGMEMEVAL as bench
    args = runner.build_parser(bench).parse_args(
        ["--keepdb", "--no-plain", "--no-summaries", *rest]
    )
    conversations, ingested, _ = runner.prepare(bench, args)
    from retrieval.query_embedding import embed_queries

    questions = recall.questions_of(conversations, bench.categories)
    print(
        f"{len(questions)} questions; {recall.halves_label(conversations, bench.unit)}; foreign"
        f" memory: the next {bench.unit}'s user; messages only",
        flush=True,
    )
    vectors = embed_queries([q.question["question"] for q in questions])
    started = time.perf_counter()
    dump = ours.dump.open("w") if ours.dump else None
    try:
        table = evaluate(conversations, ingested, questions, vectors, dump)
    finally:
        if dump is not None:
            dump.close()
    print_table(table)
    print(
        f"\n{1000 * (time.perf_counter() - started) / max(len(questions), 1):.0f} ms per question"
        " (4 asks)"
    )
    if args.json:
        args.json.write_text(json.dumps(table, indent=2))


if __name__ == "__main__":
    main()
