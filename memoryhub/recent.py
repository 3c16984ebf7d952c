"""The hot recent-window cache (last 50 messages per session).

Entries are keyed by the session's last sequence, its consolidation watermark
(Session.consolidated_to) and its event count (memoryhub.event_log.window_version), so an entry
can never be stale: any append, any marking of events as consolidated (their one mutable field),
and deleting the newest events move the key. That keeps per-process caches (LocMem under several web
workers) correct without cross-process invalidation. Entries are the events' API payloads.

The Django cache pickles an entry on every write and read (LocMem too): about 0.2 ms for a
window of 50 events, paid twice by every append (its chunk's conversation context, then the
write-through). So the windows this process wrote or read last are also kept as they are, in
a small map in front of the cache, which the same keys keep as correct as the cache itself.
Payloads handed out are shared with that map: read them, do not change them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from django.core.cache import cache

# How many of a session's newest events the recent-window cache keeps (GET events' newest page,
# restore, context's recent messages and chunk context read it instead of the table).
WINDOW = 50
TTL_SECONDS = 3600
LOCAL_ENTRIES = 128  # sessions being talked to in this process; a window is ≤ 50 payloads

_local: OrderedDict[str, tuple[dict[str, Any], ...]] = OrderedDict()
_lock = threading.Lock()


def _key(session_pk: int, last_sequence: int, marked: str) -> str:
    # v4: keyed by the consolidation watermark and the event count too
    return f"mh:recent:v4:{session_pk}:{last_sequence}:{marked}"


def _remember(key: str, window: tuple[dict[str, Any], ...]) -> None:
    with _lock:
        _local[key] = window
        _local.move_to_end(key)
        while len(_local) > LOCAL_ENTRIES:
            _local.popitem(last=False)


def get(session_pk: int, last_sequence: int, marked: str) -> list[dict[str, Any]] | None:
    key = _key(session_pk, last_sequence, marked)
    with _lock:
        local = _local.get(key)
        if local is not None:
            _local.move_to_end(key)
    if local is not None:
        return list(local)
    window = cache.get(key)
    if window is not None:
        _remember(key, tuple(window))
    return window


def put(session_pk: int, last_sequence: int, marked: str, events: list[dict[str, Any]]) -> None:
    key, window = _key(session_pk, last_sequence, marked), events[-WINDOW:]
    _remember(key, tuple(window))
    cache.set(key, window, TTL_SECONDS)


def extend(
    session_pk: int,
    previous_last: int,
    last: int,
    marked: str,
    new: list[dict[str, Any]],
    *,
    previous_marked: str,
) -> None:
    """Write-through after an append: the new window is the old one plus the new events."""
    window = get(session_pk, previous_last, previous_marked)
    if window is None:
        if previous_last != 0:
            return
        window = []
    if window and window[-1]["sequence"] != previous_last:
        return  # not the window this append follows: leave it to the next read to reload
    put(session_pk, last, marked, window + new)
    key = _key(session_pk, previous_last, previous_marked)
    with _lock:
        _local.pop(key, None)
    cache.delete(key)


def clear_local() -> None:
    """Forget this process's map (with the cache cleared: tests)."""
    with _lock:
        _local.clear()
