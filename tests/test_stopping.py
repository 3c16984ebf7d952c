"""Stopping MemoryHub as a supervisor does: the embedded PostgreSQL never outlives it.

systemd and container runtimes send SIGTERM to the process group and SIGKILL 10 s later. Each
test starts `manage.py run` in one data folder shared by the module (created once) and checks
that afterwards no PostgreSQL of that folder and no child of `run` is left.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from memoryhub.plumbing.embedded_pg import pgdata_path, postmaster
from tests.served import ROOT, Served, children_of, postgres_of, private_data_dir, wait_until


@pytest.fixture(scope="module")
def data_dir() -> Iterator[Path]:
    with private_data_dir() as path:
        yield path


def alive(pids: list[int]) -> list[int]:
    def running(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False

    return [pid for pid in pids if running(pid)]


def nothing_left(data_dir: Path, pids: list[int], within: float) -> bool:
    return wait_until(lambda: not postgres_of(data_dir) and not alive(pids), within)


def test_sigterm_then_sigkill_to_the_group_stops_everything_within_10_s(data_dir: Path) -> None:
    served = Served(data_dir).wait(key=False)
    spawned = children_of(served.process.pid) + postgres_of(data_dir)
    # the guard, gunicorn and its worker, postgres
    assert postgres_of(data_dir) and len(spawned) >= 3
    served.signal_group(signal.SIGTERM)
    try:
        served.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    served.signal_group(signal.SIGKILL)  # what the supervisor sends at 10 s, whatever happened
    assert served.process.poll() == 0, "still running when the supervisor's SIGKILL came"
    assert nothing_left(data_dir, spawned, 5), (postgres_of(data_dir), alive(spawned))
    served.stop()
    assert "Stopped." in served.output() and "Traceback" not in served.output()


def test_sigterm_stops_the_task_clusters_within_the_grace_without_a_kill(data_dir: Path) -> None:
    """A schedule run still busy (its agent webhook has not answered) when
    SIGTERM comes is interrupted and recorded so, and the schedules cluster stops by itself within
    the supervisor's grace: it is not SIGKILLed."""
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), NeverAnswers)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    served = Served(
        data_dir, cluster=True, env={"MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS": "127.0.0.1"}
    ).wait()
    try:
        # Both clusters are up (main process, sentinel, pusher, monitor, workers) before the stop.
        assert wait_until(lambda: len(clusters_running(served)) == 2, 60), served.output()[-3000:]
        api = httpx.Client(
            base_url=f"{served.url}/api/v1",
            headers={"Authorization": f"Bearer {served.key}"},
            timeout=30,
        )
        hook = api.post(
            "/webhooks/", json={"kind": "agent", "url": f"http://127.0.0.1:{receiver.server_port}/"}
        )
        assert hook.status_code == 201, hook.text
        schedule = api.post(
            "/schedules/",
            json={
                "name": "slow",
                "action": "agent_goal",
                "goal": "wait",
                "cadence": {"type": "interval", "value": "1h"},
            },
        ).json()["id"]
        run = api.post(f"/schedules/{schedule}/run/").json()["id"]
        assert wait_until(lambda: api.get(f"/runs/{run}/").json()["status"] == "running", 60)
        served.signal_group(signal.SIGTERM)
        try:
            served.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        served.signal_group(signal.SIGKILL)
        served.stop()
        output = served.output()
        assert served.process.returncode == 0, output[-3000:]
        assert "did not stop" not in output, output[-3000:]
        assert "Stopped." in output and "Traceback" not in output, output[-3000:]
        # The run says why it failed (not left "running" until the stuck-run timeout).
        status = served.manage(
            "shell",
            "-c",
            f"from scheduling.models import Run; r = Run.objects.get(pk='{run}'); "
            "print(r.status, r.error)",
        )
        assert status.split()[-2:] == ["failed", "interrupted"], status
    finally:
        receiver.shutdown()
        receiver.server_close()


class NeverAnswers(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        time.sleep(60)  # an agent that takes its time: longer than any grace

    def log_message(self, *args: Any) -> None:
        pass


def clusters_running(served: Served) -> list[int]:
    """qcluster main processes of this `run` whose pool has started (3 or more descendants)."""
    found = []
    try:
        # `run`'s own: each cluster's main process
        children = psutil.Process(served.process.pid).children()
    except psutil.Error:
        return found
    for process in children:
        try:
            if (
                "qcluster" in " ".join(process.cmdline())
                and len(process.children(recursive=True)) >= 3
            ):
                found.append(process.pid)
        except psutil.Error:
            continue
    return found


def test_sigkill_of_run_alone_leaves_nothing_running(data_dir: Path) -> None:
    served = Served(data_dir).wait(key=False)
    spawned = children_of(served.process.pid) + postgres_of(data_dir)
    served.signal_group(signal.SIGKILL)  # no chance to stop anything itself
    served.process.wait(10)
    assert nothing_left(data_dir, spawned, 10), (postgres_of(data_dir), alive(spawned))
    served.stop()


def test_a_database_that_cannot_come_back_stops_run_cleanly(data_dir: Path) -> None:
    served = Served(data_dir, env={"MEMORYHUB_PG_RESTARTS": "0"}).wait(key=False)
    spawned = children_of(served.process.pid)
    process = postmaster(data_dir)
    assert process is not None
    process.kill()
    served.process.wait(20)
    assert served.process.returncode == 0
    output = served.output()
    assert "The embedded PostgreSQL stopped" in output and "Stopped." in output
    assert "Traceback" not in output
    assert nothing_left(data_dir, spawned, 10), (postgres_of(data_dir), alive(spawned))
    served.stop()


ORPHAN = """
import os, sys
from pathlib import Path
from memoryhub.plumbing.embedded_pg import start_embedded_postgres
start_embedded_postgres(Path(sys.argv[1]))
os.kill(os.getpid(), 9)
"""

OWNER = """
import sys
from pathlib import Path
from memoryhub.plumbing.embedded_pg import start_embedded_postgres
start_embedded_postgres(Path(sys.argv[1]))
"""


def python(code: str, data_dir: Path) -> int:
    return subprocess.run(
        [sys.executable, "-c", code, str(data_dir)], cwd=ROOT, check=False
    ).returncode


def test_an_orphaned_server_is_adopted_and_stopped_by_its_next_owner(data_dir: Path) -> None:
    assert python(ORPHAN, data_dir) == -signal.SIGKILL
    orphan = postmaster(data_dir)
    assert orphan is not None, "the killed owner left its server running"
    owners = (pgdata_path(data_dir) / ".handle_pids.json").read_text()
    assert owners.strip() not in ("", "[]")
    # The next process to use the folder adopts the server; as its last owner, it stops it on exit.
    assert python(OWNER, data_dir) == 0
    assert wait_until(lambda: postmaster(data_dir) is None, 10)
    # And `manage.py run` started over an orphan serves from it, then stops it.
    assert python(ORPHAN, data_dir) == -signal.SIGKILL
    orphan_pid = postmaster(data_dir).pid  # type: ignore[union-attr]
    served = Served(data_dir).wait(key=False)
    assert postmaster(data_dir).pid == orphan_pid  # type: ignore[union-attr]
    assert served.stop() == 0
    assert wait_until(lambda: not postgres_of(data_dir), 10)
    assert os.path.exists(pgdata_path(data_dir))


KILLED_WITH_REUSED_PID = """
import os, sys
from pathlib import Path
import psutil
from memoryhub.plumbing.embedded_pg import pgdata_path, postmaster, start_embedded_postgres
data_dir = Path(sys.argv[1])
start_embedded_postgres(data_dir, stop_on_exit=False)
server = postmaster(data_dir)
children = server.children(recursive=True)
server.kill()  # it leaves its postmaster.pid behind
psutil.wait_procs([server, *children], timeout=30)
# Its pid now belongs to another program: here, the test that runs this script.
pid_file = pgdata_path(data_dir) / "postmaster.pid"
lines = pid_file.read_text().splitlines()
pid_file.write_text("\\n".join([str(os.getppid()), *lines[1:]]) + "\\n")
"""

START_AND_QUERY = """
import sys
from pathlib import Path
import psycopg
from memoryhub.plumbing.embedded_pg import postmaster, socket_dir, start_embedded_postgres, stop_embedded_postgres
data_dir = Path(sys.argv[1])
server = start_embedded_postgres(data_dir, stop_on_exit=False)
with psycopg.connect(host=socket_dir(server), user="postgres", dbname="postgres") as conn:
    conn.execute("SELECT 1")
print(postmaster(data_dir).pid)
stop_embedded_postgres(data_dir)
"""  # noqa: E501


def run_script(script: str, data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """One of the scripts above in a Python of its own; it must succeed."""
    done = subprocess.run(
        [sys.executable, "-c", script, str(data_dir), *args],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_a_stale_pid_file_whose_pid_was_reused_does_not_stop_a_start() -> None:
    """A killed server's postmaster.pid names a pid another program now has: the next start must
    not take that program for the server (pgserver would attach to it, PostgreSQL would refuse)."""
    with private_data_dir() as data_dir:
        run_script(KILLED_WITH_REUSED_PID, data_dir)
        done = run_script(START_AND_QUERY, data_dir)
        assert int(done.stdout.split()[-1]) != os.getpid()  # a server of its own, started anew
        assert wait_until(lambda: not postgres_of(data_dir), 10)


KILLED_AND_LEFT_A_ZOMBIE = """
import sys
from pathlib import Path
import psutil
from memoryhub.plumbing.embedded_pg import pgdata_path, postmaster, start_embedded_postgres
data_dir, zombie = Path(sys.argv[1]), sys.argv[2]
start_embedded_postgres(data_dir, stop_on_exit=False)
server = postmaster(data_dir)
lines = (pgdata_path(data_dir) / "postmaster.pid").read_text().splitlines()
lock = Path(lines[4]) / f".s.PGSQL.{lines[3]}.lock"
children = server.children(recursive=True)
server.kill()  # it leaves postmaster.pid and the socket's lock file behind
psutil.wait_procs([server, *children], timeout=30)
# Nobody reaped it: both files name a pid that still exists, as a zombie.
for path in (pgdata_path(data_dir) / "postmaster.pid", lock):
    kept = path.read_text().splitlines()
    path.write_text("\\n".join([zombie, *kept[1:]]) + "\\n")
"""


def test_a_killed_server_that_nobody_reaped_does_not_stop_a_start() -> None:
    """A SIGKILLed postmaster whose parent never waits for it (a container's init that does not
    reap orphans) stays a zombie: its pid exists for ever. The next start must not take it for a
    running server, neither in postmaster.pid nor in the socket's lock file, which PostgreSQL
    checks by that pid."""
    with private_data_dir() as data_dir:
        # A zombie of the user PostgreSQL runs as (pgserver's own user when tests run as root):
        # PostgreSQL takes a pid it may not signal for a dead one.
        run_script(START_AND_QUERY, data_dir)
        owner = pgdata_path(data_dir).stat().st_uid
        zombie = subprocess.Popen(["true"], user=owner if os.getuid() == 0 else None)
        try:
            assert wait_until(
                lambda: psutil.Process(zombie.pid).status() == psutil.STATUS_ZOMBIE, 10
            )
            run_script(KILLED_AND_LEFT_A_ZOMBIE, data_dir, str(zombie.pid))
            done = run_script(START_AND_QUERY, data_dir)
            assert int(done.stdout.split()[-1]) != zombie.pid  # a server of its own, started anew
        finally:
            zombie.wait()
        assert wait_until(lambda: not postgres_of(data_dir), 10)
