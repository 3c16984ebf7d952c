"""The lifecycle admin: memories with per-tier counts and bulk actions, reports, reviews."""

from __future__ import annotations

from accounts.models import Tenant
from retrieval.lifecycle.consolidation import run_consolidation
from retrieval.lifecycle.models import ConsolidationReport, PendingDeletion
from retrieval.models import Chunk
from tests.retrieval.lifecycle.conftest import NOW


def test_memory_list_shows_tier_counts_relevance_and_filters(staff_client, world) -> None:  # type: ignore[no-untyped-def]
    response = staff_client.get("/admin/lifecycle/memory/")
    assert response.status_code == 200
    counts = {row["tier"]: row for row in response.context["tier_counts"]}
    assert counts["conversation"]["total"] == 9 and counts["conversation"]["long"] == 1
    assert counts["conversation"]["pinned"] == 1 and counts["workspace"]["short"] == 1
    assert b"Memories per tier" in response.content
    for params in (
        {"tier": "workspace"},
        {"pinned": "yes"},
        {"lifetime": "long_term"},
        {"q": "dup"},
        {"o": "10"},
    ):
        assert staff_client.get("/admin/lifecycle/memory/", params).status_code == 200
    pinned = (
        staff_client.get("/admin/lifecycle/memory/", {"pinned": "yes"}).context["cl"].result_list
    )
    assert [m.text for m in pinned] == ["stale pinned"]
    memory = world["m"]["dup_b"]
    assert staff_client.get(f"/admin/lifecycle/memory/{memory.pk}/change/").status_code == 200


def test_bulk_actions_pin_unpin_merge_forget(
    staff_client, world, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    m = world["m"]

    def act(action: str, *memories: Chunk) -> None:
        body = {"action": action, "_selected_action": [x.pk for x in memories]}
        # destructive: a confirmation page in text first
        if action in ("merge_duplicates", "forget"):
            page = staff_client.post("/admin/lifecycle/memory/", body)
            assert page.status_code == 200 and memories[0].text in page.content.decode()
            body["confirm"] = "yes"
        response = staff_client.post("/admin/lifecycle/memory/", body)
        assert response.status_code == 302

    act("pin", m["warm"])
    warm = Chunk.objects.get(pk=m["warm"].pk)
    assert (warm.importance, warm.lifetime, warm.metadata["pinned"]) == (1.0, "long_term", True)
    act("unpin", m["warm"])
    warm.refresh_from_db()
    assert (warm.importance, warm.lifetime, "pinned" in warm.metadata) == (
        0.9,
        "conversation",
        False,
    )

    act("merge_duplicates", m["dup_a"], m["dup_b"], m["other"])
    survivor = Chunk.objects.get(pk=m["dup_b"].pk)  # the most important
    assert {p["chunk_id"] for p in survivor.metadata["merged_from"]} == {
        m["dup_a"].pk,
        m["other"].pk,
    }
    assert not Chunk.objects.filter(pk__in=[m["dup_a"].pk, m["other"].pk]).exists()

    act("forget", m["stale"])
    assert not Chunk.objects.filter(pk=m["stale"].pk).exists()

    Chunk.objects.filter(pk=m["hot"].pk).update(embedding=None, embedding_model="")
    with django_capture_on_commit_callbacks(execute=True):
        act("reembed", m["hot"])
    assert Chunk.objects.get(pk=m["hot"].pk).embedding is not None


def test_merge_refuses_memories_of_two_tenants(staff_client, world, cast) -> None:  # type: ignore[no-untyped-def]
    other = Chunk.objects.create(tenant=cast.bob_tenant, text="bob", content_hash="b")
    response = staff_client.post(
        "/admin/lifecycle/memory/",
        {"action": "merge_duplicates", "_selected_action": [world["m"]["dup_a"].pk, other.pk]},
        follow=True,
    )
    assert b"one tenant" in response.content
    assert Chunk.objects.filter(pk__in=[world["m"]["dup_a"].pk, other.pk]).count() == 2


def test_reports_and_reviews(staff_client, world) -> None:  # type: ignore[no-untyped-def]
    Tenant.objects.filter(pk=world["tenant"].pk).update(review_deletions=True)
    run_consolidation(tenant_id=world["tenant"].pk, now=NOW)
    report = ConsolidationReport.objects.get()
    response = staff_client.get("/admin/lifecycle/consolidationreport/")
    assert response.status_code == 200
    assert (
        staff_client.get(f"/admin/lifecycle/consolidationreport/{report.pk}/change/").status_code
        == 200
    )
    assert staff_client.get("/admin/lifecycle/pendingdeletion/").status_code == 200
    prune = PendingDeletion.objects.get(step="prune")
    merge = PendingDeletion.objects.get(step="merge")
    page = staff_client.get(f"/admin/lifecycle/pendingdeletion/{prune.pk}/change/")
    assert page.status_code == 200 and b"stale" in page.content

    page = staff_client.post(
        "/admin/lifecycle/pendingdeletion/", {"action": "approve", "_selected_action": [prune.pk]}
    )
    assert page.status_code == 200 and b"stale" in page.content  # what goes, in text
    staff_client.post(
        "/admin/lifecycle/pendingdeletion/",
        {"action": "approve", "_selected_action": [prune.pk], "confirm": "yes"},
    )
    staff_client.post(
        "/admin/lifecycle/pendingdeletion/",
        {"action": "reject", "_selected_action": [merge.pk], "confirm": "yes"},
    )
    prune.refresh_from_db()
    merge.refresh_from_db()
    assert (prune.status, prune.decided_by, merge.status) == ("approved", "op", "rejected")
    assert not Chunk.objects.filter(pk=world["m"]["stale"].pk).exists()
    assert Chunk.objects.filter(pk=world["m"]["dup_a"].pk).exists()
