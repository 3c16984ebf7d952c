"""Search latency at N chunks: our stack (HTTP, real server) against raw SQL and embedding time.

    .venv/bin/python bench/search.py                 # build 100k chunks, measure, drop the database
    .venv/bin/python bench/search.py --keepdb        # keep bench_search for the next run
    .venv/bin/python bench/search.py --chunks 1000000 --vectors mixed --recall 50 --queries 100
    .venv/bin/python bench/search.py --curve 10000,100000,1000000 --vectors blend --keepdb   # the scale curve

The corpus is LoCoMo's turns (../shared/bench-data) repeated to --chunks rows: each unique text
is embedded once with the real model and its copies get vectors made from it (bench/scale.py:
"perturbed", run F's data, "mixed" or "blend", embedding-like and all distinct). Rows go in with
COPY (50k per statement, the statistics triggers firing per statement); the GIN and HNSW indexes are
built afterwards (times and sizes printed). --recall N compares the HNSW candidates of N queries
with exact search per ef_search.

Figures, per mode (text, vector, hybrid weighted, hybrid rrf), p50/p95 in ms:
- query embedding time (the model, one query);
- raw SQL: the statements one search issues (captured from the real search function), re-run
  alone on a cursor;
- HTTP single client and with 8 concurrent clients against gunicorn (as `make run` starts it);
- the stack's overhead as a ratio: HTTP p95 / (embedding p95 + raw SQL p95);
- CPU per search: the web workers and PostgreSQL over the single-client phase, against the query
  embedding and the statements alone (this process and its backend), and their ratio.
Then background embedding throughput: backfill_embeddings() (what the cluster task runs) against
the raw model's encode() on the same texts.
"""  # noqa: E501

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.common import cpu_seconds, process_tree  # noqa: E402

DATA = ROOT.parent / "shared" / "bench-data" / "locomo10.jsonl"
MODES = {
    "text": {"mode": "text"},
    "vector": {"mode": "vector"},
    "hybrid": {"mode": "hybrid", "fusion": "weighted"},
    "hybrid-rrf": {"mode": "hybrid", "fusion": "rrf"},
}
DB_NAME = "bench_search"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    parser.add_argument(
        "--server",
        choices=["asgi", "wsgi"],
        default="asgi",
        help="asgi: as `manage.py run` serves (uvicorn workers); wsgi: gthread, as it once served",
    )
    parser.add_argument(
        "--ef", default="40,100,200,400", help="ef_search values of the --recall measurement"
    )
    parser.add_argument("--vectors", choices=["perturbed", "mixed", "blend"], default="perturbed")
    parser.add_argument(
        "--recall", type=int, default=0, metavar="N", help="recall of HNSW vs exact on N queries"
    )
    parser.add_argument("--no-http", action="store_true")
    parser.add_argument(
        "--only-build", action="store_true", help="build the data and stop (with --keepdb)"
    )
    parser.add_argument("--db", default=DB_NAME, help="the bench database's name")
    parser.add_argument("--no-embedding-throughput", action="store_true")
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--embed-sample", type=int, default=1000)
    parser.add_argument("--keepdb", action="store_true")
    parser.add_argument(
        "--only-embedding",
        type=int,
        default=0,
        metavar="N",
        help="measure only background embedding, N times (median ratio), no search",
    )
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--curve",
        default="",
        metavar="N,N,...",
        help=(
            "the scale curve in one run: each size in turn (a database each, bench_search_<N>), "
            "then hybrid p95 and the CPU ratio per size against the first"
        ),
    )
    return parser.parse_args()


def setup_django(db_name: str = DB_NAME) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    os.environ["TEST_DB_NAME"] = db_name
    os.environ["MEMORYHUB_EMBEDDER"] = "minilm"
    # One torch thread, as in each server worker, so that the query-embedding time measured here
    # is the one the server pays (more threads than free cores only slow one query down).
    os.environ["MEMORYHUB_EMBED_THREADS"] = "1"
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    from memoryhub.plumbing.embedded_pg import ensure_running

    ensure_running()
    django.setup()
    # The ONNX export and its int8 copy, made in the data folder as `manage.py run` makes them
    # before its workers start: without them (a fresh checkout where `make run` never ran) the
    # in-process figures and the web workers fall back to torch (stop 29: hybrid HTTP p95 38 ms and
    # 690 MB web workers, against 20 ms and 250 MB with the prepared model).
    from retrieval.minilm_runtimes import ensure_prepared

    ensure_prepared()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def summary(values: list[float]) -> dict[str, float]:
    """Median, p95 and p99 (of 100 queries, their second slowest: a question or two that is always
    slow, which p95 hides)."""
    return {
        "p50": round(statistics.median(values), 2),
        "p95": round(pct(values, 0.95), 2),
        "p99": round(pct(values, 0.99), 2),
    }


def load_corpus() -> tuple[list[str], list[str]]:
    turns: list[str] = []
    questions: list[str] = []
    with DATA.open() as fh:
        for line in fh:
            conv = json.loads(line)
            for s in conv["sessions"]:
                turns += [f"{t['speaker']}: {t['text']}" for t in s["turns"]]
            questions += [q["question"] for q in conv["questions"] if q["evidence_turn_ids"]]
    return turns, questions


# --- corpus ------------------------------------------------------------------------------------


def populate(n_chunks: int, turns: list[str], vectors: str) -> tuple[Any, str, dict[str, Any]]:
    import scale
    from django.db import connection

    from accounts.models import ApiKey, Channel, Tenant, Workspace
    from memoryhub.models import Session
    from retrieval.embedders import get_embedder
    from retrieval.models import Chunk

    tenant, _ = Tenant.get_or_create_named("bench")
    raw_key = ApiKey.create_key(tenant=tenant, scopes=("read", "write")).raw
    if Chunk.objects.filter(tenant=tenant).count() >= n_chunks:
        print(f"reusing {n_chunks} chunks")
        return tenant, raw_key, {}
    Chunk.objects.filter(tenant=tenant).delete()
    workspace = Workspace.get_default(tenant)
    channels = [Channel.get_named(workspace, f"topic-{i}") for i in range(20)]
    per_session = 100
    sessions = Session.objects.bulk_create(
        [
            Session(
                tenant=tenant,
                workspace=workspace,
                channel=channels[i % len(channels)],
                external_id=f"bench-{i}",
            )
            for i in range((n_chunks + per_session - 1) // per_session)
        ]
    )
    maker = scale.VectorMaker(scale.base_vectors(turns), vectors)
    model = get_embedder().name
    started = time.perf_counter()
    with connection.cursor() as cursor:
        scale.drop_search_indexes(cursor)
        for start in range(0, n_chunks, scale.BATCH):
            block = maker.block(start, min(scale.BATCH, n_chunks - start))
            scale.copy_rows(
                cursor,
                [
                    scale.chunk_row(
                        tenant_id=tenant.pk,
                        session_id=sessions[i // per_session].pk,
                        workspace_id=workspace.pk,
                        channel_id=sessions[i // per_session].channel_id,
                        user_id="",
                        sequence=i % per_session + 1,
                        text=turns[i % len(turns)],
                        digest=f"{i:064x}",
                        vector=block[i - start],
                        model=model,
                    )
                    for i in range(start, start + len(block))
                ],
            )
        load_s = round(time.perf_counter() - started, 1)
        print(f"copied {n_chunks} rows in {load_s} s")
        built = scale.build_indexes(cursor)
    return tenant, raw_key, {"load_s": load_s, **built}


# --- the server --------------------------------------------------------------------------------


def serving_cpu(server_pid: int) -> Callable[[], float]:
    """CPU seconds so far of the web server (master and workers) and of every PostgreSQL process."""
    from django.conf import settings

    from tests.served import postgres_of

    def probe() -> float:
        return cpu_seconds(process_tree(server_pid) + postgres_of(Path(settings.DATA_DIR)))

    return probe


def start_server(
    port: int, workers: int, db_name: str = DB_NAME, server: str = "asgi"
) -> subprocess.Popen[bytes]:
    """The web server as `manage.py run` starts it (`asgi`: gunicorn with uvicorn workers and a
    connection pool), or as it once served (`wsgi`: gunicorn gthread, 4 threads a worker)."""
    from django.conf import settings

    base = settings.DATABASES["default"]
    url = f"postgresql://{base['USER']}@/{db_name}?host={base['HOST']}"
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "SECRET_KEY": "bench",
        "MEMORYHUB_EMBEDDER": "minilm",
        "MEMORYHUB_EMBED_THREADS": "1",
        "LOG_LEVEL": "WARNING",
        "DB_POOL": "true",
    }
    if server == "asgi":
        app, worker = (
            ["memoryhub.plumbing.asgi:application"],
            ["--worker-class", "memoryhub.plumbing.webserver.Worker"],
        )
    else:
        app, worker = (
            ["memoryhub.plumbing.wsgi:application"],
            ["--worker-class", "gthread", "--threads", "4"],
        )
        env["DB_POOL"] = "false"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            *app,
            "--bind",
            f"127.0.0.1:{port}",
            "--config",
            "python:memoryhub.plumbing.gunicorn_conf",
            "--workers",
            str(workers),
            *worker,
            "--log-level",
            "warning",
        ],
        env=env,
        cwd=ROOT,
        start_new_session=True,
    )
    import requests

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:  # the first request imports Django in the worker: give it time on a busy machine
            if (
                requests.get(f"http://127.0.0.1:{port}/api/v1/health/", timeout=15).status_code
                == 200
            ):
                return process
        except requests.RequestException:
            time.sleep(0.5)
    stop_server(process)
    raise RuntimeError("the server did not start")


def stop_server(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to gunicorn's master only (it stops its workers), then wait."""
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)


def curve(args: argparse.Namespace) -> None:
    """Each size measured by this script in a process of its own, one after the other, then one
    table."""
    import tempfile

    sizes = [int(n) for n in args.curve.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            out = Path(tmp) / f"{size}.json"
            command = [
                sys.executable,
                __file__,
                "--chunks",
                str(size),
                "--db",
                f"{args.db}_{size}",
                "--json",
                str(out),
                "--vectors",
                args.vectors,
                "--queries",
                str(args.queries),
                "--clients",
                str(args.clients),
                "--web-workers",
                str(args.web_workers),
                "--no-embedding-throughput",
                *(["--keepdb"] if args.keepdb else []),
            ]
            print(f"\n== {size:,} chunks", flush=True)
            subprocess.run(command, check=True)
            rows.append((size, json.loads(out.read_text())))
    first = rows[0][1]["http"]["hybrid"]["single"]["p95"]
    print(
        f"\nScale curve, one tenant, {args.vectors} vectors, hybrid, single client (ms; ratio: p95"
        f" against {sizes[0]:,}):"
    )
    print(
        "| chunks | HTTP p50 / p95 | p95 ratio | raw SQL p95 | p95 / (embedding + SQL) | CPU ms a"
        " search, HTTP / floor |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for size, r in rows:
        http, raw = r["http"]["hybrid"], r["in_process"]["hybrid"]
        floor = raw["raw_sql_cpu_ms"] + r["in_process"]["embedding_cpu_ms"]
        print(
            f"| {size:,} | {http['single']['p50']} / {http['single']['p95']} |"
            f" {http['single']['p95'] / first:.2f} | {raw['raw_sql']['p95']} |"
            f" {http['p95_ratio_to_floor']} | {http.get('cpu_ms')} / {floor:.2f} |"
        )


def main() -> None:
    args = parse_args()
    if args.curve:
        curve(args)
        return
    # run the cleanup below on `timeout`/kill
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    setup_django(args.db)
    import scale
    from django.conf import settings
    from django.db import connection
    from search_http import measure_http
    from search_in_process import measure_embedding_throughput, measure_in_process, measure_recall
    from search_report import report

    if settings.EMBEDDED_DATABASE:  # the shared buffers `manage.py run` gives the embedded server
        from memoryhub.plumbing.embedded_pg import raise_shared_buffers

        raise_shared_buffers(settings.DATA_DIR, settings.EMBEDDED_SHARED_BUFFERS_MB)
    turns, questions = load_corpus()
    random.seed(11)
    questions = random.sample(questions, min(args.queries, len(questions)))
    # serialize=False: a test database is serialised into memory for test rollbacks; at 1M rows that
    # alone took every gigabyte of the machine.
    connection.creation.create_test_db(
        verbosity=0, autoclobber=not args.keepdb, keepdb=args.keepdb, serialize=False
    )
    server = None
    results: dict[str, Any] = {
        "chunks": args.chunks,
        "queries": len(questions),
        "vectors": args.vectors,
        "load_average_start": scale.load_average(),
    }
    try:
        tenant, raw_key, results["build"] = populate(
            args.chunks, turns[: args.chunks], args.vectors
        )
        if args.only_build:
            return
        if args.only_embedding:
            runs = [
                measure_embedding_throughput(tenant, turns, args.embed_sample)
                for _ in range(args.only_embedding)
            ]
            for run in runs:
                print("background embedding:", run)
            print("median ratio:", statistics.median(r["ratio"] for r in runs))
            return
        if args.recall:
            results["recall"] = measure_recall(
                tenant, questions[: args.recall], tuple(int(x) for x in args.ef.split(","))
            )
        if not args.no_embedding_throughput:
            results["embedding_throughput"] = measure_embedding_throughput(
                tenant, turns, args.embed_sample
            )
            print("background embedding:", results["embedding_throughput"])
        results["in_process"] = measure_in_process(tenant, questions)
        connection.close()
        if not args.no_http:
            port = args.port or free_port()
            server = start_server(port, args.web_workers, args.db, args.server)
            results["http"] = measure_http(
                port, raw_key, questions, args.clients, args.web_workers, serving_cpu(server.pid)
            )
            results["web_worker_rss_mb"] = worker_rss_mb(server.pid)
        results["load_average_end"] = scale.load_average()
        report(results, args.clients)
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(results, indent=2))
    finally:
        if server is not None:
            stop_server(server)
        if not args.keepdb:
            connection.creation.destroy_test_db(args.db, verbosity=0)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def worker_rss_mb(master_pid: int) -> list[float]:
    """Resident memory of each gunicorn worker (children of the master), model loaded."""
    children = Path(f"/proc/{master_pid}/task/{master_pid}/children").read_text().split()
    out = []
    for pid in children:
        status = Path(f"/proc/{pid}/status").read_text()
        rss_kb = int(
            next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))
        )
        out.append(round(rss_kb / 1024, 1))
    return out


if __name__ == "__main__":
    main()
