"""Condensing a rolling summary that has outgrown its share of the budget (S6, seed 000).

A summary is condensed, never cut: nothing is dropped because it is old. The configured summariser
re-summarises the summary first (an LLM writes it shorter); whatever is still too long, or the
extractive summariser's lines, is condensed line by line: each line is shortened to the widest
common width that fits, keeping its time, speaker, the start of its text and the numbers and
identifiers of the rest; when there are too many lines even for that, the older ones are merged
in pairs. Older lines are thus condensed more than newer ones, and again on later rounds, as a
summary of a summary should be.
"""

from __future__ import annotations

import logging
import re

from memoryhub.models import estimate_tokens
from memoryhub.summarisers import SummariserError, Turn, _clip, get_summariser

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
    turns = [Turn(speaker="summary", text=line.removeprefix("- ").strip())
             for line in text.splitlines() if line.strip()]
    try:
        return summariser.summarise(turns, level="condense", header=header).strip()
    except SummariserError as exc:
        logger.warning("re-summarising a rolling summary failed, merging its lines instead: %s", exc)
        return ""


def merge_lines(text: str, room: int) -> str:
    """Condense the lines of `text` into at most `room` characters.

    Every line is first shortened to one common width, the widest that fits (shorter lines stay
    as they are; a shortened line keeps its time and speaker, the start of its text and the
    numbers and identifiers of the rest). Only when even lines of MIN_WIDTH characters do not fit
    are the older half of the lines merged in pairs, and the widths tried again.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    while lines:
        width = _fit_width([len(line) for line in lines], room)
        if width is not None or len(lines) == 1:
            out = "\n".join(_shorten(line, width or room) for line in lines)
            return out if len(out) <= room else out[:room]  # only a room below one short line
        older = max(2, len(lines) // 2)
        merged = [_merge(lines[i : i + 2]) for i in range(0, older, 2)]
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


# A line's bullet, time and speaker ("- [2025-05-01 10:00] user #3: "): kept when a line is shortened;
# dropped from all but the first line of a merge, so that the room goes to what was said.
_HEAD = re.compile(r"^-\s*(?:\[[^\]]*\]\s*)?(?:[^\s#|]+(?: [^\s#|]+)? #\d+: )?")
MIN_BODY = 20  # characters of text a shortened line keeps after its head, or the head goes too


def _merge(group: list[str]) -> str:
    first, *rest = group
    return " | ".join([first, *(_HEAD.sub("", line) for line in rest)])


def _shorten(line: str, width: int) -> str:
    if len(line) <= width:
        return line
    head = _HEAD.match(line).group(0)  # type: ignore[union-attr]  # the pattern matches any line
    if width - len(head) < MIN_BODY:
        return _clip(line, width)
    return head + _clip(line[len(head):], width - len(head))
