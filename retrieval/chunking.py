"""Text in, chunks out (docs/event-log.md#indexing). Pure functions: no Django, no database.

Chunks are at most `max_chars` long and overlap by about `overlap` characters; a cut prefers,
in order, a sentence end, a line break, a space, and only then falls back to a hard cut (a
single "word" longer than a chunk, such as a base64 blob or a URL, must still be split).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass

MAX_CHARS = 640
OVERLAP = 96

_SPACE_RUN = re.compile(r"[ \t\f\v\u00a0\u2000-\u200b\u3000]+")
_BLANK_LINES = re.compile(r"\n{3,}")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_SENTENCE_END = re.compile(r"[.!?…。！？][\"'”’)\]]*\s")


@dataclass(frozen=True)
class TextChunk:
    text: str
    start: int  # offset in the normalised text
    content_hash: str


def normalize_text(text: str) -> str:
    """NFC, unified line ends, no control characters, collapsed blanks, trimmed lines."""
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    text = _SPACE_RUN.sub(" ", text)
    text = "\n".join(line.strip() for line in text.split("\n"))
    return _BLANK_LINES.sub("\n\n", text).strip()


def content_hash(text: str) -> str:
    """Hash of the normalised text, case-folded, so trivially different copies dedup."""
    return hashlib.sha256(normalize_text(text).casefold().encode("utf-8")).hexdigest()


def _cut_point(text: str, start: int, limit: int, floor: int) -> int:
    """Where to end a chunk that starts at `start` and may not pass `limit`."""
    window = text[start:limit]
    # Only cut in the second half of the window: a cut near the start makes tiny chunks.
    ends = [m.end() for m in _SENTENCE_END.finditer(window + " ") if start + m.end() > floor]
    if ends:
        return start + min(ends[-1], len(window))
    for sep in ("\n", " "):
        at = window.rfind(sep)
        if at > 0 and start + at > floor:
            return start + at + 1
    return limit


def _overlap_start(text: str, end: int, overlap: int, previous_start: int) -> int:
    """Start of the next chunk: `overlap` characters back, moved forward to a word start."""
    start = max(end - overlap, previous_start + 1)
    if start >= end:
        return end
    space = text.find(" ", start, end)
    if 0 <= space < end - 1:
        return space + 1
    return start


def chunk_text(text: str, *, max_chars: int = MAX_CHARS, overlap: int = OVERLAP) -> list[TextChunk]:
    """Split normalised `text` into chunks of at most `max_chars` with about `overlap` of
    overlap."""
    if max_chars <= 0 or not 0 <= overlap < max_chars:
        raise ValueError("need max_chars > 0 and 0 <= overlap < max_chars")
    text = normalize_text(text)
    if not text:
        return []
    chunks: list[TextChunk] = []
    start = 0
    while True:
        if len(text) - start <= max_chars:
            piece = text[start:].strip()
            if piece:
                chunks.append(TextChunk(piece, start, content_hash(piece)))
            return chunks
        limit = start + max_chars
        end = _cut_point(text, start, limit, floor=start + max_chars // 2)
        piece = text[start:end].strip()
        if piece:
            chunks.append(TextChunk(piece, start, content_hash(piece)))
        start = _overlap_start(text, end, overlap, start)


_WORDS = re.compile(r"\w+", re.UNICODE)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?…。！？])[\"'”’)\]]*\s+|\n+")
SENTENCE_MIN_WORDS = 4  # shorter pieces ("Thanks!", "1. **Coursera**") say too little alone
SENTENCES_PER_CHUNK = 16


def sentences(text: str) -> list[str]:
    """The sentences of a chunk worth a vector of their own (search scores a chunk by its best
    sentence too: one sentence of a long message is lost in the message's mean): those of at
    least SENTENCE_MIN_WORDS words, at most SENTENCES_PER_CHUNK of them; none when fewer than two
    (the chunk's own vector is that sentence's)."""
    found = [s.strip() for s in _SENTENCE_SPLIT.split(normalize_text(text))]
    found = [s for s in found if len(_WORDS.findall(s)) >= SENTENCE_MIN_WORDS]
    return found[:SENTENCES_PER_CHUNK] if len(found) >= 2 else []


def word_set(text: str) -> frozenset[str]:
    """The distinct words of a text, case-folded: what two texts are compared on when their own
    words matter (near-identical results, duplicate memories)."""
    return frozenset(_WORDS.findall(text.casefold()))


def word_overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two word sets (1.0 for two empty texts)."""
    if a == b:
        return 1.0
    return len(a & b) / len(a | b)
