"""MemoryHubStore keeps LangGraph's `BaseStore` contract, as langgraph.store.base documents it: an
item is a value under a namespace and a key; put stores or replaces it (a value of None deletes
it), get reads it back from exactly that namespace; search lists the items under a namespace
prefix that pass a filter (exact values, nested objects, dotted paths, $eq $ne $gt $gte $lt $lte),
ranked by a natural-language query when one is given, paged by limit and offset; list_namespaces
lists the namespaces holding items, narrowed by prefix and suffix conditions (with "*" for any
label), cut to max_depth, paged; batch runs mixed operations and answers each in order."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)

FRUIT = ("shop", "fruit")


def keys(items: list[Any]) -> list[str]:
    return [item.key for item in items]


# --- put, get, delete ----------------------------------------------------------------------------


def test_put_then_get_gives_the_value_with_its_place_and_times(store: Any) -> None:
    value = {
        "name": "quince",
        "price": 4.5,
        "origin": {"country": "PT"},
        "tags": ["autumn", "jam"],
        "ok": True,
    }
    assert store.put(FRUIT, "quince", value) is None
    item = store.get(FRUIT, "quince")
    assert isinstance(item, Item)
    assert (item.namespace, item.key, item.value) == (FRUIT, "quince", value)
    assert isinstance(item.created_at, datetime) and isinstance(item.updated_at, datetime)
    assert item.created_at.tzinfo is not None


def test_put_replaces_the_value_and_keeps_when_it_was_created(store: Any) -> None:
    store.put(FRUIT, "fig", {"price": 3})
    first = store.get(FRUIT, "fig")
    store.put(FRUIT, "fig", {"price": 2, "ripe": True})
    second = store.get(FRUIT, "fig")
    assert second.value == {"price": 2, "ripe": True}
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at


def test_get_reads_only_its_own_namespace_and_key(store: Any) -> None:
    store.put(FRUIT, "pear", {"price": 1})
    store.put(("shop", "veg"), "pear", {"price": 9})  # the same key elsewhere is another item
    assert store.get(FRUIT, "pear").value == {"price": 1}
    assert store.get(("shop", "veg"), "pear").value == {"price": 9}
    assert store.get(("shop",), "pear") is None
    assert store.get(FRUIT, "plum") is None


def test_delete_removes_the_item_and_a_missing_one_is_no_error(store: Any) -> None:
    store.put(FRUIT, "lime", {"price": 1})
    store.delete(FRUIT, "lime")
    assert store.get(FRUIT, "lime") is None
    assert store.search(FRUIT) == []
    store.delete(FRUIT, "lime")
    store.delete(("nowhere",), "nothing")


def test_a_namespace_with_an_empty_or_dotted_label_is_refused(store: Any) -> None:
    for namespace in [("shop", ""), ("shop.fruit",), ()]:
        with pytest.raises(InvalidNamespaceError):
            store.put(namespace, "k", {"v": 1})


# --- search --------------------------------------------------------------------------------------


@pytest.fixture
def stocked(store: Any) -> Any:
    store.put(
        FRUIT,
        "apple",
        {"kind": "pome", "price": 2, "stock": {"shelf": "A", "count": 10}, "tags": ["red"]},
    )
    store.put(
        FRUIT,
        "pear",
        {"kind": "pome", "price": 3, "stock": {"shelf": "B", "count": 0}, "tags": ["green"]},
    )
    store.put(FRUIT, "cherry", {"kind": "drupe", "price": 8, "stock": {"shelf": "A", "count": 5}})
    store.put(("shop", "veg"), "leek", {"kind": "allium", "price": 2})
    store.put(("depot",), "crate", {"kind": "pome", "price": 1})
    return store


def test_search_lists_the_items_under_the_prefix(stocked: Any) -> None:
    assert sorted(keys(stocked.search(FRUIT))) == ["apple", "cherry", "pear"]
    assert sorted(keys(stocked.search(("shop",)))) == ["apple", "cherry", "leek", "pear"]
    assert sorted(keys(stocked.search(()))) == ["apple", "cherry", "crate", "leek", "pear"]
    assert stocked.search(("shop", "fish")) == []
    found = stocked.search(FRUIT)
    assert all(
        isinstance(i, SearchItem) and i.score is None and i.namespace == FRUIT for i in found
    )


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ({"kind": "pome"}, ["apple", "pear"]),
        ({"kind": "pome", "price": 3}, ["pear"]),
        ({"stock": {"shelf": "A"}}, ["apple", "cherry"]),
        ({"stock.count": 0}, ["pear"]),
        ({"tags": ["red"]}, ["apple"]),
        ({"price": {"$eq": 8}}, ["cherry"]),
        ({"price": {"$ne": 2}}, ["cherry", "pear"]),
        ({"price": {"$gt": 2}}, ["cherry", "pear"]),
        ({"price": {"$gte": 3}}, ["cherry", "pear"]),
        ({"price": {"$lt": 3}}, ["apple"]),
        ({"price": {"$lte": 3}}, ["apple", "pear"]),
        ({"price": {"$gt": 2, "$lt": 8}}, ["pear"]),
        ({"stock.count": {"$gte": 5}, "kind": "drupe"}, ["cherry"]),
        ({"colour": "red"}, []),
    ],
)
def test_search_filters(stocked: Any, condition: dict[str, Any], expected: list[str]) -> None:
    assert sorted(keys(stocked.search(FRUIT, filter=condition))) == expected


def test_search_pages_with_limit_and_offset(stocked: Any) -> None:
    everything = keys(stocked.search((), limit=10))
    pages = [keys(stocked.search((), limit=2, offset=offset)) for offset in (0, 2, 4, 6)]
    assert [len(page) for page in pages] == [2, 2, 1, 0]
    assert [key for page in pages for key in page] == everything
    assert len(keys(stocked.search((), limit=3))) == 3


def test_a_query_ranks_the_matching_item_first_with_a_score(store: Any) -> None:
    store.put(("notes",), "n1", {"text": "The heating engineer comes on Tuesday."})
    store.put(("notes",), "n2", {"text": "Quarterly sales rose in the northern region."})
    store.put(("notes",), "n3", {"text": "Buy oat milk and sourdough bread."})
    found = store.search(("notes",), query="sourdough bread")
    assert found[0].key == "n3" and found[0].score is not None
    assert sorted(keys(found)) == ["n1", "n2", "n3"]
    narrowed = store.search(
        ("notes",), query="sales region", filter={"text": {"$ne": "x"}}, limit=1
    )
    assert keys(narrowed) == ["n2"]


# --- list_namespaces ------------------------------------------------------------------------------


@pytest.fixture
def shelved(store: Any) -> Any:
    for namespace in [
        ("docs", "api", "v1"),
        ("docs", "api", "v2"),
        ("docs", "guide"),
        ("cache", "api", "v1"),
    ]:
        store.put(namespace, "k", {"v": 1})
    return store


def test_list_namespaces_lists_each_namespace_holding_items(shelved: Any) -> None:
    assert sorted(shelved.list_namespaces()) == [
        ("cache", "api", "v1"),
        ("docs", "api", "v1"),
        ("docs", "api", "v2"),
        ("docs", "guide"),
    ]


def test_list_namespaces_by_prefix_and_suffix_with_wildcards(shelved: Any) -> None:
    assert sorted(shelved.list_namespaces(prefix=("docs",))) == [
        ("docs", "api", "v1"),
        ("docs", "api", "v2"),
        ("docs", "guide"),
    ]
    assert sorted(shelved.list_namespaces(suffix=("v1",))) == [
        ("cache", "api", "v1"),
        ("docs", "api", "v1"),
    ]
    assert sorted(shelved.list_namespaces(prefix=("*", "api"))) == [
        ("cache", "api", "v1"),
        ("docs", "api", "v1"),
        ("docs", "api", "v2"),
    ]
    assert shelved.list_namespaces(prefix=("docs",), suffix=("v2",)) == [("docs", "api", "v2")]
    assert shelved.list_namespaces(suffix=("api", "*")) == sorted(
        shelved.list_namespaces(prefix=("*", "api"))
    )
    assert shelved.list_namespaces(prefix=("nothing",)) == []


def test_list_namespaces_cut_to_a_depth_and_paged(shelved: Any) -> None:
    assert sorted(shelved.list_namespaces(max_depth=2)) == [
        ("cache", "api"),
        ("docs", "api"),
        ("docs", "guide"),
    ]
    assert sorted(shelved.list_namespaces(prefix=("docs",), max_depth=1)) == [("docs",)]
    everything = shelved.list_namespaces()
    pages = [shelved.list_namespaces(limit=3, offset=offset) for offset in (0, 3)]
    assert [len(page) for page in pages] == [3, 1] and pages[0] + pages[1] == everything


# --- batch ---------------------------------------------------------------------------------------


def test_batch_answers_each_operation_in_order(store: Any) -> None:
    ops = [
        PutOp(FRUIT, "kiwi", {"price": 1}),
        PutOp(("shop", "veg"), "kale", {"price": 2}),
        GetOp(FRUIT, "kiwi"),
        SearchOp(("shop",), filter={"price": {"$gte": 2}}),
        ListNamespacesOp(match_conditions=(MatchCondition(match_type="prefix", path=("shop",)),)),
        PutOp(FRUIT, "kiwi", None),
        GetOp(FRUIT, "kiwi"),
    ]
    results = store.batch(ops)
    assert len(results) == len(ops)
    assert results[0] is None and results[1] is None and results[5] is None
    assert results[2].value == {"price": 1}
    assert keys(results[3]) == ["kale"]
    assert sorted(results[4]) == [("shop", "fruit"), ("shop", "veg")]
    assert results[6] is None
