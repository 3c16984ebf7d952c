"""What typo tolerance costs and finds, on the corpus bench/search.py builds (run it with --keepdb
first: `bench/search.py --keepdb --only-build`).

    nice -n 10 .venv/bin/python bench/fuzzy.py [--queries 100] [--db bench_search]

Each of N LoCoMo questions is asked as written and misspelt (in every word of six letters or
more, one inner letter dropped, as "Lisbn" for "Lisbon"), in process (retrieval.search), with
weights.FUZZY on and off, top 10, account scope:
- the fuzzy look-up alone (the scope's vocabulary near the words, the check of visibility):
  p50/p95 ms, and the candidate lexemes it read per word;
- text and hybrid search (query vectors computed beforehand, so that the model is not timed):
  p50/p95 ms of the correct and of the misspelt questions;
- how much of the correct question's top 10 the misspelt one finds, fuzzy off and on.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from search import DB_NAME, load_corpus, setup_django, summary  # noqa: E402


def misspell(question: str, rng: random.Random) -> str:
    words = []
    for word in question.split():
        if len(word) >= 6 and word.isalpha():
            i = rng.randrange(1, len(word) - 1)
            word = word[:i] + word[i + 1 :]
        words.append(word)
    return " ".join(words)


def timed(run: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    value = run()
    return value, 1000 * (time.perf_counter() - started)


def lookups(tenant_id: int, pairs: list[tuple[str, str]]) -> dict[str, Any]:
    from retrieval.search import SearchRequest, fuzzy
    from retrieval.search.plan import plan_search
    from retrieval.search.statistics import term_statistics

    ms, candidates, corrected = [], [], 0
    for _, wrong in pairs:
        req = SearchRequest(tenant_id=tenant_id, query=wrong, mode="text")
        plan = plan_search(req)
        where, params = plan.where
        frequencies = term_statistics(req, plan).counts
        found, elapsed = timed(
            lambda req=req, f=frequencies, w=where, p=params: fuzzy.alternatives(
                req, f, w, p, every_word=False
            )
        )
        ms.append(elapsed)
        words = [w for w in frequencies if fuzzy.correctable(w) and not frequencies[w]]
        if words:
            vocabulary = fuzzy.vocabulary_candidates(req, words)
            candidates += [len(v) for v in vocabulary.values()]
        corrected += len(found)
    return {
        "lookup_ms": summary(ms),
        "candidates_per_word": summary([float(c) for c in candidates] or [0.0]),
        "words_corrected": corrected,
    }


def searches(
    tenant_id: int, pairs: list[tuple[str, str]], vectors: dict[str, list[float]]
) -> dict[str, Any]:
    from unittest import mock

    from retrieval.search import hybrid_search, weights

    out: dict[str, Any] = {}
    for mode in ("text", "hybrid"):
        for fuzzy_on in (False, True):
            with mock.patch.object(weights, "FUZZY", fuzzy_on):
                right_ms, wrong_ms, overlap = [], [], []
                for right, wrong in pairs:
                    extra = {"query_embedding": vectors[right]} if mode == "hybrid" else {}
                    hits, elapsed = timed(
                        lambda q=right, e=extra, m=mode: hybrid_search(
                            tenant_id=tenant_id, query=q, mode=m, top_k=10, **e
                        )
                    )
                    right_ms.append(elapsed)
                    extra = {"query_embedding": vectors[wrong]} if mode == "hybrid" else {}
                    typo_hits, elapsed = timed(
                        lambda q=wrong, e=extra, m=mode: hybrid_search(
                            tenant_id=tenant_id, query=q, mode=m, top_k=10, **e
                        )
                    )
                    wrong_ms.append(elapsed)
                    expected = {h.chunk.pk for h in hits}
                    if expected:
                        overlap.append(
                            len(expected & {h.chunk.pk for h in typo_hits}) / len(expected)
                        )
            out[f"{mode}, fuzzy {'on' if fuzzy_on else 'off'}"] = {
                "correct_ms": summary(right_ms),
                "misspelt_ms": summary(wrong_ms),
                "top10_found_when_misspelt": round(sum(overlap) / max(len(overlap), 1), 3),
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--db", default=DB_NAME)
    args = parser.parse_args()
    setup_django(args.db)
    from django.db import connection

    from accounts.models import Tenant
    from retrieval.query_embedding import embed_query

    connection.creation.create_test_db(verbosity=0, autoclobber=False, keepdb=True, serialize=False)
    tenant = Tenant.objects.order_by("pk").first()
    assert tenant is not None, "build the corpus first: bench/search.py --keepdb --only-build"
    _, questions = load_corpus()
    rng = random.Random(11)
    pairs = [
        (q, misspell(q, rng)) for q in rng.sample(questions, min(args.queries, len(questions)))
    ]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), count(DISTINCT lexeme) FROM retrieval_termstat WHERE tenant_id = %s",
            [tenant.pk],
        )
        rows, lexemes = cursor.fetchone()
        cursor.execute("SELECT count(*) FROM retrieval_chunk WHERE tenant_id = %s", [tenant.pk])
        chunks = cursor.fetchone()[0]
    print(f"{chunks} chunks, {lexemes} lexemes in {rows} statistics rows; e.g. {pairs[0][1]!r}")
    vectors = {q: embed_query(q) for pair in pairs for q in pair}
    print("fuzzy look-up:", lookups(tenant.pk, pairs))
    for name, figures in searches(tenant.pk, pairs, vectors).items():
        print(f"{name}: {figures}")


if __name__ == "__main__":
    main()
