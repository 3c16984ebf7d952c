"""Tool calls described in a sentence (docs/event-log.md#indexing).

A tool-call event with empty content is searchable from the start as `Called <tool> with <args>`
(deterministic, in the append's transaction). When a summariser model is configured
(MEMORYHUB_SUMMARISER=http), the summarise lane also asks it for one past-tense sentence about
the call and stores it beside the event (the log is append-only); retrieval then indexes the
event again with the sentence ahead of the deterministic text. Without a model nothing changes.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.conf import settings
from django.db.models import Exists, OuterRef, Q

from memoryhub.models import Event, Session, ToolCallSentence
from memoryhub.plumbing.background import check_budget
from memoryhub.plumbing.llm import chat_completion, model_configured
from memoryhub.signals import events_text_changed

logger = logging.getLogger(__name__)

BATCH = 20  # events described per step of one session
MAX_CHARS = 400  # a sentence longer than this is cut at a word (a model that rambles)
ARGS_CHARS = 2000  # of the arguments and result sent to the model

PROMPT = (
    "You describe one tool call of an AI agent for its long-term memory, so that it can be found "
    "by search. Reply with a single past-tense sentence: which tool was called, with which "
    "arguments, and what it returned if a result is given. Keep names, numbers, dates, "
    "identifiers and paths exactly as written; add nothing that the input does not say. Plain "
    "text, no quotes, no Markdown."
)


def undescribed(session: Session) -> Any:
    """The session's tool-call events with empty content and no sentence yet, oldest first."""
    described = ToolCallSentence.objects.filter(event=OuterRef("pk"))
    return (
        session.events.filter(content="")
        .filter(~Q(tool_name="") | Q(tool_calls__isnull=False))
        .exclude(Exists(described))
        .order_by("sequence")
    )


def _text(value: Any) -> str:
    text = (
        value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    )
    return text[:ARGS_CHARS]


def _request(event: Event) -> str:
    lines = [f"Role: {event.role}"]
    lines += [f"Call: {sentence[:ARGS_CHARS]}" for sentence in event.tool_call_sentences()]
    if event.tool_result not in (None, ""):
        lines.append(f"Result: {_text(event.tool_result)}")
    return "\n".join(lines)


def _one_line(reply: str) -> str:
    text = " ".join(reply.split()).strip("\"' ")
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS].rsplit(" ", 1)[0] + " …"
    return text


def describe_tool_calls(session: Session, *, limit: int = BATCH) -> int:
    """Ask the model for a sentence about each of the session's next undescribed tool calls and
    store it; the events are then indexed again (retrieval). Returns sentences written. A model
    that cannot be reached raises SummariserError (the lane records it and tries again later)."""
    if not model_configured():
        return 0
    events = list(undescribed(session)[:limit])
    written: list[Event] = []
    for event in events:
        check_budget()
        reply = chat_completion(
            url=settings.MEMORYHUB_SUMMARISER_URL,
            model=settings.MEMORYHUB_SUMMARISER_MODEL,
            api_key=settings.MEMORYHUB_SUMMARISER_API_KEY,
            timeout=settings.MEMORYHUB_SUMMARISER_TIMEOUT,
            messages=[
                {"role": "system", "content": PROMPT},
                {"role": "user", "content": _request(event)},
            ],
        )
        # An empty reply is stored too (the call is not asked about again): the deterministic
        # sentence then stays alone.
        text = _one_line(reply)
        ToolCallSentence.objects.create(
            event=event,
            tenant_id=event.tenant_id,
            text=text,
            model=settings.MEMORYHUB_SUMMARISER_MODEL,
        )
        written.append(event)
    if written:
        events_text_changed.send(sender=Event, session=session, events=written)
    return len(written)
