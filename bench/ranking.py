"""The alternative rankings (docs/ranking.md#profiles), measured on a kept benchmark database
(bench/locomo.py or bench/longmemeval.py run once with --keepdb): decay in every ranking, the
seed002 relevance formula, the relevance floor.

    .venv/bin/python bench/locomo.py --keepdb --no-plain          # ingest once
    .venv/bin/python bench/ranking.py locomo                      # the variants on it
    .venv/bin/python bench/longmemeval.py --limit 10 --keepdb --no-plain
    .venv/bin/python bench/ranking.py longmemeval --limit 10 --variants default,decay-0.4

Every variant asks the same questions through retrieval.search.hybrid_search (channel scope, top
10, as the recall benchmarks do) and counts evidence turns and sessions among the top 5 and 10,
overall and per half of the file. The searches do not count as use (counts_as_use=False) and the
tenant's access counts are cleared first, so no variant is reinforced by an earlier one's
searches: reinforcement is 0 for all, as for a fresh memory.

Questions are asked at each conversation's last session start by default (--as-of
last-session): decay is then measured from when the conversation was held, as an agent asking
soon after would see it. At the search's now (--as-of now), every turn of these files is years
old: the decayed relevance is below 1e-50 for all of them and adds nothing.

Variants (search options):
  default         the product's hybrid search (weighted fusion, default profile)
  decay-W         default with decay_weight W: (1 − W) · score + W · best · min(decayed
                  relevance, 1)
  memory          profile "memory": 0.3 text + 0.3 meaning + 0.4 decayed relevance, no re-ranking
  seed002         profile "seed002": 0.3 BM25 + 0.3 cosine + 0.3 e^(−0.05 days)(1 + 0.02
                  accesses) + 0.1 importance
  mincos-C        default with min_cosine C: results less close than C dropped, later ones move up
  floor-C         default with the default relevance floor at C (weights.RELEVANCE_MIN_COSINE; -1 =
                  off): a result that says no query word and is less close than C dropped, later
                  ones move up
  newer-M         default with newer_first at margin M (weights.NEWER_FIRST): of two same-subject
                  final results of different conversations within M of each other's score, the newer
                  first
  sessions-V      variant V (default, floor-C) grouped by conversation (group_by session, one hit
                  each): its session@k and all@k count the first k conversations
The relevance floors are also applied to the default variant's ten results without backfill
(what context does to search's results): `floor-word|0.35` keeps a result that shares a word with
the query or has cosine ≥ 0.35 (context today), `floor-word|0.655` the same at 0.655, `floor-0.655`
cosine ≥ 0.655 only (the relevance leg); `kept` is how many of the ten survive on average.

Measured 2026-11-28 on the shared 2-core machine (busy), MiniLM, a kept database per file. Only
part of each file could be ingested in the time (about 90 turns a minute): LoCoMo conversations
1-4 (755 questions; half 1 = conversations 1-2, half 2 = 3-4), LongMemEval dev60 questions 1-4
(one question per haystack, ~1,200 chunks each; half 1 = questions 1-2, half 2 = 3-4: four
questions decide nothing alone). Messages only (--turns-only / --no-summaries), asked at each
conversation's last session start. turn@10 / session@10:

    variant        LoCoMo all    LoCoMo h1     LoCoMo h2     LME all       LME h1        LME h2
    default        0.768/0.936   0.755/0.946   0.777/0.929   0.583/0.792   0.667/0.833   0.500/0.750
    decay-0.1      0.767/0.936   0.757/0.945   0.774/0.929   0.583/0.792   0.667/0.833   0.500/0.750
    decay-0.4      0.706/0.916   0.711/0.919   0.703/0.914   0.583/0.792   0.667/0.833   0.500/0.750
    memory         0.705/0.875   0.719/0.890   0.695/0.865   0.583/0.792   0.667/0.833   0.500/0.750
    seed002        0.478/0.685   0.478/0.696   0.478/0.678   0.583/0.667   0.667/0.833   0.500/0.500
    mincos-0.655   0.155/0.303   0.158/0.355   0.152/0.268   0.250/0.250   0.500/0.500   0.000/0.000
    floor-0.655    0.146/0.280   0.151/0.341   0.143/0.240   0.250/0.250   0.500/0.500   0.000/0.000
    floor-word|*   0.768/0.934   0.755/0.944   0.777/0.928   0.583/0.792   0.667/0.833   0.500/0.750

turn@5 / session@5 (all): LoCoMo default 0.697/0.854, decay-0.1 0.699/0.852, decay-0.4
0.607/0.788, memory 0.599/0.808, seed002 0.368/0.559, mincos-0.655 0.151/0.298; LME 0.583/0.667
for all but mincos-0.655 (0.250/0.250). Of the default's ten results, floor-0.655 keeps 1.0 on
LoCoMo and 0.5 on LongMemEval; both word floors keep 10.0 (nearly every result shares a word with
the question, so 0.35 and 0.655 give the same figures there). Asked at the search's now (--as-of
now): decay-0.4 equals default exactly on both files (decay has underflowed for turns years old);
seed002 LoCoMo 0.759/0.911 (h1 0.774/0.919, h2 0.750/0.906), LME 0.583/0.667 (h2 session 0.500).
With summaries (LoCoMo, last session start): default 0.777/0.933, decay-0.1 0.774/0.936,
decay-0.4 0.700/0.929, memory 0.553/0.867, seed002 0.309/0.863; summaries are dated when the
bench made them, years after the turns, which flatters them under any decay, hence the
messages-only table above.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import recall, runner  # noqa: E402

FLOORS = {
    "floor-word|0.35": (True, 0.35),
    "floor-word|0.655": (True, 0.655),
    "floor-0.655": (False, 0.655),
}


def variant_options(name: str) -> dict[str, Any]:
    base: dict[str, Any] = {"mode": "hybrid", "fusion": "weighted", "counts_as_use": False}
    if name.startswith("sessions-"):
        return {
            **variant_options(name.removeprefix("sessions-")),
            "group_by": "session",
            "hits_per_session": 1,
        }
    if name == "default" or name.startswith(("floor-", "newer-")):
        return base
    if name.startswith("decay-"):
        return {**base, "decay_weight": float(name.removeprefix("decay-"))}
    if name in ("memory", "seed002"):
        return {**base, "profile": name}
    if name.startswith("mincos-"):
        return {**base, "min_cosine": float(name.removeprefix("mincos-"))}
    raise SystemExit(f"unknown variant {name!r}")


def variant_weights(name: str) -> dict[str, float]:
    """The ranking constants a variant changes for its searches."""
    name = name.removeprefix("sessions-")
    if name.startswith("floor-"):
        return {"RELEVANCE_MIN_COSINE": float(name.removeprefix("floor-"))}
    if name.startswith("newer-"):
        return {"NEWER_FIRST": float(name.removeprefix("newer-"))}
    return {}


def _floored(hits: list[Any], words: bool, cosine: float) -> list[Any]:
    return [
        h
        for h in hits
        if (words and (h.text_score or 0.0) > 0.0) or (h.vector_score or -1.0) >= cosine
    ]


def evaluate(
    ingested: Any,
    questions: list[recall.Question],
    vectors: list[list[float]],
    variants: list[str],
    as_of: dict[str, Any] | None,
    kinds: list[str] | None = None,
) -> tuple[dict[str, Any], dict[str, float]]:
    from accounts.models import Channel
    from retrieval.search import hybrid_search, weights

    key = ingested.key
    channels = {c.name: c for c in Channel.objects.filter(tenant_id=key.tenant_id)}
    scorers = {v: recall.Scorer() for v in variants}
    if "default" in variants:
        scorers.update({f: recall.Scorer() for f in FLOORS})
    kept = {f: 0 for f in FLOORS}
    seconds = {v: 0.0 for v in variants}
    for q, vector in zip(questions, vectors, strict=True):
        channel = channels[q.conversation_id]
        for v in variants:
            started = time.perf_counter()
            changed = variant_weights(v)
            saved = {name: getattr(weights, name) for name in changed}
            for name, value in changed.items():
                setattr(weights, name, value)
            try:
                hits = hybrid_search(
                    tenant_id=key.tenant_id,
                    query=q.question["question"],
                    query_embedding=vector,
                    scope="channel",
                    channel_ids=[channel.pk],
                    workspace_ids=[channel.workspace_id],
                    top_k=10,
                    as_of=(as_of or {}).get(q.conversation_id),
                    history=False,
                    **({"kinds": kinds} if kinds else {}),
                    **variant_options(v),
                )
            finally:
                for name, value in saved.items():
                    setattr(weights, name, value)
            seconds[v] += time.perf_counter() - started
            scorers[v].add(q, recall._found(hits, ingested.turn_at, ingested.session_of)[0])
            if v == "default":
                for f, (words, cosine) in FLOORS.items():
                    survivors = _floored(hits[:10], words, cosine)
                    kept[f] += len(survivors)
                    scorers[f].add(
                        q, recall._found(survivors, ingested.turn_at, ingested.session_of)[0]
                    )
    n = max(len(questions), 1)
    timings = {f"{v}_ms_per_query": 1000 * s / n for v, s in seconds.items()}
    timings.update({f"{f}_kept_of_10": k / n for f, k in kept.items() if "default" in variants})
    return {name: s.figures() for name, s in scorers.items()}, timings


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("bench", choices=["locomo", "longmemeval"])
    parser.add_argument(
        "--variants", default="default,decay-0.1,decay-0.4,memory,seed002,mincos-0.655"
    )
    parser.add_argument(
        "--turns-only",
        action="store_true",
        help="search messages only (kinds: event), as --no-summaries does, summaries or not",
    )
    # the rest: the recall benchmark's options (--limit N, --as-of, ...)
    ours, rest = parser.parse_known_args()
    if ours.bench == "locomo":
        from bench.locomo import LOCOMO as bench
    else:
        from bench.longmemeval import LONGMEMEVAL as bench
    args = runner.build_parser(bench).parse_args(
        ["--keepdb", "--no-plain", "--as-of", "last-session", *rest]
    )
    as_of_now = args.as_of == "now"
    conversations, ingested, _ = runner.prepare(bench, args)
    from retrieval.models import ChunkAccess
    from retrieval.query_embedding import embed_queries

    cleared, _ = ChunkAccess.objects.filter(chunk__tenant_id=ingested.key.tenant_id).delete()
    print(f"access counts cleared: {cleared} rows", flush=True)
    questions = recall.questions_of(conversations, bench.categories)
    print(
        f"{len(questions)} questions; {recall.halves_label(conversations, bench.unit)}; as of "
        f"{'now' if as_of_now else 'each conversation last session start'}"
        f"{'; messages only' if ours.turns_only or args.no_summaries else ''}",
        flush=True,
    )
    vectors = embed_queries([q.question["question"] for q in questions])
    variants = [v for v in ours.variants.split(",") if v]
    figures, timings = evaluate(
        ingested,
        questions,
        vectors,
        variants,
        None if as_of_now else runner._as_of(conversations),
        ["event"] if ours.turns_only or args.no_summaries else None,
    )
    recall.print_comparison(figures)
    recall.print_table(figures, recall.bucket_order(bench.categories, figures))
    print("\n" + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
    if args.json:
        import json

        args.json.write_text(json.dumps({"figures": figures, "timings": timings}, indent=2))


if __name__ == "__main__":
    main()
