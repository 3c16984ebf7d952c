"""The dashboard tells the truth: arrivals by ingest time (not the events' own dates), the
embedding backlog over time with its rate and ETA, one tenant at a time, refreshed as JSON."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from accounts.models import Tenant
from memoryhub import metrics
from memoryhub.models import MetricSample
from tests.base import Cast, post_events


@pytest.fixture
def staff_client(client, db):  # type: ignore[no-untyped-def]
    user = get_user_model().objects.create_superuser("op", "op@example.com", "pw-long-enough-123")
    client.force_login(user)
    return client


def _chart(data: dict, chart_id: str) -> dict:  # type: ignore[type-arg]
    return next(c for c in data["charts"] if c["id"] == chart_id)


def _series(chart: dict, prefix: str) -> list:  # type: ignore[type-arg]
    return next(s["values"] for s in chart["series"] if s["label"].startswith(prefix))


def test_an_import_of_old_chats_counts_as_arrived_today_not_last_year(staff_client, cast: Cast) -> None:
    metrics.record_samples(now=timezone.now() - timedelta(minutes=5))
    last_year = (timezone.now() - timedelta(days=365)).isoformat()
    events = [{"role": "user", "content": f"old message {i}", "created_at": last_year} for i in range(4)]
    assert post_events(cast.alice, "archive-chat", *events).status_code == 201

    data = staff_client.get("/admin/dashboard/data/").json()
    events_chart = _chart(data, "events")
    assert _series(events_chart, "arrived")[-1] == 4  # by ingest time
    assert sum(_series(events_chart, "dated")) == 0  # their own dates are a year ago, off the chart


def test_backlog_rate_and_eta_come_from_samples(cast: Cast) -> None:
    now = timezone.now()
    MetricSample.objects.create(tenant=cast.alice_tenant, at=now - timedelta(minutes=2), events=10, chunks=100,
                                pending_embedding=80)
    MetricSample.objects.create(tenant=cast.alice_tenant, at=now - timedelta(minutes=1), events=40, chunks=130,
                                pending_embedding=50)
    progress = metrics.embedding_progress(tenant_id=cast.alice_tenant.pk, now=now)
    assert progress["pending"] == 50
    assert progress["rate"] == pytest.approx(60 / 60)  # 20 → 80 embedded in 60 s
    assert progress["eta_seconds"] == pytest.approx(50.0)
    assert progress["arrival_rate"] == pytest.approx(30 / 60)
    rows = metrics.arrivals(since=now - timedelta(hours=1), bucket="15 minutes", tenant_id=cast.alice_tenant.pk)
    assert sum(r[1] for r in rows) == 30 and sum(r[2] for r in rows) == 60 and rows[-1][3] == 50
    assert metrics.embedding_progress(tenant_id=cast.bob_tenant.pk, now=now)["pending"] is None


def test_samples_are_throttled_and_old_ones_dropped(cast: Cast) -> None:
    now = timezone.now()
    MetricSample.objects.create(tenant=cast.alice_tenant, at=now - timedelta(days=40))
    assert metrics.record_samples(now=now) == Tenant.objects.count() >= 2  # one per tenant
    assert metrics.record_samples(now=now + timedelta(seconds=5)) == 0
    assert not MetricSample.objects.filter(at__lt=now - timedelta(days=metrics.KEEP_DAYS)).exists()


def test_one_tenant_at_a_time(staff_client, cast: Cast) -> None:
    post_events(cast.alice, "a", {"role": "user", "content": "one"}, {"role": "user", "content": "two"})
    post_events(cast.bob, "b", {"role": "user", "content": "three"})
    response = staff_client.get(f"/admin/dashboard/?tenant={cast.bob_tenant.pk}")
    assert [row["tenant"].name for row in response.context["tenants"]] == ["bob"]
    assert sum(_series(_chart(response.context["data"], "events"), "dated")) == 1
    data = staff_client.get(f"/admin/dashboard/data/?tenant={cast.alice_tenant.pk}").json()
    assert data["tenant"] == "alice" and sum(_series(_chart(data, "events"), "dated")) == 2
    assert {"queued", "succeeded_24h", "failed_24h"} <= set(data["queue"])


def test_the_data_feed_is_for_staff_only(client, db) -> None:  # type: ignore[no-untyped-def]
    assert client.get("/admin/dashboard/data/").status_code == 302
