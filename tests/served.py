"""MemoryHub as `manage.py run` starts it, in a private data folder: for the tests and the scripts
that need the real server (gunicorn + uvicorn workers, the embedded PostgreSQL, the guard).

`run` is started in a process group of its own, as a supervisor would, so that `signal_group`
can send what systemd or a container runtime sends.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
KEY_LINE = re.compile(r"admin key:\s+(mh_\S+)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Served:
    def __init__(
        self,
        data_dir: Path | None = None,
        *,
        cluster: bool = False,
        web_workers: int = 1,
        env: dict[str, str] | None = None,
    ) -> None:
        self.own_data_dir = data_dir is None  # removed on stop
        self.data_dir = data_dir or Path(tempfile.mkdtemp(prefix="memoryhub-served-"))
        self.port = free_port()
        environment = {
            k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "TEST_DB_NAME")
        }
        environment.update(
            {
                "MEMORYHUB_DATA_DIR": str(self.data_dir),
                "PYTHONUNBUFFERED": "1",
                "LOG_LEVEL": "WARNING",
                "MEMORYHUB_ADMIN_PASSWORD": uuid.uuid4().hex,
                "MEMORYHUB_EMBEDDER": "hash",
                "MEMORYHUB_PG_SHARED_BUFFERS_MB": "0",  # no restart of the database at start
            }
        )
        environment.update(env or {})
        command = [
            sys.executable,
            str(ROOT / "manage.py"),
            "run",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--web-workers",
            str(web_workers),
        ]
        if not cluster:
            command.append("--no-cluster")
        self.environment = environment
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.key = ""
        self.log: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._serving = threading.Event()
        self._reader.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.log.append(line.rstrip())
            match = KEY_LINE.search(line)
            if match:
                self.key = match.group(1)
            if "is serving" in line:
                self._serving.set()

    def wait(self, timeout: float = 240, *, key: bool = True) -> Served:
        deadline = time.monotonic() + timeout
        while not self._serving.wait(0.2):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("MemoryHub did not start:\n" + "\n".join(self.log[-40:]))
        if key and not self.key:  # a data folder started before: its first-start key was shown then
            # All scopes, as the first-start key has (create_api_key's default is read,write).
            self.key = (
                self.manage("create_api_key", "--tenant", "demo", "--scopes", "read,write,admin")
                .strip()
                .splitlines()[-1]
            )
        return self

    def manage(self, *args: str) -> str:
        """A management command against this server's data folder; its standard output."""
        return subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), *args],
            cwd=ROOT,
            env=self.environment,
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    def output(self) -> str:
        return "\n".join(self.log)

    def signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM, as a supervisor would; SIGKILL to the group after `timeout`."""
        if self.process.poll() is None:
            self.signal_group(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.signal_group(signal.SIGKILL)
                self.process.wait()
        self._reader.join(5)
        if self.own_data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        return self.process.returncode

    def __enter__(self) -> Served:
        return self.wait()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


@contextmanager
def private_data_dir() -> Iterator[Path]:
    """A data folder in /tmp, not under pytest's tmp_path: the embedded PostgreSQL runs as another
    user (pgserver, when tests run as root) and must reach it, and every new pytest session resets
    /tmp/pytest-of-<user> to mode 0700, which would cut a running server off from its files."""
    path = Path(tempfile.mkdtemp(prefix="memoryhub-test-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def postgres_of(data_dir: Path) -> list[int]:
    """Pids of every PostgreSQL process (postmaster and backends) of this data folder."""
    import psutil

    folder = str(data_dir)
    found = []
    for process in psutil.process_iter(["pid", "name", "cmdline"]):
        try:
            if "postgres" in (process.info["name"] or "") and folder in " ".join(
                process.info["cmdline"] or []
            ):
                found.append(process.info["pid"])
        except psutil.Error:
            continue
    # A backend's command line does not name the folder: the postmaster's children count too.
    for pid in list(found):
        try:
            found += [child.pid for child in psutil.Process(pid).children(recursive=True)]
        except psutil.Error:
            continue
    return sorted(set(found))


def wait_until(condition: Any, timeout: float, step: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return bool(condition())


def children_of(pid: int) -> list[int]:
    import psutil

    try:
        return [c.pid for c in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


__all__ = [
    "ROOT",
    "Served",
    "children_of",
    "free_port",
    "postgres_of",
    "private_data_dir",
    "wait_until",
]
