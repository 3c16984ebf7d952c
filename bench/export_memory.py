"""Peak resident memory of a web worker while three clients export a large tenant at once.

    .venv/bin/python bench/export_memory.py [--chunks 35000] [--sessions 350] [--concurrent 3]
                                            [--web-workers 1] [--root CHECKOUT]

Fills a tenant in a private data folder with its own embedded PostgreSQL (sessions of events, one
search chunk per event with a 384-number vector, as a LongMemEval-sized tenant holds), starts
`manage.py run` on it, then sends `--concurrent` POST /export/ at once with a read-only key, reading
each answer to the end, while the web workers' RSS is sampled every 50 ms. Prints each worker's RSS
before, its peak during the exports, and after; the bytes each export returned and how long it
took. `--root` runs another checkout (to compare with an earlier commit). Not a test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory import roles, wait_for_key  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

FILL = """
import random, hashlib
from django.db import transaction
from accounts.models import ApiKey, Tenant, Workspace, Channel
from memoryhub.models import Session, Event
from retrieval.models import Chunk
from retrieval.embedders import get_embedder
tenant, _ = Tenant.get_or_create_named("exports")
ws = Workspace.get_default(tenant)
ch = Channel.get_default(ws)
model = get_embedder().name
rng = random.Random(7)
per = max(1, {chunks} // {sessions})
word = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt".split()
for s in range({sessions}):
    with transaction.atomic():
        session = Session.objects.create(tenant=tenant, workspace=ws, channel=ch, external_id=f"s{{s}}",
                                         user_id=f"u{{s % 7}}", last_sequence=per, event_count=per)
        texts = [" ".join(rng.choice(word) for _ in range(120)) for _ in range(per)]
        events = Event.objects.bulk_create([Event(tenant=tenant, session=session, sequence=i + 1, role="user",
                                                  content=t, metadata={{}}, importance=0.5) for i, t in enumerate(texts)])
        chunks = []
        for e in events:
            v = [rng.gauss(0, 1) for _ in range(384)]
            n = sum(x * x for x in v) ** 0.5
            chunks.append(Chunk(tenant=tenant, kind="event", session=session, workspace=ws, channel=ch,
                                user_id=session.user_id, role="user", sequence_start=e.sequence,
                                sequence_end=e.sequence, text=e.content,
                                content_hash=hashlib.sha256(e.content.encode()).hexdigest(),
                                metadata={{"event_id": e.pk}}, embedding=[x / n for x in v], embedding_model=model))
        Chunk.objects.bulk_create(chunks)
print("KEY", ApiKey.create_key(tenant=tenant, scopes=("read",), name="exports").raw)
print("CHUNKS", Chunk.objects.filter(tenant=tenant).count())
"""  # noqa: E501


def rss_mb(pid: int) -> float:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    return (
        int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))
        / 1024
    )


def command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ").strip()
    except OSError:
        return ""


def web_workers(server_pid: int) -> list[int]:
    """The web workers under `manage.py run` (bench/memory.py names each process)."""
    return [pid for pid, role in roles(server_pid).items() if role == "web worker"]


def export(url: str, key: str, results: list[tuple[int, float]]) -> None:
    start = time.monotonic()
    req = urllib.request.Request(
        f"{url}/export/",
        data=b"{}",
        method="POST",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    size = 0
    with urllib.request.urlopen(req, timeout=1800) as response:
        while block := response.read(1 << 16):
            size += len(block)
    results.append((size, time.monotonic() - start))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=35000)
    parser.add_argument("--sessions", type=int, default=350)
    parser.add_argument("--concurrent", type=int, default=3)
    parser.add_argument("--web-workers", type=int, default=1)
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="memoryhub-export-"))
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "TEST_DB_NAME")}
    env.update(
        {
            "MEMORYHUB_DATA_DIR": str(data_dir),
            "PYTHONUNBUFFERED": "1",
            "LOG_LEVEL": "WARNING",
            "MEMORYHUB_ADMIN_PASSWORD": uuid.uuid4().hex,
            "MEMORYHUB_EMBEDDER": "hash",
        }
    )
    manage = [sys.executable, str(args.root / "manage.py")]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [*manage, "run", "--port", str(port), "--web-workers", str(args.web_workers)],
        cwd=args.root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for_key(process)  # migrated and serving
        started = time.monotonic()
        fill = subprocess.run(
            [*manage, "shell", "-c", FILL.format(chunks=args.chunks, sessions=args.sessions)],
            cwd=args.root,
            env=env,
            capture_output=True,
            text=True,
        )
        if fill.returncode:
            raise SystemExit(f"filling failed:\n{fill.stderr[-3000:]}")
        filled = fill.stdout
        key = next(line.split()[1] for line in filled.splitlines() if line.startswith("KEY"))
        chunks = next(line.split()[1] for line in filled.splitlines() if line.startswith("CHUNKS"))
        print(
            f"filled {chunks} chunks in {args.sessions} sessions in"
            f" {time.monotonic() - started:.0f} s"
        )
        workers = web_workers(process.pid)
        url = f"http://127.0.0.1:{port}/api/v1"
        results: list[tuple[int, float]] = []
        export(url, key, results)  # warm: imports, connections (not measured)
        results.clear()
        before = {pid: rss_mb(pid) for pid in workers}
        peak = dict(before)
        threads = [
            threading.Thread(target=export, args=(url, key, results))
            for _ in range(args.concurrent)
        ]
        for thread in threads:
            thread.start()
        while any(thread.is_alive() for thread in threads):
            for pid in workers:
                peak[pid] = max(peak[pid], rss_mb(pid))
            time.sleep(0.05)
        time.sleep(2)
        after = {pid: rss_mb(pid) for pid in workers}
        for pid in workers:
            print(
                f"process {pid}: rss before {before[pid]:.0f} MB, peak {peak[pid]:.0f} MB, after"
                f" {after[pid]:.0f} MB  ({command(pid)[:70]})"
            )
        for size, seconds in results:
            print(f"export: {size / 1e6:.1f} MB of JSON in {seconds:.1f} s")
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
