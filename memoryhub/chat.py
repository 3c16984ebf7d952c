"""Chat-API messages as sent (docs/event-log.md#chat-messages): OpenAI- and Anthropic-shaped
messages read into events, and events given back in either shape.

An event is stored in MemoryHub's own fields (role, content, tool_calls, tool_call_id, …), which
search, summaries and extraction read. A message whose shape those fields cannot hold exactly
(`content` null or a list of parts/blocks, a `name`, tool calls in the `function` form) is also
kept whole in `Event.message`, and given back verbatim when it is asked for in a shape it is valid
in. Other events are rendered from their fields: a best effort, one message per event (an
assistant's `tool_name`/`tool_args` call becomes a tool call; its `tool_result` is not repeated).

Reading a message (`read_message`): text parts and blocks become the searchable content (joined
by newlines); Anthropic `tool_use` blocks become tool calls `{id, name, arguments: input}`; a
user message made only of `tool_result` blocks is stored with role `tool` (it is tool output, not
the user's words: importance and extraction treat it so), its results' text as content and the
answered call's id as tool_call_id when there is one result. Images, audio, files and thinking
blocks are kept in the message but not searched.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

OPENAI = "openai"
ANTHROPIC = "anthropic"
NATIVE = "native"
FORMATS = (NATIVE, OPENAI, ANTHROPIC)

# The keys of a chat message kept in Event.message (the event's own fields stay outside it).
MESSAGE_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id")
MAX_PARTS = 1000

TEXT_PARTS = {"text"}
OPENAI_PARTS = {"image_url", "input_audio", "file", "refusal"}
ANTHROPIC_PARTS = {"image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking"}
RESULT_BLOCKS = {"text", "image", "document"}


class MessageError(ValueError):
    """A message that is not a well-formed chat message: `code` says what is wrong."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class ReadMessage:
    """What an event's own fields take from a list of content parts."""

    role: str
    content: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    tool_call_id: str = ""


def _require(part: dict[str, Any], name: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = part.get(name)
    if not isinstance(value, kind):
        raise MessageError(
            "invalid_content_part", f"{where}: `{name}` is missing or of the wrong type."
        )
    return value


def _result_text(content: Any, where: str) -> str:
    """The text of a tool_result block's content: a string, or text (and image) blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise MessageError(
            "invalid_content_part", f"{where}: `content` must be a string or a list of blocks."
        )
    texts = []
    for index, block in enumerate(content):
        if not isinstance(block, dict) or block.get("type") not in RESULT_BLOCKS:
            raise MessageError(
                "invalid_content_part",
                f"{where}.content[{index}]: a tool result holds text, image or document blocks.",
            )
        if block["type"] == "text":
            texts.append(_require(block, "text", str, f"{where}.content[{index}]"))
    return "\n".join(texts)


def read_parts(role: str, parts: list[Any]) -> ReadMessage:
    """The event fields of a message whose content is a list of OpenAI parts or Anthropic blocks."""
    if len(parts) > MAX_PARTS:
        raise MessageError(
            "too_many_content_parts", f"At most {MAX_PARTS} content parts per message."
        )
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[str] = []
    kinds: set[str] = set()
    for index, part in enumerate(parts):
        where = f"content[{index}]"
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise MessageError(
                "invalid_content_part", f"{where}: a content part is an object with a `type`."
            )
        kind = part["type"]
        kinds.add(kind)
        if kind == "text":
            texts.append(_require(part, "text", str, where))
        elif kind == "refusal":
            texts.append(_require(part, "refusal", str, where))
        elif kind == "tool_use":
            if role != "assistant":
                raise MessageError(
                    "invalid_content_part", f"{where}: only an assistant message calls tools."
                )
            calls.append(
                {
                    "id": _require(part, "id", str, where),
                    "name": _require(part, "name", str, where),
                    "arguments": _require(part, "input", dict, where),
                }
            )
        elif kind == "tool_result":
            if role != "user":
                raise MessageError(
                    "invalid_content_part", f"{where}: tool results come in a user message."
                )
            results.append(_require(part, "tool_use_id", str, where))
            texts.append(_result_text(part.get("content"), where))
        elif kind not in OPENAI_PARTS | ANTHROPIC_PARTS:
            raise MessageError(
                "unknown_content_part", f"{where}: unknown content part type {kind!r}."
            )
    if kinds & OPENAI_PARTS and kinds & ANTHROPIC_PARTS:
        raise MessageError(
            "mixed_message_shape", "A message mixes OpenAI content parts and Anthropic blocks."
        )
    only_results = bool(results) and kinds <= {"tool_result"}
    return ReadMessage(
        role="tool" if only_results else role,
        content="\n".join(t for t in texts if t),
        tool_calls=calls,
        tool_call_id=results[0] if len(results) == 1 else "",
    )


def is_chat_shaped(sent: dict[str, Any]) -> bool:
    """Whether an event was sent in a shape its own fields cannot give back exactly (then the
    message is kept whole)."""
    content = sent.get("content", "")
    calls = sent.get("tool_calls")
    return (
        content is None
        or isinstance(content, list)
        or "name" in sent
        or any(isinstance(c, dict) and ("function" in c or "type" in c) for c in calls or [])
    )


def kept_message(sent: dict[str, Any]) -> dict[str, Any] | None:
    """The message to keep beside the event (None: its fields hold it exactly)."""
    if not is_chat_shaped(sent):
        return None
    return {k: copy.deepcopy(sent[k]) for k in MESSAGE_KEYS if k in sent}


def shapes_of(message: dict[str, Any]) -> set[str]:
    """The chat APIs a kept message is valid in, as it is."""
    shapes = {OPENAI, ANTHROPIC}
    content = message.get("content")
    if (
        message.get("role") not in ("user", "assistant")
        or content is None
        or any(k in message for k in ("name", "tool_calls", "tool_call_id"))
    ):
        shapes.discard(ANTHROPIC)
    if isinstance(content, list):
        kinds = {p.get("type") for p in content if isinstance(p, dict)}
        if kinds & OPENAI_PARTS:
            shapes.discard(ANTHROPIC)
        if kinds & ANTHROPIC_PARTS:
            shapes.discard(OPENAI)
    return shapes


def _calls(event: Any) -> list[tuple[str, str, Any]]:
    calls = (
        [("", event.tool_name, event.tool_args)]
        if event.tool_name and event.role == "assistant"
        else []
    )
    calls += [
        (c.get("id", ""), c.get("name", ""), c.get("arguments"))
        for c in event.tool_calls or []
        if isinstance(c, dict)
    ]
    return calls


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value, ensure_ascii=False)


def _input(arguments: Any) -> dict[str, Any]:
    """Anthropic's tool_use `input` (an object) from stored arguments (often a JSON string)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments else {}
        except ValueError:
            return {"arguments": arguments}
    if arguments is None:
        return {}
    return arguments if isinstance(arguments, dict) else {"arguments": arguments}


def to_openai(event: Any) -> dict[str, Any]:
    if event.message is not None and OPENAI in shapes_of(event.message):
        return copy.deepcopy(event.message)
    content = event.content or ("" if event.tool_result is None else _json_text(event.tool_result))
    message: dict[str, Any] = {"role": event.role, "content": content}
    if event.role == "tool":
        message["tool_call_id"] = event.tool_call_id
        return message
    calls = _calls(event)
    if calls and event.role == "assistant":
        message["content"] = event.content or None
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": _json_text(args) or "{}"},
            }
            for call_id, name, args in calls
        ]
    return message


def to_anthropic(event: Any) -> dict[str, Any]:
    """Anthropic's shape. A system event keeps role `system` (the Messages API takes the system
    prompt apart: restore lifts it into `system`)."""
    if event.message is not None and ANTHROPIC in shapes_of(event.message):
        return copy.deepcopy(event.message)
    content = event.content or ("" if event.tool_result is None else _json_text(event.tool_result))
    if event.role == "system":
        return {"role": "system", "content": content}
    if event.role == "tool":
        return {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": event.tool_call_id, "content": content}
            ],
        }
    calls = _calls(event) if event.role == "assistant" else []
    if not calls:
        return {"role": event.role, "content": event.content}
    blocks: list[dict[str, Any]] = (
        [{"type": "text", "text": event.content}] if event.content else []
    )
    blocks += [
        {"type": "tool_use", "id": call_id, "name": name, "input": _input(args)}
        for call_id, name, args in calls
    ]
    return {"role": event.role, "content": blocks}


RENDERERS = {OPENAI: to_openai, ANTHROPIC: to_anthropic}
