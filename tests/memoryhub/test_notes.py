"""Notes (docs/memory-model.md#notes): CRUD by note id, tags, filters, indexing without orphans,
isolation."""

from __future__ import annotations

import pytest

from memoryhub.models import Note
from retrieval.models import Chunk
from tests.base import error_code, make_client, make_key, post_events

NOTES = "/api/v1/notes/"


def note_url(note_id: str) -> str:
    return f"{NOTES}{note_id}/"


def chunks_of(note_id: str) -> list[Chunk]:
    return list(Chunk.objects.filter(kind="note", source_id=note_id).order_by("id"))


def test_create_generates_note_id_and_normalises_tags(alice) -> None:  # type: ignore[no-untyped-def]
    r = alice.post(
        NOTES,
        {
            "content": "The deploy key lives in vault path kv/deploy.",
            "source": "agent",
            "tags": [" Ops ", "ops", "Deploy", ""],
            "metadata": {"topic": "infra"},
        },
        format="json",
    )
    assert r.status_code == 201, r.json()
    body = r.json()
    assert body["id"].startswith("note-") and body["id"] == body["note_id"]
    assert body["tags"] == ["ops", "deploy"]
    assert (
        body["scope"] == "workspace" and body["workspace"] == "default" and body["session"] is None
    )
    assert body["created_at"] and body["updated_at"]
    note = Note.objects.get(note_id=body["id"])
    assert note.content.startswith("The deploy key")
    assert [c.text for c in chunks_of(body["id"])] == [note.content]
    assert alice.get(note_url(body["id"])).json()["content"] == note.content


def test_client_chosen_id_conflict_and_put_replaces(alice) -> None:  # type: ignore[no-untyped-def]
    assert (
        alice.post(NOTES, {"note_id": "note-1", "content": "first"}, format="json").status_code
        == 201
    )
    again = alice.post(NOTES, {"note_id": "note-1", "content": "second"}, format="json")
    assert again.status_code == 409 and error_code(again) == "note_exists"
    created_at = alice.get(note_url("note-1")).json()["created_at"]
    put = alice.put(note_url("note-1"), {"content": "replaced text", "tags": ["x"]}, format="json")
    assert put.status_code == 200
    assert put.json()["content"] == "replaced text" and put.json()["created_at"] == created_at
    assert put.json()["updated_at"] >= created_at
    assert Note.objects.filter(note_id="note-1").count() == 1
    created = alice.put(note_url("note-2"), {"content": "made by put"}, format="json")
    assert created.status_code == 201 and created.json()["id"] == "note-2"


def test_update_and_delete_leave_no_orphan_chunks_or_vectors(
    alice, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    long_text = " ".join(f"Sentence number {i} about the billing migration." for i in range(200))
    with django_capture_on_commit_callbacks(execute=True):
        alice.post(NOTES, {"note_id": "n-long", "content": long_text}, format="json")
    before = chunks_of("n-long")
    assert len(before) > 1 and all(c.embedding is not None for c in before)
    with django_capture_on_commit_callbacks(execute=True):
        alice.put(
            note_url("n-long"), {"content": "Short now: billing moved to Stripe."}, format="json"
        )
    after = chunks_of("n-long")
    assert [c.text for c in after] == ["Short now: billing moved to Stripe."]
    assert all(c.embedding is not None for c in after)
    assert not Chunk.objects.filter(pk__in=[c.pk for c in before]).exists()
    r = alice.delete(note_url("n-long"))
    assert r.status_code == 200 and r.json() == {"id": "n-long", "deleted": True}
    assert chunks_of("n-long") == []
    assert not Chunk.objects.filter(kind="note").exists()
    assert not Note.objects.exists()
    assert error_code(alice.get(note_url("n-long"))) == "note_not_found"
    assert error_code(alice.delete(note_url("n-long"))) == "note_not_found"


def test_search_finds_notes_by_kind_and_tags(alice, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        alice.post(
            NOTES,
            {
                "note_id": "n-a",
                "content": "Invoice numbering restarts every April",
                "tags": ["finance"],
            },
            format="json",
        )
        alice.post(
            NOTES,
            {
                "note_id": "n-b",
                "content": "Invoice template uses the blue logo",
                "tags": ["design"],
            },
            format="json",
        )
    r = alice.post(
        "/api/v1/search/", {"query": "invoice", "tags": ["finance"], "mode": "text"}, format="json"
    )
    assert r.status_code == 200, r.json()
    results = r.json()["results"]
    assert [x["kind"] for x in results] == ["note"]
    assert results[0]["metadata"]["note_id"] == "n-a"


def test_session_note_placement_and_list_filters(alice) -> None:  # type: ignore[no-untyped-def]
    post_events(alice, "s1", {"role": "user", "content": "hi"})
    alice.post("/api/v1/sessions/", {"id": "s2", "user_id": "u-7"}, format="json")
    a = alice.post(
        NOTES,
        {
            "note_id": "a",
            "content": "alpha plan",
            "session": "s1",
            "tags": ["x", "y"],
            "source": "user",
            "metadata": {"topic": "billing", "n": 3},
            "scope": "conversation",
        },
        format="json",
    ).json()
    assert a["scope"] == "conversation" and a["session"] == "s1"
    assert a["channel"] == alice.get("/api/v1/sessions/s1/").json()["channel"]
    b = alice.post(
        NOTES,
        {"note_id": "b", "content": "beta plan", "session": "s2", "tags": ["x"]},
        format="json",
    ).json()
    assert b["user_id"] == "u-7"  # inherited from the session
    # no tier asked: long-term
    assert (b["scope"], b["session"], b["workspace"]) == ("account", "s2", None)
    alice.post(
        NOTES, {"note_id": "c", "content": "gamma", "tags": ["y"], "source": "user"}, format="json"
    )

    def ids(query: str) -> list[str]:
        r = alice.get(NOTES + query)
        assert r.status_code == 200, r.json()
        return sorted(n["id"] for n in r.json()["results"])

    assert ids("") == ["a", "b", "c"]
    assert ids("?tags=x") == ["a", "b"]
    assert ids("?tags=x,y") == ["a"]
    assert ids("?source=user") == ["a", "c"]
    assert ids("?session=s1") == ["a"]
    assert ids("?q=PLAN") == ["a", "b"]
    assert ids("?meta.topic=billing") == ["a"]
    assert ids("?meta.n=3") == ["a"]
    assert ids("?meta.topic=other") == []
    assert ids("?user_id=u-7") == ["b"]
    assert ids("?scope=workspace") == ["c"]
    page = alice.get(NOTES + "?limit=2").json()
    assert page["count"] == 3 and len(page["results"]) == 2 and page["next"]
    assert error_code(alice.get(NOTES + "?scope=galaxy")) == "invalid_parameter"


def test_note_is_forgotten_with_its_session(alice) -> None:  # type: ignore[no-untyped-def]
    post_events(alice, "s1", {"role": "user", "content": "hi"})
    alice.post(NOTES, {"note_id": "a", "content": "session note", "session": "s1"}, format="json")
    assert alice.delete("/api/v1/sessions/s1/").status_code == 200
    assert not Note.objects.exists() and not Chunk.objects.filter(kind="note").exists()


@pytest.mark.parametrize(
    "body,code",
    [
        ({"content": ""}, "empty_content"),
        ({"content": "   "}, "empty_content"),
        ({}, "validation_error"),
        ({"content": 12}, "validation_error"),
        ({"content": "x", "tags": [1]}, "invalid_tags"),
        # a list, as the schema says (the query's is CSV)
        ({"content": "x", "tags": "a,b"}, "invalid_tags"),
        ({"content": "x", "tags": ["a", "b"]}, None),
        ({"content": "x", "note_id": "bad id!"}, "validation_error"),
        ({"content": "x", "metadata": [1]}, "validation_error"),
        ({"content": "x", "importance": 2}, "validation_error"),
        ({"content": "x", "scope": "galaxy"}, "validation_error"),
        ({"content": "x", "scope": "conversation"}, "session_required"),
        ({"content": "x", "session": "missing"}, "session_not_found"),
        ({"content": "x", "colour": "red"}, "unknown_field"),
    ],
)
def test_bad_input_stores_nothing(alice, body, code) -> None:  # type: ignore[no-untyped-def]
    r = alice.post(NOTES, body, format="json")
    if code is None:
        assert r.status_code == 201 and r.json()["tags"] == ["a", "b"]
        return
    assert r.status_code in (400, 404) and error_code(r) == code, r.json()
    assert not Note.objects.exists() and not Chunk.objects.filter(kind="note").exists()


def test_patch_changes_only_what_is_sent(alice, index) -> None:  # type: ignore[no-untyped-def]
    """An update keeps what was not sent (PUT still replaces the whole note)."""
    index(alice, "s1", {"role": "user", "content": "hi"})
    alice.post(
        NOTES,
        {
            "note_id": "n3",
            "content": "Window seat",
            "session": "s1",
            "source": "agent",
            "tags": ["travel"],
            "metadata": {"k": 1},
        },
        format="json",
    )
    r = alice.patch(
        note_url("n3"), {"content": "Aisle seat", "tags": ["travel", "seats"]}, format="json"
    )
    assert r.status_code == 200, r.json()
    body = r.json()
    assert (
        body["content"],
        body["tags"],
        body["session"],
        body["scope"],
        body["source"],
        body["metadata"],
    ) == ("Aisle seat", ["travel", "seats"], "s1", "account", "agent", {"k": 1})
    assert [c.text for c in chunks_of("n3")] == ["Aisle seat"]
    before = Note.objects.get(note_id="n3").updated_at
    for bad, code in (
        ({"content": " "}, "empty_content"),
        ({"session": "s2"}, "unknown_field"),
        ({"importance": 3}, "validation_error"),
    ):
        assert error_code(alice.patch(note_url("n3"), bad, format="json")) == code
    assert Note.objects.get(note_id="n3").updated_at == before
    assert (
        error_code(alice.patch(note_url("missing"), {"content": "x"}, format="json"))
        == "note_not_found"
    )


def test_tags_are_capped_as_the_seed_caps_them(alice) -> None:  # type: ignore[no-untyped-def]
    """The first 16 tags are kept and each is cut to 64 characters; no 400."""
    tags = ["Dup", "dup", "b" * 70] + [f"t{i}" for i in range(20)]
    r = alice.post(NOTES, {"note_id": "n2", "content": "many tags", "tags": tags}, format="json")
    assert r.status_code == 201, r.json()
    assert r.json()["tags"] == ["dup", "b" * 64, *[f"t{i}" for i in range(14)]]
    assert len(Note.objects.get(note_id="n2").tags) == 16


def test_bad_put_keeps_the_old_note(alice) -> None:  # type: ignore[no-untyped-def]
    alice.post(NOTES, {"note_id": "n1", "content": "keep me", "tags": ["a"]}, format="json")
    r = alice.put(note_url("n1"), {"content": "new", "tags": ["x", 3]}, format="json")
    assert r.status_code == 400 and error_code(r) == "invalid_tags"
    assert Note.objects.get(note_id="n1").content == "keep me"
    assert [c.text for c in chunks_of("n1")] == ["keep me"]
    r = alice.put(note_url("n1"), {"content": "x", "note_id": "other"}, format="json")
    assert error_code(r) == "unknown_field"


def test_malformed_json(alice) -> None:  # type: ignore[no-untyped-def]
    r = alice.post(NOTES, "{not json", content_type="application/json")
    assert r.status_code == 400 and error_code(r) == "malformed_json"


def test_cross_tenant_isolation(alice, bob) -> None:  # type: ignore[no-untyped-def]
    alice.post(NOTES, {"note_id": "secret", "content": "alice's secret plan"}, format="json")
    assert bob.get(NOTES).json()["count"] == 0
    assert error_code(bob.get(note_url("secret"))) == "note_not_found"
    assert error_code(bob.delete(note_url("secret"))) == "note_not_found"
    # bob may use the same id in his tenant without touching alice's note
    assert bob.put(note_url("secret"), {"content": "bob's own"}, format="json").status_code == 201
    assert Note.objects.get(tenant__name="alice", note_id="secret").content == "alice's secret plan"
    r = bob.post("/api/v1/search/", {"query": "secret plan", "mode": "text"}, format="json")
    assert all("alice" not in x["text"] for x in r.json()["results"])


def test_workspace_limited_key(cast) -> None:  # type: ignore[no-untyped-def]
    cast.alice.post(NOTES, {"note_id": "main", "content": "in default"}, format="json")
    limited = make_client(make_key(cast.alice_tenant, workspace="lab"))
    assert limited.get(NOTES).json()["count"] == 0
    assert limited.get(note_url("main")).status_code == 404
    # The id is another workspace's: the very answer a read of it gets, never note_exists.
    read = limited.get(note_url("main")).json()
    taken = limited.put(note_url("main"), {"content": "take over"}, format="json")
    assert (taken.status_code, taken.json()) == (404, read) and error_code(
        taken
    ) == "note_not_found"
    taken = limited.post(NOTES, {"note_id": "main", "content": "take over"}, format="json")
    assert (taken.status_code, taken.json()) == (404, read)
    r = limited.post(NOTES, {"content": "lab note"}, format="json")
    assert r.status_code == 201 and r.json()["workspace"] == "lab"
    r = limited.post(NOTES, {"content": "x", "workspace": "default"}, format="json")
    assert r.status_code == 403 and error_code(r) == "workspace_forbidden"
    r = limited.post(NOTES, {"content": "x", "scope": "account"}, format="json")
    assert r.status_code == 403 and error_code(r) == "workspace_forbidden"
    assert Note.objects.count() == 2


def test_read_only_key_cannot_write(cast) -> None:  # type: ignore[no-untyped-def]
    reader = make_client(make_key(cast.alice_tenant, scopes=("read",)))
    r = reader.post(NOTES, {"content": "x"}, format="json")
    assert r.status_code == 403 and error_code(r) == "insufficient_scope"
    assert reader.get(NOTES).status_code == 200
    assert not Note.objects.exists()


def test_list_query_count_does_not_grow_with_rows(alice, django_assert_max_num_queries) -> None:  # type: ignore[no-untyped-def]
    post_events(alice, "s1", {"role": "user", "content": "hi"})
    for i in range(15):
        alice.post(
            NOTES,
            {"content": f"note {i}", "session": "s1" if i % 2 else None, "channel": None},
            format="json",
        )
    # key lookup + last-used, count, page (related rows joined)
    with django_assert_max_num_queries(6):
        r = alice.get(NOTES)
    assert r.json()["count"] == 15


def test_schema_documents_the_memory_endpoints(anon, db) -> None:  # type: ignore[no-untyped-def]
    schema = anon.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    paths = schema["paths"]
    for path in (
        "/api/v1/notes/",
        "/api/v1/notes/{note_id}/",
        "/api/v1/facts/",
        "/api/v1/facts/{fact_id}/",
        "/api/v1/sessions/{session_id}/scratchpad/",
        "/api/v1/sessions/{session_id}/summary/",
        "/api/v1/summaries/",
        "/api/v1/summaries/{node_id}/",
    ):
        assert path in paths, path
    assert set(paths["/api/v1/facts/{fact_id}/"]) >= {"get", "patch", "delete"}
    assert set(paths["/api/v1/sessions/{session_id}/scratchpad/"]) >= {"get", "put", "delete"}


def test_put_refuses_a_bad_id_in_the_path(alice) -> None:  # type: ignore[no-untyped-def]
    r = alice.put(note_url("-bad id!"), {"content": "x"}, format="json")
    assert r.status_code == 400 and error_code(r) == "invalid_note_id"
    assert not Note.objects.exists()


def test_id_is_accepted_as_note_id(alice) -> None:  # type: ignore[no-untyped-def]
    r = alice.post(NOTES, {"id": "note-abc", "content": "aliased"}, format="json")
    assert r.status_code == 201 and r.json()["note_id"] == "note-abc"
    r = alice.post(NOTES, {"id": "a", "note_id": "b", "content": "x"}, format="json")
    assert r.status_code == 400 and error_code(r) == "id_mismatch"
    assert list(Note.objects.values_list("note_id", flat=True)) == ["note-abc"]
