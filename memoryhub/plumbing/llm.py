"""The one HTTP client for language models: an OpenAI-compatible /chat/completions call.

Used by the HTTP summariser and the HTTP fact extractor. A model server that is restarting or
overloaded answers 5xx/429, drops the connection or times out; those calls are tried again
(RETRIES times, waiting BACKOFF_SECONDS, then twice that, ...), as
a hardened client does. Inside a background step the waits and each request's timeout
are cut to what is left of the step's budget, so retrying never makes a step overrun it. Every
other failure (4xx, a reply that is not a completion) fails at once: trying again would get the
same answer.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings

from memoryhub.plumbing import outbound
from memoryhub.plumbing.background import remaining_budget

logger = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
# A call that failed on a connection error, a timeout, 429 or 5xx is tried again RETRIES times,
# after BACKOFF_SECONDS, then twice that, ... (never past a background step's time budget).
RETRIES = 3
BACKOFF_SECONDS = 2.0
MIN_REQUEST_SECONDS = 0.5  # below this much budget a request is not worth starting


def model_configured() -> bool:
    """Whether a language model is configured: the HTTP summariser's (MEMORYHUB_SUMMARISER=http and
    its URL), which every model call here uses."""
    return settings.MEMORYHUB_SUMMARISER == "http" and bool(settings.MEMORYHUB_SUMMARISER_URL)


_calls = threading.local()
# Only to allowed addresses, checked as the connection is made (memoryhub.plumbing.outbound).
_opener = outbound.build_opener()


@contextmanager
def single_attempt() -> Iterator[None]:
    """Model calls inside try once: a request (POST .../summary/) falls back to the extractive
    summariser at the first failure instead of keeping its client waiting through the backoff."""
    previous = getattr(_calls, "single", False)
    _calls.single = True
    try:
        yield
    finally:
        _calls.single = previous


class SummariserError(Exception):
    """A model call failed (or its reply was unusable): the caller falls back or records it."""


class _Transient(SummariserError):  # noqa: N818 - internal: marks a failure worth another try
    pass


def _endpoint(url: str) -> str:
    if not url:
        raise SummariserError("No URL is configured for the HTTP endpoint.")
    endpoint = url.rstrip("/")
    return endpoint if endpoint.endswith("/chat/completions") else endpoint + "/chat/completions"


def _post(endpoint: str, body: bytes, headers: dict[str, str], timeout: float) -> Any:
    request = urllib.request.Request(endpoint, data=body, headers=headers, method="POST")
    try:
        with _opener.open(request, timeout=timeout) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        error = f"{endpoint}: HTTP {exc.code}"
        raise (_Transient(error) if exc.code in RETRY_STATUSES else SummariserError(error)) from exc
    except (urllib.error.URLError, TimeoutError, OSError) as exc:  # refused, reset, timed out
        # the same every time
        if isinstance(getattr(exc, "reason", None), outbound.DestinationRefused):
            raise SummariserError(
                f"{endpoint}: refused: {exc.reason} (MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS "  # type: ignore[attr-defined]
                "allows one)"
            ) from exc
        raise _Transient(f"{endpoint}: {exc}") from exc
    try:
        return json.loads(raw.decode())
    except ValueError as exc:
        raise SummariserError(f"{endpoint}: the reply is not JSON: {raw[:200]!r}") from exc


def _content(endpoint: str, payload: Any) -> str:
    try:
        content = payload["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError) as exc:
        raise SummariserError(f"{endpoint}: unexpected reply {str(payload)[:200]}") from exc
    if not isinstance(content, str):
        raise SummariserError(f"{endpoint}: the reply's content is not text")
    return content.strip()


def chat_completion(
    *,
    url: str,
    model: str,
    api_key: str,
    messages: list[dict[str, str]],
    timeout: float,
    json_mode: bool = False,
    max_tokens: int | None = None,
) -> str:
    """POST to an OpenAI-compatible /chat/completions endpoint; returns the first choice's text.
    Transient failures are retried with backoff within the step's budget (module docstring)."""
    endpoint = _endpoint(url)
    body: dict[str, Any] = {"model": model, "messages": messages, "temperature": 0}
    if json_mode:
        body["response_format"] = {"type": "json_object"}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    data = json.dumps(body).encode()
    retries = 0 if getattr(_calls, "single", False) else RETRIES
    for attempt in range(retries + 1):
        left = remaining_budget()
        if left is not None and left < MIN_REQUEST_SECONDS:
            raise SummariserError(f"{endpoint}: no time left in the step's budget")
        try:
            return _content(endpoint, _post(endpoint, data, headers, min(timeout, left or timeout)))
        except _Transient as exc:
            delay = BACKOFF_SECONDS * 2**attempt
            left = remaining_budget()
            if attempt == retries or (left is not None and left < delay + MIN_REQUEST_SECONDS):
                raise SummariserError(f"{exc} (after {attempt + 1} attempts)") from exc
            logger.warning(
                "model call failed (%s), attempt %s of %s; retrying in %.1f s",
                exc,
                attempt + 1,
                retries + 1,
                delay,
            )
            time.sleep(delay)
    raise AssertionError("unreachable: the last attempt returns or raises")
