"""`manage.py mcp` started by an agent's client with a data folder that holds no database (the
client's own environment, not the one `make run` was given): it serves the running installation's
database, or says so plainly and exits; it never creates an empty second database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.base import make_key, make_tenant
from tests.mcp_server.conftest import ROOT, Mcp, as_result, server_env

pytestmark = pytest.mark.django_db(transaction=True)

# Stands in for `manage.py run` of this checkout: its command line, and a child holding the
# DATABASE_URL and SECRET_KEY that `run` hands its children.
FAKE_RUN = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "print(child.pid, flush=True)\n"
    "time.sleep(600)\n"
)


def _without_database(tmp: Path) -> dict[str, str]:
    env = server_env(tmp)
    del env["DATABASE_URL"]
    env["MEMORYHUB_DATA_DIR"] = str(tmp / "elsewhere")
    return env


def test_no_database_and_none_running_is_said_plainly(tmp_path: Path) -> None:
    key = make_key(make_tenant("alice"))
    result = subprocess.run(
        [sys.executable, "manage.py", "mcp", "--key", key],
        cwd=ROOT,
        env=_without_database(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 1
    assert result.stderr.startswith(f"No MemoryHub database in {tmp_path / 'elsewhere'}"), (
        result.stderr
    )
    assert "make run" in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""  # stdout is the protocol's
    assert not (tmp_path / "elsewhere" / "pg18").exists()  # no empty second database


@pytest.fixture
def running(tmp_path: Path) -> Iterator[None]:
    """A process of this checkout's `manage.py run` command line, its child holding this run's
    test database as `run` hands it on."""
    process = subprocess.Popen(
        [sys.executable, "-c", FAKE_RUN, str(ROOT / "manage.py"), "run"],
        env=server_env(tmp_path / "run"),
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        int(process.stdout.readline())  # the child runs
        yield
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # the stand-in and its child: their own group
        process.wait(timeout=20)


def test_the_running_installations_database_is_found(running: None, tmp_path: Path) -> None:
    key = make_key(make_tenant("alice"))
    mcp = Mcp("stdio", None, _without_database(tmp_path))

    async def stats(session: Any) -> Any:
        return as_result(await session.call_tool("memory_stats", {}))

    result = mcp.session(key, stats)
    assert not result.is_error and result.data["tenant"] == "alice", result.text
    assert not (tmp_path / "elsewhere" / "pg18").exists()


def test_a_database_it_cannot_use_is_one_plain_line(tmp_path: Path) -> None:
    from django.conf import settings

    env = server_env(tmp_path)
    env["DATABASE_URL"] = env["DATABASE_URL"].replace(
        f"/{settings.DATABASES['default']['NAME']}", "/no_such_db", 1
    )
    assert "/no_such_db" in env["DATABASE_URL"]
    result = subprocess.run(
        [sys.executable, "manage.py", "mcp", "--key", "mh_00000000_x"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 1 and result.stdout == ""
    assert "MemoryHub's database (DATABASE_URL) cannot be used" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
