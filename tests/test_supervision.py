"""`manage.py run` keeps the service up: a child that dies (kill -9) is restarted alone while the
API answers, and under load nothing is lost, no lane stalls, no request gets a 5xx (bench/soak.py's
invariants, with a few dozen requests: counts, never durations). SIGTERM still stops everything.

One live server for the module (it starts real processes: the web server, both task clusters,
the lanes process, the embedded PostgreSQL), the hash embedder.
"""

from __future__ import annotations

import signal
import subprocess

import psutil

from bench.soak import KINDS, SERVER_ENV, child_of_kind, shell, soak
from tests.served import Served, children_of, postgres_of, private_data_dir, wait_until

FINISHED_RUNS = (
    "import json; from scheduling.models import Run; "
    "print(json.dumps({'runs': Run.objects.filter(status__in=['succeeded', 'failed']).count()}))"
)


def alive(pids: list[int]) -> list[int]:
    def running(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False

    return [pid for pid in pids if running(pid)]


def test_each_child_killed_is_restarted_alone_and_nothing_is_lost_under_load() -> None:
    with private_data_dir() as data_dir:
        served = Served(data_dir, cluster=True, env=SERVER_ENV).wait(300)
        try:
            assert all(child_of_kind(served, kind) for kind in KINDS), served.output()[-3000:]
            others = {kind: child_of_kind(served, kind).pid for kind in KINDS}  # type: ignore[union-attr]
            result = soak(
                served,
                seconds=30,
                tenants=2,
                users=2,
                haystacks=0,
                pause=0.5,
                drain_haystack=False,
                say=lambda line: None,
            )
            log = served.output()
            # Each kind restarted once, by itself: the ones not killed yet kept their process.
            assert result["kills"] and all(k.endswith(": restarted") for k in result["kills"]), (
                result["kills"],
                log[-3000:],
            )
            assert result["restarts"] == len(KINDS) and set(result["restarted"]) == set(KINDS), (
                result
            )
            assert all(child_of_kind(served, kind).pid != others[kind] for kind in KINDS)  # type: ignore[union-attr]
            # The API kept answering while each background child was down (the web server itself
            # excepted).
            assert {k: v for k, v in result["answered_while_down"].items() if k != "web"} == {
                k: True for k in KINDS if k != "web"
            }, result["answered_while_down"]
            # Nothing lost, nothing twice, facts and notes as last written.
            assert (
                result["acknowledged"] > 0 and result["lost"] == 0 and result["duplicated"] == 0
            ), result
            assert result["facts_wrong"] == 0 and result["notes_wrong"] == 0, result
            # No stall: every chunk embedded, no empty step while work waited; no 5xx; schedules
            # ran.
            assert result["drained"] and result["empty_steps"] == 0, result
            assert result["http_5xx"] == 0 and result["unexpected"] == [], result
            # The schedules ran. Their runs go through a task cluster the soak killed and restarted
            # within its 30 s of load: wait for one (bounded generously), not for a window.
            assert wait_until(lambda: shell(served, FINISHED_RUNS)["runs"] >= 1, 600, step=2.0), (
                result
            )
            spawned = children_of(served.process.pid) + postgres_of(data_dir)
        finally:
            if served.process.poll() is None:
                served.signal_group(signal.SIGTERM)
                try:
                    served.process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    served.signal_group(signal.SIGKILL)
            served.stop()
        # SIGTERM stopped everything, restarted children included: no orphan, no PostgreSQL left.
        assert served.process.returncode == 0, served.output()[-3000:]
        assert wait_until(lambda: not postgres_of(data_dir) and not alive(spawned), 10), alive(
            spawned
        )
        assert "Stopped." in served.output()
