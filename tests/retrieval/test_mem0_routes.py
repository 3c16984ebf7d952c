"""mem0's client as a mem0 user meets it: its defaults (`add` without `infer=False`), its
`delete_users` and `reset`, and every other call of MemoryClient and AsyncMemoryClient (mem0ai 2.2),
each served or answered with MemoryHub's JSON error envelope and a code; with two users and a
second tenant that nothing reaches."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from memoryhub.models import Fact, Session
from tests.base import make_key, make_tenant
from tests.retrieval import test_mem0_compat as compat

# isort: split
# Imported after compat, which turns mem0's telemetry off before mem0 is first imported.
from mem0 import AsyncMemoryClient
from mem0.exceptions import AuthenticationError
from mem0.exceptions import MemoryError as Mem0Error

connect = compat.connect  # the fixture: connect(tenant, user="") -> MemoryClient with a new key
Connect = compat.Connect


def codes(error: Mem0Error) -> str:
    """The code of MemoryHub's error envelope that mem0's exception carries (its parsed JSON
    body)."""
    return error.details["error"]["code"]


def test_the_default_add_keeps_what_was_said_for_the_user_named(connect: Connect) -> None:
    client = connect("alice")
    added = client.add(
        [
            {"role": "user", "content": "I live in Lyon."},
            {"role": "assistant", "content": "Lyon, noted."},
        ],
        user_id="ann",
    )
    assert [(r["event"], r["memory"], r["user_id"]) for r in added["results"]] == [
        ("ADD", "I live in Lyon.", "ann"),
        ("ADD", "Lyon, noted.", "ann"),
    ]
    client.add("I live in Oslo.", user_id="bob")
    assert {r["memory"] for r in client.get_all(filters={"user_id": "ann"})["results"]} == {
        "I live in Lyon.",
        "Lyon, noted.",
    }
    assert [
        r["memory"]
        for r in client.search("Where do I live?", filters={"user_id": "bob"})["results"]
    ] == ["I live in Oslo."]
    as_ann = connect("alice", user="ann")
    assert "I live in Oslo." not in {
        r["memory"] for r in as_ann.search("live", filters={"user_id": "ann"})["results"]
    }
    assert {r["id"] for r in as_ann.get_all(filters={"user_id": "ann"})["results"]} == {
        r["id"] for r in added["results"]
    }
    assert not connect("bob").search("Lyon", filters={"user_id": "ann"})["results"]


def test_unknown_query_parameters_are_refused_on_every_mem0_route(
    live_server: Any, connect: Connect
) -> None:
    client = connect("alice")
    client.add("Ann's code is 1234.", user_id="ann")
    bob = make_key(make_tenant("alice"), user="bob")
    # A key limited to bob that names ann in the query: refused, never answered with anyone's
    # memories.
    response = compat.raw(
        live_server,
        bob,
        "POST",
        "/v3/memories/search/",
        params={"user_id": "ann"},
        json={"query": "code"},
    )
    assert (
        response.status_code == 400 and response.json()["error"]["code"] == "unknown_parameter"
    ), response.text
    key = make_key(make_tenant("alice"))
    routes = [
        ("GET", "/v1/ping/", None),
        ("POST", "/v3/memories/add/", {"messages": [], "user_id": "a"}),
        ("POST", "/v3/memories/search/", {"query": "x"}),
        ("POST", "/v3/memories/", {}),
        ("GET", "/v1/memories/fact:1/", None),
        ("PUT", "/v1/memories/fact:1/", {"text": "x"}),
        ("GET", "/v1/memories/fact:1/history/", None),
        ("GET", "/v1/entities/", None),
        ("DELETE", "/v2/entities/user/ann/", None),
        ("PUT", "/v1/batch/", {"memories": []}),
    ]
    for method, path, body in routes:
        response = compat.raw(live_server, key, method, path, params={"user": "ann"}, json=body)
        assert (
            response.status_code == 400 and response.json()["error"]["code"] == "unknown_parameter"
        ), (path, response.text)
    assert Fact.objects.count() == 1


def test_delete_users_forgets_one_user_and_reset_everyone(connect: Connect) -> None:
    client = connect("alice")
    client.add("Ann likes tea.", user_id="ann")
    client.add("Bob likes coffee.", user_id="bob", run_id="bob-run")
    client.add("The helper answers politely.", agent_id="Helper")
    other = connect("bob")
    other.add("Another tenant's ann.", user_id="ann")
    assert {(e["type"], e["name"]) for e in client.users()["results"]} == {
        ("user", "ann"),
        ("user", "bob"),
        ("agent", "helper"),
    }

    assert client.delete_users(user_id="ann") == {"message": "Entity deleted successfully."}
    assert client.get_all(filters={"user_id": "ann"})["count"] == 0
    assert client.get_all(filters={"user_id": "bob"})["count"] == 1

    with pytest.raises(AuthenticationError) as refused:  # a user's rows may lie in any workspace
        connect("alice", user="bob").delete_users(user_id="bob")
    assert codes(refused.value) == "user_limited_key"

    client.reset()
    assert client.users()["count"] == 0
    assert not Fact.objects.filter(tenant__name="alice").exists()
    assert not Session.objects.filter(tenant__name="alice").exists()
    assert [r["memory"] for r in other.get_all(filters={"user_id": "ann"})["results"]] == [
        "Another tenant's ann."
    ]


def test_deleting_agents_and_runs_and_what_has_no_counterpart(
    live_server: Any, connect: Connect
) -> None:
    client = connect("alice")
    client.add("Ann's helper speaks French.", user_id="ann", agent_id="helper")
    client.add("Ann's other note.", user_id="ann")
    client.add("Ann in a run.", user_id="ann", run_id="run-1")
    assert client.delete_users(agent_id="HELPER")["message"] == "Entity deleted successfully."
    assert client.delete_users(run_id="run-1")["message"] == "Entity deleted successfully."
    assert [r["memory"] for r in client.get_all(filters={"user_id": "ann"})["results"]] == [
        "Ann's other note."
    ]
    assert not Session.objects.filter(external_id="run-1").exists()
    client.add("A user id with a slash.", user_id="team/ann")
    client.delete_users(user_id="team/ann")
    assert client.get_all(filters={"user_id": "team/ann"})["count"] == 0
    response = compat.raw(live_server, client.api_key, "DELETE", "/v2/entities/app/shop/")
    assert response.status_code == 400 and response.json()["error"]["code"] == "unsupported_entity"


def test_batches_commit_whole(connect: Connect) -> None:
    client = connect("alice")
    ids = [
        r["id"]
        for r in client.add(
            [{"role": "user", "content": "One."}, {"role": "user", "content": "Two."}],
            user_id="ann",
        )["results"]
    ]
    client.batch_update(
        [{"memory_id": ids[0], "text": "Uno."}, {"memory_id": ids[1], "text": "Dos."}]
    )
    assert {client.get(i)["memory"] for i in ids} == {"Uno.", "Dos."}
    with pytest.raises(Mem0Error) as missing:
        client.batch_update(
            [{"memory_id": ids[0], "text": "Eins."}, {"memory_id": "fact:999999", "text": "x"}]
        )
    assert codes(missing.value) == "fact_not_found" and client.get(ids[0])["memory"] == "Uno."
    bob = connect("alice", user="bob")
    with pytest.raises(Mem0Error):
        bob.batch_delete([{"memory_id": ids[0]}])
    client.batch_delete([{"memory_id": i} for i in ids])
    assert client.get_all(filters={"user_id": "ann"})["count"] == 0
    client.add("Kept.", user_id="ann")
    memory_id = client.get_all(filters={"user_id": "ann"})["results"][0]["id"]
    client.delete(memory_id, delete_linked=True)  # a fact's earlier versions are this same memory
    assert client.get_all(filters={"user_id": "ann"})["count"] == 0


NOT_SERVED: list[tuple[str, Callable[[Any], Any]]] = [
    ("create_memory_export", lambda c: c.create_memory_export(schema="{}", user_id="ann")),
    ("get_memory_export", lambda c: c.get_memory_export(user_id="ann")),
    ("get_summary", lambda c: c.get_summary({"user_id": "ann"})),
    ("get_profile", lambda c: c.get_profile("ann")),
    ("generate_profile", lambda c: c.generate_profile("ann")),
    ("get_profile_settings", lambda c: c.get_profile_settings()),
    ("update_profile_settings", lambda c: c.update_profile_settings(enabled=True)),
    ("sample_profiles", lambda c: c.sample_profiles(limit=2)),
    ("get_profile_job", lambda c: c.get_profile_job("job-1")),
    ("get_project", lambda c: c.get_project()),
    ("update_project", lambda c: c.update_project(custom_instructions="Be brief.")),
    ("get_webhooks", lambda c: c.get_webhooks("p1")),
    (
        "create_webhook",
        lambda c: c.create_webhook("https://example.com/h", "h", "p1", ["memory_add"]),
    ),
    ("feedback", lambda c: c.feedback("fact:1", "POSITIVE")),
    ("project.get", lambda c: c.project.get()),
    ("project.create", lambda c: c.project.create("p2")),
    ("project.update", lambda c: c.project.update(custom_instructions="x")),
    ("project.delete", lambda c: c.project.delete()),
    ("project.get_members", lambda c: c.project.get_members()),
    ("project.add_member", lambda c: c.project.add_member("a@example.com")),
    ("project.update_member", lambda c: c.project.update_member("a@example.com", "READER")),
    ("project.remove_member", lambda c: c.project.remove_member("a@example.com")),
]
# mem0's webhook ids land on MemoryHub's own /api/v1/webhooks/{id}/, which takes a Bearer key.
ELSEWHERE: list[tuple[str, Callable[[Any], Any]]] = [
    ("update_webhook", lambda c: c.update_webhook(1, name="x")),
    ("delete_webhook", lambda c: c.delete_webhook(1)),
]


def test_every_other_call_answers_the_json_envelope(connect: Connect) -> None:
    client = connect("alice")
    for name, call in NOT_SERVED + ELSEWHERE:
        with pytest.raises(Mem0Error) as refused:
            call(client)
        expected = "not_served" if (name, call) in NOT_SERVED else "invalid_api_key"
        assert codes(refused.value) == expected, (name, refused.value.details)


def test_the_async_client_the_same(live_server: Any, transactional_db: None) -> None:
    key = make_key(make_tenant("alice"))

    async def scenario() -> None:
        client = AsyncMemoryClient(api_key=key, host=live_server.url)
        try:
            added = await client.add("Ann collects stamps.", user_id="ann")
            assert [r["memory"] for r in added["results"]] == ["Ann collects stamps."]
            await client.add("Bob collects coins.", user_id="bob")
            await client.batch_update(
                [{"memory_id": added["results"][0]["id"], "text": "Ann collects shells."}]
            )
            assert [
                r["memory"] for r in (await client.get_all(filters={"user_id": "ann"}))["results"]
            ] == ["Ann collects shells."]
            for name, call in NOT_SERVED:
                with pytest.raises(Mem0Error) as refused:
                    await call(client)
                assert codes(refused.value) == "not_served", name
            await client.delete_users(user_id="ann")
            assert (await client.get_all(filters={"user_id": "bob"}))["count"] == 1
            await client.reset()
            assert (await client.users())["count"] == 0
        finally:
            await client.async_client.aclose()

    asyncio.run(scenario())
