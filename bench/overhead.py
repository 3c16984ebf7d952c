"""The stack's overhead per search mode, paired: two checkouts' servers and the floor, in turn.

    nice -n 10 .venv/bin/python bench/overhead.py --base ../wt-before [--queries 300] [--modes hybrid,text] [--db NAME]

On bench/search.py's kept 100k table (`--keepdb`; `--db bench_search_1000000`: a `--curve` size's),
each query of each mode goes, in a rotating order, to the floor (this process: the query embedding
and the statements the search issues, captured from the search function and re-run alone, as
bench/search.py measures them), to the base checkout's server and to this one's (one web worker
each, started as bench/search.py starts `make run`'s). Per mode and server: HTTP p50/p95, CPU ms per
search (the server's processes and every PostgreSQL process over the request, from their CPU-time
clocks: nanoseconds, not clock ticks), the time ratio HTTP p95 / (embedding p95 + statements p95)
and the CPU ratio HTTP CPU / (embedding CPU + statements CPU, this process and its backend), the
search function's own CPU called in this process ("in process": the floor plus its Python; the
server's CPU beyond it is the stack's), the paired median differences (this - base), and whether
both servers answered every query with the same JSON (ids, scores, every field). First, a request's
fixed cost on each server, paired the same way: CPU ms of `GET /health/` (no key, no database) and
of a search refused by validation (400: key, middleware, parsing, the error answer).
--base is a checkout with `.venv` and `.memoryhub` linked to this one's (bench/paired.py).
"""  # noqa: E501

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import paired
import search as base_bench
import search_http

MODES = ("hybrid", "text", "vector", "hybrid-rrf")
# Requests with no search behind them: what every request costs before its own work.
FIXED = {
    "health": ("GET", "/api/v1/health/", None, 200),
    "refused search": ("POST", "/api/v1/search/", {"query": "fixed cost", "mode": "none"}, 400),
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--db",
        default=base_bench.DB_NAME,
        help="a kept bench table: bench/search.py's (100k) or a --curve size's (bench_search_<N>)",
    )
    parser.add_argument("--json", type=Path, default=None, help="write every answer and figure")
    return parser.parse_args()


def task_ns(pids: list[int]) -> int:
    """CPU nanoseconds so far of these processes, every thread's, gone ones' included (a process
    gone counts 0). Each process's CPU-time clock: a thread per request that exits before the
    next reading (Django's ASGI handler makes one) would be missed by summing /proc/*/task."""
    total = 0
    for pid in pids:
        try:
            total += time.clock_gettime_ns(cpu_clock(pid))
        except (OSError, ProcessLookupError):
            continue
    return total


def cpu_clock(pid: int) -> int:
    """The CPU-time clock of process `pid` (Linux's MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED), what
    clock_getcpuclockid returns; Python has no binding of its own)."""
    return (~pid << 3) | 2


class Server:
    """One checkout's server: a keep-alive client that returns each answer, and its CPU probe."""

    def __init__(self, name: str, port: int, process: Any, key: str) -> None:
        self.name, self.port, self.process, self.key = name, port, process, key
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.tree = base_bench.process_tree(process.pid)

    def ask(self, body: dict[str, Any], postgres: list[int]) -> tuple[float, float, Any]:
        """ms, CPU ms (server and PostgreSQL) and the parsed answer of one search."""
        return self.call("POST", "/api/v1/search/", body, 200, postgres)

    def call(
        self, method: str, path: str, body: dict[str, Any] | None, status: int, postgres: list[int]
    ) -> tuple[float, float, Any]:
        """ms, CPU ms (server and PostgreSQL) and the parsed answer of one request."""
        headers = {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"}
        payload = None if body is None else json.dumps(body)
        for attempt in (1, 2):
            cpu_before = task_ns(self.tree + postgres)
            started = time.perf_counter()
            try:
                self.conn.request(method, path, body=payload, headers=headers)
                response = self.conn.getresponse()
                break
            except (http.client.HTTPException, ConnectionError):
                # the server closed the idle keep-alive connection: once more on a new one
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                if attempt == 2:
                    raise
        content = response.read()
        elapsed = 1000 * (time.perf_counter() - started)
        cpu = (task_ns(self.tree + postgres) - cpu_before) / 1e6
        assert response.status == status, content
        return elapsed, cpu, json.loads(content)


class Floor:
    """The query embedding and the search's statements alone, in this process."""

    def __init__(self, tenant: Any) -> None:
        from django.db import connection

        self.tenant = tenant
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            self.backend = cursor.fetchone()[0]

    def embed(self, query: str) -> tuple[float, float]:
        from retrieval.query_embedding import embed_query

        cpu, started = time.process_time(), time.perf_counter()
        embed_query(query)
        return 1000 * (time.perf_counter() - started), 1000 * (time.process_time() - cpu)

    def statements(self, query: str, options: dict[str, Any]) -> tuple[float, float, float]:
        """ms and CPU ms of the search's statements alone, and CPU ms of the search function in
        this process (its query embedding, Python and statements: what the stack adds is the rest
        of the server's)."""
        from django.db import connection, transaction
        from django.test.utils import CaptureQueriesContext

        from retrieval.search import hybrid_search
        from retrieval.search.statements import select_binary_rows

        with CaptureQueriesContext(connection) as captured:
            cpu = time.process_time_ns() + task_ns([self.backend])
            hybrid_search(tenant_id=self.tenant.pk, query=query, top_k=10, **options)
            in_process = (time.process_time_ns() + task_ns([self.backend]) - cpu) / 1e6
        statements = [
            (c["sql"], c.get("binary", False))
            for c in captured.captured_queries
            if not c["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT", "BEGIN", "COMMIT"))
        ]
        with transaction.atomic(), connection.cursor() as cursor:
            cpu = time.process_time_ns() + task_ns([self.backend])
            started = time.perf_counter()
            for sql, in_binary in statements:
                if in_binary:
                    select_binary_rows(sql, None)
                    continue
                cursor.execute(sql)
                if cursor.description:
                    cursor.fetchall()
            elapsed = 1000 * (time.perf_counter() - started)
            cpu = (time.process_time_ns() + task_ns([self.backend]) - cpu) / 1e6
            return elapsed, cpu, in_process


def measure_fixed(servers: list[Server], postgres: list[int], count: int) -> dict[str, Any]:
    """CPU ms a request of each FIXED kind costs each server (mean), and the paired median
    difference (this - base), the servers asked in turn."""
    out: dict[str, Any] = {}
    for kind, (method, path, body, status) in FIXED.items():
        cpu: dict[str, list[float]] = {s.name: [] for s in servers}
        for i in range(count):
            for server in servers if i % 2 else servers[::-1]:
                cpu[server.name].append(server.call(method, path, body, status, postgres)[1])
        base, this = (cpu[s.name] for s in servers)
        out[kind] = {
            **{s.name: round(statistics.mean(cpu[s.name]), 3) for s in servers},
            "paired": round(statistics.median(n - o for o, n in zip(base, this, strict=True)), 3),
        }
        print(f"fixed cost, {kind}: {json.dumps(out[kind])}", flush=True)
    return out


def measure_mode(
    mode: str, questions: list[str], floor: Floor, servers: list[Server], postgres: list[int]
) -> dict[str, Any]:
    options = dict(base_bench.MODES[mode])
    uses_vector = mode != "text"
    figures: dict[str, list[float]] = {
        name: []
        for name in ("embed_ms", "embed_cpu", "sql_ms", "sql_cpu", "in_process_cpu")
        + tuple(f"{s.name}_{k}" for s in servers for k in ("ms", "cpu"))
    }
    answers: list[list[Any]] = [[] for _ in servers]
    steps = ["floor", *range(len(servers))]
    for i, query in enumerate(questions):
        for step in steps[i % 3 :] + steps[: i % 3]:  # each goes first, second and third in turn
            if step == "floor":
                if uses_vector:
                    ms, cpu = floor.embed(query)
                    figures["embed_ms"].append(ms)
                    figures["embed_cpu"].append(cpu)
                ms, cpu, in_process = floor.statements(query, options)
                figures["sql_ms"].append(ms)
                figures["sql_cpu"].append(cpu)
                figures["in_process_cpu"].append(in_process)
                continue
            server = servers[int(step)]
            ms, cpu, answer = server.ask({"query": query, "top_k": 10, **options}, postgres)
            figures[f"{server.name}_ms"].append(ms)
            figures[f"{server.name}_cpu"].append(cpu)
            answers[int(step)].append(answer)
    return summarise(mode, figures, answers, servers, uses_vector)


def summarise(
    mode: str,
    figures: dict[str, list[float]],
    answers: list[list[Any]],
    servers: list[Server],
    uses_vector: bool,
) -> dict[str, Any]:
    p95 = base_bench.pct
    floor_ms = p95(figures["sql_ms"], 0.95) + (p95(figures["embed_ms"], 0.95) if uses_vector else 0)
    floor_cpu = statistics.mean(figures["sql_cpu"]) + (
        statistics.mean(figures["embed_cpu"]) if uses_vector else 0.0
    )
    out: dict[str, Any] = {
        "floor": {"ms_p95": round(floor_ms, 2), "cpu_ms": round(floor_cpu, 2)},
        "in_process": {
            "cpu_ms": round(statistics.mean(figures["in_process_cpu"]), 2),
            "cpu_ratio": round(statistics.mean(figures["in_process_cpu"]) / floor_cpu, 2),
        },
        "same_answers": sum(a == b for a, b in zip(*answers, strict=True)),
        "answers": len(answers[0]),
    }
    for server in servers:
        ms, cpu = figures[f"{server.name}_ms"], figures[f"{server.name}_cpu"]
        out[server.name] = {
            "p50": round(statistics.median(ms), 2),
            "p95": round(p95(ms, 0.95), 2),
            "cpu_ms": round(statistics.mean(cpu), 2),
            "time_ratio": round(p95(ms, 0.95) / floor_ms, 2),
            "cpu_ratio": round(statistics.mean(cpu) / floor_cpu, 2),
        }
    base, this = (f"{s.name}" for s in servers)
    out["paired"] = {
        "ms_median": round(
            statistics.median(
                n - o for o, n in zip(figures[f"{base}_ms"], figures[f"{this}_ms"], strict=True)
            ),
            2,
        ),
        "cpu_median": round(
            statistics.median(
                n - o for o, n in zip(figures[f"{base}_cpu"], figures[f"{this}_cpu"], strict=True)
            ),
            2,
        ),
    }
    print(f"{mode}: {json.dumps(out)}", flush=True)
    return {**out, "answers_by_server": answers}


def main() -> None:
    args = parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop both servers on `timeout`/kill
    base_bench.setup_django(args.db)
    from django.conf import settings
    from django.db import connection

    from accounts.models import ApiKey, Tenant
    from tests.served import postgres_of

    connection.creation.create_test_db(verbosity=0, autoclobber=False, keepdb=True, serialize=False)
    tenant = Tenant.objects.get(name="bench")
    _, questions = base_bench.load_corpus()
    random.seed(args.seed)
    questions = random.sample(questions, min(args.queries, len(questions)))
    trees = {"base": args.base.resolve(), "this": paired.ROOT}
    keys = {name: ApiKey.create_key(tenant=tenant, scopes=("read",)).raw for name in trees}
    floor = Floor(tenant)
    started: list[tuple[Any, Any]] = []  # each checkout's bench module and server process
    servers: list[Server] = []
    try:
        for name, tree in trees.items():
            module, port = paired.bench_module(tree), base_bench.free_port()
            started.append((module, module.start_server(port, 1, args.db)))
            servers.append(Server(name, port, started[-1][1], keys[name]))
        for server in servers:  # every worker's model, pool and caches loaded
            for q in questions[:20]:
                for mode in MODES:
                    server.ask({"query": q, "top_k": 10, **base_bench.MODES[mode]}, [])
        for q in questions[:20]:
            floor.embed(q)
            floor.statements(q, {})
        time.sleep(search_http.FLUSHED_AFTER_S)
        load = [os.getloadavg()[0]]
        postgres = postgres_of(Path(settings.DATA_DIR))
        fixed = measure_fixed(servers, postgres, args.queries)
        results = {}
        for mode in args.modes.split(","):
            # every PostgreSQL process, the servers' pooled connections opened so far included
            postgres = postgres_of(Path(settings.DATA_DIR))
            results[mode] = measure_mode(mode, questions, floor, servers, postgres)
        load.append(os.getloadavg()[0])
    finally:
        for module, process in started:
            module.stop_server(process)
    print_table(results, load)
    for kind, figures in fixed.items():
        print(
            f"fixed cost, {kind}: CPU ms base / this {figures['base']} / {figures['this']},", end=""
        )
        print(f" paired {figures['paired']:+}")
    if args.json:
        args.json.write_text(
            json.dumps({"load": load, "fixed": fixed, "results": results}, indent=1)
        )


def print_table(results: dict[str, Any], load: list[float]) -> None:
    print(f"load average (1 min) {load[0]:.2f} -> {load[1]:.2f}")
    print("| mode | base p95 / this p95 ms | floor p95 | time ratio base / this |", end="")
    print(
        " CPU ms base / this / floor | CPU ratio base / this | in process: CPU ms, ratio |", end=""
    )
    print(" paired ms, CPU ms | same |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for mode, r in results.items():
        b, t, f = r["base"], r["this"], r["floor"]
        print(
            f"| {mode} | {b['p95']} / {t['p95']} | {f['ms_p95']} |"
            f" {b['time_ratio']} / {t['time_ratio']} | {b['cpu_ms']} / {t['cpu_ms']} /"
            f" {f['cpu_ms']} | {b['cpu_ratio']} / {t['cpu_ratio']} |"
            f" {r['in_process']['cpu_ms']}, {r['in_process']['cpu_ratio']} |"
            f" {r['paired']['ms_median']:+}, {r['paired']['cpu_median']:+} |"
            f" {r['same_answers']}/{r['answers']} |"
        )


if __name__ == "__main__":
    main()
