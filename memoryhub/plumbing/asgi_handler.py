"""Django's ASGI handler with the middleware chain loaded as WSGI loads it: synchronous, one call,
and one crossing into the request's thread for all of a response's synchronous work.

Django's ASGIHandler builds its chain in async mode and adapts each part that is not: under
MemoryHub's chain (Django's own middleware, the synchronous request log, the async-capable axes
middleware last) and its synchronous views, a request went from the event loop into a thread for
the outer middleware, back to the loop for axes, into the thread again for the view, and back, each
crossing a wake-up of another thread. Its handler also crosses for request_started and again for
the response's close (request_finished), and keeps a task listening for the client's disconnect.
Here request_started, the chain, the view and (for a response already in memory) its close run in
one call in the request's thread; the body is read and the response sent in the loop. A streamed
response is drawn in that same thread and closed after it is sent, as Django does. A client's
disconnect is not listened for: the request's thread runs to its end either way (a synchronous
view cannot be stopped), and what it answers is dropped. Each request still has a thread of its
own (Django's ThreadSensitiveContext: a slow request holds no other's thread).
bench/README.md, "Search latency and the scale curve", has what each step saved.
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


class SyncChainASGIHandler(ASGIHandler):
    def __init__(self) -> None:
        BaseHandler.__init__(self)
        self.load_middleware(is_async=False)

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        try:
            set_script_prefix(get_script_prefix(scope))
            response = await sync_to_async(self.respond, thread_sensitive=True)(scope, body_file)
            await self.send_response(response, send)
            if response.streaming:
                await sync_to_async(response.close, thread_sensitive=True)()
        finally:
            body_file.close()

    def respond(self, scope: dict[str, Any], body_file: Any) -> HttpResponseBase:
        """The response, in the request's thread: request_started sent, the request made, the
        chain run, and a response already in memory closed (request_finished: the database
        connection goes back before the bytes go out)."""
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, response = self.create_request(scope, body_file)
        if request is not None:
            response = self.get_response(request)
        response._handler_class = self.__class__
        if isinstance(response, FileResponse):
            response.block_size = self.chunk_size
        if not response.streaming:
            response.close()
        return response
