"""DELETE /api/v1/users/{user_id}/ and manage.py forget_user (docs/memory-model.md#sharing)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memoryhub.models import Event, Fact, Note, Session, SummaryNode
from retrieval.models import Chunk
from tests.base import add_memories, error_code, make_client, make_key, new_session, search_texts


@pytest.fixture
def people(cast, index, django_capture_on_commit_callbacks):  # type: ignore[no-untyped-def]
    """Alice's tenant: user u1 in two sessions (two workspaces), u2 in one; bob also has a u1."""
    new_session(cast.alice, "s1", user_id="u1")
    new_session(cast.alice, "s2", user_id="u1", workspace="other")
    new_session(cast.alice, "s3", user_id="u2")
    new_session(cast.bob, "s1", user_id="u1")
    index(
        cast.alice,
        "s1",
        {"role": "user", "content": "my zebra is called Marzipan"},
        {"role": "assistant", "content": "Marzipan the zebra, noted"},
    )
    index(cast.alice, "s2", {"role": "user", "content": "zebra stripes secret plan Marzipan"})
    index(cast.alice, "s3", {"role": "user", "content": "I keep a zebra too, named Biscuit"})
    index(cast.bob, "s1", {"role": "user", "content": "bob's zebra Marzipan lives here"})
    with django_capture_on_commit_callbacks(execute=True):
        add_memories(cast.alice_tenant, "s1", user_id="u1")  # note, fact, summary tree, scratchpad
        add_memories(cast.alice_tenant, "s3", user_id="u2")
    return cast


def test_forget_user_deletes_every_row_and_reports_counts(people) -> None:  # type: ignore[no-untyped-def]
    alice = people.alice
    assert any("Marzipan" in t for t in search_texts(alice, "zebra Marzipan"))
    u1_chunks = set(
        Chunk.objects.filter(tenant=people.alice_tenant, user_id="u1").values_list("id", flat=True)
    )
    assert len(u1_chunks) == 8

    response = alice.delete("/api/v1/users/u1/")

    assert response.status_code == 200, response.content
    body = response.json()
    tenant = people.alice_tenant
    assert body["user_id"] == "u1"
    assert body["deleted"]["memoryhub.Session"] == 2
    assert body["deleted"]["memoryhub.Event"] == 3
    assert body["deleted"]["retrieval.Chunk"] == 3 + 5  # events + note, fact, three summary nodes
    assert body["deleted"]["memoryhub.Note"] == body["deleted"]["memoryhub.Fact"] == 1
    assert body["deleted"]["memoryhub.SummaryNode"] == 3
    assert (
        body["deleted"]["memoryhub.Scratchpad"] == body["deleted"]["memoryhub.ScratchpadItem"] == 1
    )
    assert body["total"] == sum(body["deleted"].values())
    assert not Note.objects.filter(tenant=tenant, user_id="u1").exists()
    assert not Fact.objects.filter(tenant=tenant, user_id="u1").exists()
    assert not SummaryNode.objects.filter(tenant=tenant, user_id="u1").exists()
    assert Fact.objects.filter(tenant=tenant, user_id="u2").count() == 1
    assert not Session.objects.filter(tenant=tenant, user_id="u1").exists()
    assert not Chunk.objects.filter(tenant=tenant, user_id="u1").exists()
    assert Event.objects.filter(tenant=tenant).count() == 1  # u2's event stays

    # No search, context or browse path returns any of it.
    for mode in ("text", "vector", "hybrid"):
        texts = search_texts(alice, "zebra Marzipan stripes plan", mode=mode)
        assert texts and not any("Marzipan" in t for t in texts), (mode, texts)
        response = alice.post(
            "/api/v1/search/",
            {"query": "quinces pears leaf branch talk", "scope": "account", "mode": mode},
            format="json",
        )
        found = {r["chunk_id"] for r in response.json()["results"]}
        assert found and not found & u1_chunks, mode
        assert not any("u1" in r["text"] for r in response.json()["results"])
    context = alice.post(
        "/api/v1/context/",
        {"session": "s3", "query": "Marzipan zebra", "scope": "account"},
        format="json",
    )
    assert context.status_code == 200
    assert "Marzipan" not in json.dumps(context.json())
    assert (
        alice.post(
            "/api/v1/context/", {"session": "s1", "query": "zebra"}, format="json"
        ).status_code
        == 404
    )
    browse = alice.get("/api/v1/browse/").json()
    assert [e["session"] for e in browse["results"]] == ["s3"]
    assert alice.get("/api/v1/browse/", {"session": "s1"}).status_code == 404
    assert alice.get("/api/v1/sessions/s1/events/").status_code == 404

    # Bob's u1 is another person in another tenant: untouched.
    assert search_texts(people.bob, "zebra Marzipan") == ["bob's zebra Marzipan lives here"]
    assert Session.objects.filter(tenant=people.bob_tenant, user_id="u1").count() == 1


def test_forget_works_with_an_immutable_transcript(people) -> None:  # type: ignore[no-untyped-def]
    tenant = people.alice_tenant
    tenant.immutable_transcript = True
    tenant.save()
    # The transcript is immutable for everything else...
    assert people.alice.delete("/api/v1/sessions/s1/").status_code == 409
    # ...but a user can still be forgotten.
    response = people.alice.delete("/api/v1/users/u1/")
    assert response.status_code == 200, response.content
    assert response.json()["deleted"]["memoryhub.Event"] == 3
    assert not Event.objects.filter(session__tenant=tenant, session__user_id="u1").exists()


def test_unknown_user_deletes_nothing(people) -> None:  # type: ignore[no-untyped-def]
    before = Chunk.objects.count()
    response = people.alice.delete("/api/v1/users/nobody/")
    assert response.status_code == 200
    assert response.json() == {
        "user_id": "nobody",
        "deleted": {},
        "total": 0,
        "redacted": {
            "lifecycle.ConsolidationReport": 0,
            "scheduling.Delivery": 0,
            "scheduling.Run": 0,
        },
    }
    assert Chunk.objects.count() == before


def test_bob_cannot_forget_alices_user(people) -> None:  # type: ignore[no-untyped-def]
    response = people.bob.delete("/api/v1/users/u1/")
    assert response.status_code == 200
    assert response.json()["deleted"]["memoryhub.Session"] == 1  # only bob's own u1
    assert Session.objects.filter(tenant=people.alice_tenant, user_id="u1").count() == 2


def test_forget_needs_admin_scope_and_a_tenant_wide_key(people, anon) -> None:  # type: ignore[no-untyped-def]
    tenant = people.alice_tenant
    writer = make_client(make_key(tenant, scopes=("read", "write")))
    response = writer.delete("/api/v1/users/u1/")
    # (memoryhub.errors currently reports a missing scope as "permission_denied".)
    assert response.status_code == 403 and error_code(response) in (
        "insufficient_scope",
        "permission_denied",
    )
    limited = make_client(make_key(tenant, scopes=("admin",), workspace="other"))
    response = limited.delete("/api/v1/users/u1/")
    assert response.status_code == 403 and error_code(response) == "workspace_limited_key"
    assert anon.delete("/api/v1/users/u1/").status_code == 401
    assert Session.objects.filter(tenant=tenant, user_id="u1").count() == 2


def test_forget_user_command(people) -> None:  # type: ignore[no-untyped-def]
    out = StringIO()
    call_command("forget_user", "u1", "--tenant", "alice", stdout=out)
    body = json.loads(out.getvalue())
    assert body["deleted"]["memoryhub.Session"] == 2
    assert set(body["redacted"]) == {
        "lifecycle.ConsolidationReport",
        "scheduling.Delivery",
        "scheduling.Run",
    }
    assert not Session.objects.filter(tenant=people.alice_tenant, user_id="u1").exists()
    with pytest.raises(CommandError):
        call_command("forget_user", "u1", "--tenant", "nobody")
