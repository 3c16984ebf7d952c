"""Authority on the paths that act from a file or by a client id: fact upserts by `external_id`,
the claim of a shared session, and `?external_id=`; imports (placement, merges, fact history) are
test_import_authority.py, with these names and helpers.

Every side uses the same names: session `s1`, note `n1`, fact `profile/home_city` with client id
`ext1`, document `doc://same`; tenant "alice" has workspaces alpha and beta and users ann and bob,
tenant "bob" (another tenant) holds the same names. Each case compares a database snapshot before
and after: a refused request changes nothing, an accepted one changes only rows within the key's
limits. The matrix of every kind of key against every owner is
test_indirect_authority_matrix.py.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from memoryhub.models import Event, Fact, FactVersion, Note, Session
from memoryhub.transfer import ExportScope, export_memory
from retrieval.models import Chunk, Document
from tests.base import error_code, make_client, make_key, make_tenant

API = "/api/v1"
KEY_KINDS = ("tenant", "read_only", "workspace_limited", "user_limited", "admin")
SCOPES = {
    "tenant": ("read", "write"),
    "read_only": ("read",),
    "workspace_limited": ("read", "write"),
    "user_limited": ("read", "write"),
    "admin": ("read", "write", "admin"),
}


def ok(response: Any) -> Any:
    assert response.status_code in (200, 201), response.content
    return response.json()


def keys(tenant: Any) -> dict[str, Any]:
    return {
        kind: make_client(
            make_key(
                tenant,
                SCOPES[kind],
                workspace="alpha" if kind == "workspace_limited" else None,
                user="ann" if kind == "user_limited" else "",
            )
        )
        for kind in KEY_KINDS
    }


def fill(
    admin: Any,
    *,
    workspace: str = "alpha",
    user: str = "ann",
    session: str = "s1",
    note: str = "n1",
    text: str = "ann",
) -> dict[str, Any]:
    """One of everything under the shared names, placed in `workspace` for `user`."""
    ok(
        admin.post(
            f"{API}/sessions/",
            {"id": session, "user_id": user, "workspace": workspace},
            format="json",
        )
    )
    ok(
        admin.post(
            f"{API}/sessions/{session}/events/",
            {"role": "user", "content": f"{text}: my locker code is 4411"},
            format="json",
        )
    )
    ok(
        admin.post(
            f"{API}/notes/",
            {"note_id": note, "content": f"{text} note", "user_id": user, "workspace": workspace},
            format="json",
        )
    )
    fact = ok(
        admin.post(
            f"{API}/facts/",
            {
                "category": "profile",
                "key": "home_city",
                "external_id": "ext1",
                "content": f"{text} lives in Lisbon",
                "user_id": user,
                "workspace": workspace,
            },
            format="json",
        )
    )
    ok(
        admin.post(
            f"{API}/documents/",
            {
                "source_uri": "doc://same",
                "text": f"{text} document",
                "workspace": workspace,
                "user_id": user,
            },
            format="json",
        )
    )
    return fact


def snapshot(tenant: Any = None) -> dict[str, dict[int, tuple[Any, ...]]]:
    """Every row of the memory tables (of one tenant, or all), by table and id."""
    tables = {
        "session": (
            Session,
            ("external_id", "user_id", "workspace_id", "event_count", "last_sequence"),
        ),
        "event": (Event, ("session_id", "sequence", "content")),
        "note": (Note, ("note_id", "user_id", "workspace_id", "content", "tier")),
        "fact": (
            Fact,
            (
                "user_id",
                "workspace_id",
                "external_id",
                "content",
                "category",
                "key",
                "tier",
                "updated_at",
            ),
        ),
        "factversion": (
            FactVersion,
            ("fact_id", "user_id", "workspace_id", "content", "valid_from", "valid_to"),
        ),
        "document": (
            Document,
            ("source_uri", "user_id", "workspace_id", "session_id", "content_hash"),
        ),
        "chunk": (
            Chunk,
            ("kind", "source_id", "user_id", "workspace_id", "session_id", "text", "tier"),
        ),
    }
    out = {}
    for name, (model, fields) in tables.items():
        qs = model._default_manager.all() if model is not Chunk else Chunk.every_version.all()
        if tenant is not None:
            qs = qs.filter(tenant=tenant)
        out[name] = {row[0]: tuple(row[1:]) for row in qs.values_list("pk", *fields)}
    return out


def changed_rows(
    before: dict[str, dict[int, Any]], after: dict[str, dict[int, Any]]
) -> dict[str, set[int]]:
    return {
        t: {pk for pk in set(before[t]) | set(after[t]) if before[t].get(pk) != after[t].get(pk)}
        for t in before
    }


@pytest.fixture
def world(cast) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """Tenant alice: ann's rows in alpha; tenant bob (another tenant): the same names."""
    fill(cast.alice)
    fill(cast.bob, text="other tenant's ann")
    return {"keys": keys(cast.alice), "other_tenant": cast.bob_tenant, "tenant": cast.alice_tenant}


# --- D2: a client id is looked up within the key's limits -----------------------------------------


def test_a_workspace_limited_upsert_never_takes_another_workspaces_client_id(cast) -> None:  # type: ignore[no-untyped-def]
    beta = ok(
        cast.alice.post(
            f"{API}/facts/",
            {"content": "beta's own", "external_id": "beta-ext", "workspace": "beta"},
            format="json",
        )
    )
    before = snapshot(cast.alice_tenant)["fact"][beta["id"]]
    alpha_key = make_client(make_key(cast.alice_tenant, ("read", "write"), workspace="alpha"))
    response = alpha_key.post(
        f"{API}/facts/", {"content": "alpha's", "external_id": "beta-ext"}, format="json"
    )
    # the id is free in alpha: alpha's own fact
    assert response.status_code == 201, response.content
    assert response.json()["workspace"] == "alpha" and response.json()["id"] != beta["id"]
    assert snapshot(cast.alice_tenant)["fact"][beta["id"]] == before
    beta_key = make_client(make_key(cast.alice_tenant, ("read", "write"), workspace="beta"))
    assert beta_key.get(f"{API}/facts/{beta['id']}/").json()["content"] == "beta's own"


def test_mcp_memory_fact_upsert_stays_in_the_keys_workspace(cast) -> None:  # type: ignore[no-untyped-def]
    from accounts.models import ApiKey
    from retrieval.mcp_server.tools import run_fact

    beta = ok(
        cast.alice.post(
            f"{API}/facts/",
            {"content": "beta's own", "external_id": "beta-ext", "workspace": "beta"},
            format="json",
        )
    )
    before = snapshot(cast.alice_tenant)["fact"][beta["id"]]
    raw = make_key(cast.alice_tenant, ("read", "write"), workspace="alpha")
    key = ApiKey.objects.get(prefix=raw.split("_")[1])
    with transaction.atomic():
        out = run_fact(key, {"action": "upsert", "content": "alpha's", "external_id": "beta-ext"})
    assert out["created"] is True and out["workspace"] == "alpha"
    assert snapshot(cast.alice_tenant)["fact"][beta["id"]] == before
    # read and delete by client id, within the key's limits
    assert run_fact(key, {"action": "get", "external_id": "beta-ext"})["id"] == out["id"]
    assert run_fact(key, {"action": "delete", "external_id": "beta-ext"})["deleted"] is True
    assert Fact.objects.filter(pk=beta["id"]).exists()


def test_a_client_id_is_unique_per_owner_and_workspace_in_the_database(cast) -> None:  # type: ignore[no-untyped-def]
    alpha = ok(
        cast.alice.post(
            f"{API}/facts/",
            {"content": "a", "external_id": "x", "workspace": "alpha"},
            format="json",
        )
    )
    ok(
        cast.alice.post(
            f"{API}/facts/",
            {"content": "b", "external_id": "x", "workspace": "beta"},
            format="json",
        )
    )
    fact = Fact.objects.get(pk=alpha["id"])
    with pytest.raises(IntegrityError), transaction.atomic():
        Fact.objects.create(
            tenant=fact.tenant,
            workspace=fact.workspace,
            user_id="",
            content="c",
            external_id="x",
            tier="workspace",
        )
    account = ok(
        cast.alice.post(
            f"{API}/facts/",
            {"content": "acc", "external_id": "x", "scope": "account"},
            format="json",
        )
    )
    again = cast.alice.post(
        f"{API}/facts/", {"content": "acc 2", "external_id": "x", "scope": "account"}, format="json"
    )
    # NULL workspace is one value
    assert again.status_code == 200 and again.json()["id"] == account["id"]


# --- ?external_id= and the fact by its client id -----------------------------------------


def test_external_id_is_a_real_filter(cast) -> None:  # type: ignore[no-untyped-def]
    mine = ok(
        cast.alice.post(f"{API}/facts/", {"content": "one", "external_id": "ext1"}, format="json")
    )
    ok(cast.alice.post(f"{API}/facts/", {"content": "two", "external_id": "ext2"}, format="json"))
    ok(cast.alice.post(f"{API}/facts/", {"content": "three"}, format="json"))
    listed = cast.alice.get(f"{API}/facts/", {"external_id": "ext1"}).json()["results"]
    assert [f["id"] for f in listed] == [mine["id"]]
    assert cast.alice.get(f"{API}/facts/", {"external_id": "nope"}).json()["results"] == []


def test_a_fact_is_read_changed_and_deleted_by_its_client_id(cast) -> None:  # type: ignore[no-untyped-def]
    ann = ok(
        cast.alice.post(
            f"{API}/facts/",
            {"content": "ann's", "external_id": "ext1", "user_id": "ann"},
            format="json",
        )
    )
    url = f"{API}/facts/by-external-id/ext1/"
    assert cast.alice.get(url).json()["id"] == ann["id"]
    changed = cast.alice.patch(url, {"content": "ann's, changed"}, format="json")
    assert changed.status_code == 200 and changed.json()["content"] == "ann's, changed"
    bob = ok(
        cast.alice.post(
            f"{API}/facts/",
            {"content": "bob's", "external_id": "ext1", "user_id": "bob"},
            format="json",
        )
    )
    assert error_code(cast.alice.get(url)) == "ambiguous_external_id"
    assert cast.alice.get(url, {"user_id": "bob"}).json()["id"] == bob["id"]
    # a key limited to ann sees only hers: no ambiguity, and bob's stays out of reach
    ann_key = make_client(make_key(cast.alice_tenant, ("read", "write"), user="ann"))
    assert ann_key.get(url).json()["id"] == ann["id"]
    bobs = ann_key.get(url, {"user_id": "bob"})
    assert (bobs.status_code, error_code(bobs)) == (404, "fact_not_found")  # bob's reads as missing
    assert ann_key.delete(url).status_code == 200
    assert (
        not Fact.objects.filter(pk=ann["id"]).exists()
        and Fact.objects.filter(pk=bob["id"]).exists()
    )
    assert error_code(ann_key.get(url)) == "fact_not_found"
    assert cast.bob.get(url).status_code == 404  # another tenant


# --- two current versions: a database constraint --------------------------------------------------


def test_a_fact_never_has_two_current_versions(cast) -> None:  # type: ignore[no-untyped-def]
    fact = Fact.objects.get(
        pk=ok(cast.alice.post(f"{API}/facts/", {"content": "one", "key": "k"}, format="json"))["id"]
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        FactVersion.objects.create(
            tenant=fact.tenant,
            fact=fact,
            workspace=fact.workspace,
            user_id=fact.user_id,
            tier=fact.tier,
            category=fact.category,
            key=fact.key,
            content="forged",
            valid_from=timezone.now(),
        )


# --- D4: claiming a shared session ---------------------------------------------------------------


@pytest.mark.parametrize("held", ["fact", "note", "document"])
def test_a_shared_session_holding_another_users_rows_cannot_be_claimed(cast, held) -> None:  # type: ignore[no-untyped-def]
    admin = cast.alice
    ok(admin.post(f"{API}/sessions/", {"id": "s1"}, format="json"))
    body = {"session": "s1", "user_id": "ann"}
    if held == "fact":
        ok(
            admin.post(
                f"{API}/facts/",
                {"content": "ann's conversation fact", "scope": "conversation", **body},
                format="json",
            )
        )
    elif held == "note":
        ok(
            admin.post(
                f"{API}/notes/", {"note_id": "n1", "content": "ann's note", **body}, format="json"
            )
        )
    else:
        ok(
            admin.post(
                f"{API}/documents/",
                {"source_uri": "doc://same", "text": "ann's document", **body},
                format="json",
            )
        )
    before = snapshot()
    response = admin.patch(f"{API}/sessions/s1/", {"user_id": "bob"}, format="json")
    assert response.status_code == 409 and error_code(response) == "owner_mismatch", (
        response.content
    )
    assert snapshot() == before
    # ann may take it: every row it holds is hers (or shared)
    assert admin.patch(f"{API}/sessions/s1/", {"user_id": "ann"}, format="json").status_code == 200


def test_forgetting_a_claimant_never_deletes_another_users_rows(cast) -> None:  # type: ignore[no-untyped-def]
    admin = cast.alice
    ok(admin.post(f"{API}/sessions/", {"id": "s1"}, format="json"))
    ok(
        admin.post(
            f"{API}/facts/",
            {"content": "ann's", "session": "s1", "scope": "conversation", "user_id": "ann"},
            format="json",
        )
    )
    admin.patch(f"{API}/sessions/s1/", {"user_id": "bob"}, format="json")
    ok(admin.delete(f"{API}/users/bob/"))
    assert Fact.objects.filter(user_id="ann").exists()


# --- export and import files (the import tests are test_import_authority.py) -------------------


def export_of(tenant: Any) -> dict[str, Any]:
    return copy.deepcopy(export_memory(tenant=tenant, scope=ExportScope()))


def import_file(client: Any, data: dict[str, Any], on_conflict: str = "fail") -> Any:
    import json

    return client.generic(
        "POST",
        f"{API}/import/?on_conflict={on_conflict}",
        json.dumps(data),
        content_type="application/json",
    )


def scratch_file(*, workspace: str, user: str, text: str = "file") -> dict[str, Any]:
    """An export of a scratch tenant holding the shared names, placed in `workspace` for `user`."""
    scratch = make_tenant(f"scratch-{workspace}-{user}-{text}")
    fill(make_client(make_key(scratch)), workspace=workspace, user=user, text=text)
    data = export_of(scratch)
    # not its empty default
    data["workspaces"] = [w for w in data["workspaces"] if w["name"] == workspace]
    return data


def test_a_note_is_never_moved_to_another_workspace(cast) -> None:  # type: ignore[no-untyped-def]
    ok(
        cast.alice.post(
            f"{API}/notes/",
            {"note_id": "n1", "content": "beta's", "workspace": "beta"},
            format="json",
        )
    )
    before = snapshot()
    response = cast.alice.put(
        f"{API}/notes/n1/", {"content": "moved", "workspace": "alpha"}, format="json"
    )
    assert response.status_code == 409 and error_code(response) == "workspace_mismatch", (
        response.content
    )
    assert snapshot() == before
    kept = cast.alice.put(
        f"{API}/notes/n1/", {"content": "changed", "workspace": "beta"}, format="json"
    )
    assert kept.status_code == 200 and kept.json()["workspace"] == "beta"
