"""Plain make_* helpers and the named cast: alice and bob are two tenants that must never meet."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rest_framework.test import APIClient

from accounts.models import ApiKey, Tenant, Workspace


def make_tenant(name: str, **fields: Any) -> Tenant:
    tenant, _ = Tenant.get_or_create_named(name)
    if fields:
        Tenant.objects.filter(pk=tenant.pk).update(**fields)
        tenant.refresh_from_db()
    return tenant


def make_key(
    tenant: Tenant,
    scopes: tuple[str, ...] = ("read", "write", "admin"),
    workspace: str | None = None,
    user: str = "",
) -> str:
    ws = Workspace.get_named(tenant, workspace) if workspace else None
    return ApiKey.create_key(tenant=tenant, scopes=scopes, workspace=ws, user_id=user).raw


def make_client(raw_key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
    return client


def error_code(response: Any) -> str:
    body = response.json()
    assert set(body) == {"error"}, body
    assert {"code", "message", "details"} <= set(body["error"]), body
    return body["error"]["code"]


@dataclass
class Cast:
    alice_tenant: Tenant
    bob_tenant: Tenant
    alice_key: str
    bob_key: str
    alice: APIClient
    bob: APIClient


def make_cast() -> Cast:
    alice_tenant = make_tenant("alice")
    bob_tenant = make_tenant("bob")
    alice_key = make_key(alice_tenant)
    bob_key = make_key(bob_tenant)
    return Cast(
        alice_tenant, bob_tenant, alice_key, bob_key, make_client(alice_key), make_client(bob_key)
    )


def post_events(client: APIClient, session: str, *events: dict[str, Any]) -> Any:
    if len(events) == 1:
        return client.post(f"/api/v1/sessions/{session}/events/", events[0], format="json")
    return client.post(
        f"/api/v1/sessions/{session}/events/", {"events": list(events)}, format="json"
    )


def new_session(client: APIClient, session: str, **fields: Any) -> None:
    response = client.post("/api/v1/sessions/", {"id": session, **fields}, format="json")
    assert response.status_code == 201, response.content


def search_texts(client: APIClient, query: str, **body: Any) -> list[str]:
    response = client.post(
        "/api/v1/search/", {"query": query, "scope": "account", **body}, format="json"
    )
    assert response.status_code == 200, response.content
    return [r["text"] for r in response.json()["results"]]


def remember(obj: Any) -> Any:
    """Index a note, fact or summary node the way memoryhub announces it (memory_saved)."""
    from memoryhub.signals import memory_saved

    memory_saved.send(sender=type(obj), kind=obj.as_searchable().kind, instance=obj)
    return obj


def add_memories(tenant: Tenant, session_id: str, user_id: str = "") -> dict[str, Any]:
    """A note, a fact (with provenance), a two-leaf summary tree and a scratchpad in one session."""
    from memoryhub.models import Fact, Note, Scratchpad, ScratchpadItem, Session, SummaryNode

    session = Session.objects.get(tenant=tenant, external_id=session_id)
    where = {
        "tenant": tenant,
        "workspace_id": session.workspace_id,
        "channel_id": session.channel_id,
    }
    note = remember(
        Note.objects.create(
            **where,
            user_id=user_id,
            content=f"Note: {user_id} likes quinces",
            tags=["fruit"],
            source="agent",
            metadata={"origin": "chat"},
        )
    )
    fact = remember(
        Fact.objects.create(
            **where,
            source_session=session,
            user_id=user_id,
            category="prefs",
            key=f"fruit-{user_id}",
            content=f"{user_id} prefers quinces to pears",
            tags=["fruit", "food"],
            lifetime="short_term",
            importance=0.7,
        )
    )
    leaves = [
        remember(
            SummaryNode.objects.create(
                **where,
                session=session,
                user_id=user_id,
                level="leaf",
                text=f"Leaf {i}: quince talk",
                sequence_start=i,
                sequence_end=i,
            )
        )
        for i in (1, 2)
    ]
    root = remember(
        SummaryNode.objects.create(
            **where,
            session=session,
            user_id=user_id,
            level="branch",
            depth=1,
            text="Branch: all about quinces",
            sequence_start=1,
            sequence_end=2,
            source_count=2,
        )
    )
    SummaryNode.objects.filter(pk__in=[leaf.pk for leaf in leaves]).update(parent=root)
    pad = Scratchpad.objects.create(tenant=tenant, session=session, version=3)
    ScratchpadItem.objects.create(
        tenant=tenant, scratchpad=pad, position=0, key="goal", value="buy quinces"
    )
    return {"note": note, "fact": fact, "leaves": leaves, "root": root, "pad": pad}


def rebuild_vector_index() -> None:
    """The chunks' HNSW index rebuilt inside the test's transaction (its rollback restores the
    old one), for a test that walks it among a few rows of its own. Earlier tests' rolled-back
    chunks stay in the graph until a vacuum, and pgvector's walk skips them only as it meets them
    (a known limit of its HNSW index): the likely reason a walk for a test's two nearest rows,
    which finds them alone, found none after a thousand other tests in its worker. A rebuild
    holds only live rows."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("REINDEX INDEX chunk_embedding_hnsw")
