"""Fact extractors (docs/event-log.md#fact-extraction): turn an exchange into facts.

The protocol is `extract(turns, earlier) -> list[ExtractedFact]`: facts of the new `turns`, read
with the `earlier` ones of the session as context (a fact is extracted from an exchange; a
question and its answer often arrive in two appends). The default extracts nothing (no LLM
needed); MEMORYHUB_FACT_EXTRACTOR=http asks an OpenAI-compatible chat-completions endpoint
(MEMORYHUB_FACT_EXTRACTOR_URL / _MODEL / _API_KEY) for a JSON object {"facts": [...]}, or, with
MEMORYHUB_FACT_EXTRACTOR_FORMAT=lines, for plain lines ("NONE" or "- fact" bullets);
a reply of either form is accepted. Extracted facts are upserted like any other (source
"extraction", provenance = the session).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from django.conf import settings

from memoryhub.models import Event, Fact, Session
from memoryhub.notes import MAX_MEMORY_CHARS, MAX_TAG_CHARS, MAX_TAGS, Placement
from memoryhub.plumbing.background import check_budget
from memoryhub.searchable import LIFETIMES, TIERS
from memoryhub.summarisers import (
    SummariserError,
    Turn,
    chat_completion,
    format_line,
    pack,
    split_text,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExtractedFact:
    content: str
    category: str = "general"
    key: str = ""
    scope: str = "workspace"
    lifetime: str = "long_term"
    importance: float | None = None  # None: the category's default (importance by type)
    tags: tuple[str, ...] = field(default_factory=tuple)


class ExtractorReplyError(SummariserError):
    """The model answered, but not with facts (neither JSON facts, nor NONE, nor bullet lines).
    Asking again would get the same answer: the lane records it and goes on."""


class FactExtractor(Protocol):
    name: str

    def extract(self, turns: list[Turn], earlier: Sequence[Turn] = ()) -> list[ExtractedFact]: ...


class NoExtractor:
    name = "none"

    def extract(self, turns: list[Turn], earlier: Sequence[Turn] = ()) -> list[ExtractedFact]:
        return []


_CONTEXT_RULE = (
    " The input may start with earlier messages of the conversation, given as context only: their "
    "facts were extracted before. Take facts from the new messages only, reading them with the "
    "earlier ones (a question and its answer are one exchange)."
)
EXTRACT_PROMPT = (
    "Extract durable facts worth remembering about the user, their projects and preferences from "
    'the conversation. Reply with a JSON object {"facts": [{"content": str, "category": str, '
    '"key": str (a short stable identifier, e.g. \'preferred_language\'), "importance": number '
    'between 0 and 1, "tags": [str]}]}. Reply {"facts": []} when there is nothing durable.'
    + _CONTEXT_RULE
)
# The prompt for models without a JSON mode: one fact per line, or NONE.
LINES_PROMPT = (
    "Analyze the following exchange and extract important facts about the user. Return one fact "
    'per line, each starting with "- ": either "- key: value" with a short snake_case key (e.g. '
    '"- preferred_language: French") or "- a sentence". If there are no facts worth remembering, '
    'return "NONE". Only extract factual information (preferences, personal details, decisions, '
    "goals)." + _CONTEXT_RULE
)


def _item_importance(item: dict[str, Any]) -> float | None:
    try:
        return (
            min(max(float(item["importance"]), 0.0), 1.0)
            if item.get("importance") is not None
            else None
        )
    except (TypeError, ValueError):
        return None  # not a number: the category's default, as if none was given


def parse_facts(payload: Any) -> list[ExtractedFact]:
    """Validated facts from the extractor's JSON; malformed entries are skipped, never guessed."""
    items = payload.get("facts") if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        raise ExtractorReplyError("the extractor's reply has no 'facts' list")
    found: list[ExtractedFact] = []
    for item in items:
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("content"), str)
            or not item["content"].strip()
        ):
            continue
        tags = item.get("tags") if isinstance(item.get("tags"), list) else []
        scope = (
            item.get("scope")
            if item.get("scope") in TIERS and item.get("scope") != "conversation"
            else "workspace"
        )
        lifetime = item.get("lifetime") if item.get("lifetime") in LIFETIMES else "long_term"
        found.append(
            ExtractedFact(
                content=item["content"].strip()[:MAX_MEMORY_CHARS],
                category=str(item.get("category") or "general").strip()[:100] or "general",
                key=str(item.get("key") or "").strip()[:200],
                scope=scope,
                lifetime=lifetime,
                importance=_item_importance(item),
                tags=tuple(str(t).strip().lower()[:MAX_TAG_CHARS] for t in tags if str(t).strip())[
                    :MAX_TAGS
                ],
            )
        )
    return found


_NONE = re.compile(r"^\W*none\W*$", re.IGNORECASE)  # "NONE", "None.", "**NONE**"
# "- ", "* ", "• ", "1. ", "2) "
_BULLET = re.compile(r"^\s*(?:[-*\u2022+]|\d{1,3}[.)])\s+(\S.*?)\s*$")
_KEYED = re.compile(r"^([A-Za-z][\w.-]{0,63}):\s+(\S.*)$")  # "preferred_language: French"
_FENCE = re.compile(r"^```[\w-]*\s*\n(.*?)\n?```$", re.DOTALL)


def parse_lines(text: str) -> list[ExtractedFact]:
    """The plain-lines reply: "NONE" (no facts), or one fact per bullet line, "- key: value"
    (keyed, so a later value updates it) or "- a sentence". Lines without a bullet (a preamble
    such as "Here are the facts:") are skipped; a reply with no bullet line at all is unusable."""
    lines = [line for line in text.splitlines() if line.strip()]
    if lines and _NONE.match(lines[0]):
        return []
    found: list[ExtractedFact] = []
    for line in lines:
        bullet = _BULLET.match(line)
        if bullet is None:
            continue
        body = bullet.group(1)
        keyed = _KEYED.match(body)
        key = re.sub(r"[^a-z0-9]+", "_", keyed.group(1).lower()).strip("_") if keyed else ""
        content = f"{key.replace('_', ' ')}: {keyed.group(2)}" if keyed else body  # type: ignore[union-attr]
        found.append(ExtractedFact(content=content[:MAX_MEMORY_CHARS], key=key[:200]))
    if not found:
        raise ExtractorReplyError(
            f"the extractor's reply is neither facts nor NONE: {text[:200]!r}"
        )
    return found


def parse_reply(text: str) -> list[ExtractedFact]:
    """Facts from a model's reply, whichever form it took: JSON ({"facts": [...]}, also inside a
    ``` fence), or plain lines (NONE, bullets)."""
    text = text.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    if text[:1] in ("{", "["):
        try:
            return parse_facts(json.loads(text))
        except ValueError as exc:
            raise ExtractorReplyError(
                f"the extractor's reply is not valid JSON: {text[:200]!r}"
            ) from exc
    return parse_lines(text)


CONTEXT_CHARS = 4000  # each earlier message, as context, is clipped to this
# New messages sent to the extractor per request, in characters: more go in further requests, a
# longer message in parts (every word is read; earlier messages as context come on top).
INPUT_CHARS = 12000
# The extractor sees the new events with this many earlier events of the session before them, as
# context (a question and its answer appended in two calls are read as one exchange); facts are
# taken from the new events only.
WINDOW_EVENTS = 6


class HttpExtractor:
    name = "http"

    def __init__(
        self,
        *,
        url: str,
        model: str,
        api_key: str = "",
        timeout: float = 30.0,
        reply_format: str = "json",
    ) -> None:
        self.url, self.model, self.api_key, self.timeout = url, model, api_key, timeout
        self.reply_format = reply_format

    def extract(self, turns: list[Turn], earlier: Sequence[Turn] = ()) -> list[ExtractedFact]:
        """Every new message is read whole: what exceeds one request's input
        (INPUT_CHARS) goes in further requests, a long message in parts,
        each request with the same earlier messages as context. Their facts are merged: a later
        value of a key replaces an earlier one, a sentence said twice is kept once."""
        room = INPUT_CHARS
        context = "\n".join(format_line(t, CONTEXT_CHARS) for t in earlier if t.text.strip())
        facts: dict[str, ExtractedFact] = {}
        for group in pack(new_lines(turns, room // 2), room):
            check_budget()  # a background step's time budget (no-op elsewhere)
            new = "\n".join(group)
            user = (
                f"Earlier messages (context only):\n{context}\n\nNew messages:\n{new}"
                if context
                else new
            )
            for fact in self._request(user):
                facts[fact.key or " ".join(fact.content.lower().split())] = fact
        return list(facts.values())

    def _request(self, user: str) -> list[ExtractedFact]:
        json_mode = self.reply_format == "json"
        text = chat_completion(
            url=self.url,
            model=self.model,
            api_key=self.api_key,
            timeout=self.timeout,
            json_mode=json_mode,
            messages=[
                {"role": "system", "content": EXTRACT_PROMPT if json_mode else LINES_PROMPT},
                {"role": "user", "content": user},
            ],
        )
        return parse_reply(text)


def new_lines(turns: list[Turn], part_chars: int) -> list[str]:
    """The new messages as lines, each whole: a longer one than `part_chars` as several lines
    marked (part i/n)."""
    lines: list[str] = []
    for turn in turns:
        if not turn.text.strip():
            continue
        parts = split_text(turn.text.strip(), part_chars)
        for number, part in enumerate(parts, 1):
            text = (
                f"(part {number}/{len(parts)}) {part.strip()}" if len(parts) > 1 else part.strip()
            )
            lines.append(format_line(replace(turn, text=text), len(text) + 1))
    return lines


def extractor_configured() -> bool:
    """Whether facts are extracted at all (MEMORYHUB_FACT_EXTRACTOR other than none)."""
    return settings.MEMORYHUB_FACT_EXTRACTOR != "none"


def get_extractor() -> FactExtractor:
    if settings.MEMORYHUB_FACT_EXTRACTOR == "http":
        return HttpExtractor(
            url=settings.MEMORYHUB_FACT_EXTRACTOR_URL,
            model=settings.MEMORYHUB_FACT_EXTRACTOR_MODEL,
            api_key=settings.MEMORYHUB_FACT_EXTRACTOR_API_KEY,
            timeout=settings.MEMORYHUB_FACT_EXTRACTOR_TIMEOUT,
            reply_format=settings.MEMORYHUB_FACT_EXTRACTOR_FORMAT,
        )
    return NoExtractor()


def _window(session: Session, first_sequence: int, size: int | None) -> list[Event]:
    """The `size` events of the session just before `first_sequence`, oldest first."""
    size = WINDOW_EVENTS if size is None else size
    if size <= 0:
        return []
    earlier = Event.objects.filter(session=session, sequence__lt=first_sequence).order_by(
        "-sequence"
    )[:size]
    return list(reversed(earlier))


def _normalised(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".")


def extract_and_store(
    session: Session,
    event_ids: list[int],
    extractor: FactExtractor | None = None,
    *,
    strict: bool = False,
    window: int | None = None,
) -> list[Fact]:
    """Extract facts from these events of the session, read with the `window` events before them
    (WINDOW_EVENTS), and upsert them. A fact this session's extraction already
    stored with the same content is not stored again (a model may repeat one from the context).
    A failing extractor is logged and stores nothing (the conversation itself is never
    affected); with `strict` its error is raised instead, for the summarise lane to record."""
    extractor = extractor or get_extractor()
    events = list(Event.objects.filter(session=session, pk__in=event_ids).order_by("sequence"))
    if not events:
        return []
    earlier = _window(session, events[0].sequence, window)
    try:
        extracted = extractor.extract(
            [Turn.from_event(e) for e in events], [Turn.from_event(e) for e in earlier]
        )
    except SummariserError as exc:
        if strict:
            raise
        logger.warning(
            "fact extractor %s failed for session %s: %s", extractor.name, session.pk, exc
        )
        return []
    seen = {
        _normalised(c)
        for c in Fact.objects.filter(
            tenant_id=session.tenant_id, source_session=session, source="extraction"
        ).values_list("content", flat=True)
    }
    stored: list[Fact] = []
    for item in extracted:
        if _normalised(item.content) in seen:
            continue
        seen.add(_normalised(item.content))
        stored.append(
            _store(session, item, extractor.name, (events[0].sequence, events[-1].sequence))
        )
    return stored


def _store(
    session: Session, item: ExtractedFact, extractor: str, sequences: tuple[int, int]
) -> Fact:
    from memoryhub.facts import upsert

    placement = Placement(
        tier=item.scope,
        workspace=None if item.scope == "account" else session.workspace,
        channel=session.channel if item.scope == "channel" else None,
        session=session,
    )
    data = {
        "content": item.content,
        "category": item.category,
        "key": item.key,
        "lifetime": item.lifetime,
        "importance": item.importance,
        "tags": list(item.tags),
        "source": "extraction",
        "user_id": session.user_id,
        "metadata": {"extractor": extractor, "sequences": list(sequences)},
    }
    given = {name for name, value in data.items() if value is not None}
    fact, _ = upsert(
        tenant_id=session.tenant_id,
        placement=placement,
        data=data,
        given=given,
        source_session=session,
    )
    return fact
