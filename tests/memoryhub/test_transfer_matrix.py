"""Export and import × {tenant key, read-only, workspace-limited, user-limited, admin} × {own rows,
another workspace's, another user's, another tenant's}: the indirect paths that read or write a
tenant's memory as a whole.

Every side uses the same names: note `n1`, fact `profile/home_city` with client id `ext1`, document
`doc://same`, session `s1` (ann's in alpha; session and note ids are unique per tenant,
docs/memory-model.md#ids, so ann's in beta are `s1-beta`/`n1-beta` and bob's in alpha
`s1-bob`/`n1-bob`, and an export of their session names exactly those). The other tenant holds the
same names, plus a workspace `gamma` and a session `s9` that exist only there. Each case compares a
database snapshot before and after (an export changes nothing, a refused import changes nothing) and
reads the answer: an export never holds a row outside the key's limits, an import places every row
within them or is refused whole with a 4xx naming the first offending record.

One world per key kind, each case inside a savepoint that is rolled back: the matrix stays quick.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import transaction

from accounts.models import Workspace
from tests.base import error_code, make_client, make_key, make_tenant
from tests.memoryhub.test_indirect_authority import (
    API,
    KEY_KINDS,
    changed_rows,
    export_of,
    fill,
    import_file,
    keys,
    ok,
    snapshot,
)

TARGETS = ("own", "other_workspace", "other_user", "other_tenant")
EXPORT_WORKSPACE = {
    "own": "alpha",
    "other_workspace": "beta",
    "other_user": "alpha",
    "other_tenant": "gamma",
}
EXPORT_SESSION = {
    "own": "s1",
    "other_workspace": "s1-beta",
    "other_user": "s1-bob",
    "other_tenant": "s9",
}
MARK = {"own": "ann-alpha", "other_workspace": "ann-beta", "other_user": "bob-alpha"}
OTHER_TENANT = "other-tenant"


def build(cast: Any) -> dict[str, Any]:
    fill(cast.alice, text=MARK["own"])
    fill(
        cast.alice,
        workspace="beta",
        session="s1-beta",
        note="n1-beta",
        text=MARK["other_workspace"],
    )
    fill(cast.alice, user="bob", session="s1-bob", note="n1-bob", text=MARK["other_user"])
    fill(cast.bob, text=OTHER_TENANT)
    ok(
        cast.bob.post(
            f"{API}/sessions/", {"id": "s9", "user_id": "ann", "workspace": "gamma"}, format="json"
        )
    )
    ok(
        cast.bob.post(
            f"{API}/sessions/s9/events/",
            {"role": "user", "content": f"{OTHER_TENANT} s9"},
            format="json",
        )
    )
    return keys(cast.alice_tenant)


def owners(doc: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(where, workspace, user_id) of every row of an export that names either."""
    rows: list[tuple[str, dict[str, Any]]] = [
        (f"sessions[{i}]", s) for i, s in enumerate(doc["sessions"])
    ]
    rows += [(f"documents[{i}]", d) for i, d in enumerate(doc.get("documents", []))]
    rows += [(f"chunks[{i}]", c) for i, c in enumerate(doc.get("chunks", []))]
    for label, records in doc.get("records", {}).items():
        rows += [(f"records.{label}[{i}]", r["fields"]) for i, r in enumerate(records)]
    return [
        (where, row.get("workspace"), row.get("user_id"))
        for where, row in rows
        if "workspace" in row or "user_id" in row
    ]


def export_expected(kind: str, scope: str, target: str) -> int:
    if scope == "user":  # names no user_id: a user-limited key's own user, for any other key none
        return 200 if kind == "user_limited" else 400
    if scope == "tenant":
        return 403 if kind in ("workspace_limited", "user_limited") else 200
    if kind == "workspace_limited" and scope == "workspace" and EXPORT_WORKSPACE[target] != "alpha":
        return 403  # the key names no other workspace (whether it exists or not)
    if target == "other_tenant":
        return 404  # gamma and s9 exist only in the other tenant
    if kind == "workspace_limited" and target == "other_workspace":
        return 403 if scope == "workspace" else 404
    if kind == "user_limited" and target == "other_user" and scope == "session":
        return 404
    return 200


def check_export(kind: str, scope: str, target: str, response: Any) -> None:
    expected = export_expected(kind, scope, target)
    body = response.content.decode()
    if expected != 200:
        assert response.status_code == expected, (response.status_code, body)
        assert not response.streaming
        for mark in (*MARK.values(), OTHER_TENANT):
            assert mark not in body
        return
    assert response.status_code == 200 and response.streaming, body
    doc = json.loads(body)
    assert OTHER_TENANT not in body  # never another tenant's rows
    rows = owners(doc)
    assert rows  # an export that holds nothing would pass every check below
    for where, workspace, user in rows:
        if kind == "workspace_limited":
            assert workspace == "alpha", (where, workspace)
        if kind == "user_limited":
            assert user in ("ann", "", None), (where, user)
        if scope == "workspace":
            assert workspace in (EXPORT_WORKSPACE[target], None), (where, workspace)
    if kind == "workspace_limited":
        assert [w["name"] for w in doc["workspaces"]] == ["alpha"]
    # what the scope names is all there (within the key's limits), and nothing else
    if scope == "session":
        assert [s["id"] for s in doc["sessions"]] == [EXPORT_SESSION[target]]
        wanted = {MARK[target]}
    elif scope == "workspace":
        wanted = {m for t, m in MARK.items() if EXPORT_WORKSPACE[t] == EXPORT_WORKSPACE[target]}
    else:
        wanted = set(MARK.values())
    if kind == "user_limited":
        wanted.discard(MARK["other_user"])
    for mark in MARK.values():
        assert (mark in body) == (mark in wanted), (mark, wanted)


@pytest.mark.parametrize("kind", KEY_KINDS)
def test_matrix_export(cast, kind) -> None:  # type: ignore[no-untyped-def]
    client = build(cast)[kind]
    cases = [("tenant", "own"), ("user", "own")]
    cases += [(scope, target) for scope in ("workspace", "session") for target in TARGETS]
    before = snapshot()
    for scope, target in cases:
        body: dict[str, Any] = {"scope": scope}
        if scope == "workspace":
            body["workspace"] = EXPORT_WORKSPACE[target]
        elif scope == "session":
            body["session"] = EXPORT_SESSION[target]
        response = client.post(f"{API}/export/", body, format="json")
        try:
            check_export(kind, scope, target, response)
        except AssertionError as exc:
            raise AssertionError(f"export {scope} of {target} with the {kind} key: {exc}") from exc
        assert snapshot() == before, (scope, target)  # an export changes nothing


# --- import ------------------------------------------------------------------------------------

IMPORT_PLACE = {
    "own": ("alpha", "ann"),
    "other_workspace": ("beta", "ann"),
    "other_user": ("alpha", "bob"),
    "other_tenant": ("alpha", "ann"),
}
# where a snapshot row (test_indirect_authority.snapshot) holds its owner and its workspace id
OWNER_COLUMNS = {
    "session": (1, 2),
    "note": (1, 2),
    "fact": (0, 1),
    "factversion": (1, 2),
    "document": (1, 2),
    "chunk": (2, 3),
}
# plain JSON, kept across tests (the rows they came from are not)
_files: dict[str, dict[str, Any]] = {}


def import_world(cast: Any) -> dict[str, Any]:
    fill(cast.alice, text=MARK["own"])  # ann's s1, n1, ext1, doc://same in alpha
    fill(cast.bob, text=OTHER_TENANT)
    return keys(cast.alice_tenant)


def file_for(cast: Any, target: str) -> dict[str, Any]:
    """An export holding the shared names, placed as the target says; another tenant's is an
    export of that tenant itself."""
    if target == "other_tenant":
        data = export_of(cast.bob_tenant)
        # not its empty default
        data["workspaces"] = [w for w in data["workspaces"] if w["name"] == "alpha"]
        return data
    if target not in _files:
        workspace, user = IMPORT_PLACE[target]
        scratch = make_tenant(f"scratch-{target}")
        fill(make_client(make_key(scratch)), workspace=workspace, user=user, text=f"file-{target}")
        data = export_of(scratch)
        # not its empty default
        data["workspaces"] = [w for w in data["workspaces"] if w["name"] == workspace]
        _files[target] = data
    return json.loads(json.dumps(_files[target]))


def import_expected(kind: str, on_conflict: str, target: str) -> tuple[int, str | None]:
    if kind == "read_only":
        return 403, "insufficient_scope"
    if on_conflict == "replace":
        return 400, "invalid_on_conflict"  # fail, skip and merge are the options
    if kind == "user_limited" and IMPORT_PLACE[target][1] != "ann":
        # ann's key imports ann's rows only (in any workspace: it has no limit there)
        return 403, "user_limited_key"
    if kind == "workspace_limited" and IMPORT_PLACE[target][0] != "alpha":
        return 403, "workspace_forbidden"
    if on_conflict == "fail":
        return 409, "session_exists"  # s1 is stored already
    return 201, None


@pytest.mark.parametrize("on_conflict", ("fail", "skip", "replace"))
@pytest.mark.parametrize("kind", KEY_KINDS)
def test_matrix_import(cast, kind, on_conflict) -> None:  # type: ignore[no-untyped-def]
    client = import_world(cast)[kind]
    for target in TARGETS:
        data = file_for(cast, target)
        before = snapshot()
        other_before = snapshot(cast.bob_tenant)
        sid = transaction.savepoint()
        response = import_file(client, data, on_conflict=on_conflict)
        after = snapshot()
        where = f"import {on_conflict} of {target} with the {kind} key"
        status, code = import_expected(kind, on_conflict, target)
        assert response.status_code == status, (where, response.status_code, response.content)
        assert snapshot(cast.bob_tenant) == other_before, where  # the other tenant is never touched
        if status != 201:
            assert error_code(response) == code, (where, response.content)
            assert after == before, where  # refused whole
            if code == "workspace_forbidden":  # names the first offending record
                error = response.json()["error"]
                # the file's first row there
                assert error["details"]["path"] == "workspaces[0]", (where, error)
                assert (
                    f"the file has {IMPORT_PLACE[target][0]!r} at workspaces[0]" in error["message"]
                ), where
            if code == "user_limited_key":  # names the first row that is not the key's user's
                error = response.json()["error"]
                assert error["details"]["path"] == "sessions[0]", (where, error)
            if code == "session_exists":
                assert "s1" in response.json()["error"]["message"], (where, response.content)
        else:
            workspace, user = IMPORT_PLACE[target]
            changed = changed_rows(before, after)
            for table in ("session", "note", "fact", "factversion", "document"):
                # stored rows as they were
                assert not (changed[table] & set(before[table])), (where, table)
            assert not (changed["event"] & set(before["event"])), where
            report = response.json()
            # the stored s1 stays as it was
            assert report["skipped_sessions"] == ["s1"], (where, report)
            # the same names everywhere: all of it is held already
            if target in ("own", "other_tenant"):
                assert report["imported"] == {} and not any(changed.values()), (where, report)
            else:  # the file's fact and document are another owner's or workspace's: imported
                assert (
                    report["imported"]["memoryhub.Fact"] == report["imported"]["documents"] == 1
                ), (where, report)
                assert changed["fact"] and changed["document"], where
            # every new row within the limits
            for table, (user_at, workspace_at) in OWNER_COLUMNS.items():
                for pk in changed[table]:
                    row = after[table][pk]
                    assert row[user_at] in (user, ""), (where, table, row)
                    if kind == "user_limited":
                        assert row[user_at] == "ann" or table == "chunk", (where, table, row)
                    ws = row[workspace_at]
                    if kind == "workspace_limited":
                        assert ws is not None, (where, table, row)
                    if ws is not None:
                        assert Workspace.objects.get(pk=ws).name == workspace, (where, table, row)
        transaction.savepoint_rollback(sid)
