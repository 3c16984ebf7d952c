"""DELETE /api/v1/workspaces/{name}/ (deleting a workspace removes its memory): everything
in it, in one transaction, counted per model; a preview; admin scope; tenants apart; the admin."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from accounts.models import ApiKey, Channel, Tenant, Workspace
from memoryhub.models import Event, Fact, FactVersion, Note, ScratchpadItem, Session, SummaryNode
from retrieval.lifecycle.models import ArchivedMemory
from retrieval.models import Chunk
from tests.base import add_memories, error_code, make_client, make_key, new_session, post_events

pytestmark = pytest.mark.django_db

URL = "/api/v1/workspaces/"


def fill(client: Any, tenant: Tenant, workspace: str, session: str) -> dict[str, Any]:
    """A conversation with events, a note, a fact changed once (a superseded version and its
    chunk), a summary tree, a scratchpad and an archived memory, all in `workspace`."""
    new_session(client, session, workspace=workspace, channel="lab")
    assert (
        post_events(
            client,
            session,
            {"role": "user", "content": f"{workspace} notebook on shelf 3"},
            {"role": "assistant", "content": "Noted."},
        ).status_code
        == 201
    )
    made = add_memories(tenant, session, user_id="u1")
    fact = client.post(
        "/api/v1/facts/",
        {"content": "The centrifuge is booked", "key": "centrifuge", "workspace": workspace},
        format="json",
    ).json()
    assert (
        client.patch(
            f"/api/v1/facts/{fact['id']}/", {"content": "The centrifuge is free"}, format="json"
        ).status_code
        == 200
    )
    stored = Session.objects.get(tenant=tenant, external_id=session)
    ArchivedMemory.objects.create(
        tenant=tenant, reason="prune", kind="event", session=stored, text="pruned once"
    )
    ArchivedMemory.objects.create(
        tenant=tenant,
        reason="prune",
        kind="note",
        source_id="n-old",
        text="old note",
        row={"workspace_id": stored.workspace_id, "content": "old note"},
    )
    return {**made, "session": stored, "fact_id": fact["id"]}


def rows(tenant: Tenant, workspace: str) -> dict[str, int]:
    """What the tenant holds in the workspace, by model (the workspace found by name)."""
    ws = Workspace.objects.filter(tenant=tenant, name=workspace).first()
    sessions = Session.objects.filter(workspace=ws)
    return {
        "workspace": int(ws is not None),
        "channels": Channel.objects.filter(workspace=ws).count(),
        "sessions": sessions.count(),
        "events": Event.objects.filter(session__in=sessions).count(),
        "notes": Note.objects.filter(workspace=ws).count(),
        "facts": Fact.objects.filter(workspace=ws).count(),
        "fact_versions": FactVersion.objects.filter(workspace=ws).count(),
        "chunks": Chunk.every_version.filter(workspace=ws).count(),
        "superseded_chunks": Chunk.every_version.filter(
            workspace=ws, valid_to__isnull=False
        ).count(),
        "summaries": SummaryNode.objects.filter(session__in=sessions).count(),
        "scratchpad": ScratchpadItem.objects.filter(scratchpad__session__in=sessions).count(),
        "archived": ArchivedMemory.objects.filter(tenant=tenant, session__in=sessions).count(),
    }


@pytest.fixture
def labs(cast) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """alice and bob each hold a workspace named "lab" (same session ids too) and their default
    one."""
    alice = fill(cast.alice, cast.alice_tenant, "lab", "s1")
    fill(cast.bob, cast.bob_tenant, "lab", "s1-bob")
    new_session(cast.alice, "home")
    post_events(cast.alice, "home", {"role": "user", "content": "Stays at home"})
    return alice


def test_deleting_a_workspace_removes_everything_in_it(cast, labs) -> None:  # type: ignore[no-untyped-def]
    before = rows(cast.alice_tenant, "lab")
    assert (
        before["superseded_chunks"] >= 1
        and before["fact_versions"] >= 2
        and before["archived"] == 1
    )
    assert all(before.values()), before
    bob_before = rows(cast.bob_tenant, "lab")
    home_before = rows(cast.alice_tenant, "default")

    response = cast.alice.delete(f"{URL}lab/")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["workspace"] == "lab" and body["dry_run"] is False
    deleted = body["deleted"]
    assert deleted["accounts.Workspace"] == 1 and deleted["accounts.Channel"] == before["channels"]
    assert deleted["memoryhub.Session"] == 1 and deleted["memoryhub.Event"] == before["events"]
    assert deleted["retrieval.Chunk"] == before["chunks"]
    assert (
        deleted["memoryhub.Note"] == before["notes"]
        and deleted["memoryhub.Fact"] >= before["facts"]
    )
    assert deleted["memoryhub.FactVersion"] >= before["fact_versions"]
    assert deleted["memoryhub.ScratchpadItem"] == before["scratchpad"]
    # the session's and the note that was in the workspace
    assert deleted["lifecycle.ArchivedMemory"] == 2
    assert body["total"] == sum(deleted.values())
    assert not Workspace.objects.filter(tenant=cast.alice_tenant, name="lab").exists()
    for model in (Session, Note, Fact, SummaryNode):
        assert (
            not model.objects.filter(tenant=cast.alice_tenant)
            .exclude(workspace__name="default")
            .exclude(workspace__isnull=True)
            .exists()
        ), model
    assert (
        not Chunk.every_version.filter(tenant=cast.alice_tenant, workspace__isnull=False)
        .exclude(workspace__name="default")
        .exists()
    )
    assert not FactVersion.objects.filter(fact_id=labs["fact_id"]).exists()
    assert not ArchivedMemory.objects.filter(tenant=cast.alice_tenant).exists()
    # bob's "lab" and alice's default workspace are as they were
    assert rows(cast.bob_tenant, "lab") == bob_before
    assert rows(cast.alice_tenant, "default") == home_before
    assert cast.alice.get("/api/v1/sessions/home/").status_code == 200
    assert cast.alice.get("/api/v1/sessions/s1/").status_code == 404


def test_a_dry_run_answers_the_same_counts_and_deletes_nothing(cast, labs) -> None:  # type: ignore[no-untyped-def]
    before = rows(cast.alice_tenant, "lab")
    preview = cast.alice.delete(f"{URL}lab/?dry_run=true")
    assert preview.status_code == 200, preview.content
    assert preview.json()["dry_run"] is True
    assert rows(cast.alice_tenant, "lab") == before
    real = cast.alice.delete(f"{URL}lab/").json()
    assert real["deleted"] == preview.json()["deleted"] and real["total"] == preview.json()["total"]


@pytest.mark.parametrize("query", ["?dry_run=perhaps", "?dry_run="])
def test_a_bad_dry_run_is_400_and_deletes_nothing(cast, labs, query: str) -> None:  # type: ignore[no-untyped-def]
    before = rows(cast.alice_tenant, "lab")
    response = cast.alice.delete(f"{URL}lab/{query}")
    assert response.status_code == 400 and error_code(response) == "invalid_parameter"
    assert rows(cast.alice_tenant, "lab") == before


def test_another_tenants_or_a_missing_workspace_is_404_and_deletes_nothing(cast, labs) -> None:  # type: ignore[no-untyped-def]
    new_session(cast.alice, "only-alice", workspace="alice-only")
    alice_before, bob_before = rows(cast.alice_tenant, "lab"), rows(cast.bob_tenant, "lab")
    response = cast.bob.delete(f"{URL}alice-only/")
    assert response.status_code == 404 and error_code(response) == "workspace_not_found"
    assert Workspace.objects.filter(tenant=cast.alice_tenant, name="alice-only").exists()
    # bob naming "lab" deletes bob's lab, never alice's of the same name
    assert cast.bob.delete(f"{URL}lab/").status_code == 200
    assert rows(cast.alice_tenant, "lab") == alice_before
    assert rows(cast.bob_tenant, "lab")["workspace"] == 0 and bob_before["workspace"] == 1
    assert cast.bob.delete(f"{URL}lab/").status_code == 404


def test_only_an_admin_key_of_the_tenant_or_the_workspace_may(cast, labs) -> None:  # type: ignore[no-untyped-def]
    before = rows(cast.alice_tenant, "lab")
    tenant = cast.alice_tenant
    read_write = make_client(make_key(tenant, scopes=("read", "write")))
    response = read_write.delete(f"{URL}lab/")
    assert response.status_code == 403 and error_code(response) == "insufficient_scope"
    one_user = make_client(make_key(tenant, user="u1"))  # admin scope, but one end user's key
    response = one_user.delete(f"{URL}lab/")
    assert response.status_code == 403 and error_code(response) == "user_limited_key"
    other_workspace = make_client(make_key(tenant, workspace="default"))
    response = other_workspace.delete(f"{URL}lab/")
    assert response.status_code == 403 and error_code(response) == "workspace_forbidden"
    assert rows(cast.alice_tenant, "lab") == before


def test_a_key_limited_to_the_workspace_deletes_it_and_itself(cast, labs) -> None:  # type: ignore[no-untyped-def]
    raw = make_key(cast.alice_tenant, workspace="lab")
    response = make_client(raw).delete(f"{URL}lab/")
    assert response.status_code == 200, response.content
    assert response.json()["deleted"]["accounts.ApiKey"] == 1
    assert not ApiKey.objects.filter(prefix=ApiKey.parse_prefix(raw)).exists()
    # the key went with its workspace: it is refused from now on
    assert make_client(raw).get("/api/v1/sessions/").status_code == 401


def test_an_immutable_transcript_keeps_a_workspace_with_conversations(cast, labs) -> None:  # type: ignore[no-untyped-def]
    Tenant.objects.filter(pk=cast.alice_tenant.pk).update(immutable_transcript=True)
    before = rows(cast.alice_tenant, "lab")
    for query in ("", "?dry_run=true"):
        response = cast.alice.delete(f"{URL}lab/{query}")
        assert response.status_code == 409 and error_code(response) == "immutable_transcript"
    assert rows(cast.alice_tenant, "lab") == before
    Workspace.get_named(cast.alice_tenant, "empty")
    # no conversation in it: nothing immutable
    assert cast.alice.delete(f"{URL}empty/").status_code == 200


# --- the admin ------------------------------------------------------------------------------------


@pytest.fixture
def _fast_passwords(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.mark.usefixtures("_fast_passwords")
def test_an_operator_deletes_a_workspace_in_the_admin(admin_client, cast, labs) -> None:  # type: ignore[no-untyped-def]
    workspace = Workspace.objects.get(tenant=cast.alice_tenant, name="lab")
    before = rows(cast.alice_tenant, "lab")
    url = reverse("admin:accounts_workspace_delete", args=[workspace.pk])
    page = admin_client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert "permission to delete" not in html and "Are you sure" in html
    # the same counts as the API's preview, by model
    assert f"Chunks: {before['chunks']}" in html and f"Events: {before['events']}" in html
    assert "Sessions: 1" in html and "Workspaces: 1" in html
    assert rows(cast.alice_tenant, "lab") == before  # the page deletes nothing
    response = admin_client.post(url, {"post": "yes"})
    assert response.status_code == 302, response.content.decode()[:2000]
    assert (
        rows(cast.alice_tenant, "lab")["workspace"] == 0
        and rows(cast.alice_tenant, "lab")["sessions"] == 0
    )
    assert not Session.objects.filter(tenant=cast.alice_tenant, external_id="s1").exists()
    assert rows(cast.bob_tenant, "lab")["sessions"] == 1
