"""Background lanes: loops that claim their work from the tables, so the tables are the queue.

An append writes its rows (events, chunks with their full-text vectors) and a NOTIFY in its own
transaction; PostgreSQL delivers the NOTIFY only if that transaction commits. A lane is a loop
that claims what is left to do (chunks without a vector, sessions due for a summary, due
schedules) with row locks or advisory locks, so any number of lanes on any number of machines
share the work and a killed one loses nothing: its transaction rolls back and its rows are free
again. A lane sleeps on LISTEN with a timer as the fallback (a NOTIFY sent while no lane listened
is not kept). No per-append task exists anywhere.

Apps register their lanes here (retrieval: embed; memoryhub: summarise; scheduling: dispatch) and
`manage.py work` runs them, a thread per lane, with a heartbeat row each
(memoryhub.plumbing.workers.Worker).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from django.db import close_old_connections, connection, connections, transaction
from django.utils import timezone

logger = logging.getLogger(__name__)

WORK_CHANNEL = "memoryhub_work"  # NOTIFYed by every write that leaves background work behind
# A lane that nothing woke looks for work this often anyway (a NOTIFY sent while no lane listened).
WORK_IDLE_SECONDS = 10.0
# Time budget of one background step on one item (a batch of chunks; a session's summary, tree or
# facts): a stuck model call or statement is cut there and the lane goes on with the next item.
STEP_SECONDS = 120.0
HEARTBEAT_SECONDS = 5.0
WORKER_GONE_SECONDS = 60
# Work counts as waiting through an empty step when it was written this long before the step began:
# an append's rows carry a time taken before its commit, so younger rows may simply not have been
# committed yet when the step looked.
WAITED_SECONDS = 5.0  # a worker not seen for this long is not counted (and later forgotten)


class Lane(Protocol):
    name: str
    idle_seconds: float  # the timer fallback: how long to sleep when nothing wakes the lane
    listens: bool  # whether a NOTIFY on WORK_CHANNEL wakes it

    def step(self) -> StepResult: ...

    # Optional: `has_work(before: datetime) -> bool`, whether work this lane can do now waits that
    # was there before `before` (an empty step's start, less WAITED_SECONDS: work that arrived
    # while the step ran is no sign of a bug), by the same definition its step claims by. Asked
    # after an empty step (run_lane: _work_waits).


@dataclass
class StepResult:
    done: int = 0  # items finished
    failed: int = 0  # items that failed (recorded on the item)
    # of the step's time, spent inside the model (the embed lane says it)
    model_seconds: float = 0.0

    @property
    def found_work(self) -> bool:
        return bool(self.done or self.failed)


class LaneBackoff(Exception):  # noqa: N818 - a signal to the runner, not an error of an item
    """Raised by a step when the lane cannot work now (the model is missing, the database is
    down): the runner waits `seconds` before the next step instead of retrying at once."""

    def __init__(self, message: str, seconds: float = 30.0) -> None:
        super().__init__(message)
        self.seconds = seconds


_LANES: dict[str, Callable[[], Lane]] = {}


def register_lane(name: str, factory: Callable[[], Lane]) -> None:
    """Called from an AppConfig.ready(): `manage.py work --lanes name` will run factory()."""
    _LANES[name] = factory


def lane_names() -> list[str]:
    return list(_LANES)


def make_lane(name: str) -> Lane:
    if name not in _LANES:
        raise KeyError(f"Unknown lane {name!r}; known: {', '.join(_LANES)}")
    return _LANES[name]()


class _Notified:
    """Marks, among a transaction's on-commit callbacks, that it already sent its NOTIFY (it goes
    away with the transaction or savepoint it was registered in, as the NOTIFY does)."""

    def __call__(self) -> None:
        pass


NOTICE = "pg_notify(%s, '')"  # with WORK_CHANNEL as its parameter


def notify_work() -> None:
    """Wake the listening lanes when the current transaction commits (nothing if it rolls back).
    One statement per transaction: an append wakes both the embed and the summarise lane."""
    if connection.in_atomic_block:
        if _notified():
            return
        transaction.on_commit(_Notified())
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {NOTICE}", [WORK_CHANNEL])


def notify_work_within() -> tuple[str, list[Any]] | None:
    """notify_work() as an expression for a statement the caller is about to run in the current
    transaction (the append's: one round trip fewer), or None when the transaction has sent its
    notice already. Once it returns the expression, notify_work() sends nothing more."""
    if _notified():
        return None
    transaction.on_commit(_Notified())
    return NOTICE, [WORK_CHANNEL]


def _notified() -> bool:
    return any(isinstance(func, _Notified) for _, func, _ in connection.run_on_commit)


# --- per-item time budget ----------------------------------------------------------------------


class BudgetExceeded(Exception):  # noqa: N818 - reads as what happened
    """A background step ran past its time budget (STEP_SECONDS)."""


_budget = threading.local()


@contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Give the steps inside `seconds` of wall time. Long loops call check_budget(), which
    raises BudgetExceeded once it is spent; SQL statements are cut by the same deadline
    (statement_timeout) when this runs inside a transaction."""
    previous = getattr(_budget, "deadline", None)
    _budget.deadline = time.monotonic() + seconds
    if connection.in_atomic_block:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT set_config('statement_timeout', %s, true)", [f"{int(seconds * 1000)}ms"]
            )
    try:
        yield
    finally:
        _budget.deadline = previous


def check_budget() -> None:
    deadline = getattr(_budget, "deadline", None)
    if deadline is not None and time.monotonic() > deadline:
        raise BudgetExceeded("the step ran past its time budget")


def remaining_budget() -> float | None:
    """Seconds left of the current step's budget (None outside a budgeted step), so that a
    step that waits (an HTTP call, a retry's backoff) never waits past its deadline."""
    deadline = getattr(_budget, "deadline", None)
    return None if deadline is None else deadline - time.monotonic()


# --- waking ------------------------------------------------------------------------------------


class Waker:
    """A connection of its own that LISTENs on WORK_CHANNEL (Django's connection stays free for
    the work and its transactions). Lost connections are opened again on the next wait."""

    def __init__(self) -> None:
        self._conn: Any = None

    def _connect(self) -> Any:
        import psycopg

        params = connections["default"].get_connection_params()
        for name in ("cursor_factory", "context", "prepare_threshold"):
            params.pop(name, None)
        conn = psycopg.connect(**params, autocommit=True)
        conn.execute(f"LISTEN {WORK_CHANNEL}")
        return conn

    def wait(self, timeout: float) -> bool:
        """Sleep until a notification or `timeout` seconds; True when notified."""
        try:
            if self._conn is None:
                self._conn = self._connect()
            woken = False
            for _ in self._conn.notifies(timeout=timeout, stop_after=1):
                woken = True
            if woken:  # take the notifications that piled up meanwhile: one wake is enough
                for _ in self._conn.notifies(timeout=0.0):
                    pass
            return woken
        except Exception as exc:  # the database went away: sleep, reconnect next time
            logger.warning("lane listener lost its connection: %s", exc)
            self.close()
            time.sleep(min(timeout, 2.0))
            return False

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # already broken
                pass
            self._conn = None


# --- heartbeats --------------------------------------------------------------------------------


@dataclass
class Heartbeat:
    """Counts what a lane did and writes it to its Worker row every HEARTBEAT_SECONDS."""

    lane: str
    name: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")
    done: int = 0
    failed: int = 0
    rate: float = 0.0
    busy: bool = False
    empty_steps: int = 0  # empty steps while work the lane can do waited (_work_waits)
    busy_seconds: float = 0.0  # time in steps that found work, since the worker started
    model_seconds: float = 0.0  # of which inside the model
    idles: int = 0  # times the lane slept for want of work
    _empty_in_row: int = 0
    _window_items: int = 0
    _window_busy: float = 0.0
    _last_write: float = 0.0

    def record(self, result: StepResult, seconds: float) -> None:
        self.done += result.done
        self.failed += result.failed
        self.busy = result.found_work
        if result.found_work:
            self._window_items += result.done + result.failed
            self._window_busy += seconds
            self.busy_seconds += seconds
            self.model_seconds += result.model_seconds
        if time.monotonic() - self._last_write >= HEARTBEAT_SECONDS:
            self.write()

    def write(self) -> None:
        from memoryhub.plumbing.workers import Worker

        if self._window_busy > 0:
            measured = self._window_items / self._window_busy
            self.rate = measured if self.rate == 0 else 0.5 * self.rate + 0.5 * measured
            self._window_items, self._window_busy = 0, 0.0
        now = timezone.now()
        Worker.objects.update_or_create(
            lane=self.lane,
            name=self.name,
            defaults={
                "seen_at": now,
                "done": self.done,
                "failed": self.failed,
                "rate": self.rate,
                "busy": self.busy,
                "empty_steps": self.empty_steps,
                "model_share": self.model_seconds / self.busy_seconds
                if self.busy_seconds and self.model_seconds
                else None,
            },
        )
        Worker.objects.filter(seen_at__lt=now - timedelta(days=1)).delete()
        self._last_write = time.monotonic()

    def forget(self) -> None:
        from memoryhub.plumbing.workers import Worker

        Worker.objects.filter(lane=self.lane, name=self.name).delete()


def live_workers(lane: str | None = None) -> list[Any]:
    """Workers seen in the last WORKER_GONE_SECONDS (all lanes, or one)."""
    from memoryhub.plumbing.workers import Worker

    qs = Worker.objects.filter(seen_at__gte=timezone.now() - timedelta(seconds=WORKER_GONE_SECONDS))
    return list(qs.filter(lane=lane) if lane else qs.order_by("lane", "name"))


def round_robin_etas(waiting: dict[int, int], rate: float) -> dict[int, float | None]:
    """Seconds until each tenant's backlog is done when lanes take tenants in turn at `rate`
    items a second: while k tenants wait each gets rate/k, so the smallest backlogs finish first.
    None for all when no rate was measured."""
    if rate <= 0:
        return {tenant: None for tenant in waiting}
    etas: dict[int, float | None] = {}
    elapsed, done_each, left = 0.0, 0, len(waiting)
    for tenant, count in sorted(waiting.items(), key=lambda item: item[1]):
        elapsed += (count - done_each) * left / rate
        done_each, left = count, left - 1
        etas[tenant] = round(elapsed, 1)
    return etas


def lane_rate(lane: str) -> float:
    """Items a second the live workers of `lane` achieve while busy (their measured rates,
    summed)."""
    return sum(w.rate for w in live_workers(lane))


# --- the loop ----------------------------------------------------------------------------------


def run_lane(lane: Lane, stop: threading.Event) -> None:
    """Step until `stop` is set: straight on while there is work, otherwise sleep until a NOTIFY
    (listening lanes) or the lane's timer. One broken step is logged and never ends the loop."""
    waker = Waker() if lane.listens else None
    beat = Heartbeat(lane.name)
    try:
        while not stop.is_set():
            close_old_connections()  # a connection the database dropped is replaced, not reused
            started, began = time.monotonic(), timezone.now()
            result, pause = _one_step(lane)
            _safely(beat.record, result, time.monotonic() - started)
            if pause:
                stop.wait(pause)
            elif not result.found_work:
                if _work_waits(lane, beat, began):
                    continue  # a step found nothing while work waits: step again at once
                beat.idles += 1
                _idle(lane, waker, stop)
            else:
                beat._empty_in_row = 0
    finally:
        if waker is not None:
            waker.close()
        _safely(beat.forget)
        connection.close()


def _one_step(lane: Lane) -> tuple[StepResult, float]:
    """Run one step; returns its result and how long to pause (0: none)."""
    try:
        return lane.step(), 0.0
    except LaneBackoff as exc:
        logger.warning("lane %s backs off for %.0f s: %s", lane.name, exc.seconds, exc)
        return StepResult(), exc.seconds
    except Exception:
        logger.exception("lane %s: a step failed", lane.name)
        return StepResult(), 5.0


def _work_waits(lane: Lane, beat: Heartbeat, began: datetime) -> bool:
    """After an empty step that began at `began`: whether work this lane can do, there well
    before the step began, waits all the same (lane.has_work()).
    That is a bug (the step and the lane's definition of its work disagree, or it passed a tenant
    over): it is logged and counted (Worker.empty_steps, on the dashboard), and the lane steps again
    at once instead of sleeping. Only once in a row: a disagreement that persists sleeps as usual,
    so the lane can never spin on it."""
    has_work = getattr(lane, "has_work", None)
    if has_work is None:
        return False
    try:
        waits = bool(has_work(began - timedelta(seconds=WAITED_SECONDS)))
    except Exception:  # bookkeeping must never stop a lane
        logger.exception("lane %s: checking for waiting work failed", lane.name)
        return False
    if not waits:
        beat._empty_in_row = 0
        return False
    beat.empty_steps += 1
    beat._empty_in_row += 1
    logger.error(
        "lane %s: a step found nothing while work it can do waits (%d such steps); %s",
        lane.name,
        beat.empty_steps,
        "stepping again at once" if beat._empty_in_row == 1 else "sleeping as usual",
    )
    _safely(beat.write)
    return beat._empty_in_row == 1


def _idle(lane: Lane, waker: Waker | None, stop: threading.Event) -> None:
    """Sleep up to lane.idle_seconds, in slices short enough to notice `stop` within a second."""
    deadline = time.monotonic() + lane.idle_seconds
    while not stop.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            return
        if waker is None:
            stop.wait(min(left, 1.0))
        elif waker.wait(min(left, 1.0)):
            return


def _safely(func: Callable[..., Any], *args: Any) -> None:
    try:
        func(*args)
    except Exception:  # bookkeeping must never stop a lane
        logger.exception("lane bookkeeping failed")
