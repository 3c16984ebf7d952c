"""Every REST write × {a tenant key writing for user bob, bob's user-limited key} × {bob's own row,
ann's row, a shared (unowned) row, a missing id} (docs/memory-model.md#sharing).

ann and bob collide on names: their sessions are trip-1 and trip-2 (session ids are unique per
tenant, docs/memory-model.md#ids, so bob reaching for ann's trip-1 is the collision), both have a
fact `profile/home_city`, a document `kb://home` and a schedule `daily-digest`. Each case checks
the status, the error code, and the database: a 4xx changes nothing; a 2xx creates or changes
only bob's rows (and shared rows only where a tenant key claims them) and never touches ann's. A
user-limited key's 404 for ann's row is the very body a read of that id answers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from memoryhub.models import Fact
from tests.base import make_client, make_key
from tests.memoryhub.write_world import API, NOTES, SESSIONS, TARGETS, World, build_world, snapshot


@pytest.fixture
def world(cast) -> World:  # type: ignore[no-untyped-def]
    return World(
        cast.alice, make_client(make_key(cast.alice_tenant, user="bob")), build_world(cast.alice)
    )


# --- the operations -----------------------------------------------------------------------------

Op = Callable[[World, str, bool], Any]  # (world, target, as tenant key for bob) -> response


def _client(w: World, tenant: bool) -> Any:
    return w.admin if tenant else w.bob_key


def _user(tenant: bool) -> dict[str, str]:
    return {"user_id": "bob"} if tenant else {}


def _session_read(w: World, target: str) -> str:
    return f"{API}/sessions/{SESSIONS[target]}/"


@dataclass
class Case:
    op: Op
    read: Callable[[World, str], str]  # the GET whose 404 body a user key's refusal must equal
    takes_user: bool  # whether a tenant key can write as a user (else: only the user key's column)
    # (actor, target) -> (status, code); actor: tenant|key
    expect: dict[tuple[str, str], tuple[int, str]]


def expect(
    own: tuple[int, str],
    other_t: tuple[int, str],
    other_k: tuple[int, str],
    shared_t: tuple[int, str],
    shared_k: tuple[int, str],
    missing: tuple[int, str],
) -> dict[tuple[str, str], tuple[int, str]]:
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


OK, CREATED = (200, ""), (201, "")
MISMATCH, READ_ONLY = (409, "owner_mismatch"), (403, "shared_read_only")
NO_SESSION, NO_NOTE = (404, "session_not_found"), (404, "note_not_found")


def _append(bulk: bool) -> Op:
    def op(w: World, target: str, tenant: bool) -> Any:
        event = {"role": "user", "content": "bob: I moved to Oslo"}
        body = (
            {"events": [event, {**event, "content": "bob: and I like it"}], **_user(tenant)}
            if bulk
            else {**event, **_user(tenant)}
        )
        return _client(w, tenant).post(
            f"{API}/sessions/{SESSIONS[target]}/events/", body, format="json"
        )

    return op


def _session_call(method: str, suffix: str, body: Any = None) -> Op:
    def op(w: World, target: str, tenant: bool) -> Any:
        return getattr(_client(w, tenant), method)(
            f"{API}/sessions/{SESSIONS[target]}/{suffix}", body, format="json"
        )

    return op


def _get_or_create(w: World, target: str, tenant: bool) -> Any:
    return _client(w, tenant).post(
        f"{API}/sessions/",
        {"id": SESSIONS[target], "get_or_create": True, **_user(tenant)},
        format="json",
    )


def _patch_session(w: World, target: str, tenant: bool) -> Any:
    return _client(w, tenant).patch(
        _session_read(w, target), {"title": "bob's trip", **_user(tenant)}, format="json"
    )


def _in_session(path: str, body: dict[str, Any]) -> Op:
    def op(w: World, target: str, tenant: bool) -> Any:
        return _client(w, tenant).post(
            f"{API}/{path}", {**body, "session": SESSIONS[target], **_user(tenant)}, format="json"
        )

    return op


def _note_put(w: World, target: str, tenant: bool) -> Any:
    return _client(w, tenant).put(
        f"{API}/notes/{NOTES[target]}/", {"content": "bob's note", **_user(tenant)}, format="json"
    )


def _note_create(w: World, target: str, tenant: bool) -> Any:
    return _client(w, tenant).post(
        f"{API}/notes/",
        {"note_id": NOTES[target], "content": "bob's note", **_user(tenant)},
        format="json",
    )


def _note_patch(w: World, target: str, tenant: bool) -> Any:
    return _client(w, tenant).patch(
        f"{API}/notes/{NOTES[target]}/", {"content": "bob's note"}, format="json"
    )


def _note_delete(w: World, target: str, tenant: bool) -> Any:
    return _client(w, tenant).delete(f"{API}/notes/{NOTES[target]}/")


def _by_id(
    kind: str, path: str, method: str, body: dict[str, Any] | None = None, suffix: str = ""
) -> Op:
    def op(w: World, target: str, tenant: bool) -> Any:
        data = {**body, **_user(tenant)} if body is not None else None
        return getattr(_client(w, tenant), method)(
            f"{API}/{path}/{w.ids[kind][target]}/{suffix}", data, format="json"
        )

    return op


def _id_read(kind: str, path: str) -> Callable[[World, str], str]:
    return lambda w, target: f"{API}/{path}/{w.ids[kind][target]}/"


def _fact_upsert(w: World, target: str, tenant: bool) -> Any:
    """Upsert by key: bob's home_city (own), or his first one (missing: his was deleted first).
    ann's and the shared home_city are other rows with the same key: "other" and "shared" upsert
    bob's too and must leave them alone."""
    if target == "missing":
        Fact.objects.filter(pk=w.ids["fact"]["own"]).delete()
    return _client(w, tenant).post(
        f"{API}/facts/",
        {
            "category": "profile",
            "key": "home_city",
            "content": "bob lives in Oslo",
            **_user(tenant),
        },
        format="json",
    )


def _note_read(w: World, target: str) -> str:
    return f"{API}/notes/{NOTES[target]}/"


# A write to an existing session. A session nobody owns is the tenant's, not shared: a user-limited
# key does not see it, as it does not see ann's (404), while shared notes, facts and documents are
# read-only to it (403).
SESSION_WRITE = expect(OK, MISMATCH, NO_SESSION, MISMATCH, NO_SESSION, NO_SESSION)
CASES: dict[str, Case] = {
    "append": Case(
        _append(False),
        _session_read,
        True,
        expect(CREATED, MISMATCH, NO_SESSION, MISMATCH, NO_SESSION, CREATED),
    ),
    "append bulk": Case(
        _append(True),
        _session_read,
        True,
        expect(CREATED, MISMATCH, NO_SESSION, MISMATCH, NO_SESSION, CREATED),
    ),
    "session get_or_create": Case(
        _get_or_create,
        _session_read,
        True,
        expect(OK, MISMATCH, NO_SESSION, MISMATCH, NO_SESSION, CREATED),
    ),
    # A tenant key may claim an unowned session for bob; never move ann's.
    "session patch": Case(
        _patch_session,
        _session_read,
        True,
        expect(OK, MISMATCH, NO_SESSION, OK, NO_SESSION, NO_SESSION),
    ),
    "session delete": Case(_session_call("delete", ""), _session_read, False, SESSION_WRITE),
    "scratchpad put": Case(
        _session_call("put", "scratchpad/", {"items": {"city": "Oslo"}}),
        _session_read,
        False,
        SESSION_WRITE,
    ),
    "scratchpad clear": Case(
        _session_call("delete", "scratchpad/"), _session_read, False, SESSION_WRITE
    ),
    "summary put": Case(
        _session_call("put", "summary/", {"text": "bob moved"}), _session_read, False, SESSION_WRITE
    ),
    # bob's own note or document may sit in an unowned session (placed by a tenant key), not in
    # ann's; bob's key does not see the unowned session.
    "note in session": Case(
        _in_session("notes/", {"content": "bob's note", "scope": "conversation"}),
        _session_read,
        True,
        expect(CREATED, MISMATCH, NO_SESSION, CREATED, NO_SESSION, NO_SESSION),
    ),
    "document in session": Case(
        _in_session("documents/", {"source_uri": "kb://home", "text": "bob's home doc"}),
        _session_read,
        True,
        expect(CREATED, MISMATCH, NO_SESSION, CREATED, NO_SESSION, NO_SESSION),
    ),
    "note put": Case(
        _note_put, _note_read, True, expect(OK, MISMATCH, NO_NOTE, MISMATCH, READ_ONLY, CREATED)
    ),
    "note create": Case(
        _note_create,
        _note_read,
        True,
        expect(
            (409, "note_exists"),
            (409, "note_exists"),
            NO_NOTE,
            (409, "note_exists"),
            (409, "note_exists"),
            CREATED,
        ),
    ),
    "note patch": Case(
        _note_patch, _note_read, False, expect(OK, MISMATCH, NO_NOTE, MISMATCH, READ_ONLY, NO_NOTE)
    ),
    "note delete": Case(
        _note_delete, _note_read, False, expect(OK, MISMATCH, NO_NOTE, MISMATCH, READ_ONLY, NO_NOTE)
    ),
    "fact upsert": Case(
        _fact_upsert, lambda w, t: f"{API}/facts/", True, expect(OK, OK, OK, OK, OK, CREATED)
    ),
    # A tenant key may claim a shared fact for bob, as a session: here bob has a home_city already.
    "fact patch": Case(
        _by_id("fact", "facts", "patch", {"content": "bob lives in Oslo"}),
        _id_read("fact", "facts"),
        True,
        expect(
            OK,
            MISMATCH,
            (404, "fact_not_found"),
            (409, "fact_exists"),
            READ_ONLY,
            (404, "fact_not_found"),
        ),
    ),
    "fact delete": Case(
        _by_id("fact", "facts", "delete"),
        _id_read("fact", "facts"),
        False,
        expect(OK, MISMATCH, (404, "fact_not_found"), MISMATCH, READ_ONLY, (404, "fact_not_found")),
    ),
    "document delete": Case(
        _by_id("document", "documents", "delete"),
        _id_read("document", "documents"),
        False,
        expect(
            OK,
            MISMATCH,
            (404, "document_not_found"),
            MISMATCH,
            READ_ONLY,
            (404, "document_not_found"),
        ),
    ),
    # A tenant key may claim an unowned schedule for bob; never move ann's. A user-limited key
    # sees no shared schedule (it acts for the whole tenant, or its workspace: not bob's to read).
    "schedule patch": Case(
        _by_id("schedule", "schedules", "patch", {"goal": "bob's digest"}),
        _id_read("schedule", "schedules"),
        True,
        expect(
            OK,
            MISMATCH,
            (404, "schedule_not_found"),
            OK,
            (404, "schedule_not_found"),
            (404, "schedule_not_found"),
        ),
    ),
    "schedule delete": Case(
        _by_id("schedule", "schedules", "delete"),
        _id_read("schedule", "schedules"),
        False,
        expect(
            OK,
            MISMATCH,
            (404, "schedule_not_found"),
            MISMATCH,
            (404, "schedule_not_found"),
            (404, "schedule_not_found"),
        ),
    ),
    "schedule pause": Case(
        _by_id("schedule", "schedules", "post", suffix="pause/"),
        _id_read("schedule", "schedules"),
        False,
        expect(
            OK,
            MISMATCH,
            (404, "schedule_not_found"),
            MISMATCH,
            (404, "schedule_not_found"),
            (404, "schedule_not_found"),
        ),
    ),
}


def _params() -> list[Any]:
    params = []
    for name, case in CASES.items():
        for actor in ("tenant", "key"):
            if actor == "tenant" and not case.takes_user:
                continue
            for target in TARGETS:
                params.append(pytest.param(name, actor, target, id=f"{name}-{actor}-{target}"))
    return params


@pytest.mark.parametrize(("name", "actor", "target"), _params())
def test_write(world: World, name: str, actor: str, target: str) -> None:
    case = CASES[name]
    status, code = case.expect[(actor, target)]
    before = snapshot()
    response = case.op(world, target, actor == "tenant")
    after = snapshot()
    body = response.json()
    assert response.status_code == status, (response.status_code, body)
    if code:
        assert body["error"]["code"] == code, body
    if response.status_code >= 400:
        if name == "fact upsert" and target == "missing":
            before = {r for r in before if not (r[0] == "fact" and r[1] == "bob")}
            before = {
                r for r in before if not (r[0] == "chunk" and r[1] == "bob" and r[2] == "fact")
            }
        assert after == before, "a refused write changed the database"
        if actor == "key" and status == 404 and target in ("other", "shared"):
            # The very answer a read of that id gives: nothing says ann's (or the tenant's
            # unowned) row exists.
            read = world.bob_key.get(case.read(world, target))
            assert (read.status_code, read.json()) == (404, body)
        return
    changed = after ^ before
    assert changed or name == "session get_or_create", "a 2xx write changed nothing"
    assert all(row[1] == "bob" for row in after - before), sorted(after - before, key=str)
    assert not any(row[1] == "ann" for row in changed), "ann's rows were touched"
    if actor == "key" or target != "shared":
        assert not any(row[1] == "" for row in before - after), "a shared row was changed"


# --- tenant-wide writes a user-limited key may not make -------------------------------------------


# an import of its own rows it may make
@pytest.mark.parametrize("call", ["forget", "export tenant"])
def test_a_user_limited_key_cannot_make_tenant_wide_calls(world: World, call: str) -> None:
    before = snapshot()
    key = world.bob_key
    response = {
        "forget": lambda: key.delete(f"{API}/users/ann/"),
        "export tenant": lambda: key.post(f"{API}/export/", {"scope": "tenant"}, format="json"),
    }[call]()
    assert response.status_code == 403 and response.json()["error"]["code"] == "user_limited_key"
    assert snapshot() == before


def test_forget_as_a_tenant_key_removes_only_that_user(world: World) -> None:
    before = snapshot()
    response = world.admin.delete(f"{API}/users/bob/")
    assert response.status_code == 200
    assert before - snapshot() and all(row[1] == "bob" for row in before - snapshot())
