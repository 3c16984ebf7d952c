"""Cadence maths: next fire time, validation and human-friendly formatting
(docs/lanes-and-schedules.md#schedules).

Cron expressions (5 fields, croniter) are evaluated on the wall clock of the schedule's IANA time
zone (zoneinfo), so "0 9 * * *" stays at 09:00 local across DST changes. Each wall-clock match
fires once: a time skipped by a spring-forward (02:30 on that night) fires at the same instant
the clock jumps to (03:30 new time); a time repeated by a fall-back fires on its first occurrence
only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, croniter
from django.conf import settings
from django.utils.dateparse import parse_datetime

TYPES = ("cron", "once", "interval")
_DURATION = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
_MAX_CRON_STEPS = 2000
# One-shot times are refused past this year: 9999-12-31T23:59:59-14:00 is not a datetime in UTC.
_ONCE_MAX_YEAR = 9000
_ONCE_MARGIN = timedelta(days=2)


class CadenceError(ValueError):
    """Invalid cadence: `code` is the API's machine-readable error code."""

    def __init__(self, code: str, message: str, field: str = "cadence") -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field


@dataclass(frozen=True)
class Cadence:
    type: str
    value: str
    timezone: str = "UTC"

    @property
    def zone(self) -> ZoneInfo:
        return zone(self.timezone)

    @property
    def interval(self) -> timedelta:
        return timedelta(seconds=parse_interval(self.value))

    @property
    def once_at(self) -> datetime:
        return parse_once(self.value, self.zone)


def zone(name: str) -> ZoneInfo:
    try:
        if not name or name != name.strip():
            raise ZoneInfoNotFoundError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise CadenceError(
            "invalid_timezone",
            f"Unknown time zone {name!r} (use an IANA name such as 'Europe/Paris').",
            "cadence.timezone",
        ) from None


def parse_interval(value: str | int) -> int:
    """Seconds of an interval: a number of seconds, or a duration such as 15m, 1h30m, 2d, 90s."""
    if isinstance(value, bool):
        raise CadenceError(
            "invalid_interval",
            "Interval must be seconds or a duration like '15m'.",
            "cadence.value",
        )
    if isinstance(value, int):
        seconds = value
    else:
        text = str(value).strip().lower()
        if text.isdigit():
            seconds = int(text)
        else:
            match = _DURATION.match(text)
            if not text or match is None:
                raise CadenceError(
                    "invalid_interval",
                    f"Interval {value!r} is not seconds or a duration like '15m' or '1h30m'.",
                    "cadence.value",
                )
            d, h, m, s = (int(g) if g else 0 for g in match.groups())
            seconds = ((d * 24 + h) * 60 + m) * 60 + s
    if seconds <= 0 or seconds > 366 * 86400:
        raise CadenceError(
            "invalid_interval", "Interval must be between 1 second and 366 days.", "cadence.value"
        )
    return seconds


def parse_once(value: str, tz: ZoneInfo) -> datetime:
    """An ISO-8601 time; without an offset it is read in the schedule's time zone."""
    try:
        parsed = parse_datetime(str(value).strip())
    except ValueError:
        parsed = None
    if parsed is None:
        raise CadenceError(
            "invalid_once_time", f"{value!r} is not an ISO-8601 date and time.", "cadence.value"
        )
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=tz)
    try:
        at = parsed.astimezone(UTC)
        # Shown and compared on every wall clock (±14 h), and timed out hours later: stay in range.
        (at + _ONCE_MARGIN).astimezone(tz)
    except OverflowError:
        at = None
    if at is None or at.year > _ONCE_MAX_YEAR:
        raise CadenceError(
            "invalid_once_time",
            f"{value!r} is too far in the future (the latest year is {_ONCE_MAX_YEAR}).",
            "cadence.value",
        )
    return at


def _cron(expr: str, start: datetime) -> croniter:
    if len(expr.split()) != 5:
        _check_cron(expr)
    try:
        return croniter(expr, start)
    except (ValueError, KeyError, TypeError) as exc:
        raise CadenceError(
            "invalid_cron", f"Invalid cron expression {expr!r}: {exc}", "cadence.value"
        ) from None


def _check_cron(expr: str) -> None:
    fields = expr.split()
    if len(fields) != 5:
        raise CadenceError(
            "invalid_cron",
            f"Cron expression {expr!r} must have 5 fields (minute hour day month weekday).",
            "cadence.value",
        )
    try:
        croniter(expr)
    except (ValueError, KeyError, TypeError) as exc:  # croniter's errors subclass ValueError
        raise CadenceError(
            "invalid_cron", f"Invalid cron expression {expr!r}: {exc}", "cadence.value"
        ) from None


def next_run(cadence: Cadence, after: datetime) -> datetime | None:
    """The first fire time strictly after `after` (aware), in UTC; None when there is none."""
    after = after.astimezone(UTC)
    if cadence.type == "once":
        at = cadence.once_at
        return at if at > after else None
    if cadence.type == "interval":
        return after + cadence.interval
    if cadence.type == "cron":
        return _next_cron(cadence.value, cadence.zone, after)
    raise CadenceError(
        "invalid_cadence_type", f"Unknown cadence type {cadence.type!r}.", "cadence.type"
    )


def _next_cron(expr: str, tz: ZoneInfo, after: datetime) -> datetime | None:
    local = after.astimezone(tz).replace(tzinfo=None)
    it = _cron(expr, local)
    for _ in range(_MAX_CRON_STEPS):
        try:
            candidate = it.get_next(datetime)
        except (CroniterBadDateError, OverflowError):
            return None  # a day that never comes (0 0 31 2 *) or the end of the calendar
        if candidate.year > _ONCE_MAX_YEAR:
            return None
        # fold=0: a repeated wall time is its first occurrence; a skipped one maps past the gap.
        at = candidate.replace(tzinfo=tz, fold=0).astimezone(UTC)
        if at > after:
            return at
    return None  # pragma: no cover - a cron that fires at all fires within a few years


def next_after_due(cadence: Cadence, due: datetime, now: datetime) -> datetime | None:
    """The next fire time after a run due at `due`, skipping times already missed by `now`
    (a schedule that was down fires once, not once per missed time)."""
    if cadence.type == "interval":
        step = cadence.interval
        if due + step > now:
            return due + step
        missed = (now - due) // step
        return due + (missed + 1) * step
    return next_run(cadence, max(due, now))


def validate(
    type_: str,
    value: object,
    tz_name: str | None,
    *,
    now: datetime,
    min_interval: int | None = None,
) -> Cadence:
    """A checked Cadence or CadenceError: one-shot in the future, cron valid and not more frequent
    than the minimum interval, interval at least the minimum."""
    if min_interval is None:
        min_interval = settings.MEMORYHUB_SCHEDULE_MIN_INTERVAL_SECONDS
    if type_ not in TYPES:
        raise CadenceError(
            "invalid_cadence_type",
            f"Cadence type must be one of {', '.join(TYPES)}.",
            "cadence.type",
        )
    tz_name = tz_name or "UTC"
    tz = zone(tz_name)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise CadenceError("invalid_cadence_value", "Cadence value is required.", "cadence.value")
    if type_ == "interval":
        seconds = parse_interval(value)  # type: ignore[arg-type]
        if seconds < min_interval:
            raise CadenceError(
                "interval_too_short",
                f"Interval {seconds}s is shorter than the minimum {min_interval}s.",
                "cadence.value",
            )
        return Cadence(type_, str(value).strip(), tz_name)
    if not isinstance(value, str):
        raise CadenceError(
            "invalid_cadence_value", "Cadence value must be a string.", "cadence.value"
        )
    value = value.strip()
    if type_ == "once":
        at = parse_once(value, tz)
        if at <= now:
            raise CadenceError(
                "once_in_past", f"One-shot time {value} is not in the future.", "cadence.value"
            )
        return Cadence(type_, at.isoformat(), tz_name)
    expr = " ".join(value.split())
    _check_cron(expr)
    cadence = Cadence(type_, expr, tz_name)
    gap = shortest_cron_gap(cadence, now)
    if gap is None:
        raise CadenceError(
            "invalid_cron", f"Cron expression {expr!r} never fires.", "cadence.value"
        )
    if gap < timedelta(seconds=min_interval):
        raise CadenceError(
            "cron_too_frequent",
            f"Cron expression {expr!r} fires every {int(gap.total_seconds())}s, "
            f"more often than the minimum {min_interval}s.",
            "cadence.value",
        )
    return cadence


def shortest_cron_gap(cadence: Cadence, now: datetime, samples: int = 200) -> timedelta | None:
    """The shortest gap between consecutive fire times over the next `samples` runs."""
    previous = next_run(cadence, now)
    if previous is None:
        return None
    gap: timedelta | None = None
    for _ in range(samples):
        following = next_run(cadence, previous)
        if following is None:
            break
        step = following - previous
        gap = step if gap is None else min(gap, step)
        previous = following
    return gap


def format_in_timezone(at: datetime | None, tz_name: str) -> str:
    """'Sun 8 Mar 2026, 03:30 EDT (America/New_York)': a UTC time on the schedule's wall clock."""
    if at is None:
        return ""
    try:
        tz = zone(tz_name)
    except CadenceError:
        tz, tz_name = ZoneInfo("UTC"), "UTC"
    local = at.astimezone(tz)
    return f"{local:%a} {local.day} {local:%b %Y, %H:%M %Z} ({tz_name})"


def _plural(n: int, unit: str) -> str:
    return f"{n} {unit}" + ("" if n == 1 else "s")


def describe(cadence: Cadence) -> str:
    """A human description: 'every 1 hour 30 minutes', 'cron 0 9 * * 1-5 (Europe/London)', …"""
    if cadence.type == "interval":
        seconds = parse_interval(cadence.value)
        parts = []
        for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
            if seconds >= size:
                parts.append(_plural(seconds // size, unit))
                seconds %= size
        return "every " + " ".join(parts)
    if cadence.type == "once":
        return "once on " + format_in_timezone(cadence.once_at, cadence.timezone)
    return f"cron {cadence.value} ({cadence.timezone})"
