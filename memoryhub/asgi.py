"""The ASGI entry point (`manage.py run` serves it with uvicorn workers under gunicorn): Django behind
the body limits and deadlines of memoryhub.asgi_body (a slow or idle client holds no thread; the web
workers share a connection pool), plus the ASGI apps that settings.MEMORYHUB_ASGI_MOUNTS names by
path prefix (the MCP endpoint at /mcp/). The mounted apps are named by dotted path, as
INSTALLED_APPS are, so the core imports no higher layer."""

import os
from contextlib import AsyncExitStack
from typing import Any

import django
from django.conf import settings
from django.utils.module_loading import import_string

from memoryhub.asgi_body import BodyLimits
from memoryhub.asgi_handler import OneHopASGIHandler
from memoryhub.embedded_pg import ensure_running

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
ensure_running()
django.setup(set_prefix=False)  # as get_asgi_application() does
django_application = BodyLimits(OneHopASGIHandler())


def mount(default: Any, mounts: dict[str, str]) -> Any:
    """An ASGI app sending each path under a prefix of `mounts` to the app named there (the prefix
    itself, without its slash, too) and everything else to `default`."""
    apps = [(prefix.rstrip("/"), import_string(path)) for prefix, path in mounts.items()]

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


async def _lifespan(apps: list[Any], receive: Any, send: Any) -> None:
    """Start and stop the mounted apps' lifespans (Starlette apps: the MCP session manager);
    Django has none."""
    async with AsyncExitStack() as stack:
        message = await receive()
        assert message["type"] == "lifespan.startup"
        try:
            for sub in apps:
                if hasattr(sub, "router"):
                    await stack.enter_async_context(sub.router.lifespan_context(sub))
        except Exception as exc:
            await send({"type": "lifespan.startup.failed", "message": repr(exc)})
            raise
        await send({"type": "lifespan.startup.complete"})
        message = await receive()
        assert message["type"] == "lifespan.shutdown"
    await send({"type": "lifespan.shutdown.complete"})


application = mount(django_application, settings.MEMORYHUB_ASGI_MOUNTS)
