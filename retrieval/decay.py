"""Tier-aware decay (docs/ranking.md#decay), in Python and as SQL that computes the same.

    relevance = importance · rate(tier)^hours · (1 + ln(1 + access_count))

`hours` is the time since the memory was last used: `accessed_at` when it has been returned by a
memory search, else `created_at` (memories used less recently decay faster, docs/ranking.md#decay).
Rates per hour are RATES (account 0.999, workspace 0.998, channel 0.995, conversation 0.99).

Both forms compute rate^hours as exp(max(hours · ln(rate), -700)): PostgreSQL raises "value out
of range: underflow" instead of returning 0 for power()/exp() results below the smallest double,
so the exponent is floored at -700 (≈ 1e-304, far below every threshold) in SQL and, for exact
agreement, in Python too. Negative ages (clock skew, imported future times) count as 0 hours.

The double-discount caution — and what we do about it
-----------------------------------------------------------------
Hierarchical weighting (wider tiers ranked lower while widening from the
conversation out to the account) and per-tier decay compound: a memory would be discounted once
for its tier and again through its tier's decay rate. MemoryHub applies the tier ONCE, through the
decay rate only:

* Hierarchical widening is a filter, never a weight. The scope decides which tiers are eligible
  (conversation → channel → workspace → account); no per-tier multiplier is applied in ranking.
  The tier's only effect on a score is its decay rate, and the narrower (more specific) tiers are
  the ones that decay faster, so the two effects pull in opposite directions instead of stacking.
* Decay measures time since last use, not since creation, so a memory that keeps being returned
  keeps its relevance (and its access count adds the log boost).
* In search ranking the decay-based relevance is one bounded term of a weighted sum beside text
  and vector similarity (the "memory" profile, or the default profile with a `decay_weight`),
  never a factor multiplied into similarity, so an old but exactly matching memory can still
  surface. Search reads it at the request's `as_of` (default now). It is not part of the default
  ranking: on LoCoMo it cost turn recall@10 on both halves (bench/ranking.py). The hard thresholds
  (prune < 0.01, promote
  > 0.7) are used only by consolidation, on the plain formula above.
"""

from __future__ import annotations

import math
from datetime import datetime

from django.db.models.expressions import RawSQL
from django.utils import timezone

from memoryhub.searchable import TIERS
from retrieval.models import Chunk, ChunkAccess

MIN_EXPONENT = -700.0
# Per-hour retention by tier (docs/ranking.md#decay): a rate must be in (0, 1]; 1 means "never
# decays". Shared knowledge keeps longest, a conversation's own memories fade first.
RATES = {"account": 0.999, "workspace": 0.998, "channel": 0.995, "conversation": 0.99}


def decay_rates() -> dict[str, float]:
    """The per-hour rate of every tier (RATES, validated: 0 < rate ≤ 1)."""
    rates = dict(RATES)
    for tier in TIERS:
        rate = float(rates[tier])
        if not 0.0 < rate <= 1.0:
            raise ValueError(f"decay rate of tier {tier!r} must be in (0, 1], got {rate}")
        rates[tier] = rate
    return rates


def decay_rate(tier: str) -> float:
    rates = decay_rates()
    if tier not in rates:
        raise ValueError(f"unknown tier {tier!r}; expected one of {TIERS}")
    return rates[tier]


def decay_factor(tier: str, age_hours: float) -> float:
    """rate(tier)^hours, with the same underflow floor as the SQL form."""
    hours = max(float(age_hours), 0.0)
    return math.exp(max(hours * math.log(decay_rate(tier)), MIN_EXPONENT))


def access_boost(access_count: int) -> float:
    return 1.0 + math.log(1.0 + max(int(access_count), 0))


def relevance(importance: float, tier: str, age_hours: float, access_count: int) -> float:
    """importance · rate(tier)^hours · (1 + ln(1 + access_count))."""
    return float(importance) * decay_factor(tier, age_hours) * access_boost(access_count)


def age_hours(last_used: datetime, now: datetime | None = None) -> float:
    now = now or timezone.now()
    return max((now - last_used).total_seconds() / 3600.0, 0.0)


def relevance_at(
    importance: float,
    tier: str,
    accessed_at: datetime | None,
    created_at: datetime,
    access_count: int,
    now: datetime | None = None,
) -> float:
    """Relevance of a memory at `now` (default: the current time), clock from its last use."""
    return relevance(importance, tier, age_hours(accessed_at or created_at, now), access_count)


def relevance_sql(
    alias: str = "", *, now: datetime | None = None, time_column: str | None = None
) -> tuple[str, list[object]]:
    """SQL computing `relevance` of a chunk from its importance, tier and time columns and its
    ChunkAccess row (access count, last access; read by primary key, none: 0 and never).

    `alias` qualifies the chunk's columns ("c" → c.importance …; "" → retrieval_chunk.importance).
    The time defaults to COALESCE(accessed_at, created_at); pass `time_column` (e.g. "created_at")
    for another. `now` is always a bound parameter (default: the current time, not the
    database's transaction time, so that frozen time in tests and the Python form agree).
    Returns (sql, params) with %s placeholders in order, ready for cursor.execute or RawSQL.
    """
    p = f"{alias or Chunk._meta.db_table}."

    def access(column: str) -> str:
        return f"(SELECT a.{column} FROM {ChunkAccess._meta.db_table} a WHERE a.chunk_id = {p}id)"

    time_expr = (
        f"{p}{time_column}" if time_column else f"COALESCE({access('accessed_at')}, {p}created_at)"
    )
    rates = decay_rates()
    cases = " ".join(f"WHEN '{tier}' THEN %s" for tier in TIERS)
    sql = (
        f"({p}importance * exp(GREATEST("
        f"GREATEST(EXTRACT(EPOCH FROM (%s::timestamptz - {time_expr})) / 3600.0, 0)::float8"
        f" * ln(CASE {p}tier {cases} ELSE %s END::float8), {MIN_EXPONENT}))"
        f" * (1 + ln(1 + GREATEST(COALESCE({access('access_count')}, 0), 0)::float8)))"
    )
    params: list[object] = [
        now or timezone.now(),
        *(rates[t] for t in TIERS),
        rates["conversation"],
    ]
    return sql, params


def relevance_expression(
    *, now: datetime | None = None, time_column: str | None = None, table: str = ""
) -> RawSQL:
    """The same as an ORM expression, e.g.
    Chunk.objects.annotate(relevance=relevance_expression(table="retrieval_chunk")).order_by("relevance").
    Pass the model's table when the query joins others (their columns would be ambiguous)."""
    from django.db.models import FloatField

    sql, params = relevance_sql(table, now=now, time_column=time_column)
    return RawSQL(sql, params, output_field=FloatField())


# The published temporal score: e^(-0.05 · days since last access) · (1 + 0.02 · access_count), the
# 0.3-weighted term of its relevance formula (search profile "seed002").
SEED002_DAILY_DECAY = 0.05
SEED002_ACCESS_BOOST = 0.02


def seed002_temporal(days_since_access: float, access_count: int) -> float:
    days = max(float(days_since_access), 0.0)
    return math.exp(max(-SEED002_DAILY_DECAY * days, MIN_EXPONENT)) * (
        1.0 + SEED002_ACCESS_BOOST * max(int(access_count), 0)
    )


def seed002_temporal_sql(
    alias: str = "", *, now: datetime | None = None
) -> tuple[str, list[object]]:
    """SQL computing seed002_temporal of a chunk: days since its last access (else its creation),
    its access count from its ChunkAccess row (none: 0). Same (sql, params) form as
    relevance_sql."""
    p = f"{alias or Chunk._meta.db_table}."

    def access(column: str) -> str:
        return f"(SELECT a.{column} FROM {ChunkAccess._meta.db_table} a WHERE a.chunk_id = {p}id)"

    days = (
        f"GREATEST(EXTRACT(EPOCH FROM (%s::timestamptz - COALESCE({access('accessed_at')},"
        f" {p}created_at))) / 86400.0, 0)::float8"
    )
    sql = (
        f"(exp(GREATEST(-%s * {days}, {MIN_EXPONENT}))"
        f" * (1 + %s * GREATEST(COALESCE({access('access_count')}, 0), 0)::float8))"
    )
    return sql, [SEED002_DAILY_DECAY, now or timezone.now(), SEED002_ACCESS_BOOST]
