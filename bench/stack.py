"""The serving stack of `manage.py run` against the stock one, paired in one run.

    nice -n 5 .venv/bin/python bench/stack.py [--chunks 20000] [--queries 300] [--appends 200]

Custom: `manage.py run`'s gunicorn + memoryhub.plumbing.webserver.Worker (JsonH11Protocol: the
header deadline, 431/400 in the error envelope) serving memoryhub.plumbing.asgi. Stock:
bench/stock_stack.py (uvicorn's own h11 protocol, Django's own ASGIHandler), the same body limits,
mounts and settings. The figures in bench/README.md were taken while memoryhub.plumbing.asgi still
had its own one-hop Django handler (removed after them: it bought nothing); since then the two sides
differ by the protocol only. One web worker each, both at once on the same database (a corpus
of --chunks rows made as bench/search.py makes its table, MiniLM vectors), each request sent to both
in a random order: the median of the per-request differences is the stack's. Searches are hybrid,
top 10, LoCoMo questions; appends are one event each to a session of its own.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import search as base_bench  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "bench_stack"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(port: int, stack: str) -> subprocess.Popen[bytes]:
    if stack == "custom":
        return base_bench.start_server(port, 1, DB_NAME)
    from django.conf import settings

    base = settings.DATABASES["default"]
    env = {
        **os.environ,
        "DATABASE_URL": f"postgresql://{base['USER']}@/{DB_NAME}?host={base['HOST']}",
        "SECRET_KEY": "bench",
        "MEMORYHUB_EMBEDDER": "minilm",
        "MEMORYHUB_EMBED_THREADS": "1",
        "LOG_LEVEL": "WARNING",
        "DB_POOL": "true",
    }
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "bench.stock_stack:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--config",
            "python:memoryhub.plumbing.gunicorn_conf",
            "--workers",
            "1",
            "--worker-class",
            "bench.stock_stack.Worker",
            "--log-level",
            "warning",
        ],
        env=env,
        cwd=ROOT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
            conn.request("GET", "/api/v1/health/")
            if conn.getresponse().status == 200:
                return process
        except OSError:
            time.sleep(0.5)
    base_bench.stop_server(process)
    raise RuntimeError("the stock server did not start")


class Client:
    def __init__(self, port: int, key: str) -> None:
        self.port, self.headers = (
            port,
            {"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        )
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def post(self, path: str, body: dict[str, Any], expect: int) -> float:
        for attempt in (1, 2):
            started = time.perf_counter()
            try:
                self.conn.request("POST", path, body=json.dumps(body), headers=self.headers)
                response = self.conn.getresponse()
                content = response.read()
                break
            # keep-alive closed: reconnect once
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                if attempt == 2:
                    raise
        elapsed = 1000 * (time.perf_counter() - started)
        assert response.status == expect, (response.status, content[:300])
        return elapsed


def paired(
    clients: dict[str, Client], requests: list[tuple[str, dict[str, Any], int]]
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in clients}
    for path, body, expect in requests:
        order = list(clients)
        random.shuffle(order)
        for name in order:
            times[name].append(clients[name].post(path.replace("{stack}", name), body, expect))
    return times


def report(label: str, times: dict[str, list[float]]) -> None:
    custom, stock = times["custom"], times["stock"]
    diffs = [s - c for c, s in zip(custom, stock, strict=True)]
    p50c, p50s = statistics.median(custom), statistics.median(stock)
    print(
        f"| {label} | {len(custom)} | {p50c:.2f} | {base_bench.pct(custom, 0.95):.2f} | {p50s:.2f}"
        f" | {base_bench.pct(stock, 0.95):.2f} | {statistics.median(diffs):+.2f} |"
        f" {100 * (p50s - p50c) / p50s:+.1f} % |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--appends", type=int, default=200)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    base_bench.setup_django(DB_NAME)
    from django.db import connection

    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=True, serialize=False)
    turns, questions = base_bench.load_corpus()
    _, key, _ = base_bench.populate(args.chunks, turns, "perturbed")
    connection.close()
    random.seed(args.seed)
    questions = random.sample(questions, min(args.queries, len(questions)))
    servers = {name: (port := free_port(), start(port, name)) for name in ("custom", "stock")}
    try:
        clients = {name: Client(port, key) for name, (port, _) in servers.items()}
        # warm up
        paired(
            clients,
            [("/api/v1/search/", {"query": q, "mode": "hybrid"}, 200) for q in questions[:20]],
        )
        searches = paired(
            clients,
            [
                ("/api/v1/search/", {"query": q, "mode": "hybrid", "top_k": 10}, 200)
                for q in questions
            ],
        )
        appends = paired(
            clients,
            [
                (
                    "/api/v1/sessions/stack-{stack}/events/",
                    {"role": "user", "content": f"{turns[i % len(turns)]} ({i})"},
                    201,
                )
                for i in range(args.appends)
            ],
        )
    finally:
        for _, process in servers.values():
            base_bench.stop_server(process)
    print(f"\n{args.chunks} chunks, one web worker each, {os.cpu_count()} cores; ms\n")
    print(
        "| request | n | custom p50 | custom p95 | stock p50 | stock p95 | median (stock − custom)"
        " | custom faster by |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    report("search (hybrid, top 10)", searches)
    report("append (one event)", appends)


if __name__ == "__main__":
    main()
