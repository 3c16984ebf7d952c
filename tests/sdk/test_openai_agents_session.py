"""MemoryHubSession under the OpenAI Agents SDK's Runner, driven by a fake model (no network).

FakeModel follows the SDK's own test helper (tests/fake_model.py in openai/openai-agents-python):
a Model whose turns are queued outputs, recording the input of each call."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

agents = pytest.importorskip("agents")

from agents import Agent, ModelResponse, Runner, Usage, function_tool  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from memoryhub_client import AsyncMemoryHub, MemoryHub  # noqa: E402
from memoryhub_client.openai_agents import MemoryHubSession  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from tests.sdk.conftest import FAST  # noqa: E402


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing reaches the network: a fake key, and no traces exported."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-not-used")
    agents.set_tracing_disabled(True)


def text_message(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg_1",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(text=text, type="output_text", annotations=[])],
    )


def function_call(name: str, arguments: str, call_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        id="fc_1", call_id=call_id, type="function_call", name=name, arguments=arguments
    )


class FakeModel(Model):
    def __init__(self) -> None:
        self.turns: list[list[Any]] = []
        self.inputs: list[list[Any]] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: Any,  # noqa: A002
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any = None,
        **kwargs: Any,
    ) -> ModelResponse:
        self.inputs.append(list(input) if isinstance(input, list) else [input])
        return ModelResponse(output=self.turns.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


def strip(item: Any) -> dict[str, Any]:
    """An input item as plain JSON (the Runner may hand over models or dicts)."""
    if hasattr(item, "model_dump"):
        return item.model_dump(mode="json", exclude_unset=True)
    return dict(item)


def test_runner_multi_turn_with_memoryhub_session(live_server: Any, keys: dict[str, str]) -> None:
    model = FakeModel()
    agent = Agent(name="assistant", instructions="Be brief.", model=model, tools=[get_weather])

    async def scenario() -> None:
        async with AsyncMemoryHub(keys["alice"], live_server.url, **FAST) as hub:
            session = MemoryHubSession("agents-chat", hub, user_id="ann")
            model.turns = [
                [function_call("get_weather", '{"city": "Lyon"}', "call_1")],
                [text_message("It is sunny in Lyon.")],
            ]
            first = await Runner.run(agent, "What is the weather in Lyon?", session=session)
            assert first.final_output == "It is sunny in Lyon."

            model.turns = [[text_message("Tomorrow too.")]]
            second = await Runner.run(agent, "And tomorrow?", session=session)
            assert second.final_output == "Tomorrow too."
            # The second turn's model input is the whole first conversation, read back from
            # MemoryHub.
            sent = [strip(i) for i in model.inputs[-1]]
            assert [i.get("type", "message") for i in sent] == [
                "message",
                "function_call",
                "function_call_output",
                "message",
                "message",
            ]
            assert sent[0]["content"] == "What is the weather in Lyon?"
            assert sent[1]["call_id"] == "call_1" and sent[1]["arguments"] == '{"city": "Lyon"}'
            assert sent[2] == {
                "call_id": "call_1",
                "output": "Sunny in Lyon",
                "type": "function_call_output",
            }
            assert sent[3]["content"][0]["text"] == "It is sunny in Lyon."
            assert sent[4]["content"] == "And tomorrow?"

            # A new object over the same session reads the same items, each as it was added.
            again = await MemoryHubSession("agents-chat", hub).get_items()
            assert [strip(i) for i in again] == [strip(i) for i in await session.get_items()]
            assert len(again) == 6
            assert [strip(i) for i in await session.get_items(limit=2)] == [
                strip(i) for i in again[-2:]
            ]

            # In MemoryHub: events with their roles, tool calls and the session's owner.
            events = [e async for e in hub.iter_events("agents-chat")]
            assert [e["role"] for e in events] == [
                "user",
                "assistant",
                "tool",
                "assistant",
                "user",
                "assistant",
            ]
            assert events[1]["tool_calls"] == [
                {"id": "call_1", "name": "get_weather", "arguments": '{"city": "Lyon"}'}
            ]
            assert events[2]["tool_call_id"] == "call_1" and events[2]["content"] == "Sunny in Lyon"
            assert (await hub.get_session("agents-chat"))["user_id"] == "ann"

            # pop_item: the last item comes back, its event deleted on the server.
            popped = await session.pop_item()
            assert strip(popped)["content"][0]["text"] == "Tomorrow too."
            assert len(await session.get_items()) == 5
            assert len([e async for e in hub.iter_events("agents-chat")]) == 5

            # clear_session: every event deleted; the next ones continue the sequence.
            await session.clear_session()
            assert await session.get_items() == []
            assert await session.pop_item() is None
            model.turns = [[text_message("Hello again.")]]
            third = await Runner.run(agent, "Hi", session=session)
            assert third.final_output == "Hello again."
            assert [strip(i).get("role") for i in await session.get_items()] == [
                "user",
                "assistant",
            ]
            assert [strip(i) for i in model.inputs[-1]] == [{"content": "Hi", "role": "user"}]
            assert [e["sequence"] for e in [e async for e in hub.iter_events("agents-chat")]] == [
                7,
                8,
            ]

    asyncio.run(scenario())


def test_events_from_other_clients_read_as_items(live_server: Any, keys: dict[str, str]) -> None:
    with MemoryHub(keys["alice"], live_server.url, **FAST) as sync_hub:
        sync_hub.remember(
            "shared-chat",
            [
                {"role": "user", "content": "I moved to Lyon."},
                {"role": "assistant", "content": "Noted."},
            ],
        )

    async def scenario() -> list[Any]:
        async with AsyncMemoryHub(keys["alice"], live_server.url, **FAST) as hub:
            return await MemoryHubSession("shared-chat", hub).get_items()

    assert asyncio.run(scenario()) == [
        {"role": "user", "content": "I moved to Lyon."},
        {"role": "assistant", "content": "Noted."},
    ]


def test_unknown_session_is_empty(live_server: Any, keys: dict[str, str]) -> None:
    async def scenario() -> tuple[Any, Any]:
        async with AsyncMemoryHub(keys["alice"], live_server.url, **FAST) as hub:
            session = MemoryHubSession("never-used", hub)
            await session.clear_session()
            return await session.get_items(), await session.pop_item()

    assert asyncio.run(scenario()) == ([], None)


def test_a_sync_client_works_too(live_server: Any, keys: dict[str, str]) -> None:
    with MemoryHub(keys["alice"], live_server.url, **FAST) as hub:
        session = MemoryHubSession("sync-client", hub, user_id="ann")

        async def scenario() -> list[Any]:
            await session.add_items(
                [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
            )
            popped = await session.pop_item()
            return [popped, *await session.get_items()]

        assert asyncio.run(scenario()) == [
            {"role": "assistant", "content": "Hello"},
            {"role": "user", "content": "Hi"},
        ]
        assert [e["content"] for e in hub.iter_events("sync-client")] == ["Hi"]
