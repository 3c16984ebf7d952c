"""Real MemoryHub processes for tests: web servers, lanes and clusters against the test database.

Tests that use these need `transactional_db` (the processes see only committed rows) and must
stop every process before the test ends (the database is flushed afterwards).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection

ROOT = Path(settings.BASE_DIR)


def database_url(name: str | None = None) -> str:
    """A URL of the database this test uses (the test database, not the development one), or of
    another database `name` on the same server."""
    db = connection.settings_dict
    name = name or db["NAME"]
    host = db.get("HOST") or ""
    auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    if host.startswith("/"):  # a unix socket folder
        return f"postgresql://{auth}@/{name}?host={host}"
    return f"postgresql://{auth}@{host}:{db.get('PORT') or 5432}/{name}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def base_env(**extra: str) -> dict[str, str]:
    # The test's own key: a task this process queues is signed with it, and a cluster started with
    # another one drops the task as tampered with (django-q's BadSignature).
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "SECRET_KEY": settings.SECRET_KEY,
        "MEMORYHUB_EMBEDDER": "hash",
        "LOG_LEVEL": "WARNING",
        "LOG_FORMAT": "text",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.update(extra)
    return env


class Processes:
    """Started processes, each in a session of its own, stopped (or killed) as groups."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.started: list[subprocess.Popen[bytes]] = []

    def start(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        log = open(self.log_dir / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        process = subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        process.name = name  # type: ignore[attr-defined]
        self.started.append(process)
        return process

    def manage(self, name: str, *args: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
        return self.start(name, [sys.executable, "manage.py", *args], env)

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        """SIGKILL the process and everything it started (its session's group)."""
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)

    def stop_all(self) -> None:
        for process in self.started:
            if process.poll() is None:
                # the main process only (qcluster deadlocks otherwise)
                os.kill(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for process in self.started:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(process.pid, signal.SIGKILL)  # stragglers and children
            except ProcessLookupError:
                pass

    def log(self, name: str) -> str:
        return (self.log_dir / f"{name}.log").read_text(errors="replace")[-3000:]


def wait_for(
    condition: Callable[[], Any],
    timeout: float,
    message: str,
    processes: Processes | None = None,
    every: float = 0.2,
) -> Any:
    """condition()'s first true value within `timeout` seconds; on a timeout, the processes'
    logs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    logs = (
        "".join(f"\n--- {p.name} ---\n{processes.log(p.name)}" for p in processes.started)
        if processes
        else ""
    )
    raise AssertionError(
        f"timed out after {timeout:.0f} s: {message}{logs}{database_state() if processes else ''}"
    )


def database_state() -> str:
    """What the started processes' database sessions were doing (a timeout's second clue): each
    backend's state, what it waits on and its statement, and the lanes' last heartbeats."""
    lines = ["\n--- database sessions ---"]
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pid, application_name, state, wait_event_type, wait_event,"
                " round(extract(epoch FROM now() - xact_start)::numeric, 1), left(query, 160) FROM"
                " pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
                " ORDER BY pid"
            )
            lines += [" | ".join(str(v) for v in row) for row in cursor.fetchall()]
            cursor.execute(
                "SELECT lane, name, seen_at, done, failed, busy FROM memoryhub_worker ORDER BY lane"
            )
            lines += [
                "--- lanes ---",
                *(" | ".join(str(v) for v in row) for row in cursor.fetchall()),
            ]
    except Exception as exc:  # the report must not hide the timeout
        lines.append(f"(unreadable: {exc})")
    return "\n".join(lines)


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return response.status == 200
    except OSError:
        return False
