"""The supervisor restarts a child that exited, alone, after a backoff that doubles; the counts
reach /health/ and the dashboard through the data folder's file. (The live kills:
tests/test_supervision.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memoryhub.plumbing import supervision
from memoryhub.plumbing.supervision import RESTARTS_ENV, Supervisor


def quick() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)


def exited(supervisor: Supervisor, name: str) -> supervision.Supervised:
    one = next(s for s in supervisor.supervised if s.name == name)
    one.process.wait(30)
    return one


def test_an_exited_child_is_restarted_alone_with_a_doubling_backoff(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv(RESTARTS_ENV, "")  # restored at teardown: the supervisor sets it
    warnings: list[str] = []
    supervisor = Supervisor(None, say=lambda line: None, warn=warnings.append)
    supervisor.use_restarts_file(tmp_path / "supervision.json")
    steady = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )
    supervisor.adopt("steady", steady, start=quick)
    supervisor.adopt("lane", quick(), start=quick)
    try:
        for backoff in (1, 2, 4):
            one = exited(supervisor, "lane")
            assert supervisor.problem() is None  # not a reason to stop
            assert warnings[-1].endswith(
                f"restarting it in {backoff} s. The rest of the service keeps running."
            )
            before = one.process
            one.restart_at = 0.0  # its backoff is over
            assert supervisor.problem() is None
            assert one.process is not before and one.restart_at is None
        counts = json.loads((tmp_path / "supervision.json").read_text())
        assert counts["total"] == 3 and counts["children"]["lane"]["restarts"] == 3
        assert counts["children"]["steady"]["restarts"] == 0 and steady.poll() is None  # untouched
        assert supervision.read_restarts()["total"] == 3  # what /health/ and the dashboard read
    finally:
        steady.kill()
        steady.wait()


def test_a_child_without_a_way_to_start_it_again_still_stops_run() -> None:
    supervisor = Supervisor(None, say=lambda line: None, warn=lambda line: None)
    child = quick()
    supervisor.adopt("once", child)
    child.wait(30)
    assert supervisor.problem() == "A child process exited (once, code 0); stopping."


@pytest.mark.django_db
def test_health_and_the_dashboard_show_the_restarts(
    tmp_path: Path, monkeypatch, anon, staff_client
) -> None:
    path = tmp_path / "supervision.json"
    path.write_text(
        json.dumps(
            {
                "total": 2,
                "children": {
                    "web": {"restarts": 0, "last_exit_code": None, "last_restart_at": None},
                    "dispatch lane": {"restarts": 2, "last_exit_code": -9, "last_restart_at": 1.0},
                },
            }
        )
    )
    monkeypatch.setenv(RESTARTS_ENV, str(path))
    assert anon.get("/api/v1/health/").json() == {
        "status": "ok",
        "details": {"restarts": 2, "restarted": {"dispatch lane": 2}, "search": "hash embedder"},
    }
    page = staff_client.get("/admin/dashboard/").content.decode()
    assert (
        "restarted since the service started: <strong>2</strong>; dispatch lane: 2 (last exit"
        " code -9)" in page
    )


def test_the_embedded_postgresql_restarted_is_counted(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(RESTARTS_ENV, "")  # restored at teardown: the supervisor sets it
    supervisor = Supervisor(tmp_path, say=lambda line: None, warn=lambda line: None)
    supervisor.use_restarts_file(tmp_path / "supervision.json")
    monkeypatch.setattr(supervision.embedded_pg, "postmaster", lambda data_dir: None)  # it died
    monkeypatch.setattr(supervision.embedded_pg, "restart_embedded_postgres", lambda data_dir: True)
    assert supervisor.problem() is None
    counts = supervision.read_restarts()
    assert counts["total"] == 1 and counts["children"][supervision.DATABASE]["restarts"] == 1


@pytest.mark.django_db
def test_a_web_worker_respawned_by_its_master_is_counted(tmp_path: Path, monkeypatch, anon) -> None:
    from types import SimpleNamespace

    from memoryhub.plumbing import gunicorn_conf

    monkeypatch.setenv(RESTARTS_ENV, "")  # restored at teardown: the supervisor sets it
    Supervisor(None, say=lambda line: None, warn=lambda line: None).use_restarts_file(
        tmp_path / "supervision.json"
    )
    serving, stopping = SimpleNamespace(LISTENERS=[object()]), SimpleNamespace(LISTENERS=[])
    # a worker died (killed, out of memory): the master starts another
    gunicorn_conf.child_exit(serving, None)
    gunicorn_conf.child_exit(serving, None)
    # the master stops: its workers exit, nothing is respawned
    gunicorn_conf.child_exit(stopping, None)
    assert anon.get("/api/v1/health/").json() == {
        "status": "ok",
        "details": {"restarts": 2, "restarted": {"web workers": 2}, "search": "hash embedder"},
    }
    # The next start counts from zero.
    Supervisor(None, say=lambda line: None, warn=lambda line: None).use_restarts_file(
        tmp_path / "supervision.json"
    )
    assert supervision.read_restarts() == {"total": 0, "children": {}}
