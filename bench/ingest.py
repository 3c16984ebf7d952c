"""Ingest benchmark: events per second acknowledged by the real API server.

By default it starts its own MemoryHub (`manage.py run`: gunicorn + an embedded PostgreSQL in a
private, temporary MEMORYHUB_DATA_DIR, never the tests' database), creates a key, measures and
stops everything. With --url and --key it targets a running server instead.

For each mode (single appends, bulk of 100) and each number of concurrent clients it runs
--repeats rounds of --seconds each and prints the median events/s and request latency. Every
client appends to its own session (agents rarely share one); --shared-session makes them all
append to one session, which measures the session-row lock.

    .venv/bin/python bench/ingest.py                       # 1, 4, 8 clients, 3 repeats of 5 s
    .venv/bin/python bench/ingest.py --clients 1 8 --seconds 10 --with-cluster
    .venv/bin/python bench/ingest.py --url http://127.0.0.1:8000 --key mh_...
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
KEY_LINE = re.compile(r"agent key:\s+(mh_\S+)")


@dataclass
class Round:
    events: int
    requests: int
    errors: int
    seconds: float
    latencies_ms: list[float]

    @property
    def events_per_s(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0


class Client:
    """One keep-alive HTTP connection, like one agent runtime talking to MemoryHub."""

    def __init__(self, url: str, key: str) -> None:
        parsed = urlparse(url)
        self.host, self.port = parsed.hostname or "127.0.0.1", parsed.port or 80
        self.prefix = parsed.path.rstrip("/")
        self.headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)

    def post(self, path: str, body: object) -> tuple[int, dict]:
        payload = json.dumps(body)
        for attempt in (1, 2):
            try:
                self.conn.request("POST", self.prefix + path, payload, self.headers)
                response = self.conn.getresponse()
                data = response.read()
                return response.status, json.loads(data) if data else {}
            except (http.client.HTTPException, ConnectionError):
                # The server closed an idle keep-alive connection: reconnect once.
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.conn.close()


def message(i: int) -> dict:
    role = "user" if i % 2 else "assistant"
    return {
        "role": role,
        "content": f"Message {i}: the quick brown fox jumps over the lazy dog near the river bank.",
    }


def run_round(
    url: str, key: str, *, clients: int, batch: int, seconds: float, shared: bool
) -> Round:
    run_id = uuid.uuid4().hex[:8]
    barrier = threading.Barrier(clients)
    lock = threading.Lock()
    totals = {"events": 0, "requests": 0, "errors": 0}
    latencies: list[float] = []
    spans: list[tuple[float, float]] = []
    failures: list[BaseException] = []

    def worker(index: int) -> None:
        try:
            measure(index)
        except BaseException as exc:
            with lock:
                failures.append(exc)
            barrier.abort()

    def measure(index: int) -> None:
        client = Client(url, key)
        session = f"bench-{run_id}" if shared else f"bench-{run_id}-{index}"
        # Create the session first, so that lazy creation is not part of the measurement.
        client.post(f"/api/v1/sessions/{session}/events/", message(0))
        events = requests = errors = 0
        mine: list[float] = []
        barrier.wait(timeout=120)
        began = time.perf_counter()
        deadline = began + seconds
        i = 1
        while time.perf_counter() < deadline:
            body: object = (
                message(i) if batch == 1 else {"events": [message(i + k) for k in range(batch)]}
            )
            started = time.perf_counter()
            status, data = client.post(f"/api/v1/sessions/{session}/events/", body)
            mine.append((time.perf_counter() - started) * 1000)
            requests += 1
            if status == 201 and len(data.get("events", [])) == batch:
                events += batch
            else:
                errors += 1
            i += batch
        ended = time.perf_counter()
        client.close()
        with lock:
            spans.append((began, ended))
            totals["events"] += events
            totals["requests"] += requests
            totals["errors"] += errors
            latencies.extend(mine)

    threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise RuntimeError(f"a client failed: {failures[0]!r}") from failures[0]
    # From the first client's start to the last acknowledgement.
    elapsed = max(end for _, end in spans) - min(start for start, _ in spans)
    return Round(totals["events"], totals["requests"], totals["errors"], elapsed, latencies)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def copy_onnx_model(data_dir: Path) -> None:
    """The ONNX export is a cache of the shipped weights: reuse this checkout's, if it made one."""
    models = Path(os.environ.get("MEMORYHUB_DATA_DIR", ROOT / ".memoryhub")) / "models"
    if models.is_dir():
        shutil.copytree(models, data_dir / "models")


class Server:
    """`manage.py run` in a private data folder; stopped (with its database) on exit."""

    def __init__(
        self,
        *,
        web_workers: int | None,
        with_cluster: bool,
        keep_data: bool,
        prepare: Callable[[Path], None] | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.data_dir = Path(tempfile.mkdtemp(prefix="memoryhub-bench-"))
        # e.g. seed the data folder's caches before the start; by default the prepared ONNX model,
        # as a deployment has it (web workers then embed queries without torch)
        (prepare or copy_onnx_model)(self.data_dir)
        self.port = free_port()
        self.keep_data = keep_data
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "TEST_DB_NAME")}
        env.update(
            {
                "MEMORYHUB_DATA_DIR": str(self.data_dir),
                "PYTHONUNBUFFERED": "1",
                "LOG_LEVEL": "WARNING",
                "MEMORYHUB_ADMIN_PASSWORD": uuid.uuid4().hex,
                "MEMORYHUB_TASKS_EAGER": "false",
                **(extra_env or {}),
            }
        )
        command = [
            sys.executable,
            str(ROOT / "manage.py"),
            "run",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]
        if web_workers is not None:  # None: run's own default, as `make run` starts it
            command += ["--web-workers", str(web_workers)]
        if not with_cluster:
            command.append("--no-cluster")
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.key = ""
        self.log: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait(self, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        assert self.process.stdout is not None
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            self.log.append(line.rstrip())
            match = KEY_LINE.search(line)
            if match:
                self.key = match.group(1)
            if "is serving" in line:
                threading.Thread(target=self._drain, daemon=True).start()
                if not self.key:
                    raise SystemExit("The server started without printing a first-start API key.")
                return
        self.stop()
        raise SystemExit("The server did not start:\n" + "\n".join(self.log[-30:]))

    def _drain(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.log.append(line.rstrip())

    def stop(self) -> None:
        if self.process.poll() is None:
            # `run` stops gunicorn, the cluster and PostgreSQL
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if not self.keep_data:
            shutil.rmtree(self.data_dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--url", help="Target a running server (with --key) instead of starting one."
    )
    parser.add_argument("--key", help="API key (write scope) for --url.")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument(
        "--batches",
        type=int,
        nargs="+",
        default=[1, 100],
        help="Events per request: 1 is a single append, more a bulk append.",
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="Length of one round.")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--shared-session", action="store_true", help="All clients append to one session."
    )
    parser.add_argument(
        "--web-workers", type=int, default=2, help="gunicorn workers of the started server."
    )
    parser.add_argument(
        "--with-cluster",
        action="store_true",
        help="Also run the task cluster (indexing competes with the web workers for CPU).",
    )
    parser.add_argument("--keep-data", action="store_true", help="Keep the private data folder.")
    args = parser.parse_args()
    if bool(args.url) != bool(args.key):
        parser.error("--url and --key go together")

    server = None
    if args.url:
        url, key = args.url, args.key
    else:
        print(
            f"Starting MemoryHub in a private data folder (web workers: {args.web_workers}, "
            f"cluster: {'on' if args.with_cluster else 'off'})…",
            flush=True,
        )
        started = time.perf_counter()
        server = Server(
            web_workers=args.web_workers, with_cluster=args.with_cluster, keep_data=args.keep_data
        )
        try:
            server.wait()
        except BaseException:
            server.stop()
            raise
        url, key = server.url, server.key
        print(
            f"Serving at {url} after {time.perf_counter() - started:.1f} s; data in"
            f" {server.data_dir}",
            flush=True,
        )

    print(
        f"cpu cores: {os.cpu_count()}; rounds of {args.seconds:g} s, {args.repeats} repeats, "
        f"{'one shared session' if args.shared_session else 'a session per client'}\n",
        flush=True,
    )
    header = (
        f"{'mode':<10} {'clients':>7} {'events/s (median)':>18} {'min':>8} {'max':>8} "
        f"{'req p50 ms':>10} {'req p95 ms':>10} {'errors':>6}"
    )
    print(header)
    print("-" * len(header))
    try:
        for batch in args.batches:
            mode = "single" if batch == 1 else f"bulk {batch}"
            for clients in args.clients:
                rounds = [
                    run_round(
                        url,
                        key,
                        clients=clients,
                        batch=batch,
                        seconds=args.seconds,
                        shared=args.shared_session,
                    )
                    for _ in range(args.repeats)
                ]
                rates = [r.events_per_s for r in rounds]
                lat = sorted(x for r in rounds for x in r.latencies_ms)
                p50 = statistics.median(lat) if lat else float("nan")
                p95 = lat[min(len(lat) - 1, int(len(lat) * 0.95))] if lat else float("nan")
                print(
                    f"{mode:<10} {clients:>7} {statistics.median(rates):>18.0f} {min(rates):>8.0f}"
                    f" {max(rates):>8.0f} {p50:>10.1f} {p95:>10.1f}"
                    f" {sum(r.errors for r in rounds):>6}",
                    flush=True,
                )
    finally:
        if server is not None:
            server.stop()
            print("\nServer and its database stopped.")


if __name__ == "__main__":
    main()
