"""Cadence maths: next fire times across DST changes, validation, formatting (frozen time)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import time_machine
from django.utils import timezone

from scheduling.cadence import (
    Cadence,
    CadenceError,
    describe,
    format_in_timezone,
    next_after_due,
    next_run,
    parse_interval,
    validate,
)


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def fires(cadence: Cadence, start: datetime, n: int) -> list[datetime]:
    out, at = [], start
    for _ in range(n):
        at = next_run(cadence, at)
        out.append(at)
    return out


def test_cron_daily_keeps_local_time_across_spring_forward() -> None:
    # Europe/London springs forward on 29 March 2026 (01:00 UTC): 09:00 local is 09:00 UTC, then
    # 08:00 UTC.
    cadence = Cadence("cron", "0 9 * * *", "Europe/London")
    assert fires(cadence, utc(2026, 3, 27, 12), 3) == [
        utc(2026, 3, 28, 9),
        utc(2026, 3, 29, 8),
        utc(2026, 3, 30, 8),
    ]


def test_cron_time_skipped_by_spring_forward_fires_once_after_the_jump() -> None:
    # America/New_York, 8 March 2026: 02:00 EST jumps to 03:00 EDT, so 02:30 does not exist that
    # day.
    cadence = Cadence("cron", "30 2 * * *", "America/New_York")
    got = fires(cadence, utc(2026, 3, 7, 12), 3)
    assert got == [
        utc(2026, 3, 8, 7, 30),  # the instant of 02:30 EST = 03:30 EDT
        utc(2026, 3, 9, 6, 30),  # 02:30 EDT
        utc(2026, 3, 10, 6, 30),
    ]


def test_cron_time_repeated_by_fall_back_fires_once() -> None:
    # America/New_York, 1 November 2026: 02:00 EDT falls back to 01:00 EST, 01:30 happens twice.
    cadence = Cadence("cron", "30 1 * * *", "America/New_York")
    got = fires(cadence, utc(2026, 10, 31, 12), 3)
    assert got == [
        utc(2026, 11, 1, 5, 30),  # 01:30 EDT, the first occurrence only
        utc(2026, 11, 2, 6, 30),  # 01:30 EST the next day
        utc(2026, 11, 3, 6, 30),
    ]
    # Asked from inside the repeated hour (after the first 01:30), the second 01:30 is not a new
    # fire.
    assert next_run(cadence, utc(2026, 11, 1, 6, 10)) == utc(2026, 11, 2, 6, 30)


def test_hourly_cron_through_fall_back_never_goes_backwards() -> None:
    cadence = Cadence("cron", "0 * * * *", "America/New_York")
    got = fires(cadence, utc(2026, 11, 1, 3), 6)
    assert all(b > a for a, b in zip(got, got[1:], strict=False))
    assert got[0] == utc(2026, 11, 1, 4)


def test_interval_and_once() -> None:
    assert next_run(Cadence("interval", "1h30m"), utc(2026, 1, 1)) == utc(2026, 1, 1, 1, 30)
    once = Cadence("once", "2026-06-01T10:00:00", "Europe/Paris")
    assert next_run(once, utc(2026, 1, 1)) == utc(2026, 6, 1, 8)
    assert next_run(once, utc(2026, 6, 1, 8)) is None


def test_missed_interval_runs_fire_once_on_the_grid() -> None:
    cadence = Cadence("interval", "600")
    due = utc(2026, 1, 1, 0, 0)
    assert next_after_due(cadence, due, utc(2026, 1, 1, 0, 1)) == utc(2026, 1, 1, 0, 10)
    # Down for 35 minutes: the next run is the next grid point after now, not three catch-ups.
    assert next_after_due(cadence, due, utc(2026, 1, 1, 0, 35)) == utc(2026, 1, 1, 0, 40)


@pytest.mark.parametrize(
    "text, seconds", [("15m", 900), ("1h30m", 5400), ("90", 90), ("2d", 172800), ("45s", 45)]
)
def test_parse_interval(text: str, seconds: int) -> None:
    assert parse_interval(text) == seconds


@time_machine.travel(datetime(2026, 3, 8, 6, 0, tzinfo=UTC), tick=False)
def test_validation_with_frozen_time(settings) -> None:  # type: ignore[no-untyped-def]
    now = timezone.now()
    assert validate("once", "2026-03-08T06:01:00Z", None, now=now).type == "once"
    for args, code in [
        (("once", "2026-03-08T05:59:00Z", None), "once_in_past"),
        (("once", "2026-03-08T06:00:00Z", None), "once_in_past"),
        (("cron", "0 9 * * *", "Nowhere/City"), "invalid_timezone"),
        (("cron", "0 9 * *", None), "invalid_cron"),
        (("cron", "every day", None), "invalid_cron"),
        (("interval", "59", None), "interval_too_short"),
        (("interval", "-5", None), "invalid_interval"),
        (("hourly", "1", None), "invalid_cadence_type"),
    ]:
        with pytest.raises(CadenceError) as caught:
            validate(*args, now=now)
        assert caught.value.code == code, args
    # The minimum interval applies to cron too.
    with pytest.raises(CadenceError) as caught:
        validate("cron", "*/5 * * * *", None, now=now, min_interval=600)
    assert caught.value.code == "cron_too_frequent"
    assert (
        validate("cron", "*/10  * * * *", None, now=now, min_interval=600).value == "*/10 * * * *"
    )


@time_machine.travel(datetime(2026, 10, 31, 23, 0, tzinfo=UTC), tick=False)
def test_created_cron_schedule_next_run_on_fall_back_day(alice) -> None:  # type: ignore[no-untyped-def]
    body = {
        "name": "early",
        "action": "summarise",
        "cadence": {"type": "cron", "value": "30 1 * * *", "timezone": "America/New_York"},
    }
    response = alice.post("/api/v1/schedules/", body, format="json")
    assert response.status_code == 201
    assert response.json()["next_run_at"].startswith("2026-11-01T05:30:00")
    assert response.json()["next_run_local"] == "Sun 1 Nov 2026, 01:30 EDT (America/New_York)"


def test_formatting_and_description() -> None:
    assert (
        format_in_timezone(utc(2026, 3, 8, 7, 30), "America/New_York")
        == "Sun 8 Mar 2026, 03:30 EDT (America/New_York)"
    )
    assert (
        format_in_timezone(utc(2026, 3, 7, 7, 30), "America/New_York")
        == "Sat 7 Mar 2026, 02:30 EST (America/New_York)"
    )
    assert describe(Cadence("interval", "1h30m")) == "every 1 hour 30 minutes"
    assert (
        describe(Cadence("cron", "0 9 * * 1-5", "Europe/London"))
        == "cron 0 9 * * 1-5 (Europe/London)"
    )
    assert describe(Cadence("once", "2026-06-01T08:00:00+00:00", "Europe/Paris")).startswith(
        "once on Mon 1 Jun 2026, 10:00 CEST"
    )
