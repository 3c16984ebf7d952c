"""LangGraph's long-term memory store over MemoryHub notes (`pip install
memoryhub-client[langgraph]`).

    from memoryhub_client import AsyncMemoryHub, MemoryHub
    from memoryhub_client.langgraph import MemoryHubStore

    store = MemoryHubStore(MemoryHub(), async_client=AsyncMemoryHub(), user_id="ann")
    store.put(("memories", "ann"), "m1", {"text": "Ann prefers trains."})
    graph = builder.compile(store=store)  # LangMem's memory tools use it too

Each item is one MemoryHub note:
- owner: a namespace whose first segment is one of `user_labels` (default "users" and "memories")
  belongs to the end user its second segment names: ("users", "ann", …) and ("memories", "ann")
  are ann's (the note's user_id). `user_segment=i` says instead that segment i of every namespace
  names the user (e.g. 0 for ("ann", "memories")). Any other namespace is shared (the note has no
  user). `scope` (default: the server's) is the note's scope, `workspace` (default: the key's) its
  workspace.
- acting user: a store given `user_id` acts for that end user, also with a tenant-wide key. It
  reads that user's namespaces and the shared ones; another user's namespace is refused
  (ConflictError `owner_mismatch`), and so is writing a shared one (it is everyone's). Reads are
  confined on the server (`for_user`), never filtered here. Without `user_id` the store reads
  whatever the key may read.
- identity: one note per (workspace, namespace, key); its id is derived from them ("lg-…"), so a
  store in workspace "beta" keeps its own item under a namespace and key that "alpha" holds. The
  workspace is the store's `workspace`, else the one its key is limited to (asked once, GET /key/);
  a store with neither (a tenant-wide key, the default workspace) derives the id from the
  namespace and key, as every store did before ids named a workspace. An item an older store wrote
  under that id stays readable (get, search, delete find it) and moves to its id when it is next
  written.
- the value's JSON is kept whole in the note's metadata ("langgraph": {namespace, key, value});
  the note's content is the value's text (the fields named by `index`, else every string in it),
  which MemoryHub indexes for search like every memory. Notes carry the source and tag "langgraph".
- `search(prefix, query=…)`: the items under the prefix that pass `filter` (equality, nested
  objects, dotted paths, $eq $ne $gt $gte $lt $lte), ranked by MemoryHub's search for the query
  (the best 100; the other matching items follow, without a score), then `offset` and `limit`.
  Without a query, newest first. `list_namespaces` lists the namespaces that hold items.
Filtering and namespace matching run in this client over the notes the store may read under the
prefix's owner: fine for an agent's memories, not for millions of items.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memoryhub_client import _frameworks as fw
from memoryhub_client.errors import ConflictError, NotFoundError

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
    from langgraph.store.base.embed import get_text_at_path, tokenize_path
except ImportError as error:  # pragma: no cover - depends on the install
    raise fw.missing("langgraph", error) from error

SOURCE = "langgraph"  # the notes' source and tag
# ("users", <user>, …) and ("memories", <user>, …) are that user's
USER_LABELS = ("users", "memories")
PAGE = 1000
SEARCH_TOP_K = 100
_FILTER_KEY = re.compile(r"^[\w.\-]+$")


def note_id(namespace: tuple[str, ...], key: str, workspace: str | None = None) -> str:
    parts: list[Any] = (
        [list(namespace), key] if workspace is None else [workspace, list(namespace), key]
    )
    digest = hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode()).hexdigest()
    return f"lg-{digest[:40]}"


@dataclass(frozen=True)
class Owners:
    """Which segment of a namespace names its end user, and which user the store acts for."""

    labels: tuple[str, ...] = USER_LABELS
    segment: int | None = None
    acting: str | None = None

    def owner(self, namespace: tuple[str, ...]) -> str | None:
        """The end user a namespace belongs to (None: shared; "*": a pattern naming no one)."""
        if self.segment is not None:
            found = namespace[self.segment] if len(namespace) > self.segment else None
        else:
            found = namespace[1] if len(namespace) >= 2 and namespace[0] in self.labels else None
        return None if found == "*" else found

    def reader(self, namespace: tuple[str, ...]) -> dict[str, str]:
        """The list_notes argument that confines a read under `namespace` on the server."""
        user = self.owner(namespace)
        if user is not None:
            self.check(user, namespace)
            return {"user_id": user}
        return {"for_user": self.acting} if self.acting else {}

    def writer(self, namespace: tuple[str, ...]) -> str:
        """The owner of an item written under `namespace` ("": shared), refused when it is not the
        acting user's."""
        user = self.owner(namespace) or ""
        if self.acting and user != self.acting:
            self.check(user, namespace)
        return user

    def check(self, user: str, namespace: tuple[str, ...]) -> None:
        if self.acting and user != self.acting:
            whose = "another user" if user else "no user (it is shared)"
            raise ConflictError(
                "owner_mismatch",
                f"Namespace {namespace!r} belongs to {whose}: this store acts "
                f"for user {self.acting!r}.",
                details={"user_id": self.acting},
            )


def _text(value: dict[str, Any], index: list[str] | None) -> str:
    if index:
        texts = [t for path in index for t in get_text_at_path(value, tokenize_path(path))]
    else:
        texts = []

        def walk(node: Any) -> None:
            if isinstance(node, str):
                texts.append(node)
            elif isinstance(node, dict):
                for child in node.values():
                    walk(child)
            elif isinstance(node, list):
                for child in node:
                    walk(child)

        walk(value)
    text = "\n".join(t for t in texts if t.strip())
    return text if text.strip() else json.dumps(value, ensure_ascii=False)


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _item(note: dict[str, Any], score: float | None = None, searched: bool = False) -> Item:
    stored = note["metadata"][SOURCE]
    fields = {
        "namespace": tuple(stored["namespace"]),
        "key": stored["key"],
        "value": stored["value"],
        "created_at": _when(note["created_at"]),
        "updated_at": _when(note["updated_at"]),
    }
    return SearchItem(**fields, score=score) if searched else Item(**fields)


def _is_store_note(note: dict[str, Any]) -> bool:
    stored = (note.get("metadata") or {}).get(SOURCE)
    return isinstance(stored, dict) and "namespace" in stored and "key" in stored


# --- filters -------------------------------------------------------------------------------------

_MISSING = object()


def _at(value: Any, path: str) -> Any:
    if isinstance(value, dict) and path in value:
        return value[path]
    node = value
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _operator(value: Any, op: str, expected: Any) -> bool:
    if op == "$eq":
        return value is not _MISSING and _matches(value, expected)
    if op == "$ne":
        return value is _MISSING or not _matches(value, expected)
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"Unsupported filter operator: {op}")
    left, right = _number(value), _number(expected)
    if left is None or right is None or math.isnan(left) or math.isnan(right):
        return False
    return {"$gt": left > right, "$gte": left >= right, "$lt": left < right, "$lte": left <= right}[
        op
    ]


def _matches(value: Any, expected: Any) -> bool:
    """JSON containment, as PostgreSQL's jsonb @> reads it (a list holds the expected elements)."""
    if isinstance(expected, dict):
        if any(k.startswith("$") for k in expected):
            return all(_operator(value, k, v) for k, v in expected.items())
        return isinstance(value, dict) and all(
            k in value and _matches(value[k], v) for k, v in expected.items()
        )
    if isinstance(expected, (list, tuple)):
        return isinstance(value, list) and all(any(_matches(v, e) for v in value) for e in expected)
    if isinstance(value, list) and not isinstance(expected, (dict, list)):
        return expected in value
    if isinstance(expected, float) and math.isnan(expected):
        return False
    if isinstance(expected, bool) or isinstance(value, bool):
        return type(expected) is type(value) and expected == value
    return value == expected


def _passes(value: dict[str, Any], filter: dict[str, Any] | None) -> bool:  # noqa: A002
    for path, expected in (filter or {}).items():
        if not _FILTER_KEY.match(path):
            raise ValueError(f"Invalid filter key: {path!r}")
        found = _at(value, path)
        if isinstance(expected, dict) and any(k.startswith("$") for k in expected):
            if not all(_operator(found, k, v) for k, v in expected.items()):
                return False
        elif found is _MISSING or not _matches(found, expected):
            return False
    return True


def _does_match(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    labels = (
        namespace[: len(path)]
        if condition.match_type == "prefix"
        else namespace[len(namespace) - len(path) :]
    )
    return all(p == "*" or p == n for p, n in zip(path, labels, strict=True))


# --- the operations, as programs -----------------------------------------------------------------


@dataclass(frozen=True)
class Place:
    """Where the store's items live and whom it acts for. `learnt` keeps what the server said of
    the key (asked once, on the first operation that needs an item's id)."""

    owners: Owners
    scope: str | None = None
    workspace: str | None = None
    learnt: dict[str, str | None] = field(default_factory=dict, compare=False)


def _id_workspace(place: Place) -> fw.Program:
    """The workspace that is part of an item's id: the store's, else the one its key is limited to
    (asked once with describe_key; a server without GET /key/ answers 404: none), else None."""
    if place.workspace is not None:
        return place.workspace
    if "workspace" not in place.learnt:
        try:
            info = yield fw.call("describe_key")
        except NotFoundError:
            info = {}
        place.learnt["workspace"] = info.get("workspace")
    return place.learnt["workspace"]


def _ids(place: Place, namespace: tuple[str, ...], key: str) -> fw.Program:
    """(the item's id, the id a store without a workspace derived before ids named one)."""
    workspace = yield from _id_workspace(place)
    return note_id(namespace, key, workspace), note_id(namespace, key)


def _find(place: Place, namespace: tuple[str, ...], key: str, legacy_only: bool) -> fw.Program:
    """The note holding the item (None: none the store may read): under its id (unless
    `legacy_only`), else under the legacy id, when that note is in the store's workspace."""
    ident, legacy = yield from _ids(place, namespace, key)
    workspace = yield from _id_workspace(place)
    for candidate in dict.fromkeys((legacy,) if legacy_only else (ident, legacy)):
        try:
            note = yield fw.call("get_note", candidate)
        except NotFoundError:
            continue
        if candidate == legacy != ident and note.get("workspace") != workspace:
            continue  # another workspace's item of the same namespace and key
        return note
    return None


def _notes(place: Place, reader: dict[str, str]) -> fw.Program:
    """Every note of the store that `reader` (list_notes' user_id or for_user) may read, newest
    first."""
    notes: list[dict[str, Any]] = []
    offset = 0
    while True:
        page = yield fw.call(
            "list_notes",
            source=SOURCE,
            tags=[SOURCE],
            workspace=place.workspace,
            limit=PAGE,
            offset=offset,
            **reader,
        )
        notes += [n for n in page.results if _is_store_note(n)]
        if len(page.results) < PAGE:
            break
        offset += PAGE
    notes.sort(key=lambda n: (n["updated_at"], n["note_id"]), reverse=True)
    return notes


def _get(op: GetOp, place: Place) -> fw.Program:
    namespace = tuple(op.namespace)
    note = yield from _stored(place, namespace, op.key)
    return None if note is None else _item(note)


def _stored(
    place: Place, namespace: tuple[str, ...], key: str, legacy_only: bool = False
) -> fw.Program:
    """The note of the item at (namespace, key) that this store reads, or None."""
    reader = place.owners.reader(namespace)
    note = yield from _find(place, namespace, key, legacy_only)
    if note is None:
        return None
    if not _is_store_note(note) or tuple(note["metadata"][SOURCE]["namespace"]) != namespace:
        return None
    if note.get("user_id", "") != reader.get("user_id", ""):
        return None  # written by a store that reads this namespace's owner otherwise: not this item
    return note


def _put(op: PutOp, place: Place) -> fw.Program:
    namespace = tuple(op.namespace)
    user = place.owners.writer(namespace)
    if op.value is None:
        stored = yield from _stored(place, namespace, op.key)
        if stored is not None:
            yield from _delete_note(stored["note_id"])
        return None
    ident, legacy = yield from _ids(place, namespace, op.key)
    # An item an older store wrote under the legacy id moves to its id when next written (one
    # request more per write while ids name a workspace).
    stored = (
        (yield from _stored(place, namespace, op.key, legacy_only=True))
        if ident != legacy
        else None
    )
    index = None if op.index is None or op.index is False else list(op.index)
    value = json.loads(json.dumps(op.value))
    yield fw.call(
        "put_note",
        ident,
        _text(value, index),
        source=SOURCE,
        tags=[SOURCE],
        user_id=user,
        scope=place.scope,
        workspace=place.workspace,
        metadata={SOURCE: {"namespace": list(namespace), "key": op.key, "value": value}},
    )
    if stored is not None and stored["note_id"] != ident:
        yield from _delete_note(stored["note_id"])
    return None


def _delete_note(ident: str) -> fw.Program:
    try:
        yield fw.call("delete_note", ident)
    except NotFoundError:
        pass


def _search(op: SearchOp, place: Place) -> fw.Program:
    prefix = tuple(op.namespace_prefix)
    reader = place.owners.reader(prefix)
    notes = yield from _notes(place, reader)
    found = [
        n
        for n in notes
        if tuple(n["metadata"][SOURCE]["namespace"][: len(prefix)]) == prefix
        and _passes(n["metadata"][SOURCE]["value"], op.filter)
    ]
    scores: dict[str, float] = {}
    if op.query and op.query.strip() and found:
        user = reader.get("user_id") or reader.get("for_user")
        response = yield fw.call(
            "search", op.query, kinds=["note"], tags=[SOURCE], user_id=user, top_k=SEARCH_TOP_K
        )
        for result in response["results"]:
            ident = (result.get("metadata") or {}).get("note_id")
            if ident is not None and ident not in scores:
                scores[ident] = float(result["score"])
        order = {n["note_id"]: i for i, n in enumerate(found)}
        found.sort(
            key=lambda n: (
                n["note_id"] not in scores,
                -scores.get(n["note_id"], 0.0),
                order[n["note_id"]],
            )
        )
    page = found[op.offset : op.offset + op.limit]
    return [_item(n, scores.get(n["note_id"]), searched=True) for n in page]


def _list_namespaces(op: ListNamespacesOp, place: Place) -> fw.Program:
    prefix: tuple[str, ...] = ()
    for condition in op.match_conditions or ():
        if condition.match_type == "prefix":
            prefix = tuple(condition.path)
    notes = yield from _notes(place, place.owners.reader(prefix))
    namespaces = {tuple(n["metadata"][SOURCE]["namespace"]) for n in notes}
    namespaces = {
        ns for ns in namespaces if all(_does_match(c, ns) for c in op.match_conditions or ())
    }
    if op.max_depth is not None:
        namespaces = {ns[: op.max_depth] for ns in namespaces}
    return sorted(namespaces)[op.offset : op.offset + op.limit]


def _batch(ops: Iterable[Op], place: Place) -> fw.Program:
    results: list[Result] = []
    for op in ops:
        if isinstance(op, GetOp):
            results.append((yield from _get(op, place)))
        elif isinstance(op, PutOp):
            results.append((yield from _put(op, place)))
        elif isinstance(op, SearchOp):
            results.append((yield from _search(op, place)))
        elif isinstance(op, ListNamespacesOp):
            results.append((yield from _list_namespaces(op, place)))
        else:
            raise ValueError(f"Unknown operation type: {type(op)}")
    return results


class MemoryHubStore(BaseStore):
    """A LangGraph BaseStore whose items are MemoryHub notes. `client`: a MemoryHub (batch and the
    sync methods); `async_client`: an AsyncMemoryHub (abatch and the async methods; without one,
    they run the sync client in a thread). `user_id`: the end user the store acts for.
    `user_labels` / `user_segment`: which namespace segment names the user (see the module).
    `scope`: the notes' scope (default: the server's); `workspace`: their workspace (default: the
    key's), part of each item's identity."""

    def __init__(
        self,
        client: Any = None,
        *,
        async_client: Any = None,
        scope: str | None = None,
        user_id: str | None = None,
        user_labels: Iterable[str] = USER_LABELS,
        user_segment: int | None = None,
        workspace: str | None = None,
    ) -> None:
        if client is None and async_client is None:
            raise ValueError(
                "MemoryHubStore needs a MemoryHub (client) or an AsyncMemoryHub (async_client)"
            )
        if user_segment is not None and user_segment < 0:
            raise ValueError("user_segment is a namespace position: 0 or more")
        self.client = client
        self.async_client = async_client
        self.scope = scope
        self.user_id = user_id
        self.workspace = workspace
        self.place = Place(
            Owners(tuple(user_labels), user_segment, user_id or None), scope, workspace
        )

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        if self.client is None:
            raise RuntimeError(
                "this MemoryHubStore has only an async client: use abatch and the a* methods"
            )
        return fw.drive(self.client, _batch(list(ops), self.place))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        if self.async_client is None:
            import asyncio

            return await asyncio.to_thread(self.batch, ops)
        return await fw.adrive(self.async_client, _batch(ops, self.place))
