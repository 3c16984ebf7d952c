"""LoCoMo retrieval benchmark through the real pipeline and the real search function.

Each LoCoMo conversation becomes a channel, each LoCoMo session a MemoryHub session, each turn
an event `speaker: text` dated with its session's start. Events go through append_events, the
events_appended signal, the indexing task and the embedding task (run inline:
MEMORYHUB_TASKS_EAGER), with the configured embedder (MiniLM by default). Each question is then
asked through retrieval.search.hybrid_search in its conversation's channel, and we count evidence
turns (and evidence sessions) among the top 5 and top 10 results.

    .venv/bin/python bench/locomo.py                      # full run (about 12 minutes on a busy 2-core machine)
    .venv/bin/python bench/locomo.py --limit-conversations 2
    .venv/bin/python bench/locomo.py --keepdb             # keep the ingested data for the next run
    .venv/bin/python bench/locomo.py --no-summaries       # turns only, no summariser
    .venv/bin/python bench/locomo.py --no-plain           # without the plain BM25 / MiniLM baselines

After the turns, the summariser runs as the task cluster runs it once the sessions have gone idle
(memoryhub.summaries.summarise_due with the idle delay passed: rolling summaries and every
session's summary tree, closed). Summary nodes are memories of kind `summary`, indexed and
embedded like any other and found by the same search. A summary node belongs to ONE session (the
tree is built per session), so a summary hit counts toward session recall for that session only,
and toward turn recall for no turn (it is not a turn, even though it spans several).

Beside the product's runs, plain baselines over the same whole turns, computed in the bench
(bench/plain.py): BM25, MiniLM, and both min-max fused 0.7 / 0.3 with no re-ranking. Every figure
is printed overall, per category and per half of the file (conversations 1-5 / 6-10).

Embeddings are cached by (model, text) in bench/results/cache/ (gitignored; --no-cache to skip),
so a re-ingest after a change to indexing costs database work, not the model's time.
The data (CC BY-NC 4.0) stays in ../shared/bench-data; nothing is cached in the repository.
A throwaway database (bench_locomo) is created on the configured server and dropped at the end.
"""  # noqa: E501

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import DATA_DIR  # noqa: E402
from bench.runner import Bench, main  # noqa: E402

CATEGORIES = {
    "1": "multi-hop",
    "2": "temporal",
    "3": "open-domain",
    "4": "single-hop",
    "5": "adversarial",
}
LOCOMO = Bench(
    name="locomo",
    data=DATA_DIR / "locomo10.jsonl",
    db_name="bench_locomo",
    categories=CATEGORIES,
    unit="conversations",
    doc=__doc__ or "",
)


if __name__ == "__main__":
    main(LOCOMO)
