"""The ASGI entry point (`manage.py run` serves it with uvicorn workers under gunicorn): Django
behind the body limits and deadlines of memoryhub.plumbing.asgi_body (a slow or idle client holds no
thread; the web workers share a connection pool), plus the ASGI apps that
settings.MEMORYHUB_ASGI_MOUNTS names by path prefix (the MCP endpoint at /mcp/). The mounted apps
are named by dotted path, as INSTALLED_APPS are, so the core imports no higher layer, and imported
at their first request (Mounted)."""

import asyncio
import os
from contextlib import AsyncExitStack
from typing import Any

import django
from django.conf import settings
from django.utils.module_loading import import_string

from memoryhub.plumbing.asgi_body import BodyLimits
from memoryhub.plumbing.asgi_handler import SyncChainASGIHandler
from memoryhub.plumbing.embedded_pg import ensure_running

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
ensure_running()
django.setup(set_prefix=False)  # as get_asgi_application() does
# Django's own handler, its middleware chain loaded synchronously (asgi_handler.py).
django_application = BodyLimits(SyncChainASGIHandler())


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
