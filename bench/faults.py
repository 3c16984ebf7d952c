"""Faults under load against the real server: prints what was lost, duplicated, refused.

    .venv/bin/python -m bench.faults [--seconds 60] [--clients 4] [--batch 20] [--cluster]

Starts `manage.py run` in a private data folder (gunicorn with 2 uvicorn workers, the embedded
PostgreSQL), then:

1. Bulk ingest from several clients, each event with an idempotency key; a failed request
   (connection reset, 5xx) is resent as it was until it is acknowledged. Meanwhile: kill -9 of
   a web worker, of the other, of PostgreSQL (`run` starts it again), and of both again. Then
   every acknowledged event is read back: each must be stored exactly once, every session's
   sequences gap-free.
2. The database down for longer than a request waits (`run` is paused so it cannot restart it):
   requests get 503 database_unavailable with Retry-After; once `run` continues they succeed
   again, with no restart of MemoryHub.
3. Slowloris: 40 and then 200 connections that never finish their headers; /health/ timed.
"""

from __future__ import annotations

import http.client
import json
import signal
import socket
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse  # noqa: E402

import psutil  # noqa: E402

from memoryhub.plumbing.embedded_pg import postmaster  # noqa: E402
from tests.served import Served, wait_until  # noqa: E402


class Api:
    def __init__(self, served: Served) -> None:
        self.port, self.key = served.port, served.key

    def call(
        self, method: str, path: str, body: Any = None, timeout: float = 30
    ) -> tuple[int, Any, dict[str, str]]:
        """(status, JSON body, headers); status 0 when the connection failed."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            payload = json.dumps(body).encode() if body is not None else None
            conn.request(
                method,
                path,
                payload,
                {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"},
            )
            response = conn.getresponse()
            raw = response.read()
            return response.status, json.loads(raw) if raw else None, dict(response.getheaders())
        except (OSError, http.client.HTTPException, ValueError):
            return 0, None, {}
        finally:
            conn.close()


def web_workers(served: Served) -> list[psutil.Process]:
    run = psutil.Process(served.process.pid)
    return [
        p
        for p in run.children(recursive=True)
        if "gunicorn" in " ".join(p.cmdline())
        and p.parent()
        and "gunicorn" in " ".join(p.parent().cmdline())
    ]


def ingest_with_faults(
    served: Served, api: Api, *, seconds: float, clients: int, batch: int
) -> dict[str, Any]:
    acknowledged: dict[str, list[str]] = {f"faults-{c}": [] for c in range(clients)}
    statuses: Counter[int] = Counter()
    stop = threading.Event()
    lock = threading.Lock()

    def client(index: int) -> None:
        session = f"faults-{index}"
        number = 0
        while not stop.is_set():
            keys = [f"{session}-e{number + i}" for i in range(batch)]
            events = [{"role": "user", "content": k, "idempotency_key": k} for k in keys]
            while True:  # resend as it was until acknowledged
                status, _, _ = api.call(
                    "POST", f"/api/v1/sessions/{session}/events/", {"events": events}
                )
                with lock:
                    statuses[status] += 1
                if status in (200, 201):
                    acknowledged[session] += keys
                    break
                if status not in (0, 502, 503, 504):
                    raise RuntimeError(f"unexpected {status} for {session}")
                time.sleep(0.2)
            number += batch

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    faults = run_faults(served, seconds)
    stop.set()
    for thread in threads:
        thread.join(120)
    return {"acknowledged": acknowledged, "statuses": statuses, "faults": faults}


def run_faults(served: Served, seconds: float) -> list[str]:
    data_dir = Path(served.environment["MEMORYHUB_DATA_DIR"])
    plan = [
        (0.10, "worker"),
        (0.25, "worker"),
        (0.40, "postgres"),
        (0.60, "worker"),
        (0.70, "postgres"),
    ]
    done: list[str] = []
    started = time.monotonic()
    for share, target in plan:
        time.sleep(max(0.0, started + share * seconds - time.monotonic()))
        if target == "worker":
            workers = web_workers(served)
            if workers:
                victim = workers[len(done) % len(workers)]
                victim.kill()
                done.append(f"{time.monotonic() - started:5.1f} s  kill -9 web worker {victim.pid}")
        else:
            process = postmaster(data_dir)
            if process is not None:
                process.kill()
                done.append(
                    f"{time.monotonic() - started:5.1f} s  kill -9 PostgreSQL {process.pid}"
                )
    time.sleep(max(0.0, started + seconds - time.monotonic()))
    return done


def verify(api: Api, acknowledged: dict[str, list[str]]) -> dict[str, int]:
    lost = duplicated = gaps = stored = 0
    for session, keys in acknowledged.items():
        contents: list[str] = []
        sequences: list[int] = []
        after = 0
        while True:
            status, page, _ = api.call(
                "GET", f"/api/v1/sessions/{session}/events/?after={after}&limit=1000"
            )
            assert status == 200, status
            contents += [e["content"] for e in page["results"]]
            sequences += [e["sequence"] for e in page["results"]]
            if len(page["results"]) < 1000:
                break
            after = sequences[-1]
        counts = Counter(contents)
        stored += len(contents)
        lost += sum(1 for k in keys if counts[k] == 0)
        duplicated += sum(n - 1 for n in counts.values() if n > 1)
        gaps += int(sequences != list(range(1, len(sequences) + 1)))
    return {
        "acknowledged": sum(len(k) for k in acknowledged.values()),
        "stored": stored,
        "lost": lost,
        "duplicated": duplicated,
        "sessions_with_gaps": gaps,
    }


def database_down(served: Served, api: Api, outage: float = 8.0) -> dict[str, Any]:
    """Pause `run` (so it cannot restart the database), kill the database, keep asking."""
    data_dir = Path(served.environment["MEMORYHUB_DATA_DIR"])
    run_pid = served.process.pid
    served.process.send_signal(signal.SIGSTOP)
    try:
        process = postmaster(data_dir)
        assert process is not None
        process.kill()
        seen: Counter[str] = Counter()
        retry_after = set()
        deadline = time.monotonic() + outage
        while time.monotonic() < deadline:
            status, body, headers = api.call(
                "POST",
                "/api/v1/sessions/down/events/",
                {"role": "user", "content": "x", "idempotency_key": "down-1"},
            )
            code = (body or {}).get("error", {}).get("code", "") if isinstance(body, dict) else ""
            seen[f"{status} {code}".strip()] += 1
            if status == 503:
                retry_after.add(headers.get("Retry-After") or headers.get("retry-after"))
    finally:
        served.process.send_signal(signal.SIGCONT)
    resumed = time.monotonic()
    recovered = wait_until(
        lambda: (
            api.call(
                "POST",
                "/api/v1/sessions/down/events/",
                {"role": "user", "content": "x", "idempotency_key": "down-1"},
            )[0]
            in (200, 201)
        ),
        60,
        step=0.5,
    )
    return {
        "during outage": dict(seen),
        "Retry-After": sorted(v for v in retry_after if v),
        "recovered": recovered,
        "seconds to recover after run resumed": round(time.monotonic() - resumed, 1),
        "same run process": served.process.poll() is None and served.process.pid == run_pid,
    }


def slowloris(served: Served, connections: int) -> dict[str, Any]:
    held = []
    try:
        for _ in range(connections):
            sock = socket.create_connection(("127.0.0.1", served.port), timeout=10)
            sock.sendall(b"GET /api/v1/health/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Never: ")
            held.append(sock)
        timings = []
        api = Api(served)
        for _ in range(20):
            started = time.perf_counter()
            status, _, _ = api.call("GET", "/api/v1/health/", timeout=10)
            timings.append(time.perf_counter() - started)
            assert status == 200, status
        return {
            "connections held": connections,
            "health median ms": round(statistics.median(timings) * 1000, 1),
            "health max ms": round(max(timings) * 1000, 1),
        }
    finally:
        for sock in held:
            sock.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--seconds", type=float, default=60.0, help="Length of the ingest under faults."
    )
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--batch", type=int, default=20, help="Events per bulk append.")
    parser.add_argument(
        "--cluster", action="store_true", help="Run the task cluster too (indexing load)."
    )
    args = parser.parse_args()
    served = Served(web_workers=2, cluster=args.cluster).wait()
    api = Api(served)
    print(f"MemoryHub at {served.url} (data {served.data_dir})", flush=True)
    try:
        result = ingest_with_faults(
            served, api, seconds=args.seconds, clients=args.clients, batch=args.batch
        )
        print("\n1. bulk ingest under faults")
        for line in result["faults"]:
            print("   " + line)
        print(
            "   responses: "
            + ", ".join(
                f"{s or 'connection failed'}: {n}" for s, n in sorted(result["statuses"].items())
            )
        )
        figures = verify(api, result["acknowledged"])
        print("   " + ", ".join(f"{k}: {v}" for k, v in figures.items()))
        print("\n2. database down (run paused so it cannot restart it)")
        for key, value in database_down(served, api).items():
            print(f"   {key}: {value}")
        print("\n3. slowloris")
        for count in (40, 200):
            print("   " + ", ".join(f"{k}: {v}" for k, v in slowloris(served, count).items()))
        print(
            "\n"
            + ("run output:\n" + "\n".join(line for line in served.log if "PostgreSQL" in line))
        )
    finally:
        code = served.stop()
        print(f"\nstopped (exit code {code})")


if __name__ == "__main__":
    main()
