"""AsyncMemoryHub as agent code uses it: async with, await, async for, concurrent calls."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from memoryhub_client import AsyncMemoryHub, NotFoundError

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_async_client_in_an_event_loop(live_server: Any, keys: dict[str, str]) -> None:
    async with (
        AsyncMemoryHub(keys["alice"], live_server.url) as hub,
        AsyncMemoryHub(keys["bob"], live_server.url) as bob,
    ):
        stored = await hub.remember(
            "loop", [{"role": "user", "content": "I keep bees in Ardèche."}], user_id="u7"
        )
        assert stored["created"] == 1
        # Concurrent appends to one session: each stored once, sequences unique and gap-free.
        results = await asyncio.gather(
            *(hub.append_event("loop", "assistant", f"reply {i}") for i in range(8))
        )
        assert sorted(r["sequence"] for r in results) == list(range(2, 10))
        contents = [e["content"] async for e in hub.iter_events("loop", limit=3)]
        assert len(contents) == 9 and contents[0] == "I keep bees in Ardèche."
        block = await hub.recall("Where are the bees?", session="loop")
        assert "Ardèche" in block
        with pytest.raises(NotFoundError) as hidden:
            await bob.get_session("loop")
        assert hidden.value.code == "session_not_found"
