"""Export/import (docs/memory-model.md#export-and-import) picks schedules and runs up as records of
another area and round-trips them; imported schedules arrive paused, webhooks and deliveries stay
behind."""

from __future__ import annotations

import pytest

from memoryhub.transfer import ExportScope, export_memory, import_memory
from scheduling.models import Delivery, Run, Schedule, Webhook
from tests.base import make_tenant

pytestmark = pytest.mark.django_db


def test_schedules_and_runs_round_trip_and_arrive_paused(cast) -> None:  # type: ignore[no-untyped-def]
    body = {
        "name": "berlin mornings",
        "action": "consolidate",
        "params": {"dry_run": True},
        "user_id": "u1",
        "cadence": {"type": "cron", "value": "0 7 * * 1-5", "timezone": "Europe/Berlin"},
        "channel": "slack",
        "channel_context_id": "C042/thread-17",
    }
    sid = cast.alice.post("/api/v1/schedules/", body, format="json").json()["id"]
    schedule = Schedule.objects.get(pk=sid)
    done = Run.objects.create(
        tenant=cast.alice_tenant, schedule=schedule, status="succeeded", output="{}", turn_count=2
    )
    Run.objects.create(tenant=cast.alice_tenant, schedule=schedule, status="running")
    Delivery.objects.create(tenant=cast.alice_tenant, run=done, status="delivered", attempts=1)
    Webhook.objects.create(
        tenant=cast.alice_tenant,
        kind="notification",
        url="http://127.0.0.1:9/n",
        secret="alice-secret-0123456789",
    )
    first = export_memory(tenant=cast.alice_tenant, scope=ExportScope())
    records = first["records"]
    assert [r["fields"]["name"] for r in records["scheduling.Schedule"]] == ["berlin mornings"]
    assert records["scheduling.Schedule"][0]["fields"]["channel_context_id"] == "C042/thread-17"
    assert len(records["scheduling.Run"]) == 2
    # The secret never travels; a delivery is this tenant's operations, not memory.
    assert "scheduling.Webhook" not in records and "scheduling.Delivery" not in records
    assert "alice-secret" not in str(first)

    carol = make_tenant("carol")
    counts = import_memory(tenant=carol, data=first).imported
    assert counts["schedules_paused"] == 1
    copy = Schedule.objects.get(tenant=carol)
    assert (copy.cadence_value, copy.timezone, copy.params, copy.user_id, copy.next_run_at) == (
        "0 7 * * 1-5",
        "Europe/Berlin",
        {"dry_run": True},
        "u1",
        schedule.next_run_at,
    )
    assert (copy.channel, copy.channel_context_id) == ("slack", "C042/thread-17")
    # Paused: the importing tenant decides when (and whether) it runs here.
    assert copy.status == "paused" and Schedule.objects.get(pk=sid).status == "active"
    runs = {r.status: r for r in copy.runs.all()}
    assert runs["succeeded"].turn_count == 2 and runs["succeeded"].tenant_id == carol.pk
    # The run the file had still open never ran here: closed, so no timeout later finishes (and
    # notifies) it.
    assert set(runs) == {"succeeded", "failed"} and runs["failed"].error == "imported"
    assert (
        not Webhook.objects.filter(tenant=carol).exists()
        and not Delivery.objects.filter(tenant=carol).exists()
    )
    again = export_memory(tenant=carol, scope=ExportScope())
    expected = [
        {**r, "fields": {**r["fields"], "status": "paused"}} for r in records["scheduling.Schedule"]
    ]
    assert again["records"]["scheduling.Schedule"] == expected


def test_a_re_import_with_skip_or_merge_neither_doubles_nor_pauses_stored_schedules(cast) -> None:  # type: ignore[no-untyped-def]
    body = {
        "name": "nightly tidy",
        "action": "consolidate",
        "params": {"dry_run": True},
        "cadence": {"type": "cron", "value": "0 3 * * *", "timezone": "UTC"},
    }
    assert cast.alice.post("/api/v1/schedules/", body, format="json").status_code == 201
    schedule = Schedule.objects.get(tenant=cast.alice_tenant)
    Run.objects.create(
        tenant=cast.alice_tenant,
        schedule=schedule,
        status="succeeded",
        output="{}",
        due_at=schedule.next_run_at,
    )
    exported = export_memory(tenant=cast.alice_tenant, scope=ExportScope())
    for option in ("skip", "merge"):
        report = import_memory(tenant=cast.alice_tenant, data=exported, on_conflict=option)
        assert report.imported == {} and report.skipped["scheduling.Schedule"] == 1, (
            option,
            report,
        )
        # not paused: it was stored
        assert Schedule.objects.get(tenant=cast.alice_tenant).status == "active"
        assert Run.objects.filter(schedule=schedule).count() == 1
