"""Summarisers (S6): turn conversation turns (or earlier summaries) into a shorter text.

The protocol is one method, `summarise(turns, previous="") -> str`. The default is extractive and
needs no LLM: one line per condensed turn, keeping the speaker, the time, numbers and
identifiers. `HttpSummariser` asks an OpenAI-compatible chat-completions endpoint instead
(MEMORYHUB_SUMMARISER=http with MEMORYHUB_SUMMARISER_URL / _MODEL / _API_KEY).
"""

from __future__ import annotations

import json
import logging
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from django.conf import settings

from memoryhub.background import check_budget
from memoryhub.models import Event

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Turn:
    """One thing to condense: a message (speaker = role) or a lower summary node (speaker = level)."""

    speaker: str
    text: str
    sequence: int | None = None
    created_at: datetime | None = None

    @classmethod
    def from_event(cls, event: Event) -> Turn:
        speaker = event.role if not event.tool_name else f"{event.role}:{event.tool_name}"
        return cls(speaker=speaker, text=event.text, sequence=event.sequence, created_at=event.created_at)


class Summariser(Protocol):
    name: str

    def summarise(self, turns: list[Turn], previous: str = "") -> str: ...


class SummariserError(Exception):
    pass


# --- extractive (default) ----------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# Words worth keeping when a turn is cut: anything with a digit (amounts, dates, versions, ids),
# identifiers (snake_case, CamelCase, dotted/slashed paths, e-mail, #tags, @handles, URLs).
# Linear time on any input: each alternative that scans a run may start only where that run
# starts (the lookbehinds), and its quantifiers are possessive (no backtracking into a run).
# Without that, `\S*\d\S*` or `\w+(?:[./@#:-]\w+)+` rescanned a long word from every one of its
# characters: 11.5 s for one 16k-character word, and a stalled summariser.
_KEEP_WORD = re.compile(
    r"(?:https?://\S++"
    r"|(?<!\S)[^\s\d]*+\d\S*+"
    r"|(?<![A-Za-z])[A-Za-z]++_\w++"
    r"|(?<![a-z])[a-z]++[A-Z]\w*+"
    r"|[A-Z][a-z]++[A-Z]\w*+"
    r"|(?<!\w)\w++(?:[./@#:-]\w++)++"
    r"|[#@]\w++"
    r"|\b[A-Z]{2,}+\b)"
)


def _clip(text: str, limit: int) -> str:
    """The start of `text` within `limit` characters, plus the numbers and identifiers cut off."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = ""
    for sentence in _SENTENCE_END.split(text):
        candidate = f"{head} {sentence}".strip()
        if len(candidate) > limit * 0.7 and head:
            break
        head = candidate
        if len(head) >= limit * 0.7:
            break
    if len(head) > limit * 0.7:
        head = head[: int(limit * 0.7)].rsplit(" ", 1)[0] or head[: int(limit * 0.7)]
    rest = text[len(head):]
    kept: dict[str, None] = {}  # ordered, with O(1) membership
    room = limit - len(head)
    for match in _KEEP_WORD.finditer(rest):
        word = match.group(0).strip(".,;:!?()[]{}\"'")
        # A word longer than the line can never be shown (a 200k-character "word" is no identifier).
        if word and len(word) <= limit and word not in kept and word not in head:
            kept[word] = None
            room -= len(word) + 2
            if room < 0:  # no more can be shown: stop reading (a long turn is read once, at most)
                break
    out = head + " …"
    if kept:
        extra = ""
        for word in kept:
            if len(out) + len(extra) + len(word) + 8 > limit:
                break
            extra = f"{extra}, {word}" if extra else word
        if extra:
            out = f"{out} [{extra}]"
    return out


def format_line(turn: Turn, limit: int) -> str:
    stamp = f"[{turn.created_at.strftime('%Y-%m-%d %H:%M')}] " if turn.created_at else ""
    seq = f" #{turn.sequence}" if turn.sequence is not None else ""
    return f"- {stamp}{turn.speaker}{seq}: {_clip(turn.text, limit)}"


class ExtractiveSummariser:
    """No model: one bullet line per turn (speaker, time, sequence, the start of its text and
    the numbers/identifiers of the rest). `previous` lines are kept ahead of the new ones."""

    name = "extractive"

    def __init__(self, line_chars: int | None = None) -> None:
        self.line_chars = line_chars or settings.MEMORYHUB_SUMMARY_LINE_CHARS

    def summarise(self, turns: list[Turn], previous: str = "") -> str:
        lines = [line for line in previous.splitlines() if line.strip()] if previous else []
        for turn in turns:
            check_budget()  # a background step's time budget (no-op elsewhere)
            if turn.text.strip():
                lines.append(format_line(turn, self.line_chars))
        return "\n".join(lines)


# --- OpenAI-compatible HTTP --------------------------------------------------------------------


def chat_completion(*, url: str, model: str, api_key: str, messages: list[dict[str, str]],
                    timeout: float, json_mode: bool = False) -> str:
    """POST to an OpenAI-compatible /chat/completions endpoint; returns the first choice's text."""
    if not url:
        raise SummariserError("No URL is configured for the HTTP endpoint.")
    endpoint = url.rstrip("/")
    if not endpoint.endswith("/chat/completions"):
        endpoint += "/chat/completions"
    body: dict[str, Any] = {"model": model, "messages": messages, "temperature": 0}
    if json_mode:
        body["response_format"] = {"type": "json_object"}
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(endpoint, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - configured URL
            payload = json.loads(response.read().decode())
    except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
        raise SummariserError(f"{endpoint}: {exc}") from exc
    try:
        content = payload["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError) as exc:
        raise SummariserError(f"{endpoint}: unexpected reply {str(payload)[:200]}") from exc
    if not isinstance(content, str):
        raise SummariserError(f"{endpoint}: the reply's content is not text")
    return content.strip()


SUMMARY_PROMPT = (
    "You condense a conversation for an AI agent's memory. Write short bullet lines, one per "
    "important turn or topic, oldest first. Keep speakers, timestamps, numbers, names and "
    "identifiers exactly. Do not invent anything. Reply with the bullet lines only."
)


class HttpSummariser:
    name = "http"

    def __init__(self, *, url: str, model: str, api_key: str = "", timeout: float = 30.0) -> None:
        self.url, self.model, self.api_key, self.timeout = url, model, api_key, timeout

    def summarise(self, turns: list[Turn], previous: str = "") -> str:
        transcript = "\n".join(format_line(t, 4000) for t in turns if t.text.strip())
        user = f"Earlier summary:\n{previous}\n\nNew turns:\n{transcript}" if previous else transcript
        return chat_completion(
            url=self.url, model=self.model, api_key=self.api_key, timeout=self.timeout,
            messages=[{"role": "system", "content": SUMMARY_PROMPT}, {"role": "user", "content": user}],
        )


def get_summariser() -> Summariser:
    if settings.MEMORYHUB_SUMMARISER == "http":
        return HttpSummariser(
            url=settings.MEMORYHUB_SUMMARISER_URL, model=settings.MEMORYHUB_SUMMARISER_MODEL,
            api_key=settings.MEMORYHUB_SUMMARISER_API_KEY, timeout=settings.MEMORYHUB_SUMMARISER_TIMEOUT,
        )
    return ExtractiveSummariser()


def summarise_safely(turns: list[Turn], previous: str = "") -> tuple[str, str]:
    """Summarise with the configured summariser; if the HTTP one fails, fall back to extractive
    (a summary is always produced). Returns (text, name of the summariser that wrote it)."""
    summariser = get_summariser()
    try:
        return summariser.summarise(turns, previous), summariser.name
    except SummariserError as exc:
        logger.warning("summariser %s failed, using the extractive one: %s", summariser.name, exc)
        fallback = ExtractiveSummariser()
        return fallback.summarise(turns, previous), fallback.name
