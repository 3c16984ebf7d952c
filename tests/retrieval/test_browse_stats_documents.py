"""GET /browse/, GET /stats/, POST /documents/."""

from __future__ import annotations

from retrieval.models import Chunk, Document
from tests.base import error_code
from tests.retrieval.conftest import search

# --- browse --------------------------------------------------------------------------------------


def test_browse_is_chronological_and_filtered(alice, index) -> None:
    alice.post("/api/v1/sessions/", {"id": "b", "channel": "ops", "agent": "bot"}, format="json")
    index(
        alice,
        "a",
        {"role": "user", "content": "a1", "created_at": "2024-01-02T00:00:00Z"},
        {"role": "assistant", "content": "a2", "created_at": "2024-01-04T00:00:00Z"},
    )
    index(alice, "b", {"role": "user", "content": "b1", "created_at": "2024-01-03T00:00:00Z"})
    body = alice.get("/api/v1/browse/").json()
    assert [r["content"] for r in body["results"]] == ["a1", "b1", "a2"]
    assert body["results"][1]["session"] == "b" and body["results"][1]["channel"] == "ops"

    def contents(**params: str) -> list[str]:
        response = alice.get("/api/v1/browse/", params)
        assert response.status_code == 200, response.content
        return [r["content"] for r in response.json()["results"]]

    assert contents(session="a") == ["a1", "a2"]
    assert contents(channel="ops") == ["b1"]
    assert contents(agent="bot") == ["b1"]
    assert contents(role="assistant") == ["a2"]
    assert contents(since="2024-01-03T00:00:00Z") == ["b1", "a2"]
    assert contents(until="2024-01-03T00:00:00Z") == ["a1"]


def test_browse_pages(alice, index, django_assert_max_num_queries) -> None:
    index(alice, "a", *[{"role": "user", "content": f"m{i}"} for i in range(30)])
    with django_assert_max_num_queries(4):
        body = alice.get("/api/v1/browse/", {"limit": 20}).json()
    assert body["count"] == 30 and len(body["results"]) == 20 and body["next"]
    assert len(alice.get(body["next"]).json()["results"]) == 10


def test_browse_bad_input_and_isolation(alice, bob, index) -> None:
    index(alice, "a", {"role": "user", "content": "alice only"})
    assert error_code(alice.get("/api/v1/browse/", {"role": "robot"})) == "invalid_parameter"
    assert error_code(alice.get("/api/v1/browse/", {"since": "yesterday"})) == "invalid_parameter"
    assert bob.get("/api/v1/browse/").json()["results"] == []
    assert error_code(bob.get("/api/v1/browse/", {"session": "a"})) == "session_not_found"


# --- stats ---------------------------------------------------------------------------------------


def test_stats_counts_the_tenants_memory(alice, bob, index) -> None:
    index(alice, "a", {"role": "user", "content": "one"}, {"role": "user", "content": "two"})
    index(bob, "b", {"role": "user", "content": "bob"})
    Chunk.objects.filter(text="two").update(embedding=None, embedding_error="boom")
    response = alice.get("/api/v1/stats/")
    assert response.status_code == 200
    body = response.json()
    assert body["sessions"] == 1 and body["events"] == 2
    assert body["chunks"]["total"] == 2 and body["chunks"]["embedded"] == 1
    assert body["chunks"]["pending_embedding"] == 1 and body["chunks"]["embedding_errors"] == 1
    assert body["chunks"]["embedding_coverage"] == 0.5
    # The task queue is every tenant's: its counts are not a tenant's to see.
    assert body["queue"] == {
        "pending_embeddings": 1,
        "embedding_waiting": 1,
        "embedding_set_aside": 0,
        # no lane ran
        "embedding_eta_seconds": None,
        "embedding_rate_per_second": 0.0,
        "sentences_waiting": 0,
    }
    assert body["unsummarised_messages"] == 2
    assert bob.get("/api/v1/stats/").json()["chunks"]["total"] == 1


def test_stats_needs_a_key(anon) -> None:
    assert anon.get("/api/v1/stats/").status_code == 401


# --- documents -----------------------------------------------------------------------------------


def test_document_is_indexed_and_unchanged_content_is_skipped(alice) -> None:
    body = {
        "source_uri": "file:///handbook.md",
        "text": "Vacation requests go to Maria. " * 40,
        "metadata": {"title": "Handbook"},
    }
    first = alice.post("/api/v1/documents/", body, format="json")
    assert first.status_code == 201, first.content
    assert first.json()["indexed"] is True and first.json()["chunks"] >= 2
    again = alice.post("/api/v1/documents/", body, format="json")
    assert again.status_code == 200 and again.json()["indexed"] is False
    assert Document.objects.count() == 1
    hit = search(alice, query="vacation requests", kinds=["document"]).json()["results"][0]
    assert hit["kind"] == "document" and hit["metadata"]["source_uri"] == "file:///handbook.md"
    changed = alice.post(
        "/api/v1/documents/", {**body, "text": "Vacation requests now go to Omar."}, format="json"
    )
    assert changed.status_code == 201 and changed.json()["chunks"] == 1
    assert list(Chunk.objects.filter(kind="document").values_list("text", flat=True)) == [
        "Vacation requests now go to Omar."
    ]


def test_document_tied_to_a_session_goes_with_it(alice, index) -> None:
    index(alice, "s", {"role": "user", "content": "hi"})
    assert (
        alice.post(
            "/api/v1/documents/",
            {"source_uri": "u", "text": "attached notes", "session": "s"},
            format="json",
        ).status_code
        == 201
    )
    assert search(alice, query="attached", session="s").json()["results"]
    alice.delete("/api/v1/sessions/s/")
    assert not Chunk.objects.filter(kind="document").exists()


def test_document_bad_input_stores_nothing(alice) -> None:
    for body, code in [
        ({"text": "x"}, "validation_error"),
        ({"source_uri": "u", "text": "  "}, "validation_error"),
        ({"source_uri": "u", "text": "x", "oops": 1}, "unknown_field"),
        ({"source_uri": "u", "text": "x", "session": "missing"}, "session_not_found"),
    ]:
        assert error_code(alice.post("/api/v1/documents/", body, format="json")) == code
    assert not Document.objects.exists() and not Chunk.objects.exists()


def test_documents_are_per_tenant(alice, bob) -> None:
    alice.post("/api/v1/documents/", {"source_uri": "u", "text": "alice document"}, format="json")
    response = bob.post(
        "/api/v1/documents/", {"source_uri": "u", "text": "alice document"}, format="json"
    )
    assert response.status_code == 201 and response.json()["indexed"] is True  # bob's own copy
    assert [r["text"] for r in search(bob, query="document").json()["results"]] == [
        "alice document"
    ]
    assert Chunk.objects.filter(tenant__name="alice").count() == 1


def test_a_read_only_key_cannot_ingest(cast) -> None:
    from tests.base import make_client, make_key

    client = make_client(make_key(cast.alice_tenant, ("read",)))
    response = client.post("/api/v1/documents/", {"source_uri": "u", "text": "x"}, format="json")
    assert response.status_code == 403


def test_stats_count_summaries_and_tree_depth_per_tenant(alice, bob, index, cast) -> None:
    from memoryhub.models import Session, SummaryNode

    index(alice, "a", {"role": "user", "content": "one"}, {"role": "user", "content": "two"})
    index(bob, "b", {"role": "user", "content": "bob"})
    session = Session.objects.get(tenant=cast.alice_tenant, external_id="a")
    index(alice, "a", {"role": "user", "content": "three"})
    root = SummaryNode.objects.create(
        tenant=cast.alice_tenant,
        session=session,
        level="root",
        depth=2,
        text="root",
        sequence_start=1,
        sequence_end=2,
    )
    SummaryNode.objects.create(
        tenant=cast.alice_tenant,
        session=session,
        level="leaf",
        depth=0,
        parent=root,
        text="leaf",
        sequence_start=1,
        sequence_end=2,
    )
    body = alice.get("/api/v1/stats/").json()
    assert body["summaries"] == 2 and body["summary_tree_depth"] == 3
    # Unsummarised is counted against the tree: the leaf covers messages 1–2 of 3.
    assert body["unsummarised_messages"] == 1 and body["rolling_unsummarised_messages"] == 3
    assert body["compaction"]["sessions_behind"] == 1 and body["compaction"]["messages_behind"] == 1
    assert body["compaction"]["tree_depth"] == 3 and body["compaction"]["last_run_at"]
    other = bob.get("/api/v1/stats/").json()
    assert other["summaries"] == 0 and other["summary_tree_depth"] == 0


def test_a_summary_hit_expands_to_its_children_and_messages(alice, bob, index, cast) -> None:
    from memoryhub.models import Session, SummaryNode
    from tests.base import remember

    index(
        alice,
        "trip",
        {"role": "user", "content": "book the ferry to Skye"},
        {"role": "assistant", "content": "ferry booked for Friday"},
    )
    session = Session.objects.get(tenant=cast.alice_tenant, external_id="trip")
    root = SummaryNode.objects.create(
        tenant=cast.alice_tenant,
        session=session,
        level="branch",
        depth=1,
        text="Planning the Skye ferry",
        sequence_start=1,
        sequence_end=2,
    )
    leaf = SummaryNode.objects.create(
        tenant=cast.alice_tenant,
        session=session,
        level="leaf",
        depth=0,
        parent=root,
        text="ferry to Skye booked",
        sequence_start=1,
        sequence_end=2,
    )
    remember(root)
    body = {
        "query": "Skye ferry planning",
        "mode": "text",
        "kinds": ["summary"],
        "scope": "account",
    }
    plain = alice.post("/api/v1/search/", body, format="json").json()["results"]
    assert plain and all("expanded" not in r for r in plain)
    results = alice.post("/api/v1/search/", {**body, "expand": True}, format="json").json()[
        "results"
    ]
    [hit] = [r for r in results if r["text"] == "Planning the Skye ferry"]
    assert [c["id"] for c in hit["expanded"]["children"]] == [leaf.pk]
    assert [m["content"] for m in hit["expanded"]["messages"]] == [
        "book the ferry to Skye",
        "ferry booked for Friday",
    ]
    assert (
        bob.post("/api/v1/search/", {**body, "expand": True}, format="json").json()["results"] == []
    )
