"""Whom a MemoryHubStore's items belong to and whom a store acts for: ("users", X) and
("memories", X) are user X's (or the segment a store is told names the user), a store given
`user_id` reads only that user's namespaces and the shared ones (also with a tenant-wide key), and
an item is one per (workspace, namespace, key)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from memoryhub_client import ConflictError, MemoryHub

from tests.sdk.conftest import FAST

BOB_HOME = ("memories", "bob")
ANN_HOME = ("memories", "ann")


@pytest.fixture
def tenant_hub(live_server: Any, acme: dict[str, str]) -> Any:
    with MemoryHub(acme["all"], live_server.url, **FAST) as hub:
        yield hub


def owners(hub: MemoryHub) -> dict[tuple[str, ...], str]:
    """(namespace…, key) → owner of every item stored, read as notes with the tenant-wide key."""
    return {
        (*n["metadata"]["langgraph"]["namespace"], n["metadata"]["langgraph"]["key"]): n["user_id"]
        for n in hub.list_notes(source="langgraph").results
    }


def test_a_memories_namespace_belongs_to_the_user_it_names(
    make_store: Callable[..., Any], tenant_hub: MemoryHub
) -> None:
    make_store().put(BOB_HOME, "train", {"text": "Bob's train leaves at noon."})
    make_store().put(("users", "ann", "prefs"), "seat", {"text": "Ann takes the aisle."})
    make_store().put(("team",), "rule", {"text": "Trains are booked a week ahead."})
    assert owners(tenant_hub) == {
        (*BOB_HOME, "train"): "bob",
        ("users", "ann", "prefs", "seat"): "ann",
        ("team", "rule"): "",
    }
    # A key limited to ann: bob's item is not hers to read.
    ann = make_store("ann")
    assert ann.get(BOB_HOME, "train") is None
    assert sorted(i.key for i in ann.search(())) == ["rule", "seat"]
    assert BOB_HOME not in ann.list_namespaces()
    assert ann.search(("memories",), query="train") == []


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_store_acting_for_ann_never_reads_bobs_items(
    make_store: Callable[..., Any], kind: str
) -> None:
    writer = make_store()
    writer.put(BOB_HOME, "home", {"city": "Porto"})
    writer.put(ANN_HOME, "home", {"city": "Lyon"})  # the same key, another user's namespace
    writer.put(("team",), "office", {"city": "Lille"})
    ann = make_store(kind=kind, user_id="ann")  # a tenant-wide key, acting for ann
    assert ann.get(ANN_HOME, "home").value == {"city": "Lyon"}
    assert ann.get(("team",), "office").value == {"city": "Lille"}
    for read in (
        lambda: ann.get(BOB_HOME, "home"),
        lambda: ann.search(BOB_HOME),
        lambda: ann.list_namespaces(prefix=BOB_HOME),
    ):
        with pytest.raises(ConflictError) as refused:
            read()
        assert refused.value.code == "owner_mismatch"
    assert [i.value for i in ann.search(("memories",))] == [{"city": "Lyon"}]
    assert sorted(i.value["city"] for i in ann.search((), query="city Porto")) == ["Lille", "Lyon"]
    assert sorted(ann.list_namespaces()) == [ANN_HOME, ("team",)]
    bob = make_store(kind=kind, user_id="bob")
    assert [i.value for i in bob.search(("memories",))] == [{"city": "Porto"}]


def test_a_store_acting_for_ann_writes_only_her_namespaces(
    make_store: Callable[..., Any], tenant_hub: MemoryHub
) -> None:
    make_store().put(BOB_HOME, "home", {"city": "Porto"})
    ann = make_store(user_id="ann")
    for write in (
        lambda: ann.put(BOB_HOME, "home", {"city": "Lyon"}),
        lambda: ann.delete(BOB_HOME, "home"),
        lambda: ann.put(("team",), "rule", {"text": "mine now"}),
    ):
        with pytest.raises(ConflictError):
            write()
    ann.put(ANN_HOME, "home", {"city": "Lyon"})
    assert owners(tenant_hub) == {(*BOB_HOME, "home"): "bob", (*ANN_HOME, "home"): "ann"}
    assert make_store().get(BOB_HOME, "home").value == {"city": "Porto"}
    # The same with a key limited to bob: the server refuses ann's namespace.
    bob = make_store("bob")
    with pytest.raises(Exception):  # noqa: B017 - 403 user_forbidden, whatever the client calls it
        bob.put(ANN_HOME, "home", {"city": "Faro"})
    assert make_store().get(ANN_HOME, "home").value == {"city": "Lyon"}


def test_the_store_is_told_which_segment_names_the_user(
    make_store: Callable[..., Any], tenant_hub: MemoryHub
) -> None:
    first = make_store(user_segment=0, user_id="ann")
    first.put(("ann", "prefs"), "seat", {"seat": "aisle"})
    with pytest.raises(ConflictError):
        first.get(("bob", "prefs"), "seat")
    labelled = make_store(user_labels=("people",), user_id="ann")
    labelled.put(("people", "ann"), "pet", {"pet": "cat"})
    with pytest.raises(ConflictError):
        labelled.search(("people", "bob"))
    assert owners(tenant_hub) == {("ann", "prefs", "seat"): "ann", ("people", "ann", "pet"): "ann"}
    with pytest.raises(ValueError):
        make_store(user_segment=-1)


def test_two_workspaces_hold_the_same_namespace_and_key(
    make_store: Callable[..., Any], tenant_hub: MemoryHub
) -> None:
    alpha = make_store("alpha", workspace="alpha")
    beta = make_store("beta", workspace="beta")
    alpha.put(ANN_HOME, "home", {"city": "Lyon"})
    beta.put(ANN_HOME, "home", {"city": "Porto"})
    assert alpha.get(ANN_HOME, "home").value == {"city": "Lyon"}
    assert beta.get(ANN_HOME, "home").value == {"city": "Porto"}
    assert [i.value for i in beta.search(ANN_HOME)] == [{"city": "Porto"}]
    # The tenant-wide key names the workspace and finds the same items.
    assert make_store(workspace="alpha", user_id="ann").get(ANN_HOME, "home").value == {
        "city": "Lyon"
    }
    beta.delete(ANN_HOME, "home")
    assert alpha.get(ANN_HOME, "home").value == {"city": "Lyon"}
    assert sorted(n["workspace"] for n in tenant_hub.list_notes(source="langgraph").results) == [
        "alpha"
    ]
