"""The MCP write tools × {a tenant key writing for user bob, bob's user-limited key} × {bob's own
row, ann's row, a shared row, a missing id}: the same answers as REST
(tests/memoryhub/test_write_matrix.py, whose world of colliding names,
tests/memoryhub/write_world.py, this reuses). One MCP session per tool and key runs the four
targets; the database is compared before and after: only bob's rows may change."""

from __future__ import annotations

from typing import Any

import pytest

from tests.base import make_client, make_key, make_tenant
from tests.mcp_server.conftest import Mcp
from tests.memoryhub.write_world import NOTES, SESSIONS, TARGETS, build_world, snapshot

pytestmark = pytest.mark.django_db(transaction=True)

OK = ""  # no error


def _remember(target: str, user: dict[str, str], ids: Any) -> tuple[str, dict[str, Any]]:
    return "memory_remember", {
        "session": SESSIONS[target],
        **user,
        "events": [{"role": "user", "content": "bob: I moved to Oslo"}],
    }


def _pad(target: str, user: dict[str, str], ids: Any) -> tuple[str, dict[str, Any]]:
    return "scratchpad_write", {"session": SESSIONS[target], "items": {"city": "Oslo"}}


def _note_update(target: str, user: dict[str, str], ids: Any) -> tuple[str, dict[str, Any]]:
    return "memory_note", {
        "action": "update",
        "note_id": NOTES[target],
        "content": "bob's note",
        **user,
    }


def _note_create(target: str, user: dict[str, str], ids: Any) -> tuple[str, dict[str, Any]]:
    return "memory_note", {
        "action": "create",
        "note_id": NOTES[target],
        "content": "bob's note",
        **user,
    }


def _note_in_session(target: str, user: dict[str, str], ids: Any) -> tuple[str, dict[str, Any]]:
    return "memory_note", {
        "action": "create",
        "content": "bob's note",
        "session": SESSIONS[target],
        "scope": "conversation",
        **user,
    }


def _note_delete(target: str, user: dict[str, str], ids: Any) -> tuple[str, dict[str, Any]]:
    return "memory_note", {"action": "delete", "note_id": NOTES[target]}


def _fact_upsert(target: str, user: dict[str, str], ids: Any) -> tuple[str, dict[str, Any]]:
    return "memory_fact", {
        "action": "upsert",
        "category": "profile",
        "key": "home_city",
        "content": f"bob lives in Oslo ({target})",
        **user,
    }


def _fact_delete(target: str, user: dict[str, str], ids: Any) -> tuple[str, dict[str, Any]]:
    return "memory_fact", {"action": "delete", "fact_id": ids["fact"][target]}


# tool -> (call, takes a user, {(actor, target): error code or OK})
def _codes(
    own: str, other_t: str, other_k: str, shared_t: str, shared_k: str, missing: str
) -> dict[Any, str]:
    return {
        ("tenant", "own"): own,
        ("key", "own"): own,
        ("tenant", "other"): other_t,
        ("key", "other"): other_k,
        ("tenant", "shared"): shared_t,
        ("key", "shared"): shared_k,
        ("tenant", "missing"): missing,
        ("key", "missing"): missing,
    }


# A session nobody owns is the tenant's: a user-limited key does not see it (session_not_found, as
# for ann's); shared notes and facts are read-only to it (shared_read_only).
CASES: dict[str, tuple[Any, bool, dict[Any, str]]] = {
    "remember": (
        _remember,
        True,
        _codes(
            OK, "owner_mismatch", "session_not_found", "owner_mismatch", "session_not_found", OK
        ),
    ),
    "scratchpad_write": (
        _pad,
        False,
        _codes(OK, "", "session_not_found", "", "session_not_found", "session_not_found"),
    ),
    "note update": (
        _note_update,
        True,
        _codes(OK, "owner_mismatch", "note_not_found", "owner_mismatch", "shared_read_only", OK),
    ),
    "note create": (
        _note_create,
        True,
        _codes("note_exists", "note_exists", "note_not_found", "note_exists", "note_exists", OK),
    ),
    "note in session": (
        _note_in_session,
        True,
        _codes(
            OK, "owner_mismatch", "session_not_found", OK, "session_not_found", "session_not_found"
        ),
    ),
    "note delete": (
        _note_delete,
        False,
        _codes(OK, "", "note_not_found", "", "shared_read_only", "note_not_found"),
    ),
    "fact upsert": (_fact_upsert, True, _codes(OK, OK, OK, OK, OK, OK)),
    "fact delete": (
        _fact_delete,
        False,
        _codes(OK, "", "fact_not_found", "", "shared_read_only", "fact_not_found"),
    ),
}


def _params() -> list[Any]:
    params = []
    for name, (_, takes_user, _) in CASES.items():
        for actor in ("tenant", "key"):
            if actor == "tenant" and not takes_user:
                continue
            params.append(pytest.param(name, actor, id=f"{name}-{actor}"))
    return params


@pytest.mark.parametrize(("name", "actor"), _params())
def test_mcp_write(http_mcp: Mcp, name: str, actor: str) -> None:
    tenant = make_tenant("alice")
    admin_key = make_key(tenant)
    ids = build_world(make_client(admin_key))
    key = admin_key if actor == "tenant" else make_key(tenant, user="bob")
    call, _, codes = CASES[name]
    user = {"user_id": "bob"} if actor == "tenant" else {}
    before = snapshot()
    results = http_mcp.calls(key, [call(target, user, ids) for target in TARGETS])
    after = snapshot()
    for target, result in zip(TARGETS, results, strict=True):
        expected = codes[(actor, target)]
        if expected:
            assert result.is_error and result.code == expected, (target, result.text)
        else:
            assert not result.is_error, (target, result.text)
    changed = before ^ after
    assert changed, "nothing was written"
    assert all(row[1] == "bob" for row in changed), sorted(
        (r for r in changed if r[1] != "bob"), key=str
    )
    if codes[(actor, "missing")]:  # a refused write to a missing id left nothing behind
        assert not any(SESSIONS["missing"] in row or NOTES["missing"] in row for row in after)
