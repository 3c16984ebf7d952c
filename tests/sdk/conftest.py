"""The Python client against the real server: pytest-django's live_server, keys made as elsewhere.

`hub` gives each test a client factory, once for MemoryHub and once for AsyncMemoryHub (driven
on one event loop through `Blocking`, so that one test body exercises both clients).
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# The package is installed by `make install`; a checkout without that still imports it from here.
if importlib.util.find_spec("memoryhub_client") is None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sdk" / "python" / "src"))

from memoryhub_client import AsyncMemoryHub, MemoryHub  # noqa: E402

from tests.base import make_key, make_tenant  # noqa: E402

# Retries in these tests wait milliseconds, not seconds.
FAST = {"backoff": 0.01, "max_backoff": 0.05}


class Blocking:
    """An AsyncMemoryHub whose coroutines are run to completion on one event loop, and whose
    async iterators are collected, so a synchronous test body drives the async client."""

    def __init__(self, hub: AsyncMemoryHub, runner: asyncio.Runner) -> None:
        self._hub = hub
        self._runner = runner

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._hub, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            result = attr(*args, **kwargs)
            if inspect.iscoroutine(result):
                return self._runner.run(result)
            if inspect.isasyncgen(result):
                return iter(self._runner.run(_collect(result)))
            return result

        return call


async def _collect(items: Any) -> list[Any]:
    return [item async for item in items]


@pytest.fixture(params=["sync", "async"])
def hub(request: pytest.FixtureRequest, live_server: Any) -> Iterator[Callable[..., Any]]:
    """hub(raw_key, **options) -> a client of the kind this run is about, bound to live_server."""
    runner = asyncio.Runner()
    opened: list[Any] = []

    def make(raw_key: str | None, **options: Any) -> Any:
        options = {**FAST, **options}
        if request.param == "sync":
            client: Any = MemoryHub(raw_key, live_server.url, **options)
            opened.append(client.close)
            return client
        async_client = AsyncMemoryHub(raw_key, live_server.url, **options)
        opened.append(lambda: runner.run(async_client.aclose()))
        return Blocking(async_client, runner)

    make.kind = request.param  # type: ignore[attr-defined]
    yield make
    for close in opened:
        close()
    runner.close()


@pytest.fixture
def keys(transactional_db: None) -> dict[str, str]:
    """Raw API keys: alice and bob (two tenants), and alice's read-only key."""
    alice, bob = make_tenant("alice"), make_tenant("bob")
    return {
        "alice": make_key(alice),
        "bob": make_key(bob),
        "alice_read": make_key(alice, scopes=("read",)),
    }
