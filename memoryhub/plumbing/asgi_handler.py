"""Django's ASGI handler with the middleware chain loaded as WSGI loads it: synchronous, one call.

Django's ASGIHandler builds its chain in async mode and adapts each part that is not: under
MemoryHub's chain (Django's own middleware, the synchronous request log, the async-capable axes
middleware last) and its synchronous views, a request went from the event loop into a thread for
the outer middleware, back to the loop for axes, into the thread again for the view, and back, each
crossing a wake-up of another thread. Here the whole chain, view included, runs in one call in the
request's thread; everything else is Django's handler as it is: the body read and the response sent
in the loop, a thread of its own for each request (its ThreadSensitiveContext: a slow request holds
no other's thread), a client's disconnect noticed, request_started and request_finished sent.
bench/README.md, "Search latency and the scale curve", has what it saved.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.base import BaseHandler
from django.http import HttpRequest, HttpResponseBase


class SyncChainASGIHandler(ASGIHandler):
    def __init__(self) -> None:
        BaseHandler.__init__(self)
        self.load_middleware(is_async=False)

    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        # In the thread every thread-sensitive call of this request runs in (the view's database
        # connection is the one its middleware and its streamed response use).
        return await sync_to_async(self.get_response, thread_sensitive=True)(request)
