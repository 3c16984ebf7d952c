"""LoCoMo retrieval benchmark through the real pipeline and the real search function.

Each LoCoMo conversation becomes a channel, each LoCoMo session a MemoryHub session, each turn
an event `speaker: text` dated with its session's start. Events go through append_events, the
events_appended signal, the indexing task and the embedding task (run inline: MEMORYHUB_TASKS_EAGER),
with the configured embedder (MiniLM by default). Each question is then asked through
retrieval.search.hybrid_search in its conversation's channel, and we count evidence turns
(and evidence sessions) among the top 5 and top 10 results.

    .venv/bin/python bench/locomo.py                      # full run (about 12 minutes on a busy 2-core machine)
    .venv/bin/python bench/locomo.py --limit-conversations 2
    .venv/bin/python bench/locomo.py --keepdb             # keep the ingested data for the next run
    .venv/bin/python bench/locomo.py --no-summaries       # turns only, no summariser

After the turns, the summariser runs as the task cluster runs it once the sessions have gone idle
(memoryhub.session_work.summarise_due with the idle delay passed: rolling summaries and every
session's summary tree, closed). Summary nodes are memories of kind `summary`, indexed and
embedded like any other and found by the same search. A summary node belongs to ONE session (the
tree is built per session), so a summary hit counts toward session recall for that session only,
and toward turn recall for no turn (it is not a turn, even though it spans several).

Embeddings are cached by (model, text) in bench/results/cache/ (gitignored; --no-cache to skip),
so a re-ingest after a change to indexing costs database work, not the model's time.
The data (CC BY-NC 4.0) stays in ../shared/bench-data; nothing is cached in the repository.
A throwaway database (bench_locomo) is created on the configured server and dropped at the end.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "bench-data" / "locomo10.jsonl"
CACHE = ROOT / "bench" / "results" / "cache"
CATEGORIES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop", "5": "adversarial"}
RUNS = {  # name: search options
    "text": {"mode": "text"},
    "vector": {"mode": "vector"},
    "hybrid-weighted": {"mode": "hybrid", "fusion": "weighted"},
    "hybrid-rrf": {"mode": "hybrid", "fusion": "rrf"},
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--runs", default=",".join(RUNS), help="comma-separated: " + ",".join(RUNS))
    parser.add_argument("--embedder", default="minilm", choices=["minilm", "hash"])
    parser.add_argument("--keepdb", action="store_true", help="keep (and reuse) the bench database")
    parser.add_argument("--no-summaries", action="store_true", help="do not run the summariser after ingest")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="override a numeric setting for the searches (experiments)")
    parser.add_argument("--no-cache", action="store_true", help="do not cache embeddings by text")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--vector-weight", type=float, default=None, help="override for the weighted run")
    parser.add_argument("--text-weight", type=float, default=None, help="override for the weighted run")
    return parser.parse_args()


def setup_django(args: argparse.Namespace) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    os.environ["TEST_DB_NAME"] = "bench_locomo"
    os.environ["MEMORYHUB_EMBEDDER"] = args.embedder
    os.environ["MEMORYHUB_TASKS_EAGER"] = "true"
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    from memoryhub.embedded_pg import ensure_running

    ensure_running()
    django.setup()


class EmbeddingCache:
    """Wraps the process's embedder: vectors of texts seen before (same model) come from disk."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.inner = embedder.embed
        self.path = CACHE / f"embeddings-{hashlib.sha256(embedder.name.encode()).hexdigest()[:12]}.pkl"
        self.vectors: dict[str, list[float]] = {}
        if self.path.exists():
            with self.path.open("rb") as fh:
                self.vectors = pickle.load(fh)  # noqa: S301 - our own cache file
        self.dirty = False
        embedder.embed = self.embed

    def key(self, text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    def embed(self, texts: list[str]) -> list[list[float]]:
        keys = [self.key(t) for t in texts]
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in self.vectors))
        if missing:
            for text, vector in zip(missing, self.inner(missing), strict=True):
                self.vectors[self.key(text)] = vector
            self.dirty = True
        return [self.vectors[k] for k in keys]

    def save(self) -> None:
        if self.dirty:
            CACHE.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            with tmp.open("wb") as fh:
                pickle.dump(self.vectors, fh)
            tmp.replace(self.path)
            self.dirty = False


def summarise(tenant_id: int) -> tuple[dict[str, Any], float]:
    """What the cluster does once the sessions have gone idle: rolling summaries and closed trees."""
    from django.test.utils import override_settings

    from memoryhub.session_work import summarise_due

    started = time.perf_counter()
    with override_settings(MEMORYHUB_SUMMARY_IDLE_MINUTES=0):
        report = summarise_due(tenant_id=tenant_id)
    return report, time.perf_counter() - started


def load(path: Path, limit: int | None) -> list[dict[str, Any]]:
    with path.open() as fh:
        conversations = [json.loads(line) for line in fh if line.strip()]
    return conversations[:limit] if limit else conversations


def tenant_name(embedder: str) -> str:
    from django.conf import settings

    return f"locomo-{embedder}-ctx{settings.MEMORYHUB_EMBED_CONTEXT_MESSAGES}"


def ingest(conversations: list[dict[str, Any]], embedder: str) -> tuple[Any, dict[str, Any], float]:
    """Append every turn through the real pipeline. Returns the key, turn map and seconds spent."""
    from django.db import transaction

    from accounts.models import ApiKey, Tenant
    from memoryhub.sessions import EventInput, SessionInput, append_events, create_session
    from retrieval.models import Chunk

    tenant, _ = Tenant.get_or_create_named(tenant_name(embedder))
    key = ApiKey.create_key(tenant=tenant, scopes=("read", "write")).api_key
    turn_at: dict[tuple[str, int], str] = {}  # (session external id, sequence) -> turn id
    reuse = Chunk.objects.filter(tenant=tenant).exists()
    started = time.perf_counter()
    for conv in conversations:
        for lsession in conv["sessions"]:
            session_id = f"{conv['conversation_id']}-{lsession['session_id']}"
            when = datetime.fromisoformat(lsession["started_at"]).replace(tzinfo=UTC)
            items = [
                EventInput(role="user", content=f"{t['speaker']}: {t['text']}", created_at=when,
                           metadata={"turn_id": t["turn_id"], "speaker": t["speaker"]})
                for t in lsession["turns"]
            ]
            for seq, t in enumerate(lsession["turns"], start=1):
                turn_at[(session_id, seq)] = t["turn_id"]
            if reuse:
                continue
            create_session(key=key, data=SessionInput(id=session_id, channel=conv["conversation_id"]),
                           get_or_create=True)
            # One transaction per session: on commit the indexing task runs, then the embedding task.
            with transaction.atomic():
                append_events(key=key, session_id=session_id, items=items)
    return key, turn_at, time.perf_counter() - started


def evaluate(key: Any, conversations: list[dict[str, Any]], turn_at: dict[tuple[str, int], str],
             runs: list[str]) -> tuple[dict[str, Any], dict[str, float]]:
    from accounts.models import Channel
    from retrieval.embedders import get_embedder
    from retrieval.search import hybrid_search

    questions = [(conv, q) for conv in conversations for q in conv["questions"] if q["evidence_turn_ids"]]
    started = time.perf_counter()
    vectors = get_embedder().embed([q["question"] for _, q in questions])
    timings = {"query_embedding_ms_per_question": 1000 * (time.perf_counter() - started) / max(len(questions), 1)}
    channels = {c.name: c for c in Channel.objects.filter(tenant_id=key.tenant_id)}
    figures: dict[str, Any] = {}
    for run in runs:
        sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        summary_hits = 0
        started = time.perf_counter()
        for (conv, q), vector in zip(questions, vectors, strict=True):
            channel = channels[conv["conversation_id"]]
            hits = hybrid_search(
                tenant_id=key.tenant_id, query=q["question"], query_embedding=vector, scope="channel",
                channel_ids=[channel.pk], workspace_ids=[channel.workspace_id], top_k=10, **RUNS[run],
            )
            found: list[tuple[set[str], str]] = []
            for hit in hits:
                session = hit.chunk.session.external_id
                if hit.chunk.kind == "summary":
                    # A summary node summarises part of ONE session: it finds that session, no turn.
                    summary_hits += 1
                    found.append((set(), session.rsplit("-", 1)[1]))
                    continue
                turns = {turn_at.get((session, s)) for s in {hit.chunk.sequence_start, hit.chunk.sequence_end}}
                found.append(({t for t in turns if t}, session.rsplit("-", 1)[1]))
            evidence = set(q["evidence_turn_ids"])
            sessions = set(q["evidence_session_ids"])
            for bucket in (CATEGORIES.get(str(q["category"]), str(q["category"])), "overall"):
                sums[bucket]["n"] += 1
                for k in (5, 10):
                    got_turns = set().union(*[t for t, _ in found[:k]]) if found else set()
                    got_sessions = {s for _, s in found[:k]}
                    sums[bucket][f"turn@{k}"] += len(evidence & got_turns) / len(evidence)
                    sums[bucket][f"session@{k}"] += len(sessions & got_sessions) / len(sessions)
        timings[f"{run}_ms_per_query"] = 1000 * (time.perf_counter() - started) / max(len(questions), 1)
        timings[f"{run}_summary_hits_per_query"] = summary_hits / max(len(questions), 1)
        figures[run] = {
            bucket: {"n": int(v["n"]), **{m: round(v[m] / v["n"], 3) for m in v if m != "n"}}
            for bucket, v in sums.items()
        }
        print_table({run: figures[run]}, flush=True)
    return figures, timings


def print_table(figures: dict[str, Any], flush: bool = False) -> None:
    buckets = ["overall", *CATEGORIES.values()]
    for run, per in figures.items():
        print(f"\n{run}")
        print(f"  {'category':<12} {'n':>5} {'turn@5':>7} {'turn@10':>8} {'sess@5':>7} {'sess@10':>8}")
        for b in buckets:
            if b in per:
                v = per[b]
                print(f"  {b:<12} {v['n']:>5} {v['turn@5']:>7.3f} {v['turn@10']:>8.3f} "
                      f"{v['session@5']:>7.3f} {v['session@10']:>8.3f}", flush=flush)


def main() -> None:
    args = parse_args()
    setup_django(args)
    from django.conf import settings
    from django.db import connection

    conversations = load(args.data, args.limit_conversations)
    from memoryhub.models import SummaryNode
    from retrieval.embedders import get_embedder

    connection.creation.create_test_db(verbosity=0, autoclobber=not args.keepdb, keepdb=args.keepdb)
    cache = None if args.no_cache else EmbeddingCache(get_embedder())
    try:
        key, turn_at, ingest_s = ingest(conversations, args.embedder)
        turns = len(turn_at)
        if ingest_s < 1.0:
            print(f"reused the ingested data of {len(conversations)} conversations, {turns} turns (--keepdb)")
        else:
            print(f"ingested {len(conversations)} conversations, {turns} turns in {ingest_s:.1f} s "
                  f"({turns / ingest_s:.1f} turns/s incl. embedding; embedder {settings.MEMORYHUB_EMBEDDER}, "
                  f"context messages {settings.MEMORYHUB_EMBED_CONTEXT_MESSAGES})", flush=True)
        if cache is not None:
            cache.save()
        if not args.no_summaries and not SummaryNode.objects.filter(tenant_id=key.tenant_id).exists():
            report, summarise_s = summarise(key.tenant_id)
            print(f"summarised in {summarise_s:.1f} s: {report}", flush=True)
            if cache is not None:
                cache.save()
        if args.no_summaries:  # the same data, searched over turns only
            for options in RUNS.values():
                options["kinds"] = ["event"]
        print(f"summary nodes: {SummaryNode.objects.filter(tenant_id=key.tenant_id).count()}", flush=True)
        for item in args.set:
            name, value = item.split("=", 1)
            setattr(settings, name, type(getattr(settings, name, 0.0))(value))
            print(f"setting {name} = {getattr(settings, name)}", flush=True)
        if args.vector_weight is not None:
            RUNS["hybrid-weighted"]["vector_weight"] = args.vector_weight
        if args.text_weight is not None:
            RUNS["hybrid-weighted"]["text_weight"] = args.text_weight
        figures, timings = evaluate(key, conversations, turn_at, [r for r in args.runs.split(",") if r])
        if cache is not None:
            cache.save()
        print("\n" + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
        if args.json:
            args.json.write_text(json.dumps({"figures": figures, "timings": timings, "ingest_s": ingest_s}, indent=2))
    finally:
        if not args.keepdb:
            connection.creation.destroy_test_db("bench_locomo", verbosity=0)


if __name__ == "__main__":
    main()
