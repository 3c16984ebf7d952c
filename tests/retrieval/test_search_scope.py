"""Which memories POST /search/ reaches: scope widening to wider tiers, where each result comes
from, and tenant and workspace isolation."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from accounts.models import Workspace
from memoryhub.searchable import Searchable
from memoryhub.signals import memory_saved
from retrieval.search import hybrid_search
from tests.base import error_code, make_client, make_key
from tests.retrieval.conftest import search, texts


def _memory(tenant_id: int, source_id: str, text: str, tier: str, **placement: Any) -> None:
    memory_saved.send(
        sender=None,
        kind="fact",
        searchable=Searchable(
            kind="fact",
            source_id=source_id,
            tenant_id=tenant_id,
            text=text,
            created_at=timezone.now(),
            tier=tier,
            **placement,
        ),
    )


def test_scope_widening_adds_wider_tiers_only(alice, index, cast) -> None:
    alice.post("/api/v1/sessions/", {"id": "s1", "channel": "pets"}, format="json")
    alice.post("/api/v1/sessions/", {"id": "s2", "channel": "pets"}, format="json")
    alice.post("/api/v1/sessions/", {"id": "s3", "channel": "cars"}, format="json")
    index(alice, "s1", {"role": "user", "content": "kiwi in session one"})
    index(alice, "s2", {"role": "user", "content": "kiwi in session two"})
    index(alice, "s3", {"role": "user", "content": "kiwi in another channel"})
    s1 = alice.get("/api/v1/sessions/s1/").json()
    ws = Workspace.objects.get(tenant=cast.alice_tenant, name=s1["workspace"])
    pets = ws.channels.get(name="pets")
    cars = ws.channels.get(name="cars")
    t = cast.alice_tenant.pk
    _memory(t, "f1", "kiwi fact for account", "account")
    _memory(t, "f2", "kiwi fact for workspace", "workspace", workspace_id=ws.pk)
    _memory(t, "f3", "kiwi fact for pets", "channel", workspace_id=ws.pk, channel_id=pets.pk)
    _memory(t, "f4", "kiwi fact for cars", "channel", workspace_id=ws.pk, channel_id=cars.pk)
    conversation = set(
        texts(search(alice, query="kiwi", session="s1", scope="conversation", top_k=20))
    )
    assert conversation == {
        "kiwi in session one",
        "kiwi fact for account",
        "kiwi fact for workspace",
        "kiwi fact for pets",
    }
    channel = set(texts(search(alice, query="kiwi", session="s1", scope="channel", top_k=20)))
    assert channel == conversation | {"kiwi in session two"}
    # Widening adds other conversations' messages, never another channel's tiered memories.
    workspace = set(texts(search(alice, query="kiwi", session="s1", scope="workspace", top_k=20)))
    assert workspace == channel | {"kiwi in another channel"}
    # No scope: the session's whole memory (these sessions are the tenant's: its unowned
    # conversations), with the tiered memories that apply to the session, never cars' fact.
    assert set(texts(search(alice, query="kiwi", session="s1", top_k=20))) == workspace
    # Without a session, a workspace's search reads every tier in it.
    assert "kiwi fact for cars" in texts(search(alice, query="kiwi", workspace=ws.name, top_k=20))


def test_a_result_names_its_session_channel_and_workspace_or_none(alice, index, cast) -> None:
    """The names a result shows come with its row (sql.load_rows): a message names its session,
    channel and workspace; a channel's memory its channel and workspace; an account's none."""
    alice.post("/api/v1/sessions/", {"id": "s1", "channel": "pets"}, format="json")
    index(alice, "s1", {"role": "user", "content": "quince in the session"})
    ws = Workspace.objects.get(
        tenant=cast.alice_tenant, name=alice.get("/api/v1/sessions/s1/").json()["workspace"]
    )
    t = cast.alice_tenant.pk
    _memory(t, "f1", "quince fact for the account", "account")
    _memory(
        t,
        "f2",
        "quince fact for pets",
        "channel",
        workspace_id=ws.pk,
        channel_id=ws.channels.get(name="pets").pk,
    )
    response = search(alice, query="quince", scope="account", top_k=10)
    assert response.status_code == 200, response.content
    named = {
        r["text"]: (r["session"], r["channel"], r["workspace"]) for r in response.json()["results"]
    }
    assert named == {
        "quince in the session": ("s1", "pets", ws.name),
        "quince fact for pets": (None, "pets", ws.name),
        "quince fact for the account": (None, None, None),
    }


# --- tenant isolation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {"mode": "text"},
        {"mode": "vector"},
        {"mode": "hybrid"},
        {"mode": "hybrid", "fusion": "rrf"},
        {"mode": "exact"},
        {"profile": "memory"},
        {"scope": "account"},
    ],
)
def test_bob_never_sees_alices_chunks(alice, bob, index, cast, body: dict[str, Any]) -> None:
    index(alice, "shared-name", {"role": "user", "content": "alice secret pineapple"})
    _memory(cast.alice_tenant.pk, "fa", "alice account pineapple", "account")
    index(bob, "shared-name", {"role": "user", "content": "bob pineapple"})
    assert texts(search(bob, query="pineapple", **body)) == ["bob pineapple"]
    assert texts(search(bob, query="pineapple", session="shared-name", **body)) == ["bob pineapple"]
    assert texts(
        search(
            bob,
            query="pineapple",
            session="shared-name",
            scope="workspace",
            **{k: v for k, v in body.items() if k != "scope"},
        )
    ) == ["bob pineapple"]


def test_bob_cannot_name_alices_session_or_channel(alice, bob, index) -> None:
    alice.post("/api/v1/sessions/", {"id": "alice-only", "channel": "alice-channel"}, format="json")
    index(alice, "alice-only", {"role": "user", "content": "pineapple"})
    assert error_code(search(bob, query="pineapple", session="alice-only")) == "session_not_found"
    assert (
        error_code(search(bob, query="pineapple", channel="alice-channel")) == "channel_not_found"
    )


def test_workspace_limited_key_sees_only_its_workspace(alice, index, cast) -> None:
    alice.post("/api/v1/sessions/", {"id": "in-proj", "workspace": "proj"}, format="json")
    index(alice, "in-proj", {"role": "user", "content": "mango in proj"})
    index(alice, "elsewhere", {"role": "user", "content": "mango elsewhere"})
    _memory(cast.alice_tenant.pk, "fm", "mango account fact", "account")
    limited = make_client(make_key(cast.alice_tenant, ("read",), workspace="proj"))
    for body in ({}, {"scope": "account"}, {"mode": "vector"}, {"mode": "exact"}):
        assert texts(search(limited, query="mango", **body)) == ["mango in proj"]


def test_hybrid_search_function_is_confined_to_its_tenant(alice, bob, index, cast) -> None:
    index(alice, "s", {"role": "user", "content": "papaya"})
    assert hybrid_search(tenant_id=cast.bob_tenant.pk, query="papaya") == []
    assert [
        h.chunk.text for h in hybrid_search(tenant_id=cast.alice_tenant.pk, query="papaya")
    ] == ["papaya"]
