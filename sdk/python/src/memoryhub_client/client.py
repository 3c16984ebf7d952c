"""The two clients: each drives the shared flows with its own httpx client and its own sleep."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from types import TracebackType
from typing import Any

import httpx

from memoryhub_client._agent import ClientState
from memoryhub_client._binding import AsyncOperations, SyncOperations
from memoryhub_client._core import (
    Call,
    Flow,
    RetryPolicy,
    Send,
    Sleep,
    exchange,
    next_page,
    request_args,
)
from memoryhub_client._version import __version__
from memoryhub_client.types import Page

DEFAULT_URL = "http://127.0.0.1:8000"


def _api_root(base_url: str | None) -> str:
    """The /api/v1/ root from a service URL given with or without it."""
    url = (base_url or os.environ.get("MEMORYHUB_URL") or DEFAULT_URL).rstrip("/")
    if not url.endswith("/api/v1"):
        url += "/api/v1"
    return url + "/"


def _headers(api_key: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
    key = api_key or os.environ.get("MEMORYHUB_API_KEY")
    headers = {"Accept": "application/json", "User-Agent": f"memoryhub-client/{__version__}"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    headers.update(extra or {})
    return headers


class _Settings:
    """Constructor arguments shared by both clients."""

    def __init__(
        self,
        api_key: str | None,
        base_url: str | None,
        *,
        timeout: float,
        max_retries: int,
        backoff: float,
        max_backoff: float,
        batch_size: int,
        headers: Mapping[str, str] | None,
    ) -> None:
        self.root = _api_root(base_url)
        self.headers = _headers(api_key, headers)
        self.timeout = timeout
        policy = RetryPolicy(max_retries=max_retries, backoff=backoff, max_backoff=max_backoff)
        self.state = ClientState(policy=policy, batch_size=batch_size)


class MemoryHub(SyncOperations):
    """Synchronous client. `MemoryHub(api_key, base_url)`; both default to the environment
    variables MEMORYHUB_API_KEY and MEMORYHUB_URL (else http://127.0.0.1:8000).

    Retries: up to `max_retries` more attempts on 429/503 and connection failures (see
    RetryPolicy), with exponential backoff from `backoff` seconds up to `max_backoff`."""

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        batch_size: int = 500,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        settings = _Settings(
            api_key,
            base_url,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            max_backoff=max_backoff,
            batch_size=batch_size,
            headers=headers,
        )
        self._state = settings.state
        self._http = httpx.Client(
            base_url=settings.root, headers=settings.headers, timeout=timeout, transport=transport
        )

    def _drive(self, flow: Flow[Any]) -> Any:
        try:
            step = next(flow)
            while True:
                if isinstance(step, Sleep):
                    time.sleep(step.seconds)
                    step = flow.send(None)
                    continue
                assert isinstance(step, Send)
                try:
                    reply: Any = self._http.request(**request_args(step.call))
                except httpx.TransportError as exc:
                    reply = exc
                step = flow.send(reply)
        except StopIteration as stop:
            return stop.value

    def _bind(self, make_flow: Callable[..., Flow[Any]]) -> Callable[..., Any]:
        def method(*args: Any, **kwargs: Any) -> Any:
            return self._drive(make_flow(*args, **kwargs))

        return method

    def _bind_pages(self, build: Callable[..., Call[Page[Any]]]) -> Callable[..., Iterator[Any]]:
        def method(*args: Any, **kwargs: Any) -> Iterator[Any]:
            call: Call[Page[Any]] | None = build(*args, **kwargs)
            while call is not None:
                page = self._drive(exchange(call, self._state.policy))
                yield from page.results
                call = next_page(call, page)

        return method

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MemoryHub:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncMemoryHub(AsyncOperations):
    """Asynchronous client: the same methods as MemoryHub, awaited (`iter_*` are async iterators).
    Use `async with AsyncMemoryHub(...) as hub:` or call `await hub.aclose()`."""

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        batch_size: int = 500,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        settings = _Settings(
            api_key,
            base_url,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            max_backoff=max_backoff,
            batch_size=batch_size,
            headers=headers,
        )
        self._state = settings.state
        self._http = httpx.AsyncClient(
            base_url=settings.root, headers=settings.headers, timeout=timeout, transport=transport
        )

    async def _drive(self, flow: Flow[Any]) -> Any:
        try:
            step = next(flow)
            while True:
                if isinstance(step, Sleep):
                    await asyncio.sleep(step.seconds)
                    step = flow.send(None)
                    continue
                assert isinstance(step, Send)
                try:
                    reply: Any = await self._http.request(**request_args(step.call))
                except httpx.TransportError as exc:
                    reply = exc
                step = flow.send(reply)
        except StopIteration as stop:
            return stop.value

    def _bind(self, make_flow: Callable[..., Flow[Any]]) -> Callable[..., Any]:
        async def method(*args: Any, **kwargs: Any) -> Any:
            return await self._drive(make_flow(*args, **kwargs))

        return method

    def _bind_pages(
        self, build: Callable[..., Call[Page[Any]]]
    ) -> Callable[..., AsyncIterator[Any]]:
        async def method(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            call: Call[Page[Any]] | None = build(*args, **kwargs)
            while call is not None:
                page = await self._drive(exchange(call, self._state.policy))
                for item in page.results:
                    yield item
                call = next_page(call, page)

        return method

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncMemoryHub:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
