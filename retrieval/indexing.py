"""The indexing pipeline (docs/event-log.md#indexing): events and memories → chunks (with their
full-text vectors); other memories than messages go through retrieval.memory_indexing.

Chunking is cheap (no model): it runs inside the writing transaction (an append, a saved note),
so whatever is acknowledged is findable by full text at once (read-your-writes). Embeddings are
the embed lane's (retrieval.embedding): new chunks wait in the table for it.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.db.models import F, Q
from django.db.models.functions import Greatest

from memoryhub import recent as recent_window
from memoryhub.event_log import window_version
from memoryhub.models import Event, Session, ToolCallSentence
from memoryhub.plumbing import rows
from retrieval.chunking import chunk_text, normalize_text
from retrieval.embedding import request_embedding
from retrieval.models import Chunk, chunk_metadata

logger = logging.getLogger(__name__)

# A message longer than this many characters is split into chunks overlapping by CHUNK_OVERLAP
# (MiniLM reads 256 tokens, about 1,000 characters; 640 keeps a chunk's context within them).
CHUNK_CHARS = 640
CHUNK_OVERLAP = 96
# How many earlier messages of the conversation are embedded with a message (contextual
# embeddings: "yes, since 2019" is findable by what it answers), as far as the message leaves
# room (CONTEXT_FILL: a long message reads itself). 0 embeds the message alone.
CONTEXT_MESSAGES = 2
CONTEXT_CHARS = 400  # how much of each earlier message goes into a chunk's embedding context
# A chunk and its context together fill at most this many characters, about the model's window
# (MiniLM reads 256 word pieces, ~1,000 characters of English): a long chunk with its full context
# overflowed it, and the model cut the end of the chunk's own text. A short message still reads the
# messages before it; a long one reads less of them, newest first. Measured on LoCoMo (10
# conversations) and LongMemEval (8 haystacks): recall held in every half, LongMemEval's
# session@10 0.896 -> 0.938; 500 cost LoCoMo's second half 0.010 of turn@10 against this.
CONTEXT_FILL = 1000
CONTEXT_MIN_CHARS = 40  # less room than this adds no context


# --- text extraction -------------------------------------------------------------------------


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def extract_event_text(event: Event) -> str:
    """What of an event is searchable: its content plus its tool call (docs/event-log.md#indexing).

    A tool call with empty content gets a synthesised sentence (`Called <tool> with <args>`),
    after the model's sentence about it when one was written and loaded with the event
    (memoryhub.tool_sentences; select_related("tool_sentence")).
    """
    parts = [event.content] if event.content else []
    if not event.content and (sentence := ToolCallSentence.of(event)):
        parts.append(sentence)
    # The single tool_name/tool_args call and each of tool_calls (several calls in one message).
    parts += event.tool_call_sentences()
    if not event.content and event.tool_result not in (None, ""):
        result = (
            event.tool_result
            if isinstance(event.tool_result, str)
            else _json_text(event.tool_result)
        )
        if event.tool_name:
            parts.append(f"{event.tool_name} returned {result}")
        elif event.tool_call_id:
            parts.append(f"Tool call {event.tool_call_id} returned {result}")
    return "\n".join(parts)


def chunk_sizes() -> tuple[int, int]:
    return CHUNK_CHARS, min(CHUNK_OVERLAP, CHUNK_CHARS - 1)


def _context_before(session: Session, first_sequence: int, count: int, appended: int) -> list[str]:
    """The texts of the `count` events before `first_sequence`, oldest first: from the session's
    recent window when it is cached up to the event just before (an append that follows the last
    one, the usual case), otherwise from the log."""
    if count <= 0:
        return []
    # A window entry is keyed by the last sequence it holds, so it is the log's newest events up to
    # that one (memoryhub.recent); a gap in the sequences finds no entry.
    # `appended`: the events being indexed, counted in the session's event count already.
    version = window_version(session, appended)
    window = (
        recent_window.get(session.pk, first_sequence - 1, version)
        if count <= recent_window.WINDOW
        else None
    )
    if window is not None:
        earlier = [Event.from_payload(payload) for payload in window[-count:]]
    else:
        newest = Event.objects.filter(session=session, sequence__lt=first_sequence).order_by(
            "-sequence"
        )[:count]
        earlier = list(reversed(newest))
    return [normalize_text(extract_event_text(e))[:CONTEXT_CHARS] for e in earlier]


def fill_context(earlier: list[str], own_chars: int) -> str:
    """The context a chunk of `own_chars` characters is embedded with: the earlier messages
    (oldest first), newest first into the room CONTEXT_FILL leaves, each cut to fit."""
    room, picked = CONTEXT_FILL - own_chars, []
    for message in reversed(earlier):
        if room < CONTEXT_MIN_CHARS:
            break
        picked.append(message[:room])
        room -= len(picked[-1]) + 1
    return "\n".join(reversed(picked))


# --- events ----------------------------------------------------------------------------------


@transaction.atomic
def index_events(*, session_id: int, event_ids: list[int]) -> list[int]:
    """Chunk the given events of one session; returns the ids of new chunks (to be embedded).

    Running it twice for the same events changes nothing: a chunk whose content hash already
    exists in the session extends that chunk's sequence_end instead of adding a copy.
    """
    session = Session.objects.select_related("workspace", "channel").filter(pk=session_id).first()
    if session is None:  # forgotten meanwhile
        return []
    events = list(
        Event.objects.filter(session=session, pk__in=event_ids)
        .select_related("tool_sentence")
        .order_by("sequence")
    )
    return index_session_events(session, events)


def index_session_events(session: Session, events: list[Event]) -> list[int]:
    """Chunk these events of `session` (in sequence order) in the current transaction."""
    if not events:
        return []
    context_size = CONTEXT_MESSAGES
    recent = _context_before(session, events[0].sequence, context_size, len(events))
    max_chars, overlap = chunk_sizes()
    planned: list[tuple[Event, str, str, str]] = []  # event, text, hash, context
    for event in events:
        text = extract_event_text(event)
        earlier = recent[-context_size:] if context_size else []
        for piece in chunk_text(text, max_chars=max_chars, overlap=overlap):
            planned.append(
                (event, piece.text, piece.content_hash, fill_context(earlier, len(piece.text)))
            )
        if text:
            recent.append(normalize_text(text)[:CONTEXT_CHARS])
    new: dict[str, Chunk] = {}
    for event, text, digest, context in planned:
        if digest in new:
            new[digest].sequence_end = max(new[digest].sequence_end or 0, event.sequence)
        else:
            new[digest] = _event_chunk(session, event, text, digest, context)
    per_message = Counter(chunk.sequence_start for chunk in new.values())
    for chunk in new.values():
        chunk.message_chunks = per_message[chunk.sequence_start]
    ids = _insert_unless_indexed(session, list(new.values()))
    request_embedding(ids)
    return ids


def _insert_unless_indexed(session: Session, chunks: list[Chunk]) -> list[int]:
    """Insert the chunks whose content the session has no chunk of yet; a chunk whose content is
    already indexed there extends that chunk's sequence_end instead.

    A small append (memoryhub.plumbing.rows.SMALL_BATCH chunks at most: one or two messages) is one
    INSERT, which skips what exists; a bulk one asks first and bulk_creates the rest. When
    something was skipped (a repeated "ok", the same events indexed twice), the existing chunks
    are extended and the new chunks of those messages recounted (message_chunks counted the
    skipped ones)."""
    if not chunks:
        return []
    if len(chunks) > rows.SMALL_BATCH:  # a bulk append: ask first, then bulk_create (faster there)
        existing = set(
            Chunk.objects.filter(
                session=session, kind="event", content_hash__in=[c.content_hash for c in chunks]
            ).values_list("content_hash", flat=True)
        )
        inserted = {
            c.content_hash: c.pk
            for c in Chunk.objects.bulk_create(
                [c for c in chunks if c.content_hash not in existing]
            )
        }
        return _after_skipping(session, chunks, inserted)
    values = rows.rows(Chunk, chunks)
    with connection.cursor() as cursor:
        # The session's chunks of these contents, looked up once through the (session, content
        # hash) index: a NOT EXISTS per row let the planner hash-join a bulk append's rows against
        # a scan of the whole table.
        cursor.execute(
            f"""INSERT INTO {values.table} ({values.columns})
                SELECT * FROM (VALUES {values.values}) AS v ({values.columns})
                WHERE v.content_hash <> ALL (ARRAY(
                    SELECT c.content_hash FROM {values.table} c
                    WHERE c.session_id = %s AND c.kind = 'event' AND c.content_hash = ANY(%s)))
                RETURNING id, content_hash""",
            [*values.params, session.pk, [chunk.content_hash for chunk in chunks]],
        )
        inserted = {digest: pk for pk, digest in cursor.fetchall()}
    for chunk in chunks:
        if chunk.content_hash in inserted:
            rows.saved(chunk, inserted[chunk.content_hash])
    return _after_skipping(session, chunks, inserted)


def _after_skipping(session: Session, chunks: list[Chunk], inserted: dict[str, int]) -> list[int]:
    """The ids of the chunks inserted; the session's chunks of the skipped contents extended, and
    the new chunks of their messages recounted."""
    skipped = [chunk for chunk in chunks if chunk.content_hash not in inserted]
    if skipped:
        for chunk in skipped:
            Chunk.objects.filter(
                session=session, kind="event", content_hash=chunk.content_hash
            ).update(sequence_end=Greatest(F("sequence_end"), chunk.sequence_end))
        count_message_chunks(list(inserted.values()))
    return [chunk.pk for chunk in chunks if chunk.content_hash in inserted]


def count_message_chunks(chunk_ids: list[int]) -> None:
    """Count the chunks of the messages these event chunks belong to into each chunk's
    message_chunks (chunks made elsewhere than index_session_events: imports)."""
    if not chunk_ids:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            """UPDATE retrieval_chunk c SET message_chunks = m.n
               FROM (SELECT s.session_id, s.sequence_start, count(*) AS n FROM retrieval_chunk s
                     WHERE s.kind = 'event' AND (s.session_id, s.sequence_start) IN (
                         SELECT session_id, sequence_start FROM retrieval_chunk WHERE id = ANY(%s) AND kind = 'event')
                     GROUP BY s.session_id, s.sequence_start) m
               WHERE c.kind = 'event' AND c.session_id = m.session_id AND c.sequence_start = m.sequence_start
                 AND c.message_chunks <> m.n""",  # noqa: E501
            [chunk_ids],
        )


def _event_chunk(session: Session, event: Event, text: str, digest: str, context: str) -> Chunk:
    tags = event.metadata.get("tags") if isinstance(event.metadata, dict) else None
    tags = (
        [str(t).strip().lower()[:64] for t in tags if str(t).strip()]
        if isinstance(tags, list)
        else []
    )
    return Chunk(
        tenant_id=session.tenant_id,
        kind="event",
        session=session,
        workspace_id=session.workspace_id,
        channel_id=session.channel_id,
        tier="conversation",
        lifetime="conversation",
        user_id=session.user_id,
        role=event.role,
        agent=session.agent,
        tags=sorted(set(tags)),
        sequence_start=event.sequence,
        sequence_end=event.sequence,
        text=text,
        context=context,
        content_hash=digest,
        importance=event.importance,
        created_at=event.created_at,
        metadata=chunk_metadata(
            event_id=event.pk,
            role=event.role,
            tool_name=event.tool_name,
            tags=sorted(set(tags)),
            session=session.external_id,
            source=event.metadata.get("source") if isinstance(event.metadata, dict) else None,
            created_at=event.created_at.isoformat(),
        ),
    )


def _missing_event_runs(
    *, tenant_id: int | None, session_id: int | None
) -> list[tuple[int, list[int]]]:
    """Events no chunk covers, as (session pk, event ids) runs of consecutive sequences."""
    rows = _fetch(
        """SELECT e.session_id, e.id, e.sequence FROM memoryhub_event e
           WHERE (%s::bigint IS NULL OR e.tenant_id = %s) AND (%s::bigint IS NULL OR e.session_id = %s)
             AND NOT EXISTS (SELECT 1 FROM retrieval_chunk c
                             WHERE c.session_id = e.session_id AND c.kind = 'event'
                               AND e.sequence BETWEEN c.sequence_start AND c.sequence_end)
           ORDER BY e.session_id, e.sequence""",  # noqa: E501
        [tenant_id, tenant_id, session_id, session_id],
    )
    runs: list[tuple[int, list[int]]] = []
    previous: tuple[int, int] | None = None
    for session_pk, event_id, sequence in rows:
        if previous is None or previous != (session_pk, sequence - 1):
            runs.append((session_pk, []))
        runs[-1][1].append(event_id)
        previous = (session_pk, sequence)
    return runs


def rebuild_event_chunks(*, tenant_id: int | None = None, session_id: int | None = None) -> int:
    """Re-derive the chunks of events that have none (pruned while chunks of the transcript could
    still be deleted, or by an operator's opt-in prune): the log is the record. Consecutive events
    are indexed together so that each keeps the conversation context it was first embedded with.
    Returns how many chunks were made (events without searchable text make none)."""
    return sum(
        len(index_events(session_id=session_pk, event_ids=ids))
        for session_pk, ids in _missing_event_runs(tenant_id=tenant_id, session_id=session_id)
    )


def _fetch(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


# --- tool calls ------------------------------------------------------------------------------


@dataclass
class ToolCallReindex:
    events: int  # tool-call events looked at
    stale: int  # whose chunks differ from what extraction gives now
    chunks_deleted: int
    chunks_created: int


def _tool_call_plan(session_id: int, events: list[Event]) -> tuple[list[int], set[int]]:
    """Chunks (ids) of these tool-call events whose text is stale, and the events to re-index.

    An event's chunks start at its sequence (dedup only ever extends sequence_end). A stale chunk
    that dedup extended over later events takes them along: they are re-indexed too.
    """
    max_chars, overlap = chunk_sizes()
    stale_chunks: list[int] = []
    reindex: set[int] = set()
    by_sequence = {e.sequence: e for e in events}
    existing: dict[int, list[tuple[int, str, int | None]]] = {}
    for pk, start, end, digest in Chunk.objects.filter(
        session_id=session_id,
        kind="event",
        sequence_start__in=list(by_sequence),
    ).values_list("id", "sequence_start", "sequence_end", "content_hash"):
        existing.setdefault(start, []).append((pk, digest, end))
    ranges: list[tuple[int, int]] = []
    for sequence, event in by_sequence.items():
        wanted = {
            p.content_hash
            for p in chunk_text(extract_event_text(event), max_chars=max_chars, overlap=overlap)
        }
        have = existing.get(sequence, [])
        if {digest for _, digest, _ in have} == wanted:
            continue
        reindex.add(event.pk)
        for pk, _, end in have:
            stale_chunks.append(pk)
            ranges.append((sequence, end or sequence))
    if ranges:
        covered = Q()
        for start, end in ranges:
            covered |= Q(sequence__gte=start, sequence__lte=end)
        reindex.update(
            Event.objects.filter(covered, session_id=session_id).values_list("pk", flat=True)
        )
    return stale_chunks, reindex


def reindex_event_text(*, session_id: int, event_ids: list[int]) -> int:
    """Index these events of one session again after their searchable text changed (a tool
    call's sentence was written): their stale chunks replaced, in the current transaction.
    Returns the chunks created."""
    events = list(
        Event.objects.filter(session_id=session_id, pk__in=event_ids).select_related(
            "tool_sentence"
        )
    )
    stale_chunks, reindex = _tool_call_plan(session_id, events)
    if not reindex:
        return 0
    Chunk.objects.filter(pk__in=stale_chunks).delete()
    return len(index_events(session_id=session_id, event_ids=sorted(reindex)))


def reindex_tool_calls(
    *,
    tenant_id: int | None = None,
    dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
) -> ToolCallReindex:
    """Re-extract the text of tool-call events (docs/event-log.md#indexing) and replace chunks that
    no longer match it.

    For data indexed before tool arguments were extracted, or after extraction changed. Works a
    session at a time, each in its own transaction; new chunks are embedded on commit.
    `progress(sessions_done)` is called after each session.
    """
    events = Event.objects.exclude(tool_name="", tool_calls__isnull=True).select_related(
        "tool_sentence"
    )
    if tenant_id is not None:
        events = events.filter(tenant_id=tenant_id)
    session_ids = list(
        events.order_by("session_id").values_list("session_id", flat=True).distinct()
    )
    result = ToolCallReindex(0, 0, 0, 0)
    for done, session_id in enumerate(session_ids, start=1):
        with transaction.atomic():
            tool_events = list(events.filter(session_id=session_id).order_by("sequence"))
            stale_chunks, reindex = _tool_call_plan(session_id, tool_events)
            result.events += len(tool_events)
            result.stale += sum(1 for e in tool_events if e.pk in reindex)
            if not dry_run and reindex:
                result.chunks_deleted += Chunk.objects.filter(pk__in=stale_chunks).delete()[0]
                result.chunks_created += len(
                    index_events(session_id=session_id, event_ids=sorted(reindex))
                )
            elif dry_run:
                result.chunks_deleted += len(stale_chunks)
        if progress is not None:
            progress(done)
    return result
