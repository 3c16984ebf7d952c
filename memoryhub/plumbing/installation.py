"""Where a command that serves an existing installation (`manage.py mcp`) finds its database.

Such a command never creates a database: an agent's client starts it with an environment of its
own, often without the MEMORYHUB_DATA_DIR that `make run` was given, and an empty second database
would answer every key as unknown. When its data folder holds no database, it uses the database of
the running `manage.py run` of the same checkout (read off a child of that process: `run` hands
its children DATABASE_URL and SECRET_KEY), or says plainly that there is none and exits.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import psutil

from memoryhub.plumbing.embedded_pg import pgdata_path

# What `manage.py run` hands its children that names its database
# (memoryhub.management.commands.run).
HANDED = ("DATABASE_URL", "SECRET_KEY")


def has_database(data_dir: Path) -> bool:
    return (pgdata_path(data_dir) / "PG_VERSION").exists()


def running_database_env(base_dir: Path) -> dict[str, str] | None:
    """DATABASE_URL and SECRET_KEY as the running `manage.py run` of this checkout hands them to its
    children; None when no such process runs (or its children cannot be read)."""
    manage = (base_dir / "manage.py").resolve()
    for process in psutil.process_iter(["cmdline", "cwd"]):
        if not _runs(process.info, manage):
            continue
        try:
            children = process.children()
        except psutil.Error:
            continue
        for child in children:
            try:
                env = child.environ()
            except psutil.Error:
                continue
            if env.get("DATABASE_URL"):
                return {name: env[name] for name in HANDED if env.get(name)}
    return None


def _runs(info: dict[str, Any], manage: Path) -> bool:
    """Whether a process's command line is `… <this checkout's manage.py> run …`."""
    cmdline = info.get("cmdline") or []
    for arg, following in zip(cmdline, cmdline[1:], strict=False):
        if following == "run" and Path(arg).name == "manage.py":
            path = Path(arg) if Path(arg).is_absolute() else Path(info.get("cwd") or "/") / arg
            if path.resolve() == manage:
                return True
    return False


def use_existing_database(argv: list[str]) -> None:
    """Before a serving command starts the embedded database: go on when the settings name a
    database server or the data folder holds a database; else run the command again with the
    running installation's database, or exit with a message saying that there is none."""
    from django.conf import settings

    if not settings.EMBEDDED_DATABASE or has_database(settings.DATA_DIR):
        return
    found = running_database_env(Path(settings.BASE_DIR))
    if found is None:
        sys.stderr.write(
            f"No MemoryHub database in {settings.DATA_DIR}, and no MemoryHub of this checkout is"
            " running. Start MemoryHub first (make run), or give this command the data folder it"
            " uses (MEMORYHUB_DATA_DIR; make run prints it as 'MemoryHub data folder: …') or its"
            " DATABASE_URL.\n"
        )
        sys.exit(1)
    sys.stderr.write(
        f"No MemoryHub database in {settings.DATA_DIR}: using the running MemoryHub's.\n"
    )
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *argv], {**os.environ, **found})
