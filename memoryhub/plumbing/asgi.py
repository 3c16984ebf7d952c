"""The ASGI entry point (`manage.py run` serves it with uvicorn workers under gunicorn): Django
behind the body limits and deadlines of memoryhub.plumbing.asgi_body (a slow or idle client holds no
thread; the web workers share a connection pool, and take in no more requests at once than it has
connections: Admitted), plus the ASGI apps that settings.MEMORYHUB_ASGI_MOUNTS names by path prefix
(the MCP endpoint at /mcp/). The mounted apps are named by dotted path, as INSTALLED_APPS are, so
the core imports no higher layer, and imported at their first request (Mounted)."""

import asyncio
import os
from contextlib import AsyncExitStack
from contextvars import ContextVar
from typing import Any

import django
from django.conf import settings
from django.urls import reverse
from django.utils.module_loading import import_string

from memoryhub.plumbing.asgi_body import BodyLimits
from memoryhub.plumbing.asgi_handler import SyncChainASGIHandler
from memoryhub.plumbing.embedded_pg import ensure_running

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
ensure_running()


def pool_size(database: dict[str, Any]) -> int | None:
    """The most connections the database's pool holds, or None without a pool (Django then opens
    one per request thread)."""
    pool = database.get("OPTIONS", {}).get("pool")
    return pool.get("max_size") if isinstance(pool, dict) else None


class Admitted(SyncChainASGIHandler):
    """Django's handler (its middleware chain run synchronously: asgi_handler.py), serving at most
    `limit` requests at once, each from when its body has arrived (a slow upload takes no turn); the
    others wait in the event loop, in arrival order, with no thread and no database connection. The
    limit is the pool's size: a request past it would wait for a connection in a thread of its own
    and answer 503 after the pool's timeout, which is what 50 and 200 agents at once on two web
    workers got (bench/load.py); now a 503 means the database gave no connection, not that others
    were served first. `GET /health/` (liveness, no database) never waits. Without a limit it serves
    every request at once."""

    def __init__(self, limit: int | None) -> None:
        super().__init__()
        self.limit = limit
        self._turns: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None
        self._never_waits: str | None = None

    def turns(self) -> asyncio.Semaphore:
        """The limit's semaphore for this event loop (a worker has one loop; tests make several)."""
        loop = asyncio.get_running_loop()
        if self._turns is None or self._turns[0] is not loop:
            self._turns = (loop, asyncio.Semaphore(self.limit or 1))
        return self._turns[1]

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self.limit is None or scope["path"] == self.never_waits():
            await super().handle(scope, receive, send)
            return
        turn: list[asyncio.Semaphore] = []
        token = _turn.set(turn)
        try:
            await super().handle(scope, receive, send)
        finally:
            _turn.reset(token)
            for semaphore in turn:
                semaphore.release()

    async def read_body(self, receive: Any) -> Any:
        body = await super().read_body(receive)
        turn = _turn.get(None)
        if turn is not None:
            semaphore = self.turns()
            try:
                await semaphore.acquire()
            except BaseException:
                body.close()
                raise
            turn.append(semaphore)
        return body

    def never_waits(self) -> str:
        if self._never_waits is None:
            self._never_waits = reverse("health")
        return self._never_waits


# The turn the current request holds (Admitted.read_body takes it, Admitted.handle gives it back).
_turn: ContextVar[list[asyncio.Semaphore]] = ContextVar("admitted_turn")


def django_app(database: dict[str, Any]) -> Any:
    """Django behind the body limits, taking in as many requests at once as the pool has
    connections."""
    django.setup(set_prefix=False)
    return BodyLimits(Admitted(pool_size(database)))


# Django's handler, its chain run synchronously (bench/README.md, "Search latency and the scale
# curve"), admitting requests by the pool's size.
django_application = django_app(settings.DATABASES["default"])


class Mounted:
    """A mounted app, imported at its first request, not at start: a web worker that never serves
    /mcp/ does not hold the MCP SDK, Starlette and pydantic (~35 MB resident each worker).

    Its lifespan (Starlette's: the MCP session manager) is entered by the server's lifespan task,
    where it is also left at shutdown (anyio's task groups must be left by the task that entered
    them): the first request asks that task to load the app, and waits for it. A server run
    without lifespan events gets the app without its lifespan, as before.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.app: Any = None
        # the lifespan task's
        self.loads: asyncio.Queue[tuple[Mounted, asyncio.Future[Any]]] | None = None
        self._lock = asyncio.Lock()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self.app is None:
            async with self._lock:
                if self.app is None:
                    self.app = await self._load()
        await self.app(scope, receive, send)

    async def _load(self) -> Any:
        if self.loads is None:
            return import_string(self.path)
        loaded: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        await self.loads.put((self, loaded))
        return await loaded


def mount(default: Any, mounts: dict[str, str]) -> Any:
    """An ASGI app sending each path under a prefix of `mounts` to the app named there (the prefix
    itself, without its slash, too) and everything else to `default`."""
    apps = [(prefix.rstrip("/"), Mounted(path)) for prefix, path in mounts.items()]

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await _lifespan([sub for _, sub in apps], receive, send)
            return
        path = scope.get("path", "")
        for prefix, sub in apps:
            if path == prefix:
                scope = {**scope, "path": prefix + "/", "raw_path": (prefix + "/").encode()}
            if scope.get("path", "").startswith(prefix + "/"):
                await sub(scope, receive, send)
                return
        await default(scope, receive, send)

    return app


async def _lifespan(apps: list[Mounted], receive: Any, send: Any) -> None:
    """The server's lifespan task: loads each mounted app when its first request asks, entering
    its lifespan (Starlette apps: the MCP session manager), and leaves them all at shutdown.
    Django has none."""
    message = await receive()
    assert message["type"] == "lifespan.startup"
    loads: asyncio.Queue[tuple[Mounted, asyncio.Future[Any]]] = asyncio.Queue()
    for sub in apps:
        sub.loads = loads
    await send({"type": "lifespan.startup.complete"})
    async with AsyncExitStack() as stack:
        shutdown = asyncio.ensure_future(receive())
        while True:
            load = asyncio.ensure_future(loads.get())
            await asyncio.wait({shutdown, load}, return_when=asyncio.FIRST_COMPLETED)
            if load.done():
                await _enter(stack, *load.result())
            if shutdown.done():
                load.cancel()
                break
        assert shutdown.result()["type"] == "lifespan.shutdown"
        # no lifespan any more: a first request still queued is refused, not left waiting
        for sub in apps:
            sub.loads = None
        while not loads.empty():
            _, loaded = loads.get_nowait()
            loaded.set_exception(RuntimeError("the server is shutting down"))
    await send({"type": "lifespan.shutdown.complete"})


async def _enter(stack: AsyncExitStack, sub: Mounted, loaded: asyncio.Future[Any]) -> None:
    try:
        app = import_string(sub.path)
        if hasattr(app, "router"):
            await stack.enter_async_context(app.router.lifespan_context(app))
    except Exception as exc:  # the request that asked answers 500; the next one tries again
        loaded.set_exception(exc)
    else:
        loaded.set_result(app)


application = mount(django_application, settings.MEMORYHUB_ASGI_MOUNTS)
