"""Condensing a rolling summary that has outgrown its share of the budget
(docs/event-log.md#summaries).

A summary is condensed, never cut: nothing is dropped because it is old. The configured summariser
re-summarises the summary first (an LLM writes it shorter); whatever is still too long, or the
extractive summariser's lines, is condensed line by line: each line is shortened to the widest
common width that fits, keeping its time, speaker, the start of its text and the numbers and
identifiers of the rest; when there are too many lines even for that, the older ones are merged
in pairs into one line headed by the range of messages it covers ("#2–#9"), whose text is the
start of its first message and the most telling identifiers of all of them. Older lines are thus
condensed more than newer ones, and again on later rounds, as a summary of a summary should be,
and every condensed message is still named by its number."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from memoryhub.models import estimate_tokens
from memoryhub.summarisers import _KEEP_WORD, SummariserError, Turn, _clip, get_summariser

logger = logging.getLogger(__name__)

MIN_WIDTH = 60  # characters: below this width lines are merged rather than shortened further


def condense(text: str, max_tokens: int, *, header: str = "") -> str:
    """`text` within `max_tokens`, condensed (see the module docstring). `header` describes the
    conversation for a model's prompt."""
    if estimate_tokens(text) <= max_tokens:
        return text
    shorter = _resummarise(text, header)
    if shorter and estimate_tokens(shorter) <= max_tokens:
        return shorter
    return merge_lines(shorter or text, max_tokens * 4)


def _resummarise(text: str, header: str) -> str:
    """The configured summariser's shorter version of the summary ("" for the extractive one,
    which would only give its lines back, or when the model fails)."""
    summariser = get_summariser()
    if summariser.name == "extractive":
        return ""
    turns = [
        Turn(speaker="summary", text=line.removeprefix("- ").strip())
        for line in text.splitlines()
        if line.strip()
    ]
    try:
        return summariser.summarise(turns, level="condense", header=header).strip()
    except SummariserError as exc:
        logger.warning(
            "re-summarising a rolling summary failed, merging its lines instead: %s", exc
        )
        return ""


def merge_lines(text: str, room: int) -> str:
    """Condense the lines of `text` into at most `room` characters, leaving a trace of every
    message.

    Every line is first shortened to one common width, the widest that fits (shorter lines stay
    as they are; a shortened line keeps its time, speaker and message numbers, the start of its
    text and the numbers and identifiers of the rest). Only when even lines of MIN_WIDTH
    characters do not fit are the older half of the lines merged in pairs, and the widths tried
    again: a merged line is headed by the time of its first message and the range of messages it
    covers ("- [2025-05-01 10:01] user #1–#8: …"), so a message merged away is still named.
    """
    lines = [_Line.parse(line) for line in text.splitlines() if line.strip()]
    while lines:
        width = _fit_width([len(line.render()) for line in lines], room)
        if width is not None or len(lines) == 1:
            out = "\n".join(line.render(width or room) for line in lines)
            return out if len(out) <= room else out[:room]  # only a room below one short line
        older = max(2, len(lines) // 2 // 2 * 2)  # an even count: every line goes into one pair
        merged = [_Line.merge(lines[i : i + 2]) for i in range(0, older, 2)]
        lines = merged + lines[older:]
    return ""


def _fit_width(lengths: list[int], room: int) -> int | None:
    """The widest line width at which the lines fit in `room` (None: not even at MIN_WIDTH)."""

    def size(width: int) -> int:
        return sum(min(length, width) for length in lengths) + len(lengths) - 1

    low, high = MIN_WIDTH, max(lengths)
    if size(low) > room:
        return None
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if size(middle) <= room else (low, middle - 1)
    return low


# A line's bullet, time, speaker and message numbers: "- [2025-05-01 10:00] bot/user #3: " (the
# extractive summariser's line), "- [2025-05-01 10:00] leaf #3–#9: " (a node's line in its
# parent) or "- [2025-05-01 10:00] #3–#9: " (merged lines of several speakers).
_HEAD = re.compile(
    r"^-\s*(?:\[(?P<time>[^\]]*)\]\s*)?"
    r"(?:(?:(?P<speaker>[^\s#|]+(?: [^\s#|]+)?) )?#(?P<low>\d+)(?:–#(?P<high>\d+))?: )?"
)
MIN_BODY = 20  # characters of text a shortened line keeps after its head, or the head goes too


@dataclass(frozen=True)
class _Line:
    """One line of a summary: its head (time, speaker, the messages it covers) and its text."""

    body: str
    time: str = ""
    speaker: str = ""
    low: int | None = None
    high: int | None = None

    @classmethod
    def parse(cls, line: str) -> _Line:
        line = line.strip()
        match = _HEAD.match(line)
        if match is None or not match.group(0).strip(" -"):  # not a summary line (a model's prose)
            return cls(body=line.removeprefix("- ").strip())
        low = int(match["low"]) if match["low"] else None
        return cls(
            body=line[match.end() :].strip(),
            time=match["time"] or "",
            speaker=match["speaker"] or "",
            low=low,
            high=int(match["high"]) if match["high"] else low,
        )

    @classmethod
    def merge(cls, group: list[_Line]) -> _Line:
        speakers = {line.speaker for line in group}
        lows = [line.low for line in group if line.low is not None]
        highs = [line.high for line in group if line.high is not None]
        return cls(
            body=" | ".join(line.body for line in group if line.body),
            time=next((line.time for line in group if line.time), ""),
            # one speaker (agent/role) or none
            speaker=speakers.pop() if len(speakers) == 1 else "",
            low=min(lows, default=None),
            high=max(highs, default=None),
        )

    def head(self) -> str:
        stamp = f"[{self.time}] " if self.time else ""
        if self.low is None:
            return f"- {stamp}"
        span = f"#{self.low}" if self.high in (None, self.low) else f"#{self.low}–#{self.high}"
        who = f"{self.speaker} " if self.speaker else ""
        return f"- {stamp}{who}{span}: "

    def render(self, width: int | None = None) -> str:
        head = self.head()
        line = head + self.body
        if width is None or len(line) <= width:
            return line
        if width - len(head) < MIN_BODY:
            # Too narrow for the text: the head alone, so that the messages are still named.
            return head.rstrip() if self.low is not None else _clip(line, width)
        if self.low is not None and self.high != self.low:
            return head + digest(self.body, width - len(head))
        return head + _clip(self.body, width - len(head))


LEAD_SHARE = 0.4  # of a merged line's text: the start of its first message; the rest, identifiers


def _weight(word: str) -> int:
    """How much a kept word tells: an identifier (letters with digits or joiners: T-1002,
    order_id, api.example.com) more than a long number, a long number more than a short one."""
    has_digit = any(c.isdigit() for c in word)
    if any(c.isalpha() for c in word) and (has_digit or any(c in "_./@#:-" for c in word)):
        return 3
    if has_digit and sum(c.isdigit() for c in word) >= 3:
        return 2
    return 1


def digest(text: str, limit: int) -> str:
    """A merged line's text within `limit` characters: the start of its first message, then the
    most telling identifiers and numbers of all of them, in their order, each once."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    lead = _clip(text.split(" | ", 1)[0], max(MIN_BODY, int(limit * LEAD_SHARE)))
    lead = lead.split(" … [", 1)[0].removesuffix(" …")  # its own kept words compete with the rest
    words: dict[str, int] = {}  # word -> first position
    for match in _KEEP_WORD.finditer(text):
        word = match.group(0).strip(".,;:!?()[]{}\"'|")
        if word and len(word) < limit and word not in words and word not in lead:
            words[word] = match.start()
    room = limit - len(lead) - len(" … []")
    chosen: list[str] = []
    for word in sorted(words, key=lambda w: (-_weight(w), words[w])):
        if len(word) + 2 <= room:
            chosen.append(word)
            room -= len(word) + 2
    chosen.sort(key=words.__getitem__)
    return f"{lead} … [{', '.join(chosen)}]" if chosen else f"{lead} …"
