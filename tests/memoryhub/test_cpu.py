"""The CPU budget of background work (memoryhub.plumbing.cpu): the cores other processes left
idle."""

from __future__ import annotations

import time
from typing import Any

import pytest

from memoryhub.plumbing import cpu


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> dict[str, float]:
    """A two-core machine whose clock, busy time and this process's CPU time the test moves."""
    state = {"wall": 100.0, "busy": 1000.0, "own": 10.0}
    monkeypatch.setattr(cpu, "cores", lambda: 2)
    monkeypatch.setattr(cpu, "_machine_busy_seconds", lambda: state["busy"])
    monkeypatch.setattr(cpu, "_own_seconds", lambda: state["own"])
    monkeypatch.setattr(cpu, "_clock", lambda: state["wall"])
    return state


def advance(state: dict[str, float], seconds: float, others: float, own: float) -> None:
    """`seconds` pass; other processes keep `others` cores busy and this one `own` cores."""
    state["wall"] += seconds
    state["busy"] += seconds * (others + own)
    state["own"] += seconds * own


def test_free_cores_are_those_other_processes_left_idle(machine: dict[str, float]) -> None:
    headroom = cpu.Headroom()
    assert headroom.threads(2) == 2  # nothing measured yet: every core
    advance(machine, 1.0, others=1.0, own=1.0)  # requests on one core, the lane on the other
    assert headroom.free() == pytest.approx(1.0)
    assert headroom.threads(2) == 1
    advance(machine, 1.0, others=0.1, own=1.9)  # a quiet machine: the lane's own use does not count
    assert headroom.threads(2) == 2
    advance(machine, 1.0, others=2.0, own=0.0)  # saturated by others: still one thread
    assert headroom.threads(4) == 1
    assert headroom.threads(1) == 1


def test_a_short_interval_keeps_the_last_figure(machine: dict[str, float]) -> None:
    headroom = cpu.Headroom()
    headroom.free()
    advance(machine, 1.0, others=1.5, own=0.0)
    assert headroom.free() == pytest.approx(0.5)
    advance(machine, 0.05, others=0.0, own=0.0)  # too few clock ticks to tell
    assert headroom.free() == pytest.approx(0.5)


def test_without_proc_stat_every_core_is_free(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu, "_machine_busy_seconds", lambda: None)
    assert cpu.Headroom().free() == cpu.cores()


def test_the_real_machine_is_read() -> None:
    """On Linux the counters exist and move; whatever the load, free() stays within the cores."""
    busy: Any = cpu._machine_busy_seconds()
    assert busy is not None and busy > 0
    headroom = cpu.Headroom()
    headroom.free()
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:  # keep one core busy: this process's own use is not counted
        pass
    assert 0.0 <= headroom.free() <= cpu.cores()
