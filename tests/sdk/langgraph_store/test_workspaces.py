"""A MemoryHubStore that does not name its workspace: with a workspace-limited key its items are
one per (the key's workspace, namespace, key), learnt from GET /key/ once; items an older store
wrote under the id derived from the namespace and key alone stay readable, and move to their id on
their first change."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from memoryhub_client import MemoryHub
from memoryhub_client.langgraph import SOURCE, note_id

from tests.sdk.conftest import FAST

HOME = ("memories", "ann")


@pytest.fixture
def tenant_hub(live_server: Any, acme: dict[str, str]) -> Any:
    with MemoryHub(acme["all"], live_server.url, **FAST) as hub:
        yield hub


def stored(hub: MemoryHub) -> list[tuple[str, str]]:
    """(workspace, note id) of every item, read with the tenant-wide key."""
    return sorted((n["workspace"], n["note_id"]) for n in hub.list_notes(source=SOURCE).results)


def write_as_an_older_store(hub: MemoryHub, workspace: str, value: dict[str, Any]) -> str:
    """The note a store of an earlier client wrote for (HOME, "home"): its id derived from the
    namespace and key only."""
    ident = note_id(HOME, "home")
    hub.put_note(
        ident,
        value["city"],
        source=SOURCE,
        tags=[SOURCE],
        user_id="ann",
        workspace=workspace,
        metadata={SOURCE: {"namespace": list(HOME), "key": "home", "value": value}},
    )
    return ident


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_workspace_limited_keys_hold_the_same_namespace_and_key(
    make_store: Callable[..., Any], tenant_hub: MemoryHub, kind: str
) -> None:
    alpha, beta = make_store("alpha", kind), make_store("beta", kind)
    alpha.put(HOME, "home", {"city": "Lyon"})
    beta.put(HOME, "home", {"city": "Porto"})  # used to be refused: the id was alpha's
    assert alpha.get(HOME, "home").value == {"city": "Lyon"}
    assert beta.get(HOME, "home").value == {"city": "Porto"}
    assert [i.value for i in beta.search(HOME)] == [{"city": "Porto"}]
    assert stored(tenant_hub) == [
        ("alpha", note_id(HOME, "home", "alpha")),
        ("beta", note_id(HOME, "home", "beta")),
    ]
    beta.delete(HOME, "home")
    assert beta.get(HOME, "home") is None
    assert alpha.get(HOME, "home").value == {"city": "Lyon"}


def test_an_item_an_older_store_wrote_stays_readable_and_moves_on_change(
    make_store: Callable[..., Any], tenant_hub: MemoryHub
) -> None:
    legacy = write_as_an_older_store(tenant_hub, "alpha", {"city": "Lyon"})
    alpha = make_store("alpha")
    assert alpha.get(HOME, "home").value == {"city": "Lyon"}
    assert [i.value for i in alpha.search(HOME)] == [{"city": "Lyon"}]
    # Another workspace's store neither reads it nor is blocked by it.
    beta = make_store("beta")
    assert beta.get(HOME, "home") is None
    beta.put(HOME, "home", {"city": "Porto"})
    # Its first change moves it to the id that names its workspace: one item, as before.
    alpha.put(HOME, "home", {"city": "Paris"})
    assert alpha.get(HOME, "home").value == {"city": "Paris"}
    assert [i.value for i in alpha.search(HOME)] == [{"city": "Paris"}]
    assert stored(tenant_hub) == sorted(
        [("alpha", note_id(HOME, "home", "alpha")), ("beta", note_id(HOME, "home", "beta"))]
    )
    assert legacy not in {ident for _, ident in stored(tenant_hub)}


def test_a_legacy_item_is_deleted_under_its_old_id(
    make_store: Callable[..., Any], tenant_hub: MemoryHub
) -> None:
    write_as_an_older_store(tenant_hub, "alpha", {"city": "Lyon"})
    alpha = make_store("alpha")
    alpha.delete(HOME, "home")
    assert alpha.get(HOME, "home") is None
    assert stored(tenant_hub) == []


def test_a_tenant_wide_store_keeps_the_ids_it_always_derived(
    make_store: Callable[..., Any], tenant_hub: MemoryHub
) -> None:
    make_store().put(HOME, "home", {"city": "Lyon"})
    assert stored(tenant_hub) == [("default", note_id(HOME, "home"))]
