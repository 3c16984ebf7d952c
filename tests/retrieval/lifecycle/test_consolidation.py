"""Consolidation (docs/lifecycle.md): promote, prune, merge, cap, compress; dry run; reports;
reviews."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
import time_machine
from django.core.management import call_command
from django.db import transaction

from accounts.models import Tenant
from memoryhub.models import Event, Session
from retrieval.lifecycle import consolidation, duplicates, memories, review, steps
from retrieval.lifecycle.consolidation import run_consolidation
from retrieval.lifecycle.models import ConsolidationReport, PendingDeletion
from retrieval.models import Chunk, ChunkAccess
from tests.base import add_memories, make_tenant
from tests.retrieval.lifecycle.conftest import NOW, ids, make_session, memory


def test_real_run_promotes_prunes_merges_and_stores_a_report(world) -> None:  # type: ignore[no-untyped-def]
    tenant, m = world["tenant"], world["m"]

    result = run_consolidation(tenant_id=tenant.pk, now=NOW)

    c = result["counts"]
    assert c["promoted"] == 1 and result["ids"]["promoted"] == [m["hot"].pk]
    assert c["pruned"] == 1 and result["ids"]["pruned"] == [m["stale"].pk]
    assert c["merged"] == 1 and c["merge_groups"] == 1
    assert result["ids"]["merged"] == [[m["dup_b"].pk, m["dup_a"].pk]]
    assert c.get("capped", 0) == 0 and c.get("held_for_review", 0) == 0
    assert c["scored"] == 9  # every memory but the long-term one
    remaining = ids(tenant)
    assert m["stale"].pk not in remaining and m["dup_a"].pk not in remaining
    assert {
        m["stale_pinned"].pk,
        m["stale_long_term"].pk,
        m["stale_note"].pk,
        m["elsewhere"].pk,
    } <= remaining

    hot, warm = Chunk.objects.get(pk=m["hot"].pk), Chunk.objects.get(pk=m["warm"].pk)
    assert hot.lifetime == "long_term" and warm.lifetime == "conversation"
    survivor = Chunk.objects.with_access().get(pk=m["dup_b"].pk)
    assert survivor.importance == 0.8 and survivor.access_count == 3
    assert (survivor.sequence_start, survivor.sequence_end) == (3, 7)
    [provenance] = survivor.metadata["merged_from"]
    assert provenance["chunk_id"] == m["dup_a"].pk and provenance["session"] == "s2"
    assert provenance["text"] == "the flight leaves at nine" and provenance["importance"] == 0.4

    report = ConsolidationReport.objects.get(pk=result["report_id"])
    assert report.tenant_id == tenant.pk and report.finished_at is not None
    assert report.counts["pruned"] == 1 and report.ids["pruned"] == [m["stale"].pk]
    # A second run finds nothing more to do.
    again = run_consolidation(tenant_id=tenant.pk, now=NOW)["counts"]
    assert again.get("promoted", 0) == again.get("pruned", 0) == again.get("merged", 0) == 0


def test_dry_run_reports_the_same_counts_and_changes_nothing(world) -> None:  # type: ignore[no-untyped-def]
    tenant = world["tenant"]
    before = list(Chunk.objects.filter(tenant=tenant).order_by("id").values())
    dry = run_consolidation(tenant_id=tenant.pk, dry_run=True, now=NOW)
    assert list(Chunk.objects.filter(tenant=tenant).order_by("id").values()) == before
    assert not ConsolidationReport.objects.exists() and dry["report_id"] is None
    real = run_consolidation(tenant_id=tenant.pk, now=NOW)
    assert dry["counts"] == real["counts"] and dry["ids"] == real["ids"]


def test_immutable_transcript_is_never_pruned(world) -> None:  # type: ignore[no-untyped-def]
    tenant = world["tenant"]
    Tenant.objects.filter(pk=tenant.pk).update(immutable_transcript=True)
    result = run_consolidation(tenant_id=tenant.pk, now=NOW)
    assert result["counts"].get("pruned", 0) == 0
    assert result["counts"]["prune_skipped_immutable"] == 1
    assert Chunk.objects.filter(pk=world["m"]["stale"].pk).exists()


def test_cap_deletes_the_least_relevant_of_each_scope(world, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    tenant, m = world["tenant"], world["m"]
    monkeypatch.setattr("retrieval.lifecycle.steps.CAP_PER_SCOPE", 3)
    result = run_consolidation(tenant_id=tenant.pk, now=NOW)
    # s1 keeps hot, warm, stale_pinned (pinned first), stale_long_term... the cap is on all
    # memories of the scope, and only non-pinned events can go.
    left_in_s1 = Chunk.objects.filter(tenant=tenant, session=world["s1"])
    kept = set(left_in_s1.values_list("id", flat=True))
    assert m["stale_pinned"].pk in kept
    assert m["hot"].pk in kept and m["warm"].pk in kept
    assert m["elsewhere"].pk not in kept and m["stale_long_term"].pk not in kept
    assert result["counts"]["capped"] == len(result["ids"]["capped"]) == 2
    assert len(kept) == 3
    # s2 held dup_b and other after the merge: under the cap.
    assert Chunk.objects.filter(tenant=tenant, session=world["s2"]).count() == 2


def test_review_holds_deletions_until_approved(world) -> None:  # type: ignore[no-untyped-def]
    tenant, m = world["tenant"], world["m"]
    Tenant.objects.filter(pk=tenant.pk).update(review_deletions=True)
    # The stale chunk is a message's: its event, which the report names it by.
    stale_event = Event.objects.create(
        tenant=tenant, session=world["s1"], sequence=4, role="user", content="stale", importance=0.5
    )
    Chunk.objects.filter(pk=m["stale"].pk).update(sequence_start=4, sequence_end=4)
    before = ids(tenant)

    result = run_consolidation(tenant_id=tenant.pk, now=NOW)

    c = result["counts"]
    assert c["held_for_review"] == 2  # one prune, one merge
    # The counts say what happened: nothing was pruned or merged, two deletions wait.
    assert c["pruned"] == c["merged"] == c["merge_groups"] == c["capped"] == 0
    assert (c["prune_held"], c["merge_held"]) == (1, 1)
    assert "pruned" not in result["ids"] and "merged" not in result["ids"]
    assert sorted(result["ids"]["held_for_review"]) == sorted([m["stale"].pk, m["dup_a"].pk])
    assert result["review"]["held_for_review"] == 2
    assert result["review"]["reason"] == steps.REVIEW_EVERY
    assert result["review"]["review_at"].startswith(
        "/admin/lifecycle/pendingdeletion/?status__exact=pending"
    )
    assert all(d["held"] for d in result["deletions"])
    # Each deletion names its memory by its own id (an event's id here), the chunk apart.
    by_chunk = {d["chunk_id"]: d for d in result["deletions"]}
    assert by_chunk[m["stale"].pk]["id"] == stale_event.pk
    assert by_chunk[m["dup_a"].pk]["merged_into"]["chunk_id"] == m["dup_b"].pk
    report = ConsolidationReport.objects.get(pk=result["report_id"])
    assert report.counts["review"]["reason"] == steps.REVIEW_EVERY and report.counts["merged"] == 0
    assert ids(tenant) == before
    assert Chunk.objects.get(pk=m["hot"].pk).lifetime == "long_term"  # promotion is not a deletion
    held = {p.step: p for p in PendingDeletion.objects.filter(tenant=tenant)}
    assert set(held) == {"prune", "merge"} and all(p.status == "pending" for p in held.values())
    assert held["merge"].payload == {"survivor": m["dup_b"].pk}

    assert review.approve_pending(held["prune"].pk, by="op") == {"deleted": 1}
    assert not Chunk.objects.filter(pk=m["stale"].pk).exists()
    review.reject_pending(held["merge"].pk, by="op")
    assert Chunk.objects.filter(pk=m["dup_a"].pk).exists()
    held["prune"].refresh_from_db()
    assert held["prune"].status == "approved" and held["prune"].decided_by == "op"
    with pytest.raises(review.ReviewError):
        review.approve_pending(held["merge"].pk)


def test_approving_a_held_merge_applies_it(world) -> None:  # type: ignore[no-untyped-def]
    tenant, m = world["tenant"], world["m"]
    Tenant.objects.filter(pk=tenant.pk).update(review_deletions=True)
    run_consolidation(tenant_id=tenant.pk, now=NOW)
    merge = PendingDeletion.objects.get(tenant=tenant, step="merge")
    assert review.approve_pending(merge.pk) == {"deleted": 1}
    assert Chunk.objects.with_access().get(pk=m["dup_b"].pk).access_count == 3


def test_consolidation_of_one_tenant_never_touches_another(world) -> None:  # type: ignore[no-untyped-def]
    other = make_tenant("untouched")
    stale = memory(other, make_session(other, "s1"), "stale", hours=720)
    run_consolidation(tenant_id=world["tenant"].pk, now=NOW)
    assert Chunk.objects.filter(pk=stale.pk).exists()
    result = run_consolidation(now=NOW)  # every tenant
    assert not Chunk.objects.filter(pk=stale.pk).exists()
    assert result["tenants"]["untouched"]["pruned"] == 1
    assert ConsolidationReport.objects.filter(tenant__isnull=True).count() == 1


def test_compress_candidates_are_idle_conversations(world, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    tenant = world["tenant"]
    monkeypatch.setattr("retrieval.lifecycle.steps.COMPRESS_AFTER_HOURS", 48)
    Session.objects.filter(pk=world["s1"].pk).update(
        updated_at=NOW - timedelta(hours=100), event_count=4, last_sequence=4
    )
    # active just now
    Session.objects.filter(pk=world["s2"].pk).update(event_count=4, last_sequence=4)
    result = run_consolidation(tenant_id=tenant.pk, dry_run=True, now=NOW)
    assert result["counts"]["compress_candidates"] == 1
    assert result["counts"]["compressed"] == 1  # dry run: counted, nothing built


def test_consolidate_command_dry_run_and_real(world) -> None:  # type: ignore[no-untyped-def]
    out, err = StringIO(), StringIO()
    with time_machine.travel(NOW, tick=False):
        call_command("consolidate", "--tenant", "consolidated", "--dry-run", stdout=out, stderr=err)
        dry = json.loads(out.getvalue())
        assert dry["dry_run"] is True and dry["counts"]["pruned"] == 1
        assert Chunk.objects.filter(pk=world["m"]["stale"].pk).exists()
        out = StringIO()
        call_command("consolidate", "--tenant", "consolidated", "--no-progress", stdout=out)
    real = json.loads(out.getvalue())
    assert real["report_id"] and real["counts"] == dry["counts"]
    assert not Chunk.objects.filter(pk=world["m"]["stale"].pk).exists()
    assert Event.objects.count() == 0  # the fixture has no events; consolidation never makes any


def test_a_failing_run_records_its_error_and_rolls_back_the_tenant(world, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def broken(run: Any) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setitem(consolidation.STEP_FUNCTIONS, "merge", broken)
    with pytest.raises(RuntimeError):
        run_consolidation(tenant_id=world["tenant"].pk, now=NOW)
    report = ConsolidationReport.objects.get()
    assert report.error == "RuntimeError: disk on fire" and report.finished_at is not None
    # The tenant's transaction rolled back: nothing was promoted or pruned.
    assert Chunk.objects.filter(pk=world["m"]["stale"].pk).exists()
    assert Chunk.objects.get(pk=world["m"]["hot"].pk).lifetime == "conversation"


def test_large_scopes_find_duplicates_through_the_index(world, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    m = world["m"]
    exact = duplicates.find_duplicates(world["tenant"].pk, ["event"], set())
    monkeypatch.setattr(duplicates, "EXACT_MAX", 1)  # every scope now counts as large
    with transaction.atomic():
        approximate = duplicates.find_duplicates(world["tenant"].pk, ["event"], set())
    assert (
        [(a, b) for a, b, _ in exact]
        == [(a, b) for a, b, _ in approximate]
        == [(m["dup_a"].pk, m["dup_b"].pk)]
    )
    assert exact[0][2] == pytest.approx(approximate[0][2])


def test_facts_are_promoted_with_their_chunks(world) -> None:  # type: ignore[no-untyped-def]
    from memoryhub.models import Fact

    fact = add_memories(world["tenant"], "s1")["fact"]
    ChunkAccess.objects.create(
        chunk=Chunk.objects.get(kind="fact", source_id=str(fact.pk)),
        access_count=9,
        accessed_at=NOW,
    )
    result = run_consolidation(tenant_id=world["tenant"].pk, now=NOW)
    assert Chunk.objects.get(kind="fact", source_id=str(fact.pk)).pk in result["ids"]["promoted"]
    assert Fact.objects.get(pk=fact.pk).lifetime == "long_term"


def test_deleting_a_note_or_fact_memory_deletes_its_row_and_all_its_chunks(world, settings) -> None:  # type: ignore[no-untyped-def]
    from memoryhub.models import Fact, Note

    made = add_memories(world["tenant"], "s1")
    fact, note = made["fact"], made["note"]
    # short-term, stale
    Chunk.objects.filter(kind="fact").update(created_at=NOW - timedelta(days=400))
    settings.MEMORYHUB_CONSOLIDATE_DELETE_KINDS = ("event", "fact")
    result = run_consolidation(tenant_id=world["tenant"].pk, now=NOW)
    # The stale event goes; the stale fact has a key, so its removal waits for an operator.
    assert result["counts"]["pruned"] == 1 and result["counts"]["prune_held"] == 1
    assert Fact.objects.filter(pk=fact.pk).exists()
    review.approve_pending(
        PendingDeletion.objects.get(tenant=world["tenant"], status="pending").pk, by="op"
    )
    assert not Fact.objects.filter(pk=fact.pk).exists()
    assert not Chunk.objects.filter(kind="fact").exists()
    # Notes are long-term: never pruned, whatever their age.
    assert Note.objects.filter(pk=note.pk).exists()
    assert (
        memories.delete_memories(
            tenant_id=world["tenant"].pk,
            chunk_ids=list(
                Chunk.objects.filter(source_id=note.note_id).values_list("id", flat=True)
            ),
        )
        == 1
    )
    assert not Note.objects.filter(pk=note.pk).exists()


def test_idle_conversations_are_compressed_into_a_summary_tree(
    cast, index, settings, django_capture_on_commit_callbacks, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    from memoryhub.models import SummaryNode
    from retrieval.lifecycle.models import CompressedConversation

    monkeypatch.setattr("retrieval.lifecycle.steps.COMPRESS_AFTER_HOURS", 48)
    for name in ("old", "fresh"):
        index(
            cast.alice,
            name,
            *[{"role": "user", "content": f"{name} message {i} about kumquats"} for i in range(5)],
        )
    Session.objects.filter(external_id="old").update(updated_at=NOW - timedelta(days=5))
    Session.objects.filter(external_id="fresh").update(updated_at=NOW)
    tenant = cast.alice_tenant

    dry = run_consolidation(tenant_id=tenant.pk, dry_run=True, now=NOW)
    assert dry["counts"]["compressed"] == 1 and not SummaryNode.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        real = run_consolidation(tenant_id=tenant.pk, now=NOW)

    assert real["counts"]["compressed"] == 1 and real["ids"]["compressed"] == ["old"]
    old = Session.objects.get(external_id="old")
    assert SummaryNode.objects.filter(session=old).exists()
    assert not SummaryNode.objects.filter(session__external_id="fresh").exists()
    assert Chunk.objects.filter(tenant=tenant, kind="summary", session=old).exists()  # searchable
    assert CompressedConversation.objects.get(session=old).upper_sequence == 5
    assert Event.objects.filter(session=old).count() == 5  # the transcript stays
    # each message of the compressed conversation says when consolidation covered it
    assert not Event.objects.filter(session=old, consolidated_at__isnull=True).exists()
    assert not Event.objects.filter(
        session__external_id="fresh", consolidated_at__isnull=False
    ).exists()
    assert Session.objects.get(external_id="old").consolidated_to == 5
    again = run_consolidation(tenant_id=tenant.pk, now=NOW)
    assert again["counts"]["compress_candidates"] == 0


def test_no_deletable_kinds_means_nothing_is_deleted(world, settings) -> None:  # type: ignore[no-untyped-def]
    settings.MEMORYHUB_CONSOLIDATE_DELETE_KINDS = ()
    before = ids(world["tenant"])
    result = run_consolidation(tenant_id=world["tenant"].pk, now=NOW)
    assert ids(world["tenant"]) == before
    assert result["counts"]["promoted"] == 1
    assert (
        result["counts"]["pruned"] == result["counts"]["merged"] == result["counts"]["capped"] == 0
    )


@pytest.mark.django_db(transaction=True)
def test_appends_go_on_while_their_tenant_is_consolidated(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Consolidation holds its tenant's row for the whole run (one run per tenant at a time), but
    an append, whose inserts reference that row, must not wait for it."""
    import threading

    from django.db import OperationalError, connection

    from tests.base import make_client, make_key, new_session, post_events

    tenant = make_tenant("busy")
    client = make_client(make_key(tenant))
    new_session(client, "s1")
    inside, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []
    score = consolidation.STEP_FUNCTIONS["score"]

    def held_score(run: Any) -> None:
        score(run)
        inside.set()
        release.wait(20)

    monkeypatch.setitem(consolidation.STEP_FUNCTIONS, "score", held_score)

    def consolidate() -> None:
        try:
            run_consolidation(tenant_id=tenant.pk)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    worker = threading.Thread(target=consolidate)
    worker.start()
    try:
        assert inside.wait(20)
        with connection.cursor() as cursor:  # an append that waited would fail here, not hang
            cursor.execute("SET lock_timeout = '3s'")
        try:
            response = post_events(
                client, "s1", {"role": "user", "content": "written during a consolidation"}
            )
            assert response.status_code == 201, response.content
            with (
                pytest.raises(OperationalError, match="lock"),
                transaction.atomic(),
                connection.cursor() as cursor,
            ):
                # ...while a second consolidation of the tenant still waits for the first
                cursor.execute(
                    "SELECT 1 FROM accounts_tenant WHERE id = %s FOR NO KEY UPDATE NOWAIT",
                    [tenant.pk],
                )
        finally:
            with connection.cursor() as cursor:
                cursor.execute("RESET lock_timeout")
    finally:
        release.set()
        worker.join(30)
    assert not errors and not worker.is_alive()
    assert (
        Event.objects.filter(
            session__tenant=tenant, content="written during a consolidation"
        ).count()
        == 1
    )


def test_a_facts_superseded_versions_are_history_not_memories_to_consolidate(world) -> None:  # type: ignore[no-untyped-def]
    """The chunks of a fact's closed versions are neither scored, pruned, capped nor merged
    (a closed "the flight leaves at nine" stays beside the current duplicates, untouched)."""
    from tests.retrieval.lifecycle.conftest import vector

    tenant, m = world["tenant"], world["m"]
    closed = memory(
        tenant,
        world["s2"],
        "the flight leaves at nine.",
        hours=720,
        kind="fact",
        source_id="77",
        embedding=vector(1, 0.015),
        embedding_model="hash",
        valid_to=NOW - timedelta(hours=1),
    )
    result = run_consolidation(tenant_id=tenant.pk, now=NOW)
    assert result["counts"]["scored"] == 9 and result["ids"]["pruned"] == [m["stale"].pk]
    assert closed.pk not in {pk for group in result["ids"]["merged"] for pk in group}
    assert Chunk.every_version.filter(pk=closed.pk).exists()
