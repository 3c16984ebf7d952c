"""The authority matrix of the paths that act from a file or by a client id: client-id fact upserts
(REST and MCP), import merges and session claims, for every kind of key against rows of its own, of
another workspace, user or tenant; a refused request changes nothing, an accepted one only rows
within the key's limits. The names and helpers are test_indirect_authority.py's."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import DEFAULT_WORKSPACE
from memoryhub.models import Fact, FactVersion, Session
from tests.base import make_key
from tests.memoryhub.test_indirect_authority import (
    API,
    KEY_KINDS,
    SCOPES,
    changed_rows,
    fill,
    import_file,
    keys,
    ok,
    scratch_file,
    snapshot,
)

TARGETS = ("own", "other_workspace", "other_user", "other_tenant")
PLACE = {
    "own": ("alpha", "ann"),
    "other_workspace": ("beta", "ann"),
    "other_user": ("alpha", "bob"),
    "other_tenant": ("alpha", "ann"),
}


def upsert_expected(kind: str, target: str) -> tuple[int, str | None]:
    """One answer per cell: REST's status and error code (MCP answers with the same code)."""
    workspace, user = PLACE[target]
    if kind == "read_only":
        return 403, "insufficient_scope"
    if kind == "workspace_limited" and workspace != "alpha":
        return 403, "workspace_forbidden"
    if kind == "user_limited" and user != "ann":
        return 403, "user_forbidden"
    return 200, None  # ext1 of that owner and workspace exists already (world_rows): updated


def merge_expected(kind: str, target: str) -> tuple[int, str | None]:
    workspace, user = PLACE[target]
    if kind == "read_only":
        return 403, "insufficient_scope"
    if kind == "user_limited" and user != "ann":
        return 403, "user_limited_key"  # ann's key imports ann's rows only
    if kind == "workspace_limited" and workspace != "alpha":
        return 403, "workspace_forbidden"
    if user != "ann":
        return 409, "owner_mismatch"  # bob's file merged into ann's s1
    return 201, None


def world_rows(cast: Any) -> None:
    fill(cast.alice)  # own: ann in alpha
    ok(
        cast.alice.post(
            f"{API}/facts/",
            {
                "category": "profile",
                "key": "home_city",
                "external_id": "ext1",
                "content": "ann in beta",
                "user_id": "ann",
                "workspace": "beta",
            },
            format="json",
        )
    )
    ok(
        cast.alice.post(
            f"{API}/facts/",
            {
                "category": "profile",
                "key": "home_city",
                "external_id": "ext1",
                "content": "bob in alpha",
                "user_id": "bob",
                "workspace": "alpha",
            },
            format="json",
        )
    )
    fill(cast.bob, text="other tenant's ann")


def error_of(response: Any) -> str | None:
    return response.json()["error"]["code"] if response.status_code >= 400 else None


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", KEY_KINDS)
def test_matrix_client_id_upsert(cast, kind, target) -> None:  # type: ignore[no-untyped-def]
    world_rows(cast)
    workspace, user = PLACE[target]
    before = snapshot()
    body = {
        "category": "profile",
        "key": "home_city",
        "external_id": "ext1",
        "content": f"written by {kind}",
        "workspace": workspace,
        "user_id": user,
    }
    response = keys(cast.alice_tenant)[kind].post(f"{API}/facts/", body, format="json")
    after = snapshot()
    status, code = upsert_expected(kind, target)
    assert (response.status_code, error_of(response)) == (status, code), response.content
    if status != 200:
        assert after == before
        return
    changed = changed_rows(before, after)
    for pk in changed["fact"]:
        fact = Fact.objects.get(pk=pk)
        assert (fact.tenant_id, fact.workspace.name, fact.user_id) == (
            cast.alice_tenant.pk,
            workspace,
            user,
        )
    assert snapshot(cast.bob_tenant) == {
        t: {pk: v for pk, v in rows.items() if pk in snapshot(cast.bob_tenant)[t]}
        for t, rows in before.items()
    }
    # exactly the one row of that owner and workspace carries the client id
    assert (
        Fact.objects.filter(
            tenant=cast.alice_tenant, external_id="ext1", user_id=user, workspace__name=workspace
        ).count()
        == 1
    )


def mcp_upsert_expected(kind: str, target: str) -> str | None:
    """The MCP tool takes no workspace: its facts go to the key's, and naming another is refused."""
    if target == "other_workspace":
        return "unknown_field"  # the arguments are checked before the scope
    if kind == "read_only":
        return "insufficient_scope"
    return upsert_expected(kind, target)[1]


# server.call closes the connection after each call, as a web worker's thread does: the rows must
# be committed, so this column runs outside a test transaction.
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", KEY_KINDS)
def test_matrix_client_id_upsert_over_mcp(cast, kind, target) -> None:  # type: ignore[no-untyped-def]
    from accounts.models import ApiKey
    from retrieval.mcp_server import catalog, server

    world_rows(cast)
    workspace, user = PLACE[target]
    raw = make_key(
        cast.alice_tenant,
        SCOPES[kind],
        workspace="alpha" if kind == "workspace_limited" else None,
        user="ann" if kind == "user_limited" else "",
    )
    key = ApiKey.objects.get(prefix=ApiKey.parse_prefix(raw))
    spec = next(s for s in catalog.build() if s.name == "memory_fact")
    arguments = {
        "action": "upsert",
        "category": "profile",
        "key": "home_city",
        "external_id": "ext1",
        "content": f"written by {kind}",
        "user_id": user,
    }
    if target == "other_workspace":
        arguments["workspace"] = workspace
    before = snapshot()
    result = server.call(spec, lambda: key, arguments)
    after = snapshot()
    code = result.structured_content["error"]["code"] if result.is_error else None
    assert code == mcp_upsert_expected(kind, target), result.structured_content
    if code is not None:
        assert after == before
        return
    placed = "alpha" if kind == "workspace_limited" else DEFAULT_WORKSPACE
    changed = changed_rows(before, after)
    assert changed["fact"]
    for pk in changed["fact"]:
        fact = Fact.objects.get(pk=pk)
        assert (fact.tenant_id, fact.workspace.name, fact.user_id) == (
            cast.alice_tenant.pk,
            placed,
            user,
        )
    assert (
        Fact.objects.filter(
            tenant=cast.alice_tenant, external_id="ext1", user_id=user, workspace__name=placed
        ).count()
        == 1
    )


@pytest.mark.parametrize("target", ("own", "other_workspace", "other_user"))
@pytest.mark.parametrize("kind", KEY_KINDS)
def test_matrix_import_merge(cast, kind, target) -> None:  # type: ignore[no-untyped-def]
    world_rows(cast)
    workspace, user = PLACE[target]
    data = scratch_file(workspace=workspace, user=user, text=f"file for {user} in {workspace}")
    client = keys(cast.alice_tenant)[kind]
    before = snapshot()
    response = import_file(client, data, on_conflict="merge")
    after = snapshot()
    status, code = merge_expected(kind, target)
    assert (response.status_code, error_of(response)) == (status, code), response.content
    if status != 201:
        assert after == before
        return
    changed = changed_rows(before, after)
    for pk in changed["event"]:
        assert pk not in before["event"]  # appended, never rewritten
    for table in ("note", "fact", "factversion", "document"):
        assert not (changed[table] & set(before[table])), table  # stored rows stay as they were
    for pk in changed["fact"]:
        fact = Fact.objects.get(pk=pk)
        assert (fact.workspace.name, fact.user_id) == (workspace, user)
    if kind == "user_limited":  # ann's key merges ann's file into ann's s1: only ann's rows change
        assert changed["event"] and all(
            after["session"][pk][1] == "ann" for pk in changed["session"]
        )
    assert Session.objects.get(tenant=cast.alice_tenant, external_id="s1").user_id == "ann"
    assert (
        FactVersion.objects.filter(
            tenant=cast.alice_tenant, valid_to__isnull=True, fact__isnull=False
        )
        .values("fact_id")
        .distinct()
        .count()
        == FactVersion.objects.filter(
            tenant=cast.alice_tenant, valid_to__isnull=True, fact__isnull=False
        ).count()
    )


@pytest.mark.parametrize(
    "holds", ("nothing", "own", "other_user", "other_workspace", "other_tenant")
)
@pytest.mark.parametrize("kind", KEY_KINDS)
def test_matrix_claim(cast, kind, holds) -> None:  # type: ignore[no-untyped-def]
    """Claim the shared session s1 for ann (the user-limited key's user)."""
    workspace = "beta" if holds == "other_workspace" else "alpha"
    ok(cast.alice.post(f"{API}/sessions/", {"id": "s1", "workspace": workspace}, format="json"))
    ok(cast.bob.post(f"{API}/sessions/", {"id": "s1", "workspace": "alpha"}, format="json"))
    owner = {
        "nothing": None,
        "own": "ann",
        "other_user": "bob",
        "other_workspace": "bob",
        "other_tenant": None,
    }[holds]
    if owner:
        ok(
            cast.alice.post(
                f"{API}/facts/",
                {
                    "content": f"{owner}'s",
                    "session": "s1",
                    "scope": "conversation",
                    "user_id": owner,
                },
                format="json",
            )
        )
    if holds == "other_tenant":
        ok(
            cast.bob.post(
                f"{API}/facts/",
                {
                    "content": "bob tenant's",
                    "session": "s1",
                    "scope": "conversation",
                    "user_id": "bob",
                },
                format="json",
            )
        )
    before = snapshot()
    response = keys(cast.alice_tenant)[kind].patch(
        f"{API}/sessions/s1/", {"user_id": "ann"}, format="json"
    )
    after = snapshot()
    expected = (
        403
        if kind in ("read_only", "user_limited") and kind == "read_only"
        else 404
        if kind == "workspace_limited" and workspace == "beta"
        else 409
        if owner == "bob"
        else 200
    )
    if kind == "user_limited":
        expected = 404  # a session nobody owns is the tenant's: a user-limited key does not see it
    assert response.status_code == expected, (response.status_code, response.content)
    if kind == "user_limited":
        assert response.json()["error"]["code"] == "session_not_found"
    if expected != 200:
        assert after == before
        return
    changed = changed_rows(before, after)
    assert changed["session"] == {
        Session.objects.get(tenant=cast.alice_tenant, external_id="s1").pk
    }
    assert snapshot(cast.bob_tenant)["session"] == {
        pk: v for pk, v in before["session"].items() if pk in snapshot(cast.bob_tenant)["session"]
    }
