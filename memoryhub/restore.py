"""Restore (docs/event-log.md#restore): a session's history as messages a model can be fed again.

Messages are the stored events verbatim: content as written (an empty tool-call content stays
empty), metadata, tool_name/tool_args/tool_result, tool_calls with their ids and tool_call_id.
When the whole history fits in the budget, it is returned whole and no summary is added. Only
when it does not fit does the rolling summary lead (as a system message) and stand for the
messages it covers; then the newest uncovered messages follow as far as the budget allows.

With a persistence key (docs/event-log.md#restore), sessions that share it (the same tenant and
user, visible to the key) restore as one history across rotated session ids, oldest session first.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from accounts.models import ApiKey
from memoryhub import chat
from memoryhub.models import Event, RollingSummary, Session, estimate_tokens, iso

MESSAGE_OVERHEAD = 4  # tokens a message costs beyond its text (role, separators)
BATCH = 200
# Tokens of a restore when the request names no budget.
DEFAULT_BUDGET = 4000
SUMMARY_HEADER = "Summary of the earlier conversation:"

Render = Callable[[Event], dict[str, Any]]
_TOOL_FIELDS = ("tool_name", "tool_args", "tool_result", "tool_calls", "tool_call_id")


@dataclass
class Restored:
    messages: list[dict[str, Any]]
    tokens: int
    # some messages are not in `messages` verbatim (a summary stands for them, or they did not fit)
    truncated: bool
    omitted: int  # how many
    # the summaries that lead, oldest session first
    summaries: list[RollingSummary] = field(default_factory=list)
    sessions: list[Session] = field(default_factory=list)


def event_message(event: Event, *, session: Session | None = None) -> dict[str, Any]:
    """The stored event as a message: every field as written, null where the event has none."""
    message: dict[str, Any] = {
        "role": event.role,
        "content": event.content,
        "sequence": event.sequence,
        "tool_name": event.tool_name or None,
        "tool_args": event.tool_args,
        "tool_result": event.tool_result,
        "tool_calls": event.tool_calls,
        "tool_call_id": event.tool_call_id or None,
        "metadata": event.metadata,
        "created_at": iso(event.created_at),
    }
    if session is not None:
        message["session"] = session.external_id
    return message


def message_cost(message: dict[str, Any]) -> int:
    """Estimated tokens of a message: its content, its tool fields as JSON, and the overhead."""
    tools = {name: message[name] for name in _TOOL_FIELDS if message.get(name) is not None}
    tool_tokens = (
        estimate_tokens(json.dumps(tools, ensure_ascii=False, sort_keys=True)) if tools else 0
    )
    return estimate_tokens(message["content"]) + tool_tokens + MESSAGE_OVERHEAD


def persistence_chain(key: ApiKey, session: Session) -> list[Session]:
    """The sessions that share `session`'s persistence key (and user), oldest first; the session
    alone when it has no key."""
    if not session.persistence_key:
        return [session]
    chain = (
        Session.objects.visible_to(key)
        .filter(persistence_key=session.persistence_key, user_id=session.user_id)
        .order_by("created_at", "pk")
    )
    return list(chain)


def _newest_first(
    sessions: list[Session], floors: dict[int, int]
) -> Iterator[tuple[Session, Event]]:
    """Events of the chain, newest first, read in batches; each session only above its floor."""
    for session in reversed(sessions):
        cursor: int | None = None
        while True:
            qs = session.events.filter(sequence__gt=floors.get(session.pk, 0)).order_by("-sequence")
            if cursor is not None:
                qs = qs.filter(sequence__lt=cursor)
            batch = list(qs[:BATCH])
            for event in batch:
                yield session, event
            if len(batch) < BATCH:
                break
            cursor = batch[-1].sequence


def _fill(
    sessions: list[Session],
    floors: dict[int, int],
    budget: int,
    tag_session: bool,
    render: Render | None = None,
) -> tuple[list[dict[str, Any]], int, bool]:
    """The newest messages that fit in `budget`, oldest first; whether every one above the floors
    fitted. A message costs what its stored event does, whichever shape it is `render`ed in."""
    picked: list[dict[str, Any]] = []
    used = 0
    for session, event in _newest_first(sessions, floors):
        message = event_message(event, session=session if tag_session else None)
        cost = message_cost(message)
        if used + cost > budget:
            picked.reverse()
            return picked, used, False
        picked.append(render(event) if render else message)
        used += cost
    picked.reverse()
    return picked, used, True


def _summary_message(summaries: list[RollingSummary], by_pk: dict[int, Session]) -> dict[str, Any]:
    text = "\n".join([SUMMARY_HEADER, *(s.text for s in summaries)])
    last = summaries[-1]
    return {
        "role": "system",
        "content": text,
        "summary_epoch": last.epoch,
        "upper_sequence": last.upper_sequence,
        "summaries": [
            {
                "session": by_pk[s.session_id].external_id,
                "epoch": s.epoch,
                "upper_sequence": s.upper_sequence,
            }
            for s in summaries
        ],
    }


def restore_session(
    session: Session, *, budget: int, chain: list[Session] | None = None, format: str = chat.NATIVE
) -> Restored:  # noqa: A002 - the API's parameter
    """The history of `session` (or of its persistence `chain`) as messages within `budget` tokens,
    in a chat API's shape when `format` names one (memoryhub.chat; the summary is then a plain
    system message)."""
    sessions = chain or [session]
    tagged = chain is not None and format == chat.NATIVE
    render = chat.RENDERERS.get(format)
    total = sum(s.event_count for s in sessions)
    picked, used, complete = _fill(sessions, {}, budget, tagged, render)
    if complete:
        return Restored(picked, used, False, 0, [], sessions)
    by_pk = {s.pk: s for s in sessions}
    summaries = sorted(
        RollingSummary.objects.filter(session_id__in=list(by_pk)).exclude(text=""),
        key=lambda s: sessions.index(by_pk[s.session_id]),
    )
    if summaries:
        lead = _summary_message(summaries, by_pk)
        cost = estimate_tokens(lead["content"])
        if render is not None:
            lead = {"role": "system", "content": lead["content"]}
        if cost <= budget:
            floors = {s.session_id: s.upper_sequence for s in summaries}
            rest, rest_used, _ = _fill(sessions, floors, budget - cost, tagged, render)
            return Restored(
                [lead, *rest], cost + rest_used, True, total - len(rest), summaries, sessions
            )
    return Restored(picked, used, True, total - len(picked), [], sessions)
