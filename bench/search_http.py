"""bench/search.py's searches over HTTP against the real server (started by its start_server): a
timed client keeping one connection per thread, and every mode asked by a single client, then by
several at once, with the server's CPU per search."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from search import MODES, summary  # noqa: E402

CONCURRENT_PASSES = 3  # the concurrent phase asks the queries this many times


def search_client(port: int) -> Callable[[dict[str, Any], str], float]:
    """POST /search/ as a key, timed in ms; each client thread keeps one connection open
    (http.client: `requests` spends 0.6 ms of CPU a request on its own side, which on two cores
    the server's share loses)."""
    import http.client

    local = __import__("threading").local()

    def post(body: dict[str, Any], raw_key: str) -> float:
        if not hasattr(local, "http"):
            local.http = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        headers = {"Authorization": f"Bearer {raw_key}", "Content-Type": "application/json"}
        for attempt in (1, 2):
            started = time.perf_counter()
            try:
                local.http.request(
                    "POST", "/api/v1/search/", body=json.dumps(body), headers=headers
                )
                response = local.http.getresponse()
                break
            except (http.client.HTTPException, ConnectionError):
                # The server closed the keep-alive connection (a worker restarted): reconnect once.
                local.http.close()
                local.http = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                if attempt == 2:
                    raise
        content = response.read()
        elapsed = 1000 * (time.perf_counter() - started)
        assert response.status == 200, content
        json.loads(content)
        return elapsed

    return post


def measure_http(
    port: int,
    raw_key: str,
    questions: list[str],
    clients: int,
    workers: int,
    probe: Callable[[], float] | None = None,
) -> dict[str, Any]:
    post = search_client(port)

    def one(body: dict[str, Any]) -> float:
        return post(body, raw_key)

    with ThreadPoolExecutor(workers * 4) as pool:  # load the model in every worker first
        list(pool.map(one, [{"query": q, "mode": "hybrid"} for q in questions[: workers * 8]]))
    plan = {
        name: [{"query": q, "top_k": 10, **options} for q in questions]
        for name, options in MODES.items()
    }
    cpu: dict[str, float] = {}
    singles = single_then_concurrent(plan, one, clients, probe, cpu)
    return {
        name: {
            "single": summary(single),
            f"{clients}_clients": summary(concurrent),
            "throughput_qps": qps,
            **({"cpu_ms": cpu[name]} if name in cpu else {}),
        }
        for name, (single, concurrent, qps) in singles.items()
    }


# The web workers write the access counts of what searches returned every
# memoryhub.plumbing.counters.FLUSH_SECONDS (10): a write of thousands of rows after a concurrent
# phase.
FLUSHED_AFTER_S = 11.0


def single_then_concurrent(
    plan: dict[str, list[Any]],
    one: Callable[[Any], float],
    clients: int,
    probe: Callable[[], float] | None = None,
    cpu: dict[str, float] | None = None,
) -> dict[str, tuple[list[float], list[float], float]]:
    """Per mode, the single-client times, the concurrent times and queries/s. Every single-client
    phase runs before any concurrent one, after the warm-up's access counts are written: until
    stop 31 each mode's single client ran right after the previous mode's 8-client phase and
    measured, some runs, that phase's access-count write (bench/README.md, stop 31). With `probe`
    (the server's CPU seconds so far), `cpu` gets each mode's CPU ms per search over its
    single-client phase."""
    time.sleep(FLUSHED_AFTER_S)
    singles = {}
    for name, items in plan.items():
        before = probe() if probe else 0.0
        singles[name] = [one(item) for item in items]
        if probe is not None and cpu is not None:
            cpu[name] = round(1000 * (probe() - before) / len(items), 2)
    out = {}
    for name, items in plan.items():
        # the queries three times: a phase of seconds, not one
        with ThreadPoolExecutor(clients) as pool:
            started = time.perf_counter()
            concurrent = list(pool.map(one, items * CONCURRENT_PASSES))
            wall = time.perf_counter() - started
        out[name] = (singles[name], concurrent, round(len(concurrent) / wall, 1))
    return out
