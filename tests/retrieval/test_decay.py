"""Tier-aware decay: the formula, its settings, and SQL that agrees with Python (frozen time)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection

from retrieval import decay
from retrieval.models import Chunk, ChunkAccess
from tests.base import make_tenant

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_formula_matches_the_spec_defaults() -> None:
    # 0.8 · 0.99^10 · (1 + ln 4) for a conversation memory 10 h old, used 3 times.
    assert decay.relevance(0.8, "conversation", 10, 3) == pytest.approx(
        0.8 * 0.99**10 * (1 + math.log(4))
    )
    assert decay.relevance(1.0, "account", 0, 0) == 1.0
    # One week: account keeps ~84 %, workspace ~71 %, channel ~43 %, conversation ~18 %.
    week = 24 * 7
    assert decay.relevance(1, "account", week, 0) == pytest.approx(0.999**week)
    assert decay.relevance(1, "workspace", week, 0) == pytest.approx(0.998**week)
    assert decay.relevance(1, "channel", week, 0) == pytest.approx(0.995**week)
    assert decay.relevance(1, "conversation", week, 0) == pytest.approx(0.99**week)
    assert (
        decay.relevance(1, "conversation", week, 0)
        < decay.relevance(1, "channel", week, 0)
        < decay.relevance(1, "workspace", week, 0)
        < decay.relevance(1, "account", week, 0)
    )


def test_negative_age_counts_as_now_and_huge_age_does_not_underflow() -> None:
    assert decay.relevance(0.5, "channel", -5, 0) == 0.5
    tiny = decay.relevance(1.0, "conversation", 10_000_000, 0)
    assert 0 < tiny < 1e-300


def test_rates_come_from_settings(settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("retrieval.decay.RATES", {**decay.RATES, "channel": 0.5})
    assert decay.relevance(1.0, "channel", 2, 0) == pytest.approx(0.25)
    monkeypatch.setattr("retrieval.decay.RATES", {**decay.RATES, "channel": 0.0})
    with pytest.raises(ValueError):
        decay.relevance(1.0, "channel", 2, 0)
    with pytest.raises(ValueError):
        decay.decay_rate("galaxy")


def test_relevance_at_uses_last_access_then_creation() -> None:
    with time_machine.travel(NOW, tick=False):
        created = NOW - timedelta(hours=100)
        assert decay.relevance_at(1, "workspace", None, created, 0) == pytest.approx(0.998**100)
        assert decay.relevance_at(
            1, "workspace", NOW - timedelta(hours=1), created, 0
        ) == pytest.approx(0.998)


@pytest.mark.django_db
def test_sql_and_python_agree_on_every_tier_age_and_count() -> None:
    tenant = make_tenant("decay")
    rows, uses = [], []
    for tier in decay.TIERS:
        for hours in (0, 1, 7.5, 24, 24 * 30, 24 * 365 * 50, -3):
            for count in (0, 1, 4, 1000):
                created = NOW - timedelta(hours=hours)
                accessed = NOW - timedelta(hours=hours / 2) if count % 2 else None
                rows.append(
                    Chunk(
                        tenant=tenant,
                        tier=tier,
                        text=f"{tier} {hours} {count}",
                        content_hash="x",
                        importance=0.37 + count / 10_000,
                        created_at=created,
                    )
                )
                uses.append((count, accessed))
    Chunk.objects.bulk_create(rows)
    # A chunk never returned by search has no access row (0 uses, its clock from its creation).
    ChunkAccess.objects.bulk_create(
        [
            ChunkAccess(chunk=chunk, access_count=count, accessed_at=accessed)
            for chunk, (count, accessed) in zip(rows, uses, strict=True)
            if count
        ]
    )

    with time_machine.travel(NOW, tick=False):
        sql, params = decay.relevance_sql("c")
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT c.id, {sql} FROM retrieval_chunk c WHERE c.tenant_id = %s",
                [*params, tenant.pk],
            )
            from_sql = dict(cursor.fetchall())
        annotated = dict(
            Chunk.objects.filter(tenant=tenant)
            .annotate(r=decay.relevance_expression())
            .values_list("id", "r")
        )
        by_created = decay.relevance_sql("c", time_column="created_at")

    assert len(from_sql) == len(rows)
    for chunk in Chunk.objects.filter(tenant=tenant).with_access():
        expected = decay.relevance_at(
            chunk.importance,
            chunk.tier,
            chunk.accessed_at,
            chunk.created_at,
            chunk.access_count,
            NOW,
        )
        assert from_sql[chunk.pk] == pytest.approx(expected, rel=1e-9, abs=1e-300)
        assert annotated[chunk.pk] == pytest.approx(expected, rel=1e-9, abs=1e-300)
    # The explicit time column ignores accessed_at.
    assert "accessed_at" not in by_created[0]


@pytest.mark.django_db
def test_sql_now_is_a_parameter_not_the_database_clock() -> None:
    tenant = make_tenant("decay2")
    chunk = Chunk.objects.create(
        tenant=tenant,
        tier="channel",
        text="t",
        content_hash="x",
        importance=1.0,
        created_at=NOW - timedelta(hours=10),
    )
    sql, params = decay.relevance_sql(now=NOW + timedelta(hours=10))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {sql} FROM retrieval_chunk WHERE id = %s", [*params, chunk.pk])
        (value,) = cursor.fetchone()
    assert value == pytest.approx(0.995**20)
