"""The stock serving stack, for bench/stack.py: uvicorn's own h11 protocol (instead of
memoryhub.plumbing.webserver.JsonH11Protocol) and Django's own ASGIHandler, with the same body
limits, mounts, keep-alive, header size limit and proxy settings. Served by gunicorn as
`bench.stock_stack:application` with `--worker-class bench.stock_stack.Worker`."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from uvicorn_worker import UvicornWorker

from memoryhub.plumbing.asgi import mount  # sets Django up
from memoryhub.plumbing.asgi_body import BodyLimits
from memoryhub.plumbing.webserver import KEEPALIVE_SECONDS, MAX_HEADER_BYTES, proxy_config

application = mount(BodyLimits(ASGIHandler()), settings.MEMORYHUB_ASGI_MOUNTS)


class Worker(UvicornWorker):
    CONFIG_KWARGS: dict[str, Any] = {"loop": "asyncio", "http": "h11", "lifespan": "on"}

    def load_wsgi(self) -> None:
        super().load_wsgi()
        self.config.timeout_keep_alive = KEEPALIVE_SECONDS
        self.config.h11_max_incomplete_event_size = MAX_HEADER_BYTES
        self.config.proxy_headers, self.config.forwarded_allow_ips = proxy_config(
            settings.MEMORYHUB_TRUSTED_PROXIES
        )
