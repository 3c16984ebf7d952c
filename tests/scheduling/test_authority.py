"""Schedules act with the authority of the key that made them, and forget-user leaves none of the
user's words in what runs copied (run outputs, their notifications, consolidation reports).

One tenant, two end users: ann (whose key attacks) and bob (whose diary must stay his), the same
names on both sides. Runs are executed here the way the cluster does (`execute_run`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from accounts.models import ApiKey, Workspace
from memoryhub.models import Session
from retrieval.lifecycle.models import ConsolidationReport
from retrieval.models import Chunk
from scheduling.dispatcher import execute_run
from scheduling.models import Delivery, Run, Schedule
from tests.base import error_code, make_client, make_key

pytestmark = pytest.mark.django_db

URL = "/api/v1/schedules/"
BOB_SECRET = "bob private diary: I owe Carl 500 EUR"
ANN_TEXT = "ann grocery list: quinces"
EVERY_HOUR = {"type": "interval", "value": "1h"}


def body(action: str, **fields: Any) -> dict[str, Any]:
    return {"name": f"my {action}", "action": action, "cadence": EVERY_HOUR, **fields}


def run_now(client: Any, schedule_id: str) -> Run:
    response = client.post(f"{URL}{schedule_id}/run/")
    assert response.status_code == 202, response.content
    execute_run(response.json()["id"])
    return Run.objects.get(pk=response.json()["id"])


def stale_memory(tenant: Any, user: str, text: str) -> Chunk:
    """A conversation memory of `user` old enough for consolidation to prune (30 days unread)."""
    workspace = Workspace.get_default(tenant)
    session, _ = Session.objects.get_or_create(
        tenant=tenant,
        external_id=f"s-{user}",
        defaults={"workspace": workspace, "channel": workspace.channels.first(), "user_id": user},
    )
    return Chunk.objects.create(
        tenant=tenant,
        session=session,
        workspace=workspace,
        channel=session.channel,
        user_id=user,
        text=text,
        content_hash=text,
        kind="event",
        tier="conversation",
        lifetime="conversation",
        importance=0.5,
        created_at=timezone.now() - timedelta(hours=720),
    )


def everything_text() -> str:
    """Every place a schedule's work can copy words into, as one string."""
    parts = [f"{r.output}\n{r.output_summary}" for r in Run.objects.all()]
    parts += [str(d.payload) for d in Delivery.objects.all()]
    parts += [str(r.deletions) for r in ConsolidationReport.objects.all()]
    return "\n".join(parts)


@pytest.fixture(autouse=True)
def _conversations_prunable(settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # The operator opts conversation memories into consolidation's deletions and has reviewed a
    # first run, so that a run's report names what it deleted.
    settings.MEMORYHUB_CONSOLIDATE_DELETE_KINDS = ("event",)
    monkeypatch.setattr("retrieval.lifecycle.steps.FIRST_REVIEW", False)


@pytest.fixture
def keys(cast) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    tenant = cast.alice_tenant
    return {
        "tenant": cast.alice,
        "writer": make_client(make_key(tenant, scopes=("read", "write"))),
        "ann": make_client(make_key(tenant, scopes=("read", "write"), user="ann")),
        "ann_admin": make_client(make_key(tenant, user="ann")),
        "alpha": make_client(make_key(tenant, workspace="alpha")),
    }


# --- D1: who may schedule what ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("who", "code"),
    [
        ("ann", "insufficient_scope"),  # limited to ann, without the admin scope
        (
            "ann_admin",
            "user_limited_key",
        ),  # the admin scope does not widen a key limited to one user
        ("alpha", "workspace_limited_key"),
        ("writer", "insufficient_scope"),  # the whole tenant, but no admin scope
    ],
)
@pytest.mark.parametrize("action", ["consolidate", "summarise", "embed_backfill"])
def test_a_tenant_wide_action_needs_an_admin_key_for_the_whole_tenant(
    keys, who, code, action
) -> None:  # type: ignore[no-untyped-def]
    params = {"params": {"dry_run": True}} if action == "consolidate" else {}
    response = keys[who].post(URL, body(action, **params), format="json")
    assert response.status_code == 403, response.content
    assert error_code(response) == code
    assert not Schedule.objects.exists()
    assert keys["tenant"].post(URL, body(action, **params), format="json").status_code == 201


def test_a_limited_key_cannot_turn_its_schedule_into_a_tenant_wide_one(keys) -> None:  # type: ignore[no-untyped-def]
    mine = keys["ann_admin"].post(URL, body("prune_runs"), format="json").json()
    response = keys["ann_admin"].patch(
        f"{URL}{mine['id']}/", {"action": "consolidate"}, format="json"
    )
    assert response.status_code == 403 and error_code(response) == "user_limited_key"
    assert Schedule.objects.get(pk=mine["id"]).action == "prune_runs"


def test_a_tenant_wide_schedule_is_not_seen_run_or_changed_by_a_limited_key(keys, cast) -> None:  # type: ignore[no-untyped-def]
    stale_memory(cast.alice_tenant, "bob", BOB_SECRET)
    made = (
        keys["tenant"]
        .post(URL, body("consolidate", params={"dry_run": True}), format="json")
        .json()
    )
    run = run_now(keys["tenant"], made["id"])
    assert run.status == "succeeded", run.output
    assert BOB_SECRET in run.output  # the tenant's admin key may read it: its own report
    for who in ("ann", "ann_admin", "alpha"):
        client = keys[who]
        assert made["id"] not in [s["id"] for s in client.get(URL).json()["results"]]
        for path in (f"{URL}{made['id']}/", f"{URL}{made['id']}/runs/", f"/api/v1/runs/{run.pk}/"):
            assert client.get(path).status_code == 404, (who, path)
        assert client.post(f"{URL}{made['id']}/run/").status_code == 404
    # A tenant-wide key without the admin scope may read it but not run it.
    refused = keys["writer"].post(f"{URL}{made['id']}/run/")
    assert refused.status_code == 403 and error_code(refused) == "insufficient_scope"


def test_a_user_keys_schedule_shows_only_its_users_rows(keys, cast) -> None:  # type: ignore[no-untyped-def]
    stale_memory(cast.alice_tenant, "bob", BOB_SECRET)
    bobs = keys["tenant"].post(URL, body("prune_runs", user_id="bob"), format="json").json()
    shared = keys["tenant"].post(URL, body("prune_runs"), format="json").json()
    for _ in range(3):
        run_now(keys["tenant"], bobs["id"])
        run_now(keys["tenant"], shared["id"])
    mine = keys["ann"].post(URL, body("prune_runs", params={"keep": 1}), format="json").json()
    assert mine["user_id"] == "ann"
    run_now(keys["ann"], mine["id"])
    run = run_now(keys["ann"], mine["id"])
    assert run.status == "succeeded", run.output
    # Only ann's own history was pruned: bob's and the shared schedule's runs are all there.
    assert Run.objects.filter(schedule_id=bobs["id"]).count() == 3
    assert Run.objects.filter(schedule_id=shared["id"]).count() == 3
    assert Run.objects.filter(schedule_id=mine["id"]).count() == 1  # keep 1: this run, the newest
    assert '"schedules": 1' in run.output
    listed = keys["ann"].get(URL).json()["results"]
    assert [s["id"] for s in listed] == [mine["id"]]  # not bob's, not the shared one
    runs = keys["ann"].get(f"{URL}{mine['id']}/runs/").json()["results"]
    assert runs and all(BOB_SECRET not in str(r) for r in runs)


def test_a_revoked_keys_schedule_refuses_to_run(keys, cast) -> None:  # type: ignore[no-untyped-def]
    raw = make_key(cast.alice_tenant, user="ann")
    client = make_client(raw)
    made = client.post(URL, body("prune_runs"), format="json").json()
    queued = keys["tenant"].post(f"{URL}{made['id']}/run/").json()  # the tenant key may run ann's
    ApiKey.objects.get(prefix=ApiKey.parse_prefix(raw)).revoke()
    execute_run(queued["id"])
    run = Run.objects.get(pk=queued["id"])
    assert (run.status, run.error) == ("failed", "key_revoked")
    # Resumed (or changed) by another key, it acts for that key from then on.
    keys["tenant"].post(f"{URL}{made['id']}/pause/")
    assert keys["tenant"].post(f"{URL}{made['id']}/resume/").status_code == 200
    assert run_now(keys["tenant"], made["id"]).status == "succeeded"


def test_a_stored_authority_too_narrow_for_a_tenant_wide_action_refuses_at_run_time(cast) -> None:  # type: ignore[no-untyped-def]
    """E.g. a schedule made before authorities were recorded, for one user: it never acts on the
    tenant."""
    stale_memory(cast.alice_tenant, "bob", BOB_SECRET)
    schedule = Schedule.objects.create(
        tenant=cast.alice_tenant,
        name="old",
        action="consolidate",
        params={"dry_run": True},
        cadence_type="interval",
        cadence_value="3600",
        user_id="ann",
        authority_user_id="ann",
        authority_scopes=["read", "write", "admin"],
    )
    run = Run.objects.create(tenant=cast.alice_tenant, schedule=schedule, manual=True)
    execute_run(str(run.pk))
    run.refresh_from_db()
    assert (run.status, run.error) == ("failed", "tenant_wide_key_required")
    assert BOB_SECRET not in run.output
    unstamped = Schedule.objects.create(
        tenant=cast.alice_tenant,
        name="imported",
        action="prune_runs",
        cadence_type="interval",
        cadence_value="3600",
    )
    run = Run.objects.create(tenant=cast.alice_tenant, schedule=unstamped, manual=True)
    execute_run(str(run.pk))
    run.refresh_from_db()
    assert (run.status, run.error) == ("failed", "no_authority")


# --- D5: forget-user leaves nothing behind ---------------------------------------------------


def test_forget_user_redacts_run_outputs_notifications_and_consolidation_reports(
    keys, cast
) -> None:  # type: ignore[no-untyped-def]
    tenant = cast.alice_tenant
    stale_memory(tenant, "bob", BOB_SECRET)
    stale_memory(tenant, "ann", ANN_TEXT)
    dry = (
        keys["tenant"]
        .post(URL, body("consolidate", params={"dry_run": True}), format="json")
        .json()
    )
    real = (
        keys["tenant"]
        .post(URL, body("consolidate", params={"dry_run": False}), format="json")
        .json()
    )
    assert run_now(keys["tenant"], dry["id"]).status == "succeeded"
    assert run_now(keys["tenant"], real["id"]).status == "succeeded"
    before = everything_text()
    # The words are there before: in both runs' outputs and summaries, their notifications and the
    # report.
    assert before.count(BOB_SECRET) >= 5, before
    assert (
        Delivery.objects.count() == 2 and ConsolidationReport.objects.filter(tenant=tenant).exists()
    )

    response = keys["tenant"].delete("/api/v1/users/bob/")

    assert response.status_code == 200, response.content
    redacted = response.json()["redacted"]
    assert redacted == {
        "lifecycle.ConsolidationReport": 1,
        "scheduling.Delivery": 2,
        "scheduling.Run": 2,
    }
    after = everything_text()
    # his words, his id, his session
    for trace in (BOB_SECRET, '"user_id": "bob"', "'user_id': 'bob'", "s-bob"):
        assert trace not in after, trace
    assert after.count(ANN_TEXT) == before.count(ANN_TEXT)  # ann's words are not hers to lose
    # And through the API: nothing any key reads of the runs names him.
    for client in (keys["tenant"], keys["writer"]):
        for schedule in (dry, real):
            runs = client.get(f"{URL}{schedule['id']}/runs/").json()["results"]
            assert runs and BOB_SECRET not in str(runs)
    # Forgetting again finds nothing more.
    again = keys["tenant"].delete("/api/v1/users/bob/").json()["redacted"]
    assert set(again.values()) == {0}


def test_the_clusters_own_consolidation_keeps_no_words_in_its_task_result(cast) -> None:  # type: ignore[no-untyped-def]
    """Its result is stored by the task queue (and logged), where forget-user does not look: counts
    only; the words stay in the ConsolidationReport, which forget-user redacts."""
    from scheduling import tasks

    stale_memory(cast.alice_tenant, "bob", BOB_SECRET)
    report = tasks.consolidate()
    assert report["counts"]["pruned"] == 1
    assert "deletions" not in report and BOB_SECRET not in str(report)
    assert BOB_SECRET in str(ConsolidationReport.objects.get(pk=report["report_id"]).deletions)


def test_the_operator_resuming_or_saving_a_schedule_in_the_admin_gives_it_the_operators_authority(
    admin_client, cast
) -> None:  # type: ignore[no-untyped-def]
    raw = make_key(cast.alice_tenant, user="ann")
    made = make_client(raw).post(URL, body("prune_runs"), format="json").json()
    make_client(raw).post(f"{URL}{made['id']}/pause/")
    ApiKey.objects.get(prefix=ApiKey.parse_prefix(raw)).revoke()
    admin_client.post(
        "/admin/scheduling/schedule/", {"action": "resume_action", "_selected_action": [made["id"]]}
    )
    schedule = Schedule.objects.get(pk=made["id"])
    assert (schedule.status, schedule.authority_key_id, schedule.authority_key_prefix) == (
        "active",
        None,
        "",
    )
    assert (schedule.authority_user_id, schedule.authority_scopes) == (
        "ann",
        ["read", "write", "admin"],
    )
    run = Run.objects.create(tenant=cast.alice_tenant, schedule=schedule, manual=True)
    execute_run(str(run.pk))
    run.refresh_from_db()
    assert run.status == "succeeded", run.output
    # A tenant-wide action saved in the admin acts for the whole tenant.
    from django.contrib.admin.sites import site

    schedule.action = "consolidate"
    schedule.params = {"dry_run": True}
    site._registry[Schedule].save_model(None, schedule, None, True)
    schedule.refresh_from_db()
    assert (schedule.authority_workspace_id, schedule.authority_user_id) == (None, "")


def test_a_limited_keys_export_carries_no_schedule_acting_beyond_it(keys, cast) -> None:  # type: ignore[no-untyped-def]
    """An export is one more way to read runs: a workspace's or a user's carries only the schedules
    (and runs) acting within it, never a tenant-wide consolidation's report of everyone's words."""
    stale_memory(cast.alice_tenant, "bob", BOB_SECRET)
    tidy = (
        keys["tenant"]
        .post(URL, body("consolidate", params={"dry_run": True}), format="json")
        .json()
    )
    run_now(keys["tenant"], tidy["id"])
    mine = keys["ann"].post(URL, body("prune_runs"), format="json").json()
    run_now(keys["ann"], mine["id"])
    default_key = make_client(make_key(cast.alice_tenant, workspace="default"))
    for who, client in {"ann": keys["ann"], "default": default_key}.items():
        exported = client.post(
            "/api/v1/export/", {"scope": "workspace", "workspace": "default"}, format="json"
        )
        assert exported.status_code == 200, exported.content
        text = exported.content.decode()
        # Neither the tenant-wide schedule nor its report (bob's memory itself is in the
        # workspace: the workspace's key may export it, ann's may not).
        assert "my consolidate" not in text and "relevance_below_prune" not in text, who
        assert (BOB_SECRET in text) == (who == "default"), who
        assert "my prune_runs" in text  # ann's schedule (and runs) still travel
    whole = keys["tenant"].post("/api/v1/export/", {"scope": "tenant"}, format="json")
    assert BOB_SECRET in whole.content.decode()  # the tenant's admin key exports its reports


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_schedules_made_before_it_the_narrowest_authority_that_keeps_them_working(  # noqa: E501
    cast,
) -> None:  # type: ignore[no-untyped-def]
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    before, after = [("scheduling", "0001_squashed_0005")], executor.loader.graph.leaf_nodes()
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    try:
        workspace = Workspace.get_named(cast.alice_tenant, "alpha")
        made = {}
        for name, action, user in [
            ("tidy", "consolidate", ""),
            ("ann's tidy", "consolidate", "ann"),
            ("ann's agent", "agent_goal", "ann"),
            ("shared prune", "prune_runs", ""),
        ]:
            made[name] = (
                old.get_model("scheduling", "Schedule")
                .objects.create(
                    tenant_id=cast.alice_tenant.pk,
                    workspace_id=workspace.pk,
                    user_id=user,
                    name=name,
                    action=action,
                    cadence_type="interval",
                    cadence_value="3600",
                )
                .pk
            )
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(after)
    stamped = {name: Schedule.objects.get(pk=pk) for name, pk in made.items()}
    authority = {
        name: (s.authority_workspace_id, s.authority_user_id, s.authority_scopes)
        for name, s in stamped.items()
    }
    assert authority == {
        "tidy": (None, "", ["read", "write", "admin"]),  # as it ran before: the tenant's
        # perhaps made by ann's key: no authority until an admin key acts
        "ann's tidy": (None, "", []),
        "ann's agent": (workspace.pk, "ann", ["read", "write"]),
        "shared prune": (workspace.pk, "", ["read", "write"]),
    }


def test_stats_count_the_schedules_the_key_lists(keys) -> None:  # type: ignore[no-untyped-def]
    keys["tenant"].post(URL, body("consolidate"), format="json")
    keys["tenant"].post(URL, body("prune_runs", user_id="bob"), format="json")
    keys["ann"].post(URL, body("prune_runs"), format="json")
    for who, total in {"tenant": 3, "ann": 1}.items():
        stats = keys[who].get("/api/v1/stats/").json()
        listed = keys[who].get(URL).json()["count"]
        assert stats["schedules"]["total"] == listed == total, who
