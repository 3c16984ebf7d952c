"""Pipeline benchmark: a LongMemEval-sized ingest through the API, and what the lanes make of it.

Starts its own MemoryHub (`manage.py run` with every lane, in a private data folder), ingests the
haystacks of LongMemEval-S (real chats: short user turns, many 2–6k-character assistant answers;
/work/shared/bench-data) as bulk appends from several clients, while a few schedules fire every
--interval seconds. It prints:

- events/s acknowledged;
- text-searchable at acknowledgement: for every --check-every-th append, a full-text search right
  after the reply must find one of its events (goal: all of them), and the events without a chunk
  when the last append was acknowledged (goal: 0, i.e. time to 100 % searchable = 0 s);
- time to 100 % embedded (event chunks; and every chunk, summaries included);
- the embed lane's rate while it drains the backlog after the ingest, against the raw model's
  batch throughput on a sample of the chunks it embedded meanwhile, in this process, with the same
  runtime, threads and niceness (goal ≥ 0.9): by wall time (noisy on a shared machine: the load
  average is printed with both) and by CPU time per text (the lane process's, summarising included);
- lateness of the schedule runs due during the backlog, p50/p95/max (goal p95 ≤ 5 s).

    nice -n 10 .venv/bin/python -m bench.pipeline                     # 40 haystacks, ~20k events
    nice -n 10 .venv/bin/python -m bench.pipeline --conversations 4   # a quick look
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import random
import re
import shutil
import statistics
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from queue import Empty, Queue
from typing import Any

from bench.ingest import Client, Server

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "bench-data" / "longmemeval_s_dev60.jsonl.gz"
WORD = re.compile(r"[A-Za-z]{6,}")
BAD_ID_CHARACTER = re.compile(r"[^A-Za-z0-9._:@-]")


def load(path: Path, limit: int) -> list[tuple[str, list[dict[str, Any]]]]:
    """(MemoryHub session id, events) per chat session of the first `limit` haystacks."""
    with gzip.open(path, "rt") as fh:
        conversations = [json.loads(line) for line in fh if line.strip()][:limit]
    sessions = []
    for conversation in conversations:
        for session in conversation["sessions"]:
            events = [
                {"role": t["speaker"], "content": t["text"]}
                for t in session["turns"]
                if t["text"].strip()
            ]
            if events:
                # A session id allows letters, digits and . _ : @ -; LongMemEval has ids like
                # "…_1#2" (and a '#' would end the URL's path besides).
                name = BAD_ID_CHARACTER.sub(
                    ".", f"{conversation['conversation_id']}-{session['session_id']}"
                )
                sessions.append((name[:200], events))
    return sessions


def seed_onnx_model(data_dir: Path) -> None:
    """The ONNX export is a cache of the shipped weights: reuse this checkout's, if it made one."""
    source = ROOT / ".memoryhub" / "models"
    if source.is_dir():
        shutil.copytree(source, data_dir / "models")


# --- the ingest ------------------------------------------------------------------------------


class Ingest:
    """Bulk appends from several clients; every few appends a text search right after the reply."""

    def __init__(
        self,
        url: str,
        key: str,
        sessions: list[tuple[str, list[dict[str, Any]]]],
        *,
        clients: int,
        check_every: int,
    ) -> None:
        self.url, self.key, self.clients, self.check_every = url, key, clients, check_every
        self.todo: Queue[tuple[int, str, list[dict[str, Any]]]] = Queue()
        for index, (session, events) in enumerate(sessions):
            self.todo.put((index, session, events))
        self.events = self.requests = self.errors = 0
        self.latencies: list[float] = []
        self.checks: list[bool] = []
        self.lock = threading.Lock()

    def run(self) -> float:
        started = time.monotonic()
        threads = [threading.Thread(target=self.client) for _ in range(self.clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return time.monotonic() - started

    def client(self) -> None:
        client = Client(self.url, self.key)
        while True:
            try:
                index, session, events = self.todo.get_nowait()
            except Empty:
                return
            sent = time.monotonic()
            status, _ = client.post(f"/api/v1/sessions/{session}/events/", {"events": events})
            latency = time.monotonic() - sent
            found = (
                self.check(client, session, events)
                if status == 201 and index % self.check_every == 0
                else None
            )
            with self.lock:
                self.requests += 1
                self.errors += status != 201
                self.events += len(events) if status == 201 else 0
                self.latencies.append(latency * 1000)
                if found is not None:
                    self.checks.append(found)

    def check(self, client: Client, session: str, events: list[dict[str, Any]]) -> bool:
        """Search, in full text only, for the rarest words of one appended event: found at once?"""
        event = max(events, key=lambda e: len(set(WORD.findall(e["content"]))))
        words = sorted(set(WORD.findall(event["content"])), key=len, reverse=True)[:4]
        if not words:
            return True
        status, body = client.post(
            "/api/v1/search/",
            {
                "query": " ".join(words),
                "mode": "text",
                "session": session,
                "scope": "session",
                "top_k": 50,
            },
        )
        content = " ".join(event["content"].split())  # chunks hold normalised text
        return status == 200 and any(
            " ".join(r["text"].split())[:40] in content for r in body.get("results", [])
        )


# --- the database side (this process reads the server's database directly) -----------------------


def setup_django(data_dir: Path) -> None:
    os.environ["MEMORYHUB_DATA_DIR"] = str(data_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    sys.path.insert(0, str(ROOT))
    import django

    from memoryhub.plumbing.embedded_pg import ensure_running

    ensure_running()
    django.setup()


def make_schedules(count: int, interval: int) -> None:
    from django.utils import timezone

    from accounts.models import Tenant
    from scheduling.models import Schedule

    tenant = Tenant.objects.get(name="demo")
    start = timezone.now() + timedelta(seconds=5)
    for i in range(count):
        # prune_runs is the cheapest action; told to keep every run, so that the lateness of all
        # the runs due during the backlog can be read at the end (it keeps the newest 200
        # otherwise).
        Schedule.objects.create(
            tenant=tenant,
            name=f"bench {i}",
            action="prune_runs",
            params={"keep": 10**6},
            cadence_type="interval",
            cadence_value=str(interval),
            next_run_at=start + timedelta(seconds=i * interval / count),
        )


def unsearchable_events() -> int:
    """Events with text but no event chunk covering their sequence. Text as the chunker sees it:
    an event of nothing but format characters (LongMemEval has one, a lone zero-width space)
    normalises to nothing and rightly has no chunk."""
    from django.db import connection

    from retrieval.chunking import normalize_text

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT e.content FROM memoryhub_event e WHERE e.content <> '' AND NOT EXISTS (SELECT 1"
            " FROM retrieval_chunk c WHERE c.session_id = e.session_id AND c.kind = 'event' AND"
            " e.sequence BETWEEN c.sequence_start AND c.sequence_end)"
        )
        return sum(1 for (content,) in cursor.fetchall() if normalize_text(content))


def chunk_counts() -> dict[str, int]:
    from django.db.models import Count, Q

    from retrieval.models import Chunk
    from retrieval.sentence_vectors import waiting_for_sentences

    counts: dict[str, int] = Chunk.objects.aggregate(
        total=Count("id"),
        embedded=Count("id", filter=Q(embedding__isnull=False)),
        events=Count("id", filter=Q(kind="event")),
        events_embedded=Count("id", filter=Q(kind="event", embedding__isnull=False)),
    )
    # The lane embeds chunks' sentences after their own vectors: its work ends with these.
    counts["sentences_waiting"] = waiting_for_sentences().count()
    return counts


def lateness(since: Any, until: Any) -> list[float]:
    from scheduling.models import Run

    runs = Run.objects.filter(status="succeeded", due_at__gte=since, due_at__lte=until)
    return sorted((r.started_at - r.due_at).total_seconds() for r in runs)


def raw_throughput(embedder_name: str, since: Any, sample: int, nice: int) -> dict[str, Any]:
    """The model alone on a sample of the chunks the lanes embedded since `since` (their embedding
    inputs): one embed() call in this process, with the lanes' backend and threads and niceness.
    Wall time and CPU time (all threads) per text."""
    from retrieval.embedders import get_embedder
    from retrieval.models import Chunk

    rows = Chunk.objects.filter(indexed_at__gte=since, embedding__isnull=False).order_by("?")
    inputs = [c.embedding_input for c in rows.only("text", "context")[:sample]]
    embedder = get_embedder(embedder_name)
    os.nice(nice)
    embedder.embed(inputs[:8])  # load the model first
    cpu, wall = time.process_time(), time.perf_counter()
    embedder.embed(inputs)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    backend = getattr(embedder, "backend", lambda n: "n/a")(len(inputs))
    return {
        "texts": len(inputs),
        "seconds": round(wall, 1),
        "per_second": round(len(inputs) / wall, 2),
        "cpu_ms_per_text": round(1000 * cpu / len(inputs), 2),
        "backend": backend,
        "load_average": round(os.getloadavg()[0], 1),
    }


def lane_process(server: Server) -> Any:
    """The `manage.py work` process (every lane) of the started server."""
    import psutil

    for child in psutil.Process(server.process.pid).children(recursive=True):
        if "work" in child.cmdline():
            return child
    return None


def cpu_seconds(process: Any) -> float:
    times = process.cpu_times()
    return times.user + times.system


# --- the run ---------------------------------------------------------------------------------


def progress(
    since_ingest: float, counts: dict[str, int], first: dict[str, int], seconds: float, cpu: float
) -> None:
    embedded = counts["embedded"] - first["embedded"]
    rate = f"{embedded / seconds:.2f} chunks/s" if seconds > 0 else "n/a"
    per_chunk = f"{1000 * cpu / embedded:.1f} ms CPU/chunk" if embedded else "n/a"
    print(
        f"[{since_ingest:.0f} s after the ingest] embedded {counts['embedded']}/{counts['total']}"
        f" chunks (events {counts['events_embedded']}/{counts['events']}); drain {rate}, lane"
        f" {per_chunk}; load {os.getloadavg()[0]:.1f}",
        flush=True,
    )


def drain(ingest_end: float, timeout: float, lanes: Any) -> dict[str, Any]:
    """Poll until every event chunk and then every chunk is embedded, sentence vectors included.
    The drain's rate (chunks a second after the ingest) and the lane process's CPU time per chunk
    meanwhile (that process also summarises: its CPU counts against it)."""
    first, cpu_first = chunk_counts(), cpu_seconds(lanes)
    samples = [(time.monotonic(), first)]
    events_done_at = all_done_at = None
    deadline = time.monotonic() + timeout
    loads = []
    while time.monotonic() < deadline:
        counts = chunk_counts()
        now = time.monotonic()
        samples.append((now, counts))
        loads.append(os.getloadavg()[0])
        if events_done_at is None and counts["events_embedded"] == counts["events"]:
            events_done_at = now
        if (
            counts["embedded"] == counts["total"]
            and counts["sentences_waiting"] == 0
            and events_done_at is not None
        ):
            all_done_at = now
            break
        # a line a minute: the figures so far, should the run be cut short
        if len(samples) % 30 == 0:
            progress(
                now - ingest_end, counts, first, now - samples[0][0], cpu_seconds(lanes) - cpu_first
            )
        time.sleep(2)
    (t0, c0), (t1, c1) = samples[0], samples[-1]
    embedded = c1["embedded"] - c0["embedded"]
    return {
        "events_embedded_after_ingest_s": (
            None if events_done_at is None else round(events_done_at - ingest_end, 1)
        ),
        "all_embedded_after_ingest_s": (
            None if all_done_at is None else round(all_done_at - ingest_end, 1)
        ),
        "drain_chunks": embedded,
        "drain_rate_per_second": round(embedded / (t1 - t0), 2) if t1 > t0 else None,
        "drain_cpu_ms_per_chunk": (
            round(1000 * (cpu_seconds(lanes) - cpu_first) / embedded, 2) if embedded else None
        ),
        "drain_load_average": round(statistics.mean(loads), 1) if loads else None,
        "chunks": c1,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument(
        "--conversations", type=int, default=40, help="LongMemEval-S haystacks to ingest"
    )
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument(
        "--check-every", type=int, default=5, help="a text search after every n-th append"
    )
    parser.add_argument("--schedules", type=int, default=4)
    parser.add_argument(
        "--interval", type=int, default=20, help="seconds between a schedule's runs"
    )
    parser.add_argument(
        "--raw-sample", type=int, default=1500, help="chunk texts the raw model embeds"
    )
    parser.add_argument("--drain-timeout", type=float, default=4 * 3600)
    parser.add_argument("--embedder", default="minilm", choices=["minilm", "hash"])
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--keep-data", action="store_true")
    args = parser.parse_args()

    sessions = load(args.data, args.conversations)
    total_chars = sum(len(e["content"]) for _, events in sessions for e in events)
    print(
        f"{len(sessions)} sessions, {sum(len(e) for _, e in sessions)} events,"
        f" {total_chars / 1e6:.1f} M characters"
    )
    server = Server(
        web_workers=2,
        with_cluster=True,
        keep_data=args.keep_data,
        prepare=seed_onnx_model,
        # Consolidation (its cadence first runs 10 minutes after the start) deletes
        # nothing under the counts: a tenant's first deletions wait for an operator's
        # review (retrieval.lifecycle.steps.FIRST_REVIEW).
        extra_env={"MEMORYHUB_EMBEDDER": args.embedder, "MEMORYHUB_PG_SHARED_BUFFERS_MB": "256"},
    )
    try:
        server.wait(timeout=900)
        setup_django(server.data_dir)
        from django.utils import timezone

        from memoryhub.models import Worker

        make_schedules(args.schedules, args.interval)
        began = timezone.now()
        ingest = Ingest(
            server.url, server.key, sessions, clients=args.clients, check_every=args.check_every
        )
        ingest_seconds = ingest.run()
        ingest_end = time.monotonic()
        unsearchable = unsearchable_events()
        print(
            f"ingest: {ingest.events} events in {ingest_seconds:.1f} s ="
            f" {ingest.events / ingest_seconds:.0f} events/s acknowledged ({ingest.requests}"
            f" requests, {ingest.errors} errors, p50 {statistics.median(ingest.latencies):.0f} ms);"
            f" text search right after the reply found {sum(ingest.checks)}/{len(ingest.checks)};"
            f" events without a chunk at the last reply: {unsearchable}"
        )
        drain_began = timezone.now()
        drained = drain(ingest_end, args.drain_timeout, lane_process(server))
        ended = timezone.now()
        lanes = [
            {"lane": w.lane, "rate": round(w.rate, 2), "done": w.done} for w in Worker.objects.all()
        ]
        late = lateness(began, ended)
        from memoryhub.management.commands.work import NICE

        raw = raw_throughput(args.embedder, drain_began, args.raw_sample, NICE)
    finally:
        server.stop()
    figures = {
        "conversations": args.conversations,
        "sessions": len(sessions),
        "events": ingest.events,
        "characters": total_chars,
        "ingest_seconds": round(ingest_seconds, 1),
        "events_per_second_acknowledged": round(ingest.events / ingest_seconds, 1),
        "append_p50_ms": round(statistics.median(ingest.latencies), 1),
        "append_p95_ms": round(
            sorted(ingest.latencies)[max(0, math.ceil(0.95 * len(ingest.latencies)) - 1)], 1
        ),
        "text_found_at_ack": f"{sum(ingest.checks)}/{len(ingest.checks)}",
        "events_without_chunk_at_last_ack": unsearchable,
        "time_to_100pct_text_searchable_s": (
            0.0 if unsearchable == 0 and all(ingest.checks) else None
        ),
        **drained,
        "lanes": lanes,
        "raw_model": raw,
        "drain_rate_vs_raw": (
            round(drained["drain_rate_per_second"] / raw["per_second"], 2)
            if drained["drain_rate_per_second"]
            else None
        ),
        "drain_vs_raw_by_cpu": (
            round(raw["cpu_ms_per_text"] / drained["drain_cpu_ms_per_chunk"], 2)
            if drained["drain_cpu_ms_per_chunk"]
            else None
        ),
        "schedule_runs_during_backlog": len(late),
        "lateness_p50_s": round(statistics.median(late), 2) if late else None,
        "lateness_p95_s": round(late[max(0, math.ceil(0.95 * len(late)) - 1)], 2) if late else None,
        "lateness_max_s": round(late[-1], 2) if late else None,
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    random.seed(1)
    main()
