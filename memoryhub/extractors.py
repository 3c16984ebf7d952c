"""Fact extractors (S5): turn an exchange into facts.

The protocol is `extract(turns) -> list[ExtractedFact]`. The default extracts nothing (no LLM
needed); MEMORYHUB_FACT_EXTRACTOR=http asks an OpenAI-compatible chat-completions endpoint
(MEMORYHUB_FACT_EXTRACTOR_URL / _MODEL / _API_KEY) for a JSON object {"facts": [...]}.
Extracted facts are upserted like any other (source "extraction", provenance = the session).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.conf import settings

from memoryhub.models import Event, Fact, Session
from memoryhub.notes import Placement
from memoryhub.searchable import LIFETIMES, TIERS
from memoryhub.summarisers import SummariserError, Turn, chat_completion, format_line

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExtractedFact:
    content: str
    category: str = "general"
    key: str = ""
    scope: str = "workspace"
    lifetime: str = "long_term"
    importance: float = 0.5
    tags: tuple[str, ...] = field(default_factory=tuple)


class FactExtractor(Protocol):
    name: str

    def extract(self, turns: list[Turn]) -> list[ExtractedFact]: ...


class NoExtractor:
    name = "none"

    def extract(self, turns: list[Turn]) -> list[ExtractedFact]:
        return []


EXTRACT_PROMPT = (
    "Extract durable facts worth remembering about the user, their projects and preferences from "
    "the conversation. Reply with a JSON object {\"facts\": [{\"content\": str, \"category\": str, "
    "\"key\": str (a short stable identifier, e.g. 'preferred_language'), \"importance\": number "
    "between 0 and 1, \"tags\": [str]}]}. Reply {\"facts\": []} when there is nothing durable."
)


def parse_facts(payload: Any) -> list[ExtractedFact]:
    """Validated facts from the extractor's JSON; malformed entries are skipped, never guessed."""
    items = payload.get("facts") if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        raise SummariserError("the extractor's reply has no 'facts' list")
    found: list[ExtractedFact] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("content"), str) or not item["content"].strip():
            continue
        try:
            importance = float(item.get("importance", 0.5))
        except (TypeError, ValueError):
            importance = 0.5
        tags = item.get("tags") if isinstance(item.get("tags"), list) else []
        scope = item.get("scope") if item.get("scope") in TIERS and item.get("scope") != "conversation" else "workspace"
        lifetime = item.get("lifetime") if item.get("lifetime") in LIFETIMES else "long_term"
        found.append(ExtractedFact(
            content=item["content"].strip()[: settings.MEMORYHUB_MAX_MEMORY_CHARS],
            category=str(item.get("category") or "general").strip()[:100] or "general",
            key=str(item.get("key") or "").strip()[:200],
            scope=scope, lifetime=lifetime,
            importance=min(max(importance, 0.0), 1.0),
            tags=tuple(str(t).strip().lower()[: settings.MEMORYHUB_MAX_TAG_CHARS] for t in tags
                       if str(t).strip())[: settings.MEMORYHUB_MAX_TAGS],
        ))
    return found


class HttpExtractor:
    name = "http"

    def __init__(self, *, url: str, model: str, api_key: str = "", timeout: float = 30.0) -> None:
        self.url, self.model, self.api_key, self.timeout = url, model, api_key, timeout

    def extract(self, turns: list[Turn]) -> list[ExtractedFact]:
        transcript = "\n".join(format_line(t, 4000) for t in turns if t.text.strip())
        text = chat_completion(
            url=self.url, model=self.model, api_key=self.api_key, timeout=self.timeout, json_mode=True,
            messages=[{"role": "system", "content": EXTRACT_PROMPT}, {"role": "user", "content": transcript}],
        )
        try:
            payload = json.loads(text)
        except ValueError as exc:
            raise SummariserError(f"the extractor's reply is not JSON: {text[:200]}") from exc
        return parse_facts(payload)


def get_extractor() -> FactExtractor:
    if settings.MEMORYHUB_FACT_EXTRACTOR == "http":
        return HttpExtractor(
            url=settings.MEMORYHUB_FACT_EXTRACTOR_URL, model=settings.MEMORYHUB_FACT_EXTRACTOR_MODEL,
            api_key=settings.MEMORYHUB_FACT_EXTRACTOR_API_KEY, timeout=settings.MEMORYHUB_FACT_EXTRACTOR_TIMEOUT,
        )
    return NoExtractor()


def extract_and_store(session: Session, event_ids: list[int], extractor: FactExtractor | None = None,
                      *, strict: bool = False) -> list[Fact]:
    """Extract facts from these events of the session and upsert them. A failing extractor is
    logged and stores nothing (the conversation itself is never affected); with `strict` its
    error is raised instead, so the summarise lane records it and tries again later."""
    from memoryhub.facts import upsert

    extractor = extractor or get_extractor()
    events = list(Event.objects.filter(session=session, pk__in=event_ids).order_by("sequence"))
    if not events:
        return []
    try:
        extracted = extractor.extract([Turn.from_event(e) for e in events])
    except SummariserError as exc:
        if strict:
            raise
        logger.warning("fact extractor %s failed for session %s: %s", extractor.name, session.pk, exc)
        return []
    stored: list[Fact] = []
    for item in extracted:
        placement = Placement(
            tier=item.scope,
            workspace=None if item.scope == "account" else session.workspace,
            channel=session.channel if item.scope == "channel" else None,
            session=session,
        )
        data = {"content": item.content, "category": item.category, "key": item.key, "lifetime": item.lifetime,
                "importance": item.importance, "tags": list(item.tags), "source": "extraction",
                "user_id": session.user_id,
                "metadata": {"extractor": extractor.name, "sequences": [events[0].sequence, events[-1].sequence]}}
        fact, _ = upsert(tenant_id=session.tenant_id, placement=placement, data=data, given=set(data),
                         source_session=session)
        stored.append(fact)
    return stored
