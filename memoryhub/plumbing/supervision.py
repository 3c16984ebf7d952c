"""What `manage.py run` does while it serves: watch its children and the embedded PostgreSQL, and
stop all of them, database included, within the 10 s a supervisor allows after SIGTERM.

- A guard process (memoryhub.plumbing.pg_guard) learns every child's process group; should `run` be
  SIGKILLed before it has stopped them, the guard kills the groups and stops the database.
- A child that exits while the service runs (the web server, a task cluster, a lane process) is
  restarted alone, after a backoff that doubles with each restart of that child in the last
  RESTART_WINDOW_SECONDS (1 s, 2 s, 4 s … at most MAX_BACKOFF_SECONDS); what was left of its
  process group is killed first. The others, and so the API, keep running meanwhile. Each
  restart is counted in restarts_path() (a JSON file in the data folder that /health/ and the
  dashboard read).
- The embedded PostgreSQL is checked every second. When it has died (killed, out of memory) it
  is started again (crash recovery from the WAL; requests meanwhile get 503 database_unavailable),
  at most MEMORYHUB_PG_RESTARTS times in RESTART_WINDOW_SECONDS; after that `run` stops, with a
  message and no traceback. Each restart is counted in the same file (as "postgresql").
- A web worker that dies is respawned by gunicorn's master, not by `run`: the master counts it
  (record_worker_respawn, from its child_exit hook) in a file of its own beside that one, its only
  writer; read_restarts adds it (as "web workers").
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from memoryhub.plumbing import embedded_pg

# SIGTERM to SIGKILL is 10 s under systemd and container runtimes: children get this much, the
# database the fast-shutdown grace after it (embedded_pg.STOP_GRACE_SECONDS), and a margin is left.
CHILD_GRACE_SECONDS = 5.5
# A task cluster still stopping this long after SIGTERM is waiting for a busy worker: its workers
# then get SIGTERM, which interrupts their task (memoryhub.tasks), so that it stops within the
# grace.
CLUSTER_DRAIN_SECONDS = 2.5
CHECK_EVERY_SECONDS = 1.0
RESTART_WINDOW_SECONDS = 600.0
FIRST_BACKOFF_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 60.0
RESTARTS_FILE = "supervision.json"  # in the data folder
RESTARTS_ENV = "MEMORYHUB_SUPERVISION_FILE"  # where `run` tells its children the file is
DATABASE = "postgresql"  # the embedded PostgreSQL's name among the counts
WEB_WORKERS = "web workers"  # the web server's workers, respawned by its master

Child = subprocess.Popen  # type: ignore[type-arg]


def restarts_path(data_dir: Path) -> Path:
    return Path(data_dir) / RESTARTS_FILE


def workers_path(path: Path) -> Path:
    """The web server master's count of respawned workers, beside `run`'s file."""
    return path.with_name(f"{path.stem}-web-workers.json")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(data))
    temporary.replace(path)


def read_restarts() -> dict[str, Any]:
    """The supervising `run`'s restart counts ({"total": n, "children": {name: {"restarts",
    "last_exit_code", "last_restart_at"}}}), the embedded PostgreSQL's and the web workers'
    included, for /health/ and the dashboard; zero counts when no `run` supervises this process (its
    file is named in RESTARTS_ENV) or the file cannot be read."""
    path = os.environ.get(RESTARTS_ENV, "")
    empty: dict[str, Any] = {"total": 0, "children": {}}
    if not path:
        return empty
    data = _read_json(Path(path))
    if "total" not in data:
        return empty
    workers = _read_json(workers_path(Path(path)))
    if workers.get("restarts"):
        data["children"] = {**data.get("children", {}), WEB_WORKERS: workers}
        data["total"] += workers["restarts"]
    return data


def record_worker_respawn() -> None:
    """Count a web worker that exited while the web server serves (its master starts another)."""
    path = os.environ.get(RESTARTS_ENV, "")
    if not path:
        return
    target = workers_path(Path(path))
    count = int(_read_json(target).get("restarts", 0)) + 1
    try:
        _write_json(
            target, {"restarts": count, "last_exit_code": None, "last_restart_at": time.time()}
        )
    except OSError:  # a count is never worth stopping for
        pass


@dataclass
class Supervised:
    name: str
    process: Child
    cluster: bool = False
    start: Callable[[], Child] | None = None  # None: its exit stops `run`
    restarts: int = 0
    recent: list[float] = field(default_factory=list)  # monotonic times of its recent restarts
    restart_at: float | None = None  # set while it waits out its backoff
    last_exit_code: int | None = None
    last_restart_at: float | None = None  # time.time()


class Supervisor:
    def __init__(
        self,
        data_dir: Path | None,
        say: Callable[[str], None],
        warn: Callable[[str], None],
        *,
        max_restarts: int = 3,
    ) -> None:
        self.data_dir = data_dir  # None: the database is not ours to watch (DATABASE_URL)
        self.max_restarts = max_restarts
        self.say, self.warn = say, warn
        self.supervised: list[Supervised] = []
        # Children that finish on their own while the service runs (start-up work in the
        # background).
        self.helpers: list[tuple[Child, Callable[[int], None]]] = []
        self.clusters: set[int] = set()  # pids of the children that are task clusters (qcluster)
        self.guard: Child | None = None
        self.restarts: list[float] = []  # the database's, in the last RESTART_WINDOW_SECONDS
        self.database_restarts = 0  # since `run` started
        self.database_restarted_at: float | None = None  # time.time()
        self.next_check = 0.0
        self.restarts_file = restarts_path(data_dir) if data_dir is not None else None

    @property
    def children(self) -> list[tuple[str, Child]]:
        return [(s.name, s.process) for s in self.supervised]

    def use_restarts_file(self, path: Path) -> None:
        """Count restarts in `path` (started empty); children find it through RESTARTS_ENV."""
        self.restarts_file = path
        os.environ[RESTARTS_ENV] = str(path)
        workers_path(path).unlink(missing_ok=True)  # a previous start's
        self._write_restarts()

    def start_guard(self) -> None:
        self.guard = subprocess.Popen(
            [sys.executable, "-m", "memoryhub.plumbing.pg_guard", str(self.data_dir or "")],
            stdin=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    def adopt(
        self,
        name: str,
        child: Child,
        *,
        cluster: bool = False,
        start: Callable[[], Child] | None = None,
    ) -> None:
        """Watch a child started in a session of its own (its process group id is its pid); a
        cluster's workers are interrupted when it is slow to stop (CLUSTER_DRAIN_SECONDS). With
        `start` (which starts it again, the same way) an exit restarts it alone; without, an exit
        stops `run`."""
        self.supervised.append(Supervised(name, child, cluster=cluster, start=start))
        if cluster:
            self.clusters.add(child.pid)
        self._tell(f"group {child.pid}")

    def adopt_helper(self, child: Child, finished: Callable[[int], None]) -> None:
        """Watch a child (in a session of its own) that ends by itself: `finished(exit code)` is
        called from problem() once it has; it is stopped with the others should `run` stop first."""
        self.helpers.append((child, finished))
        self._tell(f"group {child.pid}")

    def problem(self) -> str | None:
        """Why `run` must stop now (a child exited, the database is gone for good), or None."""
        for helper in list(self.helpers):
            if helper[0].poll() is not None:
                self.helpers.remove(helper)
                helper[1](helper[0].returncode)
        for one in self.supervised:
            if one.restart_at is None and one.process.poll() is not None:
                if one.start is None:
                    return (
                        f"A child process exited ({one.name}, code {one.process.returncode});"
                        " stopping."
                    )
                self._exited(one)
            if one.restart_at is not None and time.monotonic() >= one.restart_at:
                self._restart(one)
        if self.data_dir is None or time.monotonic() < self.next_check:
            return None
        self.next_check = time.monotonic() + CHECK_EVERY_SECONDS
        if embedded_pg.postmaster(self.data_dir) is not None:
            return None
        return self._restart_database()

    def _exited(self, one: Supervised) -> None:
        """A restartable child exited: kill what is left of its group, restart it after its
        backoff."""
        _kill_group(one.process.pid)  # its workers, should any have outlived it
        self.clusters.discard(one.process.pid)
        now = time.monotonic()
        one.recent = [t for t in one.recent if now - t < RESTART_WINDOW_SECONDS]
        backoff = min(MAX_BACKOFF_SECONDS, FIRST_BACKOFF_SECONDS * 2 ** len(one.recent))
        one.last_exit_code = one.process.returncode
        one.restart_at = now + backoff
        self.warn(
            f"A child process exited ({one.name}, code {one.process.returncode}); restarting it in "
            f"{backoff:g} s. The rest of the service keeps running."
        )

    def _restart(self, one: Supervised) -> None:
        assert one.start is not None
        one.restart_at = None
        one.recent.append(time.monotonic())
        try:
            one.process = one.start()
        except OSError as exc:  # could not even start: try again after the next backoff
            self.warn(f"Restarting {one.name} failed ({exc}).")
            one.restart_at = time.monotonic() + min(
                MAX_BACKOFF_SECONDS, FIRST_BACKOFF_SECONDS * 2 ** len(one.recent)
            )
            return
        one.restarts += 1
        one.last_restart_at = time.time()
        if one.cluster:
            self.clusters.add(one.process.pid)
        self._tell(f"group {one.process.pid}")
        self.say(f"Restarted {one.name} (pid {one.process.pid}; {one.restarts} restart(s) so far).")
        self._write_restarts()

    def restart_counts(self) -> dict[str, Any]:
        children = {
            s.name: {
                "restarts": s.restarts,
                "last_exit_code": s.last_exit_code,
                "last_restart_at": s.last_restart_at,
            }
            for s in self.supervised
        }
        if self.data_dir is not None:
            children[DATABASE] = {
                "restarts": self.database_restarts,
                "last_exit_code": None,
                "last_restart_at": self.database_restarted_at,
            }
        return {"total": sum(c["restarts"] for c in children.values()), "children": children}

    def _write_restarts(self) -> None:
        if self.restarts_file is None:
            return
        try:
            _write_json(self.restarts_file, self.restart_counts())
        except OSError as exc:  # a count is never worth stopping for
            self.warn(f"Could not record restarts in {self.restarts_file}: {exc}")

    def _restart_database(self) -> str | None:
        assert self.data_dir is not None
        now = time.monotonic()
        self.restarts = [t for t in self.restarts if now - t < RESTART_WINDOW_SECONDS]
        if len(self.restarts) >= self.max_restarts:
            return (
                f"The embedded PostgreSQL stopped ({len(self.restarts)} restarts in the last "
                f"{RESTART_WINDOW_SECONDS / 60:.0f} minutes); stopping."
            )
        self.warn(
            "The embedded PostgreSQL stopped unexpectedly; starting it again "
            "(requests meanwhile get 503 database_unavailable)."
        )
        self.restarts.append(now)
        if not embedded_pg.restart_embedded_postgres(self.data_dir):
            return (
                "The embedded PostgreSQL stopped and could not be started again (see its log);"
                " stopping."
            )
        self.say("The embedded PostgreSQL is running again.")
        self.database_restarts += 1
        self.database_restarted_at = time.time()
        self._write_restarts()
        return None

    def shutdown(self) -> None:
        """Stop the children (SIGTERM, SIGKILL to their groups after the grace), then the database,
        then release the guard."""
        for helper, _ in self.helpers:
            _kill_group(helper.pid)  # start-up work: redone on the next start
            helper.wait()
        for _, child in self.children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)  # the main process only: see NOTES on qcluster
        deadline = time.monotonic() + CHILD_GRACE_SECONDS
        drain = time.monotonic() + CLUSTER_DRAIN_SECONDS
        while time.monotonic() < drain and any(child.poll() is None for _, child in self.children):
            time.sleep(0.05)
        for _, child in self.children:
            if child.pid in self.clusters and child.poll() is None:
                _interrupt_workers(child.pid)
        for name, child in self.children:
            try:
                child.wait(timeout=max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.warn(f"{name} did not stop in {CHILD_GRACE_SECONDS:g} s; killing it.")
            _kill_group(child.pid)  # its workers too, should any have outlived it
        if self.data_dir is not None and embedded_pg.stop_embedded_postgres(self.data_dir):
            self.say("Embedded PostgreSQL stopped.")
        self._tell("done")
        if self.guard is not None:
            self.guard.stdin.close()  # type: ignore[union-attr]
            self.guard.wait(timeout=5)

    def _tell(self, line: str) -> None:
        if self.guard is not None and self.guard.poll() is None:
            try:
                self.guard.stdin.write(line + "\n")  # type: ignore[union-attr]
                self.guard.stdin.flush()  # type: ignore[union-attr]
            except (BrokenPipeError, ValueError):
                pass


def _interrupt_workers(cluster_pid: int) -> None:
    """SIGTERM to the processes under a cluster's sentinel (its workers, and its monitor and
    pusher should they still run), never to the main process or the sentinel: signalled while
    they stop, those deadlocked (NOTES on qcluster)."""
    try:
        sentinels = psutil.Process(cluster_pid).children()
        processes = [p for sentinel in sentinels for p in sentinel.children()]
    except psutil.Error:
        return
    for process in processes:
        try:
            process.send_signal(signal.SIGTERM)
        except psutil.Error:
            pass


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:  # no process is left in it
        pass
