"""LongMemEval-S retrieval benchmark (dev 60) through the real pipeline and the real search
function.

`../shared/bench-data/longmemeval_s_dev60.jsonl.gz` (MIT; format in that folder's README): 60
questions, each with its own haystack of ~50 dated chat sessions between a user and an assistant
(2,894 sessions, 29,639 turns, many 2-6k-character assistant answers). As bench/locomo.py does
LoCoMo: each question's haystack becomes a channel, each haystack session a MemoryHub session,
each turn an event `user: text` / `assistant: text` (role user / assistant) dated with its
session's start, appended through append_events with the indexing and embedding tasks inline;
the summariser then runs as the cluster runs it once sessions are idle, and the question is asked
through retrieval.search.hybrid_search in its own channel only. Evidence turn ids are
`<session_id>_<k>`, k counted from 1 over the session's turns (the event's sequence).

    .venv/bin/python bench/longmemeval.py                 # full run (the first embeds ~70k chunks: an hour or more on 2 cores)
    .venv/bin/python bench/longmemeval.py --limit 4 --embedder hash
    .venv/bin/python bench/longmemeval.py --keepdb        # keep the ingested data (and resume an interrupted ingest)
    .venv/bin/python bench/longmemeval.py --no-summaries  # turns only, no summariser

Prints turn and session recall@5/@10 per question type, overall and per half of the file
(questions 1-30 / 31-60), for the four search modes and the plain baselines over whole turns
(bench/plain.py: BM25, MiniLM, and both min-max fused 0.7 / 0.3 with no re-ranking), and the
ingest and embedding time. Embeddings are cached by (model, text) in bench/results/cache/.
A throwaway database (bench_longmemeval) is created on the configured server and dropped at the
end unless --keepdb.
"""  # noqa: E501

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import DATA_DIR  # noqa: E402
from bench.runner import Bench, main  # noqa: E402

CATEGORIES = {  # question types, largest first
    c: c
    for c in (
        "multi-session",
        "knowledge-update",
        "single-session-user",
        "single-session-assistant",
        "temporal-reasoning",
        "single-session-preference",
    )
}
LONGMEMEVAL = Bench(
    name="longmemeval",
    data=DATA_DIR / "longmemeval_s_dev60.jsonl.gz",
    db_name="bench_longmemeval",
    categories=CATEGORIES,
    unit="questions",
    doc=__doc__ or "",
)


if __name__ == "__main__":
    main(LONGMEMEVAL)
