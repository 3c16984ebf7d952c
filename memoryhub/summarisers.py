"""Summarisers (docs/event-log.md#summaries): turn conversation turns (or earlier summaries) into a
shorter text.

The protocol is one method, `summarise(turns, previous="", *, level, header) -> str`; `level` is
what is summarised (leaf: messages; branch: leaves; root: branches; condense: a rolling summary
grown too long) and `header` describes the conversation (session, channel, participants, time
span). The default is extractive and needs no LLM: one line per condensed turn, keeping the
speaker, the time, numbers and identifiers. `HttpSummariser` asks an OpenAI-compatible
chat-completions endpoint instead (MEMORYHUB_SUMMARISER=http with MEMORYHUB_SUMMARISER_URL /
_MODEL / _API_KEY), with a prompt per level, as a compactor does.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from django.conf import settings

from memoryhub.models import Event
from memoryhub.plumbing.background import check_budget
from memoryhub.plumbing.llm import SummariserError, chat_completion

__all__ = [
    "ExtractiveSummariser",
    "HttpSummariser",
    "Summariser",
    "SummariserError",
    "Turn",
    "chat_completion",
    "get_summariser",
    "level_budget",
    "summarise_safely",
    "summariser_model",
]

logger = logging.getLogger(__name__)

# Characters kept of one condensed turn by the extractive summariser.
LINE_CHARS = 200
# The HTTP summariser (docs/event-log.md#summaries) never cuts a message: one longer than PART_CHARS
# characters is sent as consecutive parts ("part 2/3"), and a transcript longer than INPUT_CHARS is
# summarised a request at a time, each request given the summary so far, so that the last reply
# covers all of it (PART_CHARS must not exceed INPUT_CHARS). 24,000 characters: about 6k tokens,
# room in a small model's context for the prompt, the summary so far and the reply.
PART_CHARS = 4000
INPUT_CHARS = 24000


@dataclass(frozen=True)
class Turn:
    """One thing to condense: a message (speaker = role) or a lower summary node (speaker = level,
    covering messages `sequence` to `sequence_end`). `agent` is the session's agent: every line
    names it with the speaker ("travel-bot/user")."""

    speaker: str
    text: str
    sequence: int | None = None
    created_at: datetime | None = None
    agent: str = ""
    sequence_end: int | None = None

    @classmethod
    def from_event(cls, event: Event, *, agent: str = "") -> Turn:
        speaker = event.role if not event.tool_name else f"{event.role}:{event.tool_name}"
        return cls(
            speaker=speaker,
            text=event.text,
            sequence=event.sequence,
            created_at=event.created_at,
            agent=agent,
        )

    @property
    def who(self) -> str:
        return f"{self.agent}/{self.speaker}" if self.agent else self.speaker

    @property
    def span(self) -> str:
        """ "#3", or "#3–#9" for a node over several messages ("" when not known)."""
        if self.sequence is None:
            return ""
        if self.sequence_end is None or self.sequence_end == self.sequence:
            return f"#{self.sequence}"
        return f"#{self.sequence}–#{self.sequence_end}"


class Summariser(Protocol):
    name: str
    model: str  # what a summary node records as its writer

    def summarise(
        self, turns: list[Turn], previous: str = "", *, level: str = "leaf", header: str = ""
    ) -> str: ...


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
    rest = text[len(head) :]
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
    seq = f" {turn.span}" if turn.span else ""
    return f"- {stamp}{turn.who}{seq}: {_clip(turn.text, limit)}"


class ExtractiveSummariser:
    """No model: one bullet line per turn (speaker, time, sequence, the start of its text and
    the numbers/identifiers of the rest). `previous` lines are kept ahead of the new ones."""

    name = "extractive"
    model = "extractive"

    def __init__(self, line_chars: int | None = None) -> None:
        self.line_chars = line_chars or LINE_CHARS

    def summarise(
        self, turns: list[Turn], previous: str = "", *, level: str = "leaf", header: str = ""
    ) -> str:
        # The level and the header are for a model's prompt; the lines carry their own context.
        lines = [line for line in previous.splitlines() if line.strip()] if previous else []
        for turn in turns:
            check_budget()  # a background step's time budget (no-op elsewhere)
            if turn.text.strip():
                lines.append(format_line(turn, self.line_chars))
        return "\n".join(lines)


# --- OpenAI-compatible HTTP --------------------------------------------------------------

# The rules every level shares (docs/event-log.md#summaries): cover everything, add nothing, keep
# identifiers.
_RULES = (
    " Cover every distinct topic, decision, result and open item; do not drop any because it is "
    "old or short. Use only what the input says: never add outside knowledge or guesses. Keep "
    "names, numbers, dates, identifiers, paths, URLs, commands and error messages exactly as "
    "written; system and tool messages count as much as the others. Keep the ISO timestamps of "
    "what you mention. Plain text only (no LaTeX, no Markdown headings). When a summary so far is "
    "given, reply with the complete updated summary: its content (shortened where needed) "
    'followed by what the new input adds. Reply with bullet lines ("- "), oldest first, nothing '
    "else."
)
PROMPTS = {
    # Level 0: messages -> a leaf.
    "leaf": (
        "You summarise part of a conversation for an AI agent's long-term memory. The input is the"
        " conversation's messages, oldest first, each headed [#sequence time agent/speaker]; a long"
        " message comes in consecutive parts. Record who said or did what, and when." + _RULES
    ),
    # Level 1: leaves -> a branch.
    "branch": (
        "You merge summaries of consecutive parts of one conversation into one summary of the "
        "whole span, for an AI agent's long-term memory. The input is those summaries, oldest "
        "first, each headed with the messages it covers. Merge repeated points, keep how "
        "things changed over time (what was decided first and what replaced it)." + _RULES
    ),
    # Level 2: branches -> the root.
    "root": (
        "You write the overview of a whole conversation for an AI agent's long-term memory. The "
        "input is summaries of its main parts, oldest first. Give its goals, the decisions and "
        "their outcomes, the facts learned and what is still open, so that an agent can pick "
        "the conversation up again." + _RULES
    ),
    # The rolling summary, grown past its share of the budget, written shorter (memoryhub.condense).
    "condense": (
        "The input is the running summary of a conversation, which has grown too long. "
        "Rewrite it markedly shorter: merge related lines, and condense older lines more "
        "than recent ones, but lose no topic, decision or identifier." + _RULES
    ),
}
_SECTIONS = {
    "leaf": "Messages",
    "branch": "Summaries of consecutive parts",
    "root": "Summaries of the main parts",
    "condense": "Summary lines to condense",
}


def split_text(text: str, size: int) -> list[str]:
    """Consecutive slices of `text` of at most `size` characters that together are all of it.
    Each is cut at the last paragraph break, else line break, else sentence end, else space in
    its second half; only a run with none of them (a 10k-character token) is cut anywhere."""
    parts: list[str] = []
    start = 0
    while len(text) - start > size:
        window = text[start : start + size]
        cut = len(window)
        for separator in ("\n\n", "\n", ". ", " "):
            found = window.rfind(separator, size // 2)
            if found != -1:
                cut = found + len(separator)
                break
        parts.append(text[start : start + cut])
        start += cut
    parts.append(text[start:])
    return parts


def transcript_blocks(turns: list[Turn], part_chars: int) -> list[str]:
    """Each turn as "[#seq time agent/speaker] text", its whole text: a long one as several
    parts."""
    blocks: list[str] = []
    for turn in turns:
        if not turn.text.strip():
            continue
        label = " ".join(
            filter(
                None,
                (
                    turn.span,
                    turn.created_at.strftime("%Y-%m-%dT%H:%MZ") if turn.created_at else "",
                    turn.who,
                ),
            )
        )
        parts = split_text(turn.text.strip(), part_chars)
        for number, part in enumerate(parts, 1):
            of = f", part {number}/{len(parts)}" if len(parts) > 1 else ""
            blocks.append(f"[{label}{of}] {part.strip()}")
    return blocks


def pack(blocks: list[str], room: int) -> list[list[str]]:
    """The blocks in order, in groups of at most `room` characters (a larger block alone)."""
    groups: list[list[str]] = []
    size = 0
    for block in blocks:
        if not groups or size + len(block) + 1 > room:
            groups.append([])
            size = 0
        groups[-1].append(block)
        size += len(block) + 1
    return groups


class HttpSummariser:
    """A prompt per level (leaf, branch, root, condense), a conversation header, every message in
    full (split into parts, not cut), and a long transcript summarised a request at a time, each
    request given the summary so far. Model calls are retried (memoryhub.plumbing.llm)."""

    name = "http"

    def __init__(self, *, url: str, model: str, api_key: str = "", timeout: float = 30.0) -> None:
        self.url, self.model, self.api_key, self.timeout = url, model, api_key, timeout

    def summarise(
        self, turns: list[Turn], previous: str = "", *, level: str = "leaf", header: str = ""
    ) -> str:
        if level not in PROMPTS:
            raise ValueError(f"unknown summary level {level!r}")
        blocks = transcript_blocks(turns, PART_CHARS)
        summary = previous
        for group in pack(blocks, INPUT_CHARS):
            check_budget()
            summary = self._request(level, header, summary, group)
        return summary

    def _request(self, level: str, header: str, summary: str, blocks: list[str]) -> str:
        """One request; the level's token budget is the reply's max_tokens (room for
        a thinking model to reason before it writes)."""
        sections = [header] if header else []
        if summary:
            sections.append(f"Summary so far:\n{summary}")
        sections.append(f"{_SECTIONS[level]}:\n" + "\n".join(blocks))
        return chat_completion(
            url=self.url,
            model=self.model,
            api_key=self.api_key,
            timeout=self.timeout,
            messages=[
                {"role": "system", "content": PROMPTS[level]},
                {"role": "user", "content": "\n\n".join(sections)},
            ],
            max_tokens=level_budget(level),
        )


# The tokens a node of the summary tree may take at each level: room for a
# complete summary of a leaf's, a branch's and the whole conversation's span.
LEVEL_TOKENS = {"leaf": 7000, "branch": 14000, "root": 20000}


def level_budget(level: str) -> int | None:
    """The tokens a node of the summary tree may take at `level`; None for the rolling summary's
    "condense", which has its own budget."""
    return LEVEL_TOKENS.get(level)


def get_summariser() -> Summariser:
    if settings.MEMORYHUB_SUMMARISER == "http":
        return HttpSummariser(
            url=settings.MEMORYHUB_SUMMARISER_URL,
            model=settings.MEMORYHUB_SUMMARISER_MODEL,
            api_key=settings.MEMORYHUB_SUMMARISER_API_KEY,
            timeout=settings.MEMORYHUB_SUMMARISER_TIMEOUT,
        )
    return ExtractiveSummariser()


def summariser_model(name: str) -> str:
    """The model behind the summariser `summarise_safely` named: "extractive", or the HTTP one's."""
    if name == HttpSummariser.name:
        return settings.MEMORYHUB_SUMMARISER_MODEL or HttpSummariser.name
    return ExtractiveSummariser.model


def summarise_safely(
    turns: list[Turn], previous: str = "", *, level: str = "leaf", header: str = ""
) -> tuple[str, str]:
    """Summarise with the configured summariser; if the HTTP one fails, fall back to extractive
    (a summary is always produced). Returns (text, name of the summariser that wrote it)."""
    summariser = get_summariser()
    try:
        return summariser.summarise(turns, previous, level=level, header=header), summariser.name
    except SummariserError as exc:
        logger.warning("summariser %s failed, using the extractive one: %s", summariser.name, exc)
        fallback = ExtractiveSummariser()
        return fallback.summarise(turns, previous), fallback.name
