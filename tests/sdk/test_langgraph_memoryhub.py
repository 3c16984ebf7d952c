"""MemoryHubStore beyond the store's contract and owner tests (tests/sdk/langgraph_store/): how an
item is kept as a note, what a user-limited key sees, the async client on its own, and LangMem's
memory tools against the store (called directly: no model)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("langgraph.store.base")

from memoryhub_client import AsyncMemoryHub, MemoryHub, PermissionDeniedError  # noqa: E402
from memoryhub_client.langgraph import MemoryHubStore, note_id  # noqa: E402

from tests.base import make_key, make_tenant  # noqa: E402
from tests.sdk.conftest import FAST  # noqa: E402


@pytest.fixture
def tenant_keys(transactional_db: None) -> dict[str, str]:
    tenant = make_tenant("acme")
    return {
        "all": make_key(tenant),
        "ann": make_key(tenant, user="ann"),
        "bob": make_key(tenant, user="bob"),
    }


@pytest.fixture
def hubs(live_server: Any, tenant_keys: dict[str, str]) -> Iterator[dict[str, MemoryHub]]:
    opened = {name: MemoryHub(key, live_server.url, **FAST) for name, key in tenant_keys.items()}
    yield opened
    for hub in opened.values():
        hub.close()


def test_namespace_owner_and_value_kept_whole(hubs: dict[str, MemoryHub]) -> None:
    store = MemoryHubStore(hubs["all"])
    value = {"text": "Ann prefers the 9:12 train.", "n": 3, "nested": {"ok": [True, None, 1.5]}}
    store.put(("users", "ann", "memories"), "m1", value)
    store.put(("team", "handbook"), "h1", {"text": "Trains are booked a week ahead."})

    note = hubs["all"].get_note(note_id(("users", "ann", "memories"), "m1"))
    assert note["user_id"] == "ann"
    assert note["source"] == "langgraph" and "langgraph" in note["tags"]
    assert note["content"] == "Ann prefers the 9:12 train."
    assert note["metadata"]["langgraph"] == {
        "namespace": ["users", "ann", "memories"],
        "key": "m1",
        "value": value,
    }
    assert json.dumps(
        store.get(("users", "ann", "memories"), "m1").value, sort_keys=True
    ) == json.dumps(value, sort_keys=True)
    shared = hubs["all"].get_note(note_id(("team", "handbook"), "h1"))
    assert shared["user_id"] == ""

    # Ann's own key reads her items and the shared ones; Bob's key reads neither of hers.
    ann = MemoryHubStore(hubs["ann"])
    assert ann.get(("users", "ann", "memories"), "m1").value == value
    assert [i.key for i in ann.search(("users", "ann"), query="train")] == ["m1"]
    bob = MemoryHubStore(hubs["bob"])
    assert bob.get(("users", "ann", "memories"), "m1") is None
    try:
        seen = bob.search(("users", "ann"))
    except PermissionDeniedError:
        seen = []
    assert seen == []
    assert ("users", "ann", "memories") not in bob.list_namespaces()
    assert ("team", "handbook") in bob.list_namespaces()


def test_search_ranks_by_memoryhub_search(hubs: dict[str, MemoryHub]) -> None:
    store = MemoryHubStore(hubs["all"])
    store.put(("users", "ann", "memories"), "a", {"text": "Ann keeps bees on the roof."})
    store.put(("users", "ann", "memories"), "b", {"text": "Ann takes the night train to Vienna."})
    store.put(("users", "ann", "memories"), "c", {"text": "Ann's sister is called Berit."})
    found = store.search(("users", "ann"), query="night train Vienna")
    assert found[0].key == "b" and found[0].score is not None
    assert {i.key for i in found} == {"a", "b", "c"}  # every matching item, the best first
    assert [
        i.key
        for i in store.search(
            ("users", "ann"), query="bees", filter={"text": {"$ne": "x"}}, limit=1
        )
    ] == ["a"]


def test_async_client_alone(live_server: Any, tenant_keys: dict[str, str]) -> None:
    async def scenario() -> None:
        async with AsyncMemoryHub(tenant_keys["all"], live_server.url, **FAST) as hub:
            store = MemoryHubStore(async_client=hub)
            await store.aput(("users", "ann", "prefs"), "seat", {"seat": "window"})
            assert (await store.aget(("users", "ann", "prefs"), "seat")).value == {"seat": "window"}
            assert [i.key for i in await store.asearch(("users",), filter={"seat": "window"})] == [
                "seat"
            ]
            assert await store.alist_namespaces(prefix=("users", "ann")) == [
                ("users", "ann", "prefs")
            ]
            await store.adelete(("users", "ann", "prefs"), "seat")
            assert await store.aget(("users", "ann", "prefs"), "seat") is None
            with pytest.raises(RuntimeError, match="only an async client"):
                store.get(("users", "ann", "prefs"), "seat")

    asyncio.run(scenario())


def test_langmem_tools_against_the_store(hubs: dict[str, MemoryHub]) -> None:
    langmem = pytest.importorskip("langmem")
    store = MemoryHubStore(hubs["all"])
    namespace = ("users", "{langgraph_user_id}", "memories")
    manage = langmem.create_manage_memory_tool(namespace=namespace, store=store)
    search = langmem.create_search_memory_tool(namespace=namespace, store=store)
    config = {"configurable": {"langgraph_user_id": "ann"}}

    created = manage.invoke(
        {"content": "Ann is allergic to peanuts.", "action": "create"}, config=config
    )
    memory_id = created.rsplit(" ", 1)[-1]
    assert created == f"created memory {memory_id}"
    item = store.get(("users", "ann", "memories"), memory_id)
    assert item.value == {"content": "Ann is allergic to peanuts."}
    assert (
        hubs["all"].get_note(note_id(("users", "ann", "memories"), memory_id))["user_id"] == "ann"
    )

    found = json.loads(search.invoke({"query": "peanuts allergy"}, config=config))
    assert [(m["key"], m["value"]) for m in found] == [
        (memory_id, {"content": "Ann is allergic to peanuts."})
    ]
    # Another user's namespace holds nothing of Ann's.
    assert (
        json.loads(
            search.invoke(
                {"query": "peanuts"}, config={"configurable": {"langgraph_user_id": "bob"}}
            )
        )
        == []
    )

    manage.invoke(
        {"content": "Ann is allergic to peanuts and cashews.", "action": "update", "id": memory_id},
        config=config,
    )
    assert store.get(("users", "ann", "memories"), memory_id).value == {
        "content": "Ann is allergic to peanuts and cashews."
    }
    assert (
        manage.invoke({"action": "delete", "id": memory_id}, config=config)
        == f"Deleted memory {memory_id}"
    )
    assert store.get(("users", "ann", "memories"), memory_id) is None
    assert json.loads(search.invoke({"query": "peanuts"}, config=config)) == []
