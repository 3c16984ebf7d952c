"""OpenApiExample pairs: the request an example sends and the answer the server gave to it.

Every example was recorded from the server in the documentation's story (tests/api_story.py:
tenant with session chat-42 of user-123, note note-tea, a fact, a summary tree, a schedule) and is
replayed by tests/test_api_examples.py, which checks the answer's status and shape against it.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample


def example(
    name: str, summary: str, *, status: int, response: Any, request: Any = None
) -> list[OpenApiExample]:
    """The request example (if the operation takes a body) and the response example, paired by
    name."""
    pair = [
        OpenApiExample(
            name,
            summary=summary or None,
            value=response,
            response_only=True,
            status_codes=[str(status)],
        )
    ]
    if request is not None:
        pair.insert(
            0, OpenApiExample(name, summary=summary or None, value=request, request_only=True)
        )
    return pair
