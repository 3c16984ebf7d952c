"""A memory split into chunks, shown as one text in a context block: its chunks in order, each
overlap once (chunks overlap by about `chunking.OVERLAP` characters), an ellipsis where chunks in
between are left out. A message's chunks are those of its session and sequence; a note's, fact's,
summary's or document's those of its kind and id (of the same version: `valid_to`)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection

GAP = " … "  # between two chunks of a memory that are not next to each other


@dataclass(frozen=True)
class Memory:
    """The chunks of one memory, in the order of its text."""

    chunk_ids: tuple[int, ...]
    texts: tuple[str, ...]

    @property
    def key(self) -> int:
        return self.chunk_ids[0]

    def text_of(self, chunk_ids: set[int] | None = None) -> str:
        """The memory's text (`chunk_ids`: only those chunks'), in order, each overlap once."""
        out = ""
        previous = -2
        for position, (chunk_id, text) in enumerate(zip(self.chunk_ids, self.texts, strict=True)):
            if chunk_ids is not None and chunk_id not in chunk_ids:
                continue
            if not out:
                out = text
            elif position == previous + 1:
                out = join_overlapping(out, text)
            else:
                out = out + GAP + text
            previous = position
        return out


def join_overlapping(first: str, second: str) -> str:
    """`first` then `second`, without the text `second` begins with that `first` ends with."""
    for size in range(min(len(first), len(second)), 0, -1):
        if first.endswith(second[:size]):
            return first + second[size:]
    return f"{first} {second}"


# The chunks of every memory of more than one chunk that the given chunks belong to: a message's
# (its session and sequence: the chunk_message index) or another memory's (its kind, id and
# version: the partial index chunk_memory_parts, whose condition the join repeats for the planner:
# where nearly every chunk is a message, it otherwise scanned the table), in the order of the
# memory's text.
_SIBLINGS_SQL = """
SELECT c.id, s.id, s.text, 0 AS place
FROM retrieval_chunk c
JOIN retrieval_chunk s ON s.session_id = c.session_id AND s.kind = 'event' AND s.sequence_start = c.sequence_start
    AND s.valid_to IS NOT DISTINCT FROM c.valid_to
WHERE c.id = ANY(%s::bigint[]) AND c.kind = 'event' AND c.message_chunks > 1
UNION ALL
SELECT c.id, s.id, s.text, COALESCE((s.metadata->>'chunk_index')::int, 0)
FROM retrieval_chunk c
JOIN retrieval_chunk s ON s.tenant_id = c.tenant_id AND s.kind = c.kind AND s.source_id = c.source_id
    AND s.valid_to IS NOT DISTINCT FROM c.valid_to AND s.kind <> 'event' AND s.source_id <> ''
WHERE c.id = ANY(%s::bigint[]) AND c.kind <> 'event' AND c.source_id <> ''
ORDER BY 1, 4, 2
"""  # noqa: E501


def memories_of(chunk_ids: list[int]) -> dict[int, Memory]:
    """For each of `chunk_ids` that is one of several chunks of a memory: that memory."""
    if not chunk_ids:
        return {}
    rows: dict[int, list[tuple[int, str]]] = {}
    with connection.cursor() as cursor:
        cursor.execute(_SIBLINGS_SQL, [chunk_ids, chunk_ids])
        for chunk_id, sibling_id, text, _ in cursor.fetchall():
            rows.setdefault(chunk_id, []).append((sibling_id, text))
    return {
        chunk_id: Memory(tuple(i for i, _ in siblings), tuple(t for _, t in siblings))
        for chunk_id, siblings in rows.items()
        if len(siblings) > 1
    }
