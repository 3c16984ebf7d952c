"""Documents are per workspace (and per session when given), with GET (list, one) and
DELETE; the content-hash skip stays. A key confined to one workspace or user can neither replace nor
detect another's document."""

from __future__ import annotations

import json
from typing import Any

import pytest

from retrieval.models import Chunk, Document
from tests.base import error_code, make_client, make_key, make_tenant, new_session, search_texts

DOCS = "/api/v1/documents/"


def ingest(client: Any, captured: Any, **body: Any) -> Any:
    with captured(execute=True):
        return client.post(DOCS, body, format="json")


def listed(client: Any, **params: Any) -> list[tuple[str | None, str | None, str, str]]:
    response = client.get(DOCS, params)
    assert response.status_code == 200, response.content
    return [
        (d["workspace"], d["session"], d["user_id"], d["source_uri"])
        for d in response.json()["results"]
    ]


@pytest.fixture
def ingested(django_capture_on_commit_callbacks: Any) -> Any:
    def post(client: Any, **body: Any) -> Any:
        return ingest(client, django_capture_on_commit_callbacks, **body)

    return post


def test_another_workspace_cannot_replace_or_detect_a_document(alice, cast, ingested) -> None:
    first = ingested(
        alice, source_uri="kb://policy", text="Refunds within 30 days.", workspace="shop"
    )
    assert first.status_code == 201
    other = make_client(make_key(cast.alice_tenant, workspace="support"))
    response = ingested(other, source_uri="kb://policy", text="Refunds within 30 days.")
    # its own, new document
    assert response.status_code == 201 and response.json()["indexed"] is True
    assert response.json()["id"] != first.json()["id"] and response.json()["workspace"] == "support"
    replaced = ingested(other, source_uri="kb://policy", text="No refunds at all.")
    assert replaced.json()["id"] == response.json()["id"]  # it only ever changes its own
    assert "Refunds within 30 days." in search_texts(
        alice, "refunds days", workspace="shop", scope="workspace"
    )
    assert listed(other) == [("support", None, "", "kb://policy")]
    assert other.get(f"{DOCS}{first.json()['id']}/").status_code == 404
    assert other.delete(f"{DOCS}{first.json()['id']}/").status_code == 404
    assert Document.objects.filter(pk=first.json()["id"]).exists()


def test_the_same_uri_in_two_sessions_is_two_documents(alice, ingested) -> None:
    new_session(alice, "s1")
    new_session(alice, "s2")
    a = ingested(alice, source_uri="file://notes.md", text="session one notes", session="s1").json()
    b = ingested(alice, source_uri="file://notes.md", text="session two notes", session="s2").json()
    c = ingested(alice, source_uri="file://notes.md", text="workspace notes").json()
    assert len({a["id"], b["id"], c["id"]}) == 3
    assert listed(alice, session="s1") == [("default", "s1", "", "file://notes.md")]
    assert len(listed(alice, source_uri="file://notes.md")) == 3


def test_unchanged_content_is_still_skipped_and_a_change_reindexes_in_place(
    alice, ingested
) -> None:
    first = ingested(alice, source_uri="u", text="version one")
    again = ingested(alice, source_uri="u", text="version one")
    assert again.status_code == 200 and again.json()["indexed"] is False
    changed = ingested(alice, source_uri="u", text="version two")
    assert changed.status_code == 201 and changed.json()["id"] == first.json()["id"]
    assert list(Chunk.objects.filter(kind="document").values_list("text", flat=True)) == [
        "version two"
    ]


def test_list_get_and_delete(alice, ingested) -> None:
    ids = [
        ingested(alice, source_uri=f"doc://{i}", text=f"document number {i}", workspace=w).json()[
            "id"
        ]
        for i, w in enumerate(["a", "a", "b"])
    ]
    page = alice.get(DOCS, {"limit": 2}).json()
    assert page["count"] == 3 and len(page["results"]) == 2 and page["next"]
    assert [d["source_uri"] for d in page["results"]] == ["doc://2", "doc://1"]  # newest first
    assert listed(alice, workspace="b") == [("b", None, "", "doc://2")]
    one = alice.get(f"{DOCS}{ids[0]}/").json()
    assert one["source_uri"] == "doc://0" and one["chunks"] == 1 and one["workspace"] == "a"
    response = alice.delete(f"{DOCS}{ids[0]}/")
    assert response.status_code == 200 and response.json() == {
        "id": ids[0],
        "deleted": True,
        "chunks_deleted": 1,
    }
    assert not Chunk.objects.filter(kind="document", source_id=f"doc-{ids[0]}").exists()
    assert "document number 0" not in search_texts(alice, "document number")
    again = alice.delete(f"{DOCS}{ids[0]}/")
    assert again.status_code == 404 and error_code(again) == "document_not_found"


def test_documents_are_confined_to_the_tenant(alice, bob, ingested) -> None:
    doc = ingested(alice, source_uri="u", text="alice's document").json()
    assert listed(bob) == []
    assert bob.get(f"{DOCS}{doc['id']}/").status_code == 404
    assert bob.delete(f"{DOCS}{doc['id']}/").status_code == 404
    mine = ingested(bob, source_uri="u", text="bob's document")
    assert mine.status_code == 201 and mine.json()["id"] != doc["id"]
    assert alice.get(f"{DOCS}{doc['id']}/").json()["content_hash"] == doc["content_hash"]


def test_a_user_limited_key_has_its_own_documents(alice, cast, ingested) -> None:
    shared = ingested(alice, source_uri="kb://faq", text="shared answers").json()
    u1 = make_client(make_key(cast.alice_tenant, user="u1"))
    own = ingested(u1, source_uri="kb://faq", text="u1's private answers").json()
    assert own["id"] != shared["id"] and own["user_id"] == "u1"
    ingested(alice, source_uri="kb://other", text="u2's notes", user_id="u2")
    assert sorted(listed(u1)) == [
        ("default", None, "", "kb://faq"),
        ("default", None, "u1", "kb://faq"),
    ]
    response = u1.delete(f"{DOCS}{shared['id']}/")
    assert response.status_code == 403 and error_code(response) == "shared_read_only"
    assert u1.delete(f"{DOCS}{own['id']}/").status_code == 200
    assert Document.objects.filter(pk=shared["id"]).exists()


def test_a_read_only_key_lists_but_cannot_delete(alice, cast, ingested) -> None:
    doc = ingested(alice, source_uri="u", text="text").json()
    reader = make_client(make_key(cast.alice_tenant, scopes=("read",)))
    assert len(listed(reader)) == 1
    response = reader.delete(f"{DOCS}{doc['id']}/")
    assert response.status_code == 403 and error_code(response) == "insufficient_scope"


def test_bad_list_parameters_and_ids(alice) -> None:
    assert alice.get(f"{DOCS}abc/").status_code == 404
    response = alice.get(DOCS, {"limit": "0"})
    assert response.status_code == 400 and error_code(response) == "invalid_parameter"


def test_documents_of_one_uri_in_two_workspaces_round_trip(
    alice, ingested, django_capture_on_commit_callbacks
) -> None:
    ingested(alice, source_uri="kb://same", text="in the shop", workspace="shop")
    ingested(alice, source_uri="kb://same", text="in support", workspace="support")
    exported = alice.post("/api/v1/export/", {}, format="json").json()
    assert [c["source"]["key"] for c in exported["chunks"] if c["kind"] == "document"] == [0, 1]
    carol = make_client(make_key(make_tenant("carol")))
    with django_capture_on_commit_callbacks(execute=True):
        response = carol.post(
            "/api/v1/import/", json.dumps(exported), content_type="application/json"
        )
    assert response.status_code == 201, response.content
    assert carol.post("/api/v1/export/", {}, format="json").json() == exported
    # A file written before documents were per workspace names them by URI alone: still readable
    # when the URI is unique in the file, refused when it is not.
    for chunk in exported["chunks"]:
        if chunk["kind"] == "document":
            del chunk["source"]["key"]
    dave = make_client(make_key(make_tenant("dave")))
    with django_capture_on_commit_callbacks(execute=True):
        response = dave.post(
            "/api/v1/import/", json.dumps(exported), content_type="application/json"
        )
    assert response.status_code == 400 and not Document.objects.filter(tenant__name="dave").exists()


@pytest.fixture
def _fast_passwords(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.mark.usefixtures("_fast_passwords")
def test_deleting_in_the_admin_takes_the_chunks_along(admin_client, alice, ingested) -> None:
    from django.urls import reverse

    first = ingested(alice, source_uri="a", text="first text").json()["id"]
    second = ingested(alice, source_uri="b", text="second text").json()["id"]
    response = admin_client.post(
        reverse("admin:retrieval_document_delete", args=[first]), {"post": "yes"}
    )
    assert response.status_code == 302
    changelist = reverse("admin:retrieval_document_changelist")
    admin_client.post(
        changelist, {"action": "delete_selected", "_selected_action": [second], "post": "yes"}
    )
    assert not Document.objects.exists() and not Chunk.objects.filter(kind="document").exists()


def test_the_list_costs_the_same_queries_for_many_documents(alice, ingested) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    new_session(alice, "s1")
    ingested(alice, source_uri="first", text="first")

    def count() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert alice.get(DOCS).status_code == 200
        return len(captured.captured_queries)

    few = count()
    for i in range(8):
        ingested(
            alice,
            source_uri=f"u{i}",
            text=f"text {i}",
            **({"session": "s1"} if i % 2 else {"workspace": "w"}),
        )
    assert count() == few
