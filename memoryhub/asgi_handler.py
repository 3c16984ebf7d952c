"""Django under ASGI in one thread hop a request (issue 19).

Django's ASGIHandler loads the middleware chain in async mode and adapts every part that is not:
with MemoryHub's chain (Django's own middleware, sync-only request logging, async-capable
django-axes) and its sync views, a request crossed between the event loop and worker threads six
times, each crossing a few tenths of a millisecond on two cores, and started and joined a thread of
its own (ThreadSensitiveContext) besides: /health/ took 2.1 ms against 0.7 ms under gthread.

This handler reads the body and sends the response in the event loop, as Django's does (so that a
slow client holds no thread: memoryhub.asgi_body and memoryhub.webserver), and runs everything in
between (request_started, the sync middleware chain WSGI uses, the view, request_finished) in one
call on a pool of request threads. A response that is not streamed is closed (request_finished: the
database connection goes back to the pool) before it is sent; a streamed one after.

A request's database work all happens inside that one call, in one thread, on a connection opened
in it (per request: connections live in the request's context), which is what Django's
thread-sensitive mode otherwise guarantees. What Django's handler adds and this one does not: a
view is not cancelled when its client disconnects (as under WSGI, it runs to its end).
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.base import BaseHandler
from django.http import FileResponse, HttpResponseBase
from django.urls import set_script_prefix

from memoryhub.threads import ProcessPool

# Requests run at once per web worker. The loop's default pool has min(32, cores + 4) threads: on
# two cores six slow requests (an export, a long import) would hold every thread and leave even
# /health/ waiting. The database pool still bounds queries (DB_POOL_SIZE, then a 503).
REQUEST_THREADS = 32
request_threads = ProcessPool(REQUEST_THREADS, "request")


class OneHopASGIHandler(ASGIHandler):
    def __init__(self) -> None:
        BaseHandler.__init__(self)
        self.load_middleware(is_async=False)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        await self.handle(scope, receive, send)

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        pool = request_threads.get()
        response = await sync_to_async(self._respond, thread_sensitive=False, executor=pool)(scope, body_file)
        try:
            await self.send_response(response, send)
        finally:
            if response.streaming:
                await sync_to_async(self._close, thread_sensitive=False, executor=pool)(response, body_file)

    def _respond(self, scope: dict[str, Any], body_file: Any) -> HttpResponseBase:
        set_script_prefix(get_script_prefix(scope))
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, response = self.create_request(scope, body_file)
        if request is not None:
            response = self.get_response(request)
            response._handler_class = self.__class__  # type: ignore[attr-defined]
            if isinstance(response, FileResponse):  # the ASGI server chunks what it sends
                response.block_size = self.chunk_size
        assert response is not None
        if not response.streaming:
            self._close(response, body_file)
        return response

    @staticmethod
    def _close(response: HttpResponseBase, body_file: Any) -> None:
        try:
            response.close()  # sends request_finished
        finally:
            body_file.close()
