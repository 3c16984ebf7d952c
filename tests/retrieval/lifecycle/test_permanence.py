"""The transcript is permanent by default; consolidation deletes only derived memories, never
unseen the first time, never merges what says different things, and can give back what it took."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memoryhub.models import Fact, Note, Session
from retrieval.indexing import rebuild_event_chunks
from retrieval.lifecycle import archive, review
from retrieval.lifecycle.consolidation import run_consolidation
from retrieval.lifecycle.models import ArchivedMemory, ConsolidationReport, PendingDeletion
from retrieval.models import Chunk, ChunkAccess
from tests.base import error_code, make_client, make_key, remember, search_texts
from tests.retrieval.lifecycle.conftest import NOW, make_session, memory, vector


@pytest.fixture(autouse=True)
def _defaults(settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # The product's defaults, whatever the folder's conftest sets for the step tests.
    settings.MEMORYHUB_CONSOLIDATE_DELETE_KINDS = ("note", "fact", "summary")
    monkeypatch.setattr("retrieval.lifecycle.steps.FIRST_REVIEW", True)


def test_a_year_old_history_stays_searchable_after_consolidation(cast, index) -> None:
    year_ago = (timezone.now() - timedelta(days=400)).isoformat()
    lines = ["We had the adoption agency interviews today.", *[f"old line {i}" for i in range(30)]]
    index(
        cast.alice,
        "history",
        *[{"role": "user", "content": t, "created_at": year_ago} for t in lines],
    )
    before = Chunk.objects.filter(tenant=cast.alice_tenant, kind="event").count()

    result = run_consolidation(tenant_id=cast.alice_tenant.pk)

    assert result["counts"]["pruned"] == 0 and result["counts"].get("held_for_review", 0) == 0
    assert (
        Chunk.objects.filter(tenant=cast.alice_tenant, kind="event").count() == before == len(lines)
    )
    assert "We had the adoption agency interviews today." in search_texts(
        cast.alice, query="adoption agency interviews", mode="text"
    )


def test_a_user_and_assistant_pair_with_different_text_is_never_merged(
    db, settings, monkeypatch
) -> None:
    settings.MEMORYHUB_CONSOLIDATE_DELETE_KINDS = ("event",)
    monkeypatch.setattr("retrieval.lifecycle.steps.FIRST_REVIEW", False)
    from tests.base import make_tenant

    tenant = make_tenant("pairs")
    session = make_session(tenant, "trip")
    same = vector(1, 0.001)  # contextual embeddings of a question and its answer can coincide
    question = memory(
        tenant,
        session,
        "When does my Lisbon flight leave?",
        role="user",
        embedding=same,
        embedding_model="hash",
    )
    answer = memory(
        tenant,
        session,
        "Noted, the Lisbon flight leaves at 09:40.",
        role="assistant",
        embedding=same,
        embedding_model="hash",
    )
    reworded = memory(
        tenant,
        session,
        "Book me a table for two tonight.",
        role="user",
        embedding=same,
        embedding_model="hash",
    )
    other_owner = memory(
        tenant,
        session,
        "When does my Lisbon flight leave?",
        role="user",
        user_id="bob",
        embedding=same,
        embedding_model="hash",
    )

    result = run_consolidation(tenant_id=tenant.pk, now=NOW)

    assert result["counts"]["merged"] == 0
    assert set(Chunk.objects.filter(tenant=tenant).values_list("id", flat=True)) == {
        question.pk,
        answer.pk,
        reworded.pk,
        other_owner.pk,
    }


def test_the_first_destructive_run_is_held_for_review_with_text_and_can_be_restored(cast) -> None:
    tenant = cast.alice_tenant
    note = Note.objects.create(
        tenant=tenant, note_id="note-old", content="an old shopping list", tier="account"
    )
    remember(note)
    # Its chunk has decayed far below the prune line.
    Chunk.objects.filter(kind="note", source_id="note-old").update(
        created_at=timezone.now() - timedelta(days=400), lifetime="short_term"
    )
    assert Chunk.objects.filter(kind="note", source_id="note-old").exists()

    first = run_consolidation(tenant_id=tenant.pk)

    assert first["counts"]["held_for_review"] == 1 and Note.objects.filter(pk=note.pk).exists()
    [deletion] = first["deletions"]
    assert (deletion["step"], deletion["kind"], deletion["text"]) == (
        "prune",
        "note",
        "an old shopping list",
    )
    # named by the note's own id; its chunk's id apart
    chunk = Chunk.objects.get(kind="note", source_id="note-old")
    assert (deletion["id"], deletion["chunk_id"], deletion["held"]) == ("note-old", chunk.pk, True)
    # The report says it was held, why, and where: nothing was pruned.
    assert first["counts"]["pruned"] == 0 and first["counts"]["prune_held"] == 1
    assert (
        first["review"]["reason"]
        == "first destructive run of this tenant waits for an operator's review"
    )
    assert first["review"]["review_at"] == (
        f"/admin/lifecycle/pendingdeletion/?status__exact=pending&tenant__id__exact={tenant.pk}"
    )
    [pending] = PendingDeletion.objects.filter(tenant=tenant)

    review.approve_pending(pending.pk, by="op")
    assert not Note.objects.filter(note_id="note-old").exists()
    [archived] = ArchivedMemory.objects.filter(tenant=tenant)
    assert (archived.reason, archived.kind, archived.text) == (
        "prune",
        "note",
        "an old shopping list",
    )

    assert archive.restore([archived.pk]) == {"restored": 1, "conflicts": 0, "gone": 0}
    assert Note.objects.get(note_id="note-old").content == "an old shopping list"
    assert "an old shopping list" in search_texts(cast.alice, query="shopping list", mode="text")
    # An operator has now decided a review: the next runs act without holding.
    Chunk.objects.filter(kind="note", source_id="note-old").update(
        created_at=timezone.now() - timedelta(days=400), lifetime="short_term"
    )
    # (the search above was an access)
    ChunkAccess.objects.filter(chunk__kind="note", chunk__source_id="note-old").delete()
    assert run_consolidation(tenant_id=tenant.pk)["counts"]["pruned"] == 1
    assert not Note.objects.filter(note_id="note-old").exists()


def test_a_report_names_notes_and_facts_by_their_own_ids(cast) -> None:
    tenant = cast.alice_tenant
    note = remember(
        Note.objects.create(
            tenant=tenant, note_id="note-7", content="an old grocery note", tier="account"
        )
    )
    fact = remember(
        Fact.objects.create(
            tenant=tenant,
            content="The old locker code was 12",
            tier="account",
            lifetime="short_term",
        )
    )
    Chunk.objects.filter(kind__in=["note", "fact"]).update(
        created_at=timezone.now() - timedelta(days=400), lifetime="short_term"
    )
    chunks = dict(Chunk.objects.filter(kind__in=["note", "fact"]).values_list("kind", "id"))

    result = run_consolidation(tenant_id=tenant.pk, dry_run=True)

    by_kind = {d["kind"]: d for d in result["deletions"]}
    assert (by_kind["note"]["id"], by_kind["note"]["chunk_id"]) == (note.note_id, chunks["note"])
    assert (by_kind["fact"]["id"], by_kind["fact"]["chunk_id"]) == (fact.pk, chunks["fact"])
    # held, as a first destructive run is (a preview says so too): nothing counted as pruned
    assert result["counts"]["pruned"] == 0 and result["counts"]["held_for_review"] == 2
    assert result["review"]["held_for_review"] == 2


def test_pruned_event_chunks_are_rebuilt_from_the_log(cast, index) -> None:
    index(
        cast.alice,
        "s",
        {"role": "user", "content": "first"},
        {"role": "user", "content": "second"},
        {"role": "assistant", "content": "third"},
    )
    session = Session.objects.get(external_id="s")
    originals = {
        c.sequence_start: (c.text, c.context) for c in Chunk.objects.filter(session=session)
    }
    Chunk.objects.filter(session=session, sequence_start__in=[2, 3]).delete()  # as an old prune did

    assert rebuild_event_chunks(tenant_id=cast.alice_tenant.pk) == 2
    rebuilt = {c.sequence_start: (c.text, c.context) for c in Chunk.objects.filter(session=session)}
    assert rebuilt == originals  # same text, same conversation context
    assert rebuild_event_chunks() == 0  # nothing left to rebuild


def test_the_api_previews_consolidation_by_default(cast) -> None:
    tenant = cast.alice_tenant
    note = Note.objects.create(
        tenant=tenant, note_id="note-old", content="an old shopping list", tier="account"
    )
    remember(note)
    Chunk.objects.filter(kind="note").update(
        created_at=timezone.now() - timedelta(days=400), lifetime="short_term"
    )
    response = cast.alice.post("/api/v1/consolidation/", {}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["dry_run"] is True and body["report_id"] is None
    assert [d["text"] for d in body["deletions"]] == ["an old shopping list"]
    assert Note.objects.filter(note_id="note-old").exists() and not PendingDeletion.objects.exists()
    assert (
        cast.alice.post(
            "/api/v1/consolidation/", {"dry_run": "yes please"}, format="json"
        ).status_code
        == 400
    )
    # bob's key consolidates bob's tenant only: alice's note is not his to preview.
    assert cast.bob.post("/api/v1/consolidation/", {}, format="json").json()["deletions"] == []


@pytest.mark.parametrize(
    ("limit", "code"),
    [({"workspace": "alpha"}, "workspace_limited_key"), ({"user": "ann"}, "user_limited_key")],
)
def test_the_api_consolidates_only_with_a_key_of_the_whole_tenant(cast, limit, code) -> None:
    # The refusal export, forget-user, schedules and webhooks give a key that is not tenant-wide.
    limited = make_client(make_key(cast.alice_tenant, **limit))
    response = limited.post("/api/v1/consolidation/", {"dry_run": False}, format="json")
    assert response.status_code == 403 and error_code(response) == code
    assert not ConsolidationReport.objects.exists()


def test_archived_memories_are_listed_and_restored_in_the_admin(admin_client, cast) -> None:
    tenant = cast.alice_tenant
    note = Note.objects.create(
        tenant=tenant, note_id="note-x", content="the boiler code is 4471", tier="account"
    )
    remember(note)
    from retrieval.lifecycle.memories import delete_memories

    delete_memories(
        tenant_id=tenant.pk,
        chunk_ids=list(Chunk.objects.filter(kind="note").values_list("pk", flat=True)),
        reason="forget",
    )
    page = admin_client.get("/admin/lifecycle/archivedmemory/")
    assert page.status_code == 200 and "the boiler code is 4471" in page.content.decode()
    archived = ArchivedMemory.objects.get(tenant=tenant)
    admin_client.post(
        "/admin/lifecycle/archivedmemory/", {"action": "restore", "_selected_action": [archived.pk]}
    )
    assert Note.objects.filter(note_id="note-x").exists()
    assert Chunk.objects.filter(kind="note", source_id="note-x").exists()


RULE = (
    "Rule {n}: always confirm the booking reference with the customer before charging their card."
)


def _decide_a_first_review(tenant) -> None:  # type: ignore[no-untyped-def]
    """An old note's prune held on the tenant's first destructive run, then approved by an operator:
    from then on consolidation acts without holding (unless a deletion must always be reviewed)."""
    remember(
        Note.objects.create(
            tenant=tenant, note_id="note-old", content="an old shopping list", tier="account"
        )
    )
    Chunk.objects.filter(kind="note", source_id="note-old").update(
        created_at=timezone.now() - timedelta(days=400), lifetime="short_term"
    )
    run_consolidation(tenant_id=tenant.pk)
    [pending] = PendingDeletion.objects.filter(tenant=tenant)
    review.approve_pending(pending.pk, by="op")


def _keyed_rule(tenant, n: int, **fields) -> Fact:  # type: ignore[no-untyped-def]
    fact = remember(
        Fact.objects.create(
            tenant=tenant,
            content=RULE.format(n=n),
            key=f"rule{n}",
            category="rules",
            importance=0.9,
            tier="account",
            **fields,
        )
    )
    # The same vector for both: near-duplicates as far as the embedding can tell.
    Chunk.objects.filter(kind="fact", source_id=str(fact.pk)).update(
        embedding=vector(1, 0.001), embedding_model="hash"
    )
    return fact


def test_keyed_facts_that_differ_only_by_a_number_are_never_merged(cast) -> None:
    tenant = cast.alice_tenant
    _decide_a_first_review(tenant)
    rule2, rule4 = _keyed_rule(tenant, 2), _keyed_rule(tenant, 4)

    second = run_consolidation(tenant_id=tenant.pk)

    assert second["counts"]["merged"] == 0 and second["counts"].get("merge_held", 0) == 0
    assert {(f.key, f.content) for f in Fact.objects.filter(tenant=tenant)} == {
        ("rule2", RULE.format(n=2)),
        ("rule4", RULE.format(n=4)),
    }
    assert (
        Chunk.objects.filter(kind="fact", source_id__in=[str(rule2.pk), str(rule4.pk)]).count() == 2
    )


def test_texts_that_differ_in_a_number_a_date_or_a_name_are_not_duplicates(
    cast, monkeypatch
) -> None:
    from retrieval.lifecycle.duplicates import same_details

    monkeypatch.setattr("retrieval.lifecycle.steps.FIRST_REVIEW", False)
    tenant = cast.alice_tenant
    pairs = [
        (
            "The gate code for the building is 4471 and it changes monthly.",
            "The gate code for the building is 4472 and it changes monthly.",
        ),
        (
            "The team dinner at the harbour restaurant is booked for Friday evening.",
            "The team dinner at the harbour restaurant is booked for Saturday evening.",
        ),
        (
            "Please send the signed quarterly report to Maria before the meeting.",
            "Please send the signed quarterly report to Joao before the meeting.",
        ),
        (
            "We meet for the weekly planning call at three in the afternoon.",
            "We meet for the weekly planning call at four in the afternoon.",
        ),
    ]
    for n, (a, b) in enumerate(pairs):
        assert not same_details(a, b)
        for side, text in (("a", a), ("b", b)):
            remember(
                Note.objects.create(
                    tenant=tenant, note_id=f"n{n}{side}", content=text, tier="account"
                )
            )
    assert same_details("the flight leaves at nine", "The flight leaves at nine!")
    Chunk.objects.filter(kind="note").update(embedding=vector(1, 0.001), embedding_model="hash")

    result = run_consolidation(tenant_id=tenant.pk)

    assert result["counts"]["merged"] == 0
    assert Note.objects.filter(tenant=tenant).count() == 2 * len(pairs)


def test_removing_a_keyed_fact_is_held_for_review_whatever_was_decided_before(cast) -> None:
    tenant = cast.alice_tenant
    _decide_a_first_review(tenant)
    stale = remember(
        Fact.objects.create(
            tenant=tenant,
            content="The old locker code was 12",
            key="locker",
            tier="account",
            lifetime="short_term",
        )
    )
    unkeyed = remember(
        Fact.objects.create(
            tenant=tenant,
            content="The old bike lock code was 34",
            tier="account",
            lifetime="short_term",
        )
    )
    Chunk.objects.filter(kind="fact").update(
        created_at=timezone.now() - timedelta(days=400), lifetime="short_term"
    )

    result = run_consolidation(tenant_id=tenant.pk)

    # The keyed fact waits for an operator; the unkeyed one goes, as the decided review allows.
    assert result["counts"]["pruned"] == 1 and result["counts"]["prune_held"] == 1
    assert (
        Fact.objects.filter(pk=stale.pk).exists()
        and not Fact.objects.filter(pk=unkeyed.pk).exists()
    )
    assert (
        result["review"]["reason"]
        == "a fact addressed by its key is removed only after an operator's review"
    )
    assert [d["id"] for d in result["deletions"] if d["held"]] == [stale.pk]
