"""A new user's first minutes, measured: `make run` on a fresh clone until /health/ answers, the
longest silence on the terminal on the way, and the first search against the hundredth.

    python bench/first_start.py [--keep]   # clones this checkout's HEAD into a temporary folder
    python bench/first_start.py --checkout [--load 8]   # this checkout's .venv, a new data folder

Prints one table. The clone installs its own .venv (pip's cache makes that faster than on a new
machine: say which it was), makes the embedded database and the fast search model, and serves on a
free port; the bench stops it with SIGINT (Ctrl-C) and removes the clone unless --keep. With
--checkout the start is this checkout's `manage.py run` on a new data folder (the install left
out). --load N runs N busy processes (each a Python loop, at normal priority) beside it for the
whole measure, as other work on the machine would. Then it waits for the fast (ONNX) search model
to be made beside the service and in use (/health/ details.search), and times a search again.
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
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as reply:
        answer = json.loads(reply.read())
    return (time.perf_counter() - started) * 1000, answer


def busy(count: int) -> list[subprocess.Popen[bytes]]:
    """`count` processes that keep a core each busy (the load beside the start)."""
    return [
        subprocess.Popen(["python3", "-c", "while True: pass"], start_new_session=True)
        for _ in range(count)
    ]


def health(base: str) -> dict:
    with urllib.request.urlopen(f"{base}/api/v1/health/", timeout=60) as reply:
        return json.loads(reply.read())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--keep", action="store_true", help="keep the clone (its .venv, data folder)"
    )
    parser.add_argument(
        "--checkout", action="store_true", help="this checkout and its .venv, a new data folder"
    )
    parser.add_argument("--load", type=int, default=0, help="busy processes beside the start")
    parser.add_argument(
        "--show", action="store_true", help="print the terminal's lines with their times"
    )
    args = parser.parse_args()
    clone = Path(tempfile.mkdtemp(prefix="memoryhub-fresh-"))
    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEMORYHUB_", "DATABASE_URL", "LOG_"))
    }
    env["PORT"] = str(port)
    if args.checkout:
        env["MEMORYHUB_DATA_DIR"] = str(clone / "data")
        command, cwd = [str(ROOT / ".venv" / "bin" / "python"), "manage.py", "run"], ROOT
    else:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        command, cwd = ["make", "run"], clone
    loaders = busy(args.load)
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
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
                with urllib.request.urlopen(f"{base}/api/v1/health/", timeout=5) as reply:
                    if reply.status == 200:
                        healthy = time.monotonic() - started
                        break
            except OSError:
                pass
            time.sleep(0.5)
        if healthy is None:
            raise SystemExit(
                "MemoryHub did not become healthy:\n" + "\n".join(text for _, text in lines[-30:])
            )
        searched_by = health(base)["details"].get("search", "?")
        key = next(
            m.group(0) for _, text in lines for m in [re.search(r"mh_[A-Za-z0-9_-]+", text)] if m
        )
        call(
            f"{base}/api/v1/sessions/fresh-1/events/",
            key,
            {"role": "user", "content": "My flight to Lisbon leaves on 3 May at 09:40."},
        )
        first_ms, first = call(
            f"{base}/api/v1/search/", key, {"query": "when does the flight leave?"}
        )
        later = [
            call(f"{base}/api/v1/search/", key, {"query": f"when does flight {i} leave?"})[0]
            for i in range(100)
        ]
        fast = None  # when every answer says the fast model is in use (each worker took it up)
        while time.monotonic() - started < 1800 and process.poll() is None:
            if all(health(base)["details"].get("search", "").startswith("ONNX") for _ in range(6)):
                fast = time.monotonic() - started
                break
            time.sleep(2)
        fast_ms = call(
            f"{base}/api/v1/search/", key, {"query": "when does the flight leave at last?"}
        )[0]
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        for loader in loaders:
            loader.kill()
    # Silences on the way to serving (once it serves, a quiet terminal is what it should be).
    starting = [(t, text) for t, text in lines if t <= healthy] + [(healthy, "(healthy)")]
    times = [t for t, _ in starting]
    gaps = [
        (b - a, starting[i][1]) for i, (a, b) in enumerate(zip([0.0, *times], times, strict=False))
    ]
    longest, before = max(gaps, default=(0.0, ""))
    load = os.getloadavg()[0]
    if args.show:
        for at, text in lines:
            print(f"{at:7.1f} s  {text}")
    machine = [
        line
        for line in (text for _, text in lines)
        if line.lstrip().startswith("{") or "Warning:" in line
    ]
    print(
        f"search model when healthy: {searched_by}; terminal lines for machines (JSON, Python"
        f" warnings): {len(machine)}"
    )
    print(
        "| start -> /health/ | longest silence (line after it) | first search | 100th search | "
        "median of 100 | fast model in use | search then | load (1 min) at the end |"
    )
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    print(
        f"| {healthy:.0f} s | {longest:.1f} s ({before[:60]!r}) | {first_ms:.0f} ms (server"
        f" {first.get('duration_ms', '?')} ms) | {later[-1]:.0f} ms |"
        f" {statistics.median(later):.0f} ms | {'—' if fast is None else f'{fast:.0f} s'} |"
        f" {fast_ms:.0f} ms | {load:.1f} |"
    )
    if args.keep:
        print(f"clone kept in {clone}")
    else:
        shutil.rmtree(clone, ignore_errors=True)


if __name__ == "__main__":
    main()
