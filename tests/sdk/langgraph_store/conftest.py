"""The stores LangGraph's store tests run against: a MemoryHubStore of the live test server, through
the sync client and (`store`'s "async") through abatch() with the async client."""
# Adapted from LangGraph's libs/checkpoint-sqlite/tests/test_store.py (MIT licence): see __init__.py.
import asyncio
from collections.abc import Generator
from typing import Any

import pytest

pytest.importorskip("langgraph.store.base")
from memoryhub_client import AsyncMemoryHub, MemoryHub  # noqa: E402
from memoryhub_client.langgraph import MemoryHubStore  # noqa: E402

from tests.sdk.conftest import FAST  # noqa: E402
from tests.sdk.langgraph_store.support import _MAKE, CharacterEmbeddings, _ThroughAbatch  # noqa: E402


@pytest.fixture(autouse=True)
def _memoryhub(live_server: Any, keys: dict[str, str]) -> Generator[None, None, None]:
    runner = asyncio.Runner()
    clients: list[Any] = []

    def make(kind: str = "sync") -> MemoryHubStore:
        hub = MemoryHub(keys["alice"], live_server.url, **FAST)
        clients.append(hub.close)
        if kind == "sync":
            return MemoryHubStore(hub)
        async_hub = AsyncMemoryHub(keys["alice"], live_server.url, **FAST)
        clients.append(lambda: runner.run(async_hub.aclose()))
        store = _ThroughAbatch(hub, async_client=async_hub)
        store.runner = runner
        return store

    _MAKE["store"] = make
    yield
    for close in clients:
        close()
    runner.close()
    _MAKE.clear()


@pytest.fixture(scope="function", params=["sync", "async"])
def store(request: Any) -> Generator[MemoryHubStore, None, None]:
    """Create a MemoryHubStore for testing."""
    yield _MAKE["store"](request.param)


@pytest.fixture(scope="function")
def fake_embeddings() -> CharacterEmbeddings:
    """Create fake embeddings for testing."""
    return CharacterEmbeddings(dims=500)
