"""The dashboard tells the truth: arrivals by ingest time (not the events' own dates), the
embedding backlog over time with its rate and ETA, one tenant at a time, refreshed as JSON."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import Tenant
from memoryhub import metrics
from memoryhub.models import Arrivals, MetricSample
from retrieval.models import Chunk
from tests.base import Cast, post_events


def _chart(data: dict, chart_id: str) -> dict:  # type: ignore[type-arg]
    return next(c for c in data["charts"] if c["id"] == chart_id)


def _series(chart: dict, prefix: str) -> list:  # type: ignore[type-arg]
    return next(s["values"] for s in chart["series"] if s["label"].startswith(prefix))


def test_an_import_of_old_chats_counts_as_arrived_today_not_last_year(
    staff_client, cast: Cast, django_capture_on_commit_callbacks
) -> None:
    last_year = (timezone.now() - timedelta(days=365)).isoformat()
    events = [
        {"role": "user", "content": f"old message {i}", "created_at": last_year} for i in range(4)
    ]
    with django_capture_on_commit_callbacks(execute=True):
        assert post_events(cast.alice, "archive-chat", *events).status_code == 201

    data = staff_client.get("/admin/dashboard/data/").json()
    events_chart = _chart(data, "events")
    assert _series(events_chart, "arrived")[-1] == 4  # by ingest time
    assert sum(_series(events_chart, "dated")) == 0  # their own dates are a year ago, off the chart


def test_arrivals_and_embeddings_are_counted_as_they_happen_not_sampled(
    staff_client, cast: Cast, django_capture_on_commit_callbacks
) -> None:
    # Reported: "events arrived: 0, Arriving —, Rate —" right after 20 events and their chunks were
    # embedded, because nobody had the dashboard open to sample the totals before and after.
    events = [
        {"role": "user", "content": f"message number {i} about the harbour"} for i in range(20)
    ]
    with django_capture_on_commit_callbacks(execute=True):
        assert post_events(cast.alice, "busy-chat", *events).status_code == 201
        assert (
            post_events(
                cast.bob, "other-chat", {"role": "user", "content": "bob's only message"}
            ).status_code
            == 201
        )
    assert not MetricSample.objects.exists()  # nothing was sampled meanwhile
    embedded = Chunk.objects.filter(tenant=cast.alice_tenant, embedding__isnull=False).count()
    assert embedded > 0

    data = staff_client.get(f"/admin/dashboard/data/?tenant={cast.alice_tenant.pk}").json()
    figures = data["embedding"]
    assert figures["arrived_recent"] == 20 and figures["embedded_recent"] == embedded
    assert figures["arrival_rate"] == pytest.approx(20 / 600) and figures["rate"] == pytest.approx(
        embedded / 600
    )
    backlog = _chart(data, "backlog")
    assert (
        sum(_series(backlog, "events arrived")) == 20
        and sum(_series(backlog, "chunks embedded")) == embedded
    )
    page = staff_client.get(f"/admin/dashboard/?tenant={cast.alice_tenant.pk}").content.decode()
    assert '<div class="mh-figure" id="mh-arrived">20</div>' in page
    assert f'<div class="mh-figure" id="mh-embedded">{embedded}</div>' in page
    # Per tenant: bob's one message is his.
    assert (
        staff_client.get(f"/admin/dashboard/data/?tenant={cast.bob_tenant.pk}").json()["embedding"][
            "arrived_recent"
        ]
        == 1
    )
    assert metrics.recent_arrivals()["events"] == 21


def test_the_backlog_line_comes_from_samples_beside_the_counted_arrivals(cast: Cast) -> None:
    now = timezone.now()
    MetricSample.objects.create(
        tenant=cast.alice_tenant,
        at=now - timedelta(minutes=2),
        events=10,
        chunks=100,
        pending_embedding=80,
    )
    MetricSample.objects.create(
        tenant=cast.alice_tenant,
        at=now - timedelta(minutes=1),
        events=40,
        chunks=130,
        pending_embedding=50,
    )
    Arrivals.add({(cast.alice_tenant.pk, float(int(now.timestamp()) // 60 * 60)): [30, 60]})
    # adds up
    Arrivals.add({(cast.alice_tenant.pk, float(int(now.timestamp()) // 60 * 60)): [1, 2]})
    progress = metrics.embedding_progress(tenant_id=cast.alice_tenant.pk, now=now)
    assert progress["arrived_recent"] == 31 and progress["embedded_recent"] == 62
    rows = metrics.arrivals(
        since=now - timedelta(hours=1), bucket="15 minutes", tenant_id=cast.alice_tenant.pk
    )
    assert sum(r[1] for r in rows) == 31 and sum(r[2] for r in rows) == 62
    # the backlog at the latest sample (its bucket may end before the arrivals' when a quarter hour
    # begins between the two)
    assert [r[3] for r in rows if r[3] is not None][-1] == 50
    assert metrics.embedding_progress(tenant_id=cast.bob_tenant.pk, now=now)["arrived_recent"] == 0
    assert (
        metrics.arrivals(
            since=now - timedelta(hours=1), bucket="15 minutes", tenant_id=cast.bob_tenant.pk
        )
        == []
    )


def test_samples_are_throttled_and_old_ones_dropped(cast: Cast) -> None:
    now = timezone.now()
    MetricSample.objects.create(tenant=cast.alice_tenant, at=now - timedelta(days=40))
    Arrivals.objects.create(tenant=cast.alice_tenant, minute=now - timedelta(days=40), events=3)
    assert metrics.record_samples(now=now) == Tenant.objects.count() >= 2  # one per tenant
    assert metrics.record_samples(now=now + timedelta(seconds=5)) == 0
    assert not MetricSample.objects.filter(at__lt=now - timedelta(days=metrics.KEEP_DAYS)).exists()
    assert not Arrivals.objects.exists()


def test_one_tenant_at_a_time(staff_client, cast: Cast) -> None:
    post_events(
        cast.alice, "a", {"role": "user", "content": "one"}, {"role": "user", "content": "two"}
    )
    post_events(cast.bob, "b", {"role": "user", "content": "three"})
    response = staff_client.get(f"/admin/dashboard/?tenant={cast.bob_tenant.pk}")
    assert [row["tenant"].name for row in response.context["tenants"]] == ["bob"]
    assert sum(_series(_chart(response.context["data"], "events"), "dated")) == 1
    data = staff_client.get(f"/admin/dashboard/data/?tenant={cast.alice_tenant.pk}").json()
    assert data["tenant"] == "alice" and sum(_series(_chart(data, "events"), "dated")) == 2
    assert {"queued", "succeeded_24h", "failed_24h"} <= set(data["queue"])


def test_the_data_feed_is_for_staff_only(client, db) -> None:  # type: ignore[no-untyped-def]
    assert client.get("/admin/dashboard/data/").status_code == 302
