"""Resident memory per process under `manage.py run` (what `make run` starts), models loaded.

    .venv/bin/python bench/memory.py [--web-workers 2] [--events 40] [--searches 20]

Starts `manage.py run` (gunicorn + the task cluster) in a private data folder with its own
embedded PostgreSQL; copies the prepared ONNX model from the main data folder when there is one
(`manage.py run` of the background branch prepares it; without it the web workers fall back to
torch). Appends events (the cluster indexes and embeds them: its workers load the model) and
searches (the web workers embed queries), waits until nothing is left to embed, then prints, per
process, RSS and PSS (shared pages split among the processes sharing them) and whether torch or
ONNX Runtime is mapped in.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
KEY_LINE = re.compile(r"agent key:\s+(mh_\S+)")


def request(url: str, key: str, method: str, body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        url,
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=120) as response:
        return json.loads(response.read() or b"null")


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        for task in Path(f"/proc/{current}/task").iterdir():
            children = (task / "children").read_text().split()
            out += [int(c) for c in children]
            todo += [int(c) for c in children]
    return out


def describe(pid: int) -> dict[str, Any]:
    cmdline = Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ").strip()
    status = Path(f"/proc/{pid}/status").read_text()
    rss = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))
    rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    pss = int(next(line.split()[1] for line in rollup.splitlines() if line.startswith("Pss:")))
    maps = Path(f"/proc/{pid}/maps").read_text()
    return {
        "pid": pid,
        "cmd": cmdline[:110],
        "rss_mb": round(rss / 1024),
        "pss_mb": round(pss / 1024),
        "torch": "libtorch" in maps,
        "onnxruntime": "onnxruntime" in maps,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--events", type=int, default=40)
    parser.add_argument("--searches", type=int, default=20)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="the checkout to run (another commit's, to compare)"
    )
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="memoryhub-memory-"))
    models = Path(os.environ.get("MEMORYHUB_DATA_DIR", ROOT / ".memoryhub")) / "models"
    if models.exists():
        shutil.copytree(models, data_dir / "models")
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "TEST_DB_NAME")}
    env.update(
        {
            "MEMORYHUB_DATA_DIR": str(data_dir),
            "PYTHONUNBUFFERED": "1",
            "LOG_LEVEL": "WARNING",
            "MEMORYHUB_ADMIN_PASSWORD": uuid.uuid4().hex,
            "MEMORYHUB_EMBEDDER": "minilm",
        }
    )
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [
            sys.executable,
            str(args.root / "manage.py"),
            "run",
            "--port",
            str(port),
            "--web-workers",
            str(args.web_workers),
        ],
        cwd=args.root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        key = wait_for_key(process)
        url = f"http://127.0.0.1:{port}/api/v1"
        for i in range(args.events):
            request(
                f"{url}/sessions/mem/events/",
                key,
                "POST",
                {
                    "role": "user",
                    "content": f"Event {i}: I moved to Lisbon in May and adopted a cat.",
                },
            )
        for i in range(args.searches):
            request(
                f"{url}/search/", key, "POST", {"query": f"where did I move? {i}", "mode": "hybrid"}
            )
        wait_for_embeddings(url, key)
        rows = [describe(pid) for pid in descendants(process.pid)]
        rows = [r for r in rows if "postgres" not in r["cmd"]]
        for row in rows:
            print(
                f"{row['pid']:>7} rss {row['rss_mb']:>5} MB  pss {row['pss_mb']:>5} MB  torch"
                f" {row['torch']!s:<5} onnx {row['onnxruntime']!s:<5} {row['cmd']}"
            )
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(rows, indent=2))
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(data_dir, ignore_errors=True)


def wait_for_key(process: subprocess.Popen[str]) -> str:
    key = ""
    assert process.stdout is not None
    for line in process.stdout:
        match = KEY_LINE.search(line)
        key = match.group(1) if match else key
        if "is serving" in line:
            threading.Thread(target=process.stdout.read, daemon=True).start()  # drain its output
            return key
    raise SystemExit("the server did not start")


def wait_for_embeddings(url: str, key: str, timeout: float = 600) -> None:
    """Until the session's chunks are all embedded (the cluster has loaded its model)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        chunks = request(f"{url}/stats/", key, "GET")["chunks"]
        if chunks["total"] and not chunks["pending_embedding"]:
            return
        time.sleep(2)
    print("warning: embeddings still pending after", timeout, "s")


if __name__ == "__main__":
    main()
