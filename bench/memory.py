"""Memory of every MemoryHub process under `manage.py run` (what `make run` starts), idle.

    nice -n 10 .venv/bin/python bench/memory.py [--web-workers N] [--events 40] [--searches 20]
        [--runs 1] [--json FILE] [--root OTHER_CHECKOUT]

Starts `manage.py run` with its defaults (web workers as `make run` starts them unless
--web-workers says otherwise) in a private data folder with its own embedded PostgreSQL; copies
the prepared ONNX model from the data folder (MEMORYHUB_DATA_DIR, else the checkout's
.memoryhub) when there is one: without it `run` prepares it beside the service first. Appends
events (the lanes index and embed them) and searches (the web workers embed queries), waits until
nothing is left to embed and every process has been quiet for a while (idle), then prints, per
process, what it is, its RSS and PSS (shared pages split among the processes sharing them; anon:
its heap, file: mapped libraries and models) and whether torch or ONNX Runtime is mapped in, and
the total PSS of MemoryHub's processes (`run` itself included); PostgreSQL's is counted apart.
With --runs N the whole start is repeated and the median total printed.

Roles are read from the process tree: a django-q2 cluster's main process forks its sentinel,
which forks the workers first, then the monitor and the pusher (named by that order of pids: a
worker reincarnated since start would come after them).
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
# Idle: the processes together used less than this share of one core over QUIET_SECONDS.
QUIET_SHARE = 0.05
QUIET_SECONDS = 5.0
SETTLE_TIMEOUT_SECONDS = 120.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


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


def children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(c) for c in (task / "children").read_text().split()]
    return sorted(out)


def cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ").strip()


def environ(pid: int) -> dict[str, str]:
    pairs = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace").split("\0")
    return dict(pair.split("=", 1) for pair in pairs if "=" in pair)


def roles(run_pid: int) -> dict[int, str]:
    """Every MemoryHub process under `run` (itself included), named by what it is."""
    named = {run_pid: "supervisor (manage.py run)"}
    for pid in children(run_pid):
        command = cmdline(pid)
        if "postgres" in command.split(" ")[0]:
            continue  # counted apart (postgres_pids)
        if "pg_guard" in command:
            named[pid] = "database guard (pg_guard)"
        elif "gunicorn" in command:
            named[pid] = "web server master (gunicorn)"
            named.update({worker: "web worker" for worker in children(pid)})
        elif "qcluster" in command:
            named.update(cluster_roles(pid))
        elif " work" in command:
            lanes = command.split("--lanes", 1)[1].split()[0] if "--lanes" in command else "all"
            named[pid] = f"lanes: {lanes}"
        elif "prepare_embedder" in command:
            named[pid] = "model preparation (first start)"
        else:
            named[pid] = command[:60]
        for grandchild in children(pid):
            named.setdefault(grandchild, f"child of {named[pid]}")
    return named


def cluster_roles(main: int) -> dict[int, str]:
    name = environ(main).get("Q_CLUSTER_NAME") or "schedules"
    named = {main: f"{name} cluster: main"}
    for sentinel in children(main):
        named[sentinel] = f"{name} cluster: sentinel"
        spawned = children(sentinel)  # workers, then the monitor, then the pusher
        for index, pid in enumerate(spawned):
            kind = {len(spawned) - 2: "monitor", len(spawned) - 1: "pusher"}.get(index, "worker")
            named[pid] = f"{name} cluster: {kind}"
    return named


def postgres_pids(data_dir: Path) -> list[int]:
    """The embedded PostgreSQL's postmaster and its backends."""
    pid_files = list(data_dir.glob("pg*/postmaster.pid"))
    if not pid_files:
        return []
    postmaster = int(pid_files[0].read_text().split()[0])
    return [postmaster, *children(postmaster)]


def describe(pid: int, role: str) -> dict[str, Any]:
    status = Path(f"/proc/{pid}/status").read_text()
    rss = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))
    rollup = dict(
        (line.split(":")[0], int(line.split()[1]))
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]
    )
    maps = Path(f"/proc/{pid}/maps").read_text()
    return {
        "pid": pid,
        "role": role,
        "cmd": cmdline(pid)[:110],
        "rss_mb": round(rss / 1024),
        "pss_mb": round(rollup["Pss"] / 1024, 1),
        "pss_anon_mb": round(rollup.get("Pss_Anon", 0) / 1024, 1),
        "pss_file_mb": round(rollup.get("Pss_File", 0) / 1024, 1),
        "torch": "libtorch" in maps,
        "onnxruntime": "onnxruntime" in maps,
    }


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / CLOCK_TICKS


def wait_until_quiet(run_pid: int) -> float:
    """Until MemoryHub's processes used under QUIET_SHARE of a core for QUIET_SECONDS; the share
    they last used."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_SECONDS
    share = 1.0
    while time.monotonic() < deadline:
        pids = list(roles(run_pid))
        before = cpu_seconds(pids)
        time.sleep(QUIET_SECONDS)
        share = (cpu_seconds(pids) - before) / QUIET_SECONDS
        if share < QUIET_SHARE:
            break
    return share


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """One start of `manage.py run`: every process's memory once it is idle."""
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
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, str(args.root / "manage.py"), "run", "--port", str(port)]
    if args.web_workers is not None:
        command += ["--web-workers", str(args.web_workers)]
    process = subprocess.Popen(
        command,
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
        share = wait_until_quiet(process.pid)
        rows = [describe(pid, role) for pid, role in roles(process.pid).items()]
        database = [describe(pid, "postgresql") for pid in postgres_pids(data_dir)]
        return {
            "processes": rows,
            "total_pss_mb": round(sum(r["pss_mb"] for r in rows), 1),
            "postgresql_pss_mb": round(sum(r["pss_mb"] for r in database), 1),
            "postgresql_processes": len(database),
            "cpu_share_when_measured": round(share, 3),
        }
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(data_dir, ignore_errors=True)


def report(result: dict[str, Any]) -> None:
    for row in result["processes"]:
        memory = f"rss {row['rss_mb']:>4} MB pss {row['pss_mb']:>6.1f} MB"
        split = f"anon {row['pss_anon_mb']:>5.1f}, file {row['pss_file_mb']:>5.1f}"
        runtimes = f"torch {row['torch']!s:<5} onnx {row['onnxruntime']!s:<5}"
        print(f"{row['pid']:>7} {row['role']:<34} {memory} ({split}) {runtimes}")
    print(
        f"MemoryHub: {len(result['processes'])} processes, {result['total_pss_mb']:.1f} MB PSS"
        f" (idle: {result['cpu_share_when_measured']:.1%} of a core); PostgreSQL apart:"
        f" {result['postgresql_processes']} processes, {result['postgresql_pss_mb']:.1f} MB PSS"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--web-workers", type=int, default=None, help="default: `manage.py run`'s (WEB_WORKERS)"
    )
    parser.add_argument("--events", type=int, default=40)
    parser.add_argument("--searches", type=int, default=20)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="the checkout to run (another commit's, to compare)"
    )
    args = parser.parse_args()
    results = []
    for run in range(args.runs):
        print(f"run {run + 1} of {args.runs}, load {os.getloadavg()[0]:.2f}")
        results.append(measure(args))
        report(results[-1])
    totals = [r["total_pss_mb"] for r in results]
    if args.runs > 1:
        print(
            f"median total {statistics.median(totals):.1f} MB PSS over {args.runs} runs"
            f" ({min(totals):.1f}-{max(totals):.1f})"
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))


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
