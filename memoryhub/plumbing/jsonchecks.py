"""Checks on decoded JSON that the decoder itself does not make: nesting depth and lone surrogates.

Python's json module accepts both, and each later fails far from the input: a value nested ~900
deep overflows the recursion limit of whatever walks it next (validation, rendering, jsonb
encoding), and a lone surrogate ("\\ud800", valid JSON) cannot be encoded as UTF-8, so PostgreSQL
refuses it on insert. Every JSON body and every import file goes through `check_json` first.
"""

from __future__ import annotations

import json
import re
from typing import Any

from memoryhub.errors import Invalid

# Deeper than any legitimate payload: an export file is about 5 levels plus its metadata's own.
MAX_JSON_DEPTH = 64

# A \uD800–\uDFFF escape in the raw text: without one, no decoded string can hold a surrogate
# (raw UTF-8 cannot encode them), so the per-string check is skipped for nearly every body.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")


class TooDeep(Invalid):
    def __init__(self) -> None:
        super().__init__(
            "too_deeply_nested",
            f"JSON may be nested at most {MAX_JSON_DEPTH} levels deep.",
            {"max_depth": MAX_JSON_DEPTH},
        )


def loads(text: str | bytes, **kwargs: Any) -> Any:
    """json.loads, then `check_json`; a body too deep for the decoder itself is TooDeep as well."""
    try:
        value = json.loads(text, **kwargs)
    except RecursionError:
        raise TooDeep() from None
    pattern = _SURROGATE_ESCAPE_BYTES if isinstance(text, bytes) else _SURROGATE_ESCAPE
    may_have_surrogates = pattern.search(text) is not None  # type: ignore[arg-type]
    check_json(value, strings=may_have_surrogates)
    return value


def check_json(value: Any, *, strings: bool = True) -> None:
    """Raise Invalid when `value` nests deeper than MAX_JSON_DEPTH or (with `strings`) holds a lone
    surrogate in a key or a string. Iterative, so the check itself cannot overflow the stack."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            if depth > MAX_JSON_DEPTH:
                raise TooDeep()
            for key, child in item.items():
                if strings and _SURROGATE.search(key):
                    raise _lone_surrogate()
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            if depth > MAX_JSON_DEPTH:
                raise TooDeep()
            stack.extend((child, depth + 1) for child in item)
        elif strings and isinstance(item, str) and _SURROGATE.search(item):
            raise _lone_surrogate()


def _lone_surrogate() -> Invalid:
    return Invalid(
        "invalid_unicode",
        "A string holds a lone UTF-16 surrogate (such as \\ud800), which is not a character.",
    )
