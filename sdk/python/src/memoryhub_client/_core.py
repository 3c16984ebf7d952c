"""The transport-agnostic core: requests as data, retries as a generator, responses parsed.

Every operation is written once as a `Call` (what to send, how to read the answer) or as a
`Flow` (a generator that yields `Send` and `Sleep` steps and returns the result). The sync and
async clients only drive flows: they perform each step with their own httpx client and their own
sleep, so retries, pagination and multi-request operations behave the same in both.
"""

from __future__ import annotations

import dataclasses
import email.utils
import random
import time
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from memoryhub_client.errors import connection_error, error_from_response
from memoryhub_client.types import Page

R = TypeVar("R")
T = TypeVar("T")


@dataclass(frozen=True)
class Call(Generic[R]):
    """One API request and how to read its answer."""

    method: str
    path: str  # relative to /api/v1/, e.g. "sessions/abc/events/"
    parse: Callable[[Any], R]  # decoded JSON body -> result
    params: tuple[tuple[str, str], ...] = ()
    json: Any = None
    content: bytes | None = None
    # Safe to send again when the first attempt may have reached the server (a read error, a
    # 502/504): reads, PUTs, DELETEs, appends carrying idempotency keys, upserts.
    idempotent: bool = False
    retry: bool = True
    accept: frozenset[int] = frozenset()  # non-2xx statuses that are an answer (ready: 503)


@dataclass(frozen=True)
class Send:
    call: Call[Any]


@dataclass(frozen=True)
class Sleep:
    seconds: float


Step = Send | Sleep
Outcome = httpx.Response | httpx.TransportError
# A flow receives, for each Send, the response or the transport error; for each Sleep, None.
Flow = Generator[Step, Any, R]


# --- retries -------------------------------------------------------------------------------------

# The request never reached the server: resending cannot duplicate anything.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True)
class RetryPolicy:
    """Retries on 429 and 503 (any request: the server did not act), on connection failures, and
    on read failures and 502/504 for idempotent requests. Exponential backoff with jitter; a
    Retry-After header is honoured unless it asks for more than `max_retry_after` seconds."""

    max_retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 60.0

    def delay(self, attempt: int, call: Call[Any], outcome: Outcome) -> float | None:
        """Seconds to wait before attempt `attempt + 1`, or None to stop here."""
        if attempt >= self.max_retries or not call.retry:
            return None
        if isinstance(outcome, httpx.TransportError):
            return (
                self._backoff(attempt)
                if call.idempotent or isinstance(outcome, _NOT_SENT)
                else None
            )
        status = outcome.status_code
        if status in call.accept:
            return None
        if status in (429, 503):
            wait = retry_after(outcome)
            if wait is None:
                return self._backoff(attempt)
            return wait if wait <= self.max_retry_after else None
        if status in (502, 504) and call.idempotent:
            return self._backoff(attempt)
        return None

    def _backoff(self, attempt: int) -> float:
        ceiling = min(self.max_backoff, self.backoff * (2**attempt))
        return random.uniform(ceiling / 2, ceiling)


def retry_after(response: httpx.Response) -> float | None:
    """Retry-After in seconds: a number, or an HTTP date."""
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def exchange(call: Call[R], policy: RetryPolicy) -> Flow[R]:
    """Send `call` (retrying as the policy says) and return its parsed answer, or raise."""
    attempt = 0
    while True:
        outcome = yield Send(call)
        wait = policy.delay(attempt, call, outcome)
        if wait is None:
            return settle(call, outcome)
        yield Sleep(wait)
        attempt += 1


def settle(call: Call[R], outcome: Outcome) -> R:
    if isinstance(outcome, httpx.TransportError):
        raise connection_error(outcome) from outcome
    if outcome.is_success or outcome.status_code in call.accept:
        body = outcome.json() if outcome.content else None
        return call.parse(body)
    raise error_from_response(outcome, retry_after=retry_after(outcome))


def request_args(call: Call[Any]) -> dict[str, Any]:
    """Keyword arguments for httpx's `Client.request` / `AsyncClient.request`."""
    args: dict[str, Any] = {"method": call.method, "url": call.path}
    if call.params:
        args["params"] = list(call.params)
    if call.content is not None:
        args["content"] = call.content
        args["headers"] = {"Content-Type": "application/json"}
    elif call.json is not None:
        args["json"] = call.json
    return args


# --- pagination ----------------------------------------------------------------------------------


def next_page(call: Call[Page[T]], page: Page[T]) -> Call[Page[T]] | None:
    """The call for the page after `page`, reusing the query of the server's `next` link (the
    link's host is how the server saw the request, which a proxy may have rewritten)."""
    if not page.next or not page.results:
        return None
    params = tuple(httpx.URL(page.next).params.multi_items())
    return dataclasses.replace(call, params=params)


def page_of(body: Any) -> Page[Any]:
    return Page(
        results=list(body.get("results", [])),
        count=body.get("count"),
        next=body.get("next"),
        previous=body.get("previous"),
        raw=body,
    )


# --- building requests ---------------------------------------------------------------------------


def path(*segments: str | int) -> str:
    """A relative path with every id percent-encoded, ending in a slash as the API wants."""
    return "".join(quote(str(s), safe="") + "/" for s in segments)


def _text(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Mapping) and not isinstance(value, dict):
        return dict(value)  # json.dumps takes dicts only
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    return value


def body(**fields: Any) -> dict[str, Any]:
    """A JSON body without the fields left at None (the service's defaults apply)."""
    return {name: _text(value) for name, value in fields.items() if value is not None}


def query(meta: Mapping[str, Any] | None = None, **fields: Any) -> tuple[tuple[str, str], ...]:
    """Query parameters without the ones left at None; lists are comma-joined (tags=a,b) and
    `meta` becomes meta.<key>=<value> filters."""
    pairs: list[tuple[str, str]] = []
    for name, value in fields.items():
        if value is None:
            continue
        pairs.append((name, _param(value)))
    for name, value in (meta or {}).items():
        pairs.append((f"meta.{name}", _param(value)))
    return tuple(pairs)


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple, set, frozenset)):
        return ",".join(str(v) for v in value)
    return str(_text(value))


def as_is(body: Any) -> Any:
    return body


def chunked(items: list[T], size: int) -> Iterable[list[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
