"""The hot recent-window cache (seed 004: last 50 messages per session).

Entries are keyed by the session's last sequence, so an entry can never be stale: any append
moves the key. That keeps per-process caches (LocMem under several web workers) correct
without cross-process invalidation. Entries are the events' API payloads.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.cache import cache

TTL_SECONDS = 3600


def _key(session_pk: int, last_sequence: int) -> str:
    return f"mh:recent:v2:{session_pk}:{last_sequence}"  # v2: payloads with tool_calls


def get(session_pk: int, last_sequence: int) -> list[dict[str, Any]] | None:
    return cache.get(_key(session_pk, last_sequence))


def put(session_pk: int, last_sequence: int, events: list[dict[str, Any]]) -> None:
    cache.set(_key(session_pk, last_sequence), events[-settings.MEMORYHUB_RECENT_WINDOW :], TTL_SECONDS)


def extend(session_pk: int, previous_last: int, last: int, new: list[dict[str, Any]]) -> None:
    """Write-through after an append: the new window is the old one plus the new events."""
    window = get(session_pk, previous_last)
    if window is None:
        if previous_last != 0:
            return
        window = []
    if window and window[-1]["sequence"] != previous_last:
        return  # not the window this append follows: leave it to the next read to reload
    put(session_pk, last, window + new)
    cache.delete(_key(session_pk, previous_last))

