"""MemoryHubStore on the live test server, for the tests of LangGraph's `BaseStore` contract
(langgraph.store.base: put, get, delete, search, list_namespaces, batch) and of whom a store acts
for. `store` runs each contract test twice: through `batch` with the sync client, and through
`abatch` with the async client (the a* methods, awaited on one event loop)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("langgraph.store.base")

from memoryhub_client import AsyncMemoryHub, MemoryHub  # noqa: E402
from memoryhub_client.langgraph import MemoryHubStore  # noqa: E402

from tests.base import make_key, make_tenant  # noqa: E402
from tests.sdk.conftest import FAST  # noqa: E402


class AwaitedStore:
    """A store whose calls go to its async methods (aget, aput, …, abatch), each awaited to the end,
    so one test body checks both faces of the store."""

    def __init__(self, store: MemoryHubStore, runner: asyncio.Runner) -> None:
        self.store = store
        self.runner = runner

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self.store, f"a{name}")
        return lambda *args, **kwargs: self.runner.run(method(*args, **kwargs))


@pytest.fixture
def acme(transactional_db: None) -> dict[str, str]:
    """Raw keys of one tenant: tenant-wide, limited to ann, to bob, to workspace alpha, to beta."""
    tenant = make_tenant("acme")
    return {
        "all": make_key(tenant),
        "ann": make_key(tenant, user="ann"),
        "bob": make_key(tenant, user="bob"),
        "alpha": make_key(tenant, workspace="alpha"),
        "beta": make_key(tenant, workspace="beta"),
    }


@pytest.fixture
def make_store(live_server: Any, acme: dict[str, str]) -> Iterator[Callable[..., Any]]:
    """make_store(key="all", kind="sync", **options): a MemoryHubStore (kind "async": awaited)."""
    runner = asyncio.Runner()
    closing: list[Callable[[], Any]] = []

    def make(key: str = "all", kind: str = "sync", **options: Any) -> Any:
        hub = MemoryHub(acme[key], live_server.url, **FAST)
        closing.append(hub.close)
        if kind == "sync":
            return MemoryHubStore(hub, **options)
        async_hub = AsyncMemoryHub(acme[key], live_server.url, **FAST)
        closing.append(lambda: runner.run(async_hub.aclose()))
        return AwaitedStore(MemoryHubStore(hub, async_client=async_hub, **options), runner)

    yield make
    for close in closing:
        close()
    runner.close()


@pytest.fixture(params=["sync", "async"])
def store(request: pytest.FixtureRequest, make_store: Callable[..., Any]) -> Any:
    return make_store(kind=request.param)
