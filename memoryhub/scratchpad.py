"""Scratchpad (docs/memory-model.md#scratchpad): a session's working state, keyed items with JSON
values.

At most MAX_ITEMS items. A key is a string of at most
MAX_CHARS characters; a value is any JSON value: a string of at most that many
characters, or a number, boolean, null, list or object whose compact JSON has at most that many.
A write replaces the whole pad and is validated in full first, so a bad write changes nothing.
The pad is kept when its session is archived (read-only from then on) and deleted with it.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.models import ApiKey
from memoryhub.errors import Conflict, Invalid
from memoryhub.models import Scratchpad, ScratchpadItem, Session, SessionStatus, iso
from memoryhub.sessions import get_session, get_session_for_write

# A scratchpad holds at most MAX_ITEMS items, each value at most MAX_CHARS characters (a string's
# length, another JSON value's compact text): a working note, not a store
# (docs/memory-model.md#scratchpad).
MAX_ITEMS = 32
MAX_CHARS = 240


def value_size(value: Any) -> int:
    """A value's size against the limit: a string's length, else its compact JSON's."""
    if isinstance(value, str):
        return len(value)
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def parse_items(raw: Any) -> list[tuple[str, Any]]:
    """[(key, value)] from a list of {"key", "value"} objects (or plain strings, keyed "1", "2", …)
    or one {key: value} object."""
    if isinstance(raw, dict):
        pairs = list(raw.items())
    elif isinstance(raw, list):
        pairs = []
        for index, item in enumerate(raw):
            if isinstance(item, str):  # a plain list of notes: numbered keys
                pairs.append((str(index + 1), item))
                continue
            if not isinstance(item, dict) or set(item) - {"key", "value"} or "key" not in item:
                raise Invalid(
                    "invalid_item",
                    f"items[{index}] must be an object with 'key' and 'value'.",
                    details={"index": index},
                )
            pairs.append((item["key"], item.get("value", "")))
    else:
        raise Invalid(
            "invalid_items", "'items' must be a list of {key, value} objects or an object."
        )
    limit, chars = MAX_ITEMS, MAX_CHARS
    if len(pairs) > limit:
        raise Invalid(
            "too_many_items",
            f"A scratchpad holds at most {limit} items.",
            details={"max_items": limit, "items": len(pairs)},
        )
    seen: set[str] = set()
    for index, (key, value) in enumerate(pairs):
        if not isinstance(key, str) or not key.strip():
            raise Invalid(
                "invalid_item",
                f"items[{index}]: the key must be a non-empty string.",
                details={"index": index},
            )
        if len(key) > chars or value_size(value) > chars:
            raise Invalid(
                "item_too_long",
                f"items[{index}]: keys and values (as compact JSON, unless a string) "
                f"have at most {chars} characters.",
                details={"index": index, "max_chars": chars},
            )
        if key in seen:
            raise Invalid(
                "duplicate_key",
                f"items[{index}]: key {key!r} appears twice.",
                details={"index": index},
            )
        seen.add(key)
    return pairs


def as_dict(session: Session, pad: Scratchpad | None) -> dict[str, Any]:
    items = (
        [{"key": i.key, "value": i.value} for i in pad.items.order_by("position")] if pad else []
    )
    return {
        "session": session.external_id,
        "items": items,
        "count": len(items),
        "max_items": MAX_ITEMS,
        "max_chars": MAX_CHARS,
        "version": pad.version if pad else 0,
        "updated_at": iso(pad.updated_at) if pad else None,
    }


def read(key: ApiKey, session_id: str) -> dict[str, Any]:
    session = get_session(key, session_id)
    return as_dict(session, Scratchpad.objects.filter(session=session).first())


def _writable(session: Session) -> None:
    if session.status == SessionStatus.ARCHIVED:
        raise Conflict(
            "session_archived",
            f"Session {session.external_id!r} is archived: its scratchpad is read-only.",
        )


def _check_version(pad: Scratchpad | None, expected: int | None) -> None:
    """Compare-and-swap (docs/memory-model.md#scratchpad): a writer that read version N writes only
    while it is still N."""
    current = pad.version if pad else 0
    if expected is not None and expected != current:
        raise Conflict(
            "stale_version",
            f"The scratchpad is at version {current}, not {expected}: read it again.",
            details={"version": current, "expected_version": expected},
        )


def _store(session: Session, pad: Scratchpad, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    pad.items.all().delete()
    ScratchpadItem.objects.bulk_create(
        [
            ScratchpadItem(tenant_id=session.tenant_id, scratchpad=pad, position=i, key=k, value=v)
            for i, (k, v) in enumerate(pairs)
        ]
    )
    pad.version += 1
    pad.updated_at = timezone.now()
    pad.save(update_fields=["version", "updated_at"])
    return as_dict(session, pad)


def _locked_pad(key: ApiKey, session_id: str, expected: int | None) -> tuple[Session, Scratchpad]:
    # the session row's lock serialises its pad's writers
    session = get_session_for_write(key, session_id)
    _writable(session)
    pad = Scratchpad.objects.filter(session=session).first()
    _check_version(pad, expected)
    if pad is None:
        pad = Scratchpad.objects.create(session=session, tenant_id=session.tenant_id)
    return session, pad


@transaction.atomic
def write(
    key: ApiKey, session_id: str, raw_items: Any, expected_version: int | None = None
) -> dict[str, Any]:
    pairs = parse_items(raw_items)  # everything is checked before anything is written
    session, pad = _locked_pad(key, session_id, expected_version)
    return _store(session, pad, pairs)


@transaction.atomic
def update(
    key: ApiKey,
    session_id: str,
    set_items: Any,
    remove: list[str],
    expected_version: int | None = None,
) -> dict[str, Any]:
    """Per-key writes (docs/memory-model.md#scratchpad): set these keys (new ones after the others),
    remove those; the other items stay, so two agents writing different keys do not overwrite each
    other."""
    pairs = parse_items(set_items if set_items is not None else {})
    session, pad = _locked_pad(key, session_id, expected_version)
    items = {i.key: i.value for i in pad.items.order_by("position")}
    for name in remove:
        items.pop(name, None)
    items.update(pairs)
    limit = MAX_ITEMS
    if len(items) > limit:
        raise Invalid(
            "too_many_items",
            f"A scratchpad holds at most {limit} items.",
            details={"max_items": limit, "items": len(items)},
        )
    return _store(session, pad, list(items.items()))


@transaction.atomic
def clear(key: ApiKey, session_id: str) -> dict[str, Any]:
    session = get_session_for_write(key, session_id)
    _writable(session)
    pad = Scratchpad.objects.filter(session=session).first()
    cleared = 0
    if pad is not None:
        cleared, _ = pad.items.all().delete()
        pad.version += 1
        pad.updated_at = timezone.now()
        pad.save(update_fields=["version", "updated_at"])
    return {**as_dict(session, pad), "cleared": cleared}
