"""A new user's first minutes, measured: `make run` on a fresh clone until /health/ answers, the
longest silence on the terminal on the way, and the first search against the hundredth.

    python bench/first_start.py [--keep]   # clones this checkout's HEAD into a temporary folder

Prints one table. The clone installs its own .venv (pip's cache makes that faster than on a new
machine: say which it was), makes the embedded database and the fast search model, and serves on a
free port; the bench stops it with SIGINT (Ctrl-C) and removes the clone unless --keep.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def call(url: str, key: str, body: dict | None = None) -> tuple[float, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as reply:
        answer = json.loads(reply.read())
    return (time.perf_counter() - started) * 1000, answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the clone (its .venv, data folder)")
    args = parser.parse_args()
    clone = Path(tempfile.mkdtemp(prefix="memoryhub-fresh-"))
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYHUB_", "DATABASE_URL", "LOG_"))}
    env["PORT"] = str(port)
    started = time.monotonic()
    process = subprocess.Popen(["make", "run"], cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    lines: list[tuple[float, str]] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append((time.monotonic() - started, line.rstrip()))

    threading.Thread(target=read, daemon=True).start()
    base = f"http://127.0.0.1:{port}"
    healthy = None
    try:
        while time.monotonic() - started < 1800 and process.poll() is None:
            try:
                with urllib.request.urlopen(f"{base}/health/", timeout=5) as reply:
                    if reply.status == 200:
                        healthy = time.monotonic() - started
                        break
            except OSError:
                pass
            time.sleep(0.5)
        if healthy is None:
            raise SystemExit("MemoryHub did not become healthy:\n" + "\n".join(text for _, text in lines[-30:]))
        key = next(m.group(0) for _, text in lines for m in [re.search(r"mh_[A-Za-z0-9_-]+", text)] if m)
        call(f"{base}/api/v1/sessions/fresh-1/events/", key,
             {"role": "user", "content": "My flight to Lisbon leaves on 3 May at 09:40."})
        first_ms, first = call(f"{base}/api/v1/search/", key, {"query": "when does the flight leave?"})
        later = [call(f"{base}/api/v1/search/", key, {"query": f"when does flight {i} leave?"})[0] for i in range(100)]
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
    times = [t for t, _ in lines]
    gaps = [(b - a, lines[i][1]) for i, (a, b) in enumerate(zip([0.0, *times], times, strict=False))]
    longest, before = max(gaps, default=(0.0, ""))
    load = os.getloadavg()[0]
    print("| fresh clone -> /health/ | longest silence (line after it) | first search | 100th search | "
          "median of 100 | load at start |")
    print("| ---: | --- | ---: | ---: | ---: | ---: |")
    print(f"| {healthy:.0f} s | {longest:.1f} s ({before[:60]!r}) | {first_ms:.0f} ms "
          f"(server {first.get('duration_ms', '?')} ms) | {later[-1]:.0f} ms | {statistics.median(later):.0f} ms | "
          f"{load:.1f} |")
    if args.keep:
        print(f"clone kept in {clone}")
    else:
        shutil.rmtree(clone, ignore_errors=True)


if __name__ == "__main__":
    main()
