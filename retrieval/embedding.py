"""Embeddings: the chunk table is the queue (chunks without a vector of the current model).

Chunks and their full-text vectors are written in the writing transaction (retrieval.indexing),
so an acknowledged append is findable by text at once; its vector follows when the embed lane
(EmbedLane, run by `manage.py work`) gets to it. The lane claims batches with
SELECT … FOR UPDATE SKIP LOCKED, so lanes on several machines share the table, and a lane
killed mid-batch loses nothing: its transaction rolls back and the rows are free again. It takes
the tenants with a backlog in turn (round-robin), so one tenant's import does not starve another.

A chunk is searchable by meaning once its own vector is written, so the lane embeds the chunks'
own vectors first and their sentences (retrieval.sentence_vectors) after: a claimed batch writes
the chunks' vectors alone, leaving `sentence_vectors` NULL on those with sentences to embed; the
lane embeds those after the chunks appended up to SENTENCE_GRACE_SECONDS after their own vector
(_sentences_due). Callers without a lane (embed_chunks, backfill_embeddings) embed both at once.

A failed batch is split until the failing chunk is alone: that chunk records its error and one
attempt, the others are embedded. After retrieval.models.EMBED_MAX_ATTEMPTS a chunk is set aside
(left out of the claims, retryable in the admin). EmbedderUnavailable (no model, no memory) is the
embedder's fault, not the chunk's: no attempt is counted and the lane backs off.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.db.models.functions import Length
from django.utils import timezone

from accounts.models import Tenant
from memoryhub import metrics
from memoryhub.plumbing import background as lanes
from memoryhub.plumbing.background import (
    LaneBackoff,
    StepResult,
    lane_rate,
    notify_work,
    round_robin_etas,
    time_budget,
)
from retrieval import sentence_vectors, termstats
from retrieval.embedder_preparation import prepare_embedder
from retrieval.embedders import EmbedderUnavailable, check_vectors, get_embedder
from retrieval.models import Chunk, ChunkQuerySet
from retrieval.sentence_vectors import (
    RULE_FIELDS,
    clear_sentences,
    embed_sentence_batch,
    embed_sentences,
    sentence_marks,
)
from retrieval.vectors import halfvec_text, no_commit_wait

logger = logging.getLogger(__name__)

# Texts per background embedding batch (50): one model call and one vector write.
BACKFILL_BATCH = 50
CLAIM_WINDOW = 10  # batches: a claim picks texts of alike length among this many batches' worth
STALE_MODEL_CHECK_SECONDS = 60.0  # how often an idle lane looks for vectors of another model
# A chunk's sentences wait behind the chunks appended up to this long after its own vector was
# written, and go before later ones: a burst of appends is searchable by meaning first, and under a
# steady stream no sentence vector lags the chunks' own by more (oldest first, so neither starves).
SENTENCE_GRACE_SECONDS = 60.0


def waiting(tenant_id: int | None = None) -> ChunkQuerySet:
    """Rows the lane still has to embed (ChunkQuerySet.embedding_waiting, the one definition every
    selecting, counting and claiming statement of this lane goes through)."""
    qs = Chunk.objects.embedding_waiting()
    return qs.filter(tenant_id=tenant_id) if tenant_id is not None else qs


def _stale_rows(embedder_name: str) -> Q:
    return Q(embedding__isnull=True) | ~Q(embedding_model=embedder_name)


# Seconds spent inside the model by this thread (the lane reads and resets it each step).
_timing = threading.local()


def _take_model_seconds() -> float:
    seconds = getattr(_timing, "model_seconds", 0.0)
    _timing.model_seconds = 0.0
    return seconds


# --- claiming ----------------------------------------------------------------------------------


def _claim(query: Q | ChunkQuerySet, limit: int, exclude: set[int]) -> list[Chunk]:
    """Lock up to `limit` rows to embed: the next row in line (oldest) and, among the
    CLAIM_WINDOW × limit rows after it, those whose length is nearest to its own.

    torch pads every text of a batch to the longest one: batches of alike length (what encode()
    makes of one big call) waste no time on padding (ONNX Runtime embeds one text per call). The
    next row in line is always taken, so no row waits behind shorter ones. Rows another worker holds
    are skipped: when all of the choice was taken, the claim looks again past them.
    """
    candidates = query if isinstance(query, ChunkQuerySet) else Chunk.objects.filter(query)
    skipped: set[int] = set()
    for _ in range(4):
        window = list(
            candidates.exclude(pk__in=exclude | skipped)
            .order_by("id")
            .annotate(size=Length("text") + Length("context"))
            .values_list("id", "size")[: limit * CLAIM_WINDOW]
        )
        if not window:
            return []
        target = window[0][1]
        chosen = [pk for pk, _ in sorted(window, key=lambda row: abs(row[1] - target))[:limit]]
        rows = _lock(candidates.filter(pk__in=chosen))
        if rows:
            return rows
        skipped.update(chosen)  # all held by other workers: look past them
    return []


def _lock(query: Q | ChunkQuerySet) -> list[Chunk]:
    """Lock the rows to embed that no other worker holds (each row's condition is checked again
    under its lock: one embedded meanwhile is not taken twice)."""
    rows = query if isinstance(query, ChunkQuerySet) else Chunk.objects.filter(query)
    return list(
        rows.select_for_update(skip_locked=True)
        .order_by("id")
        .only("id", "context", "embedding_attempts", *RULE_FIELDS)
    )


def next_tenant(after: int, *, wrap: bool = True) -> int | None:
    """The tenant after `after` (wrapping around unless not `wrap`) that has chunks waiting:
    round-robin over the partial index of waiting chunks, one index probe per call. The same
    definition as the claim's (waiting()), so a tenant it names has rows to claim."""
    for floor in (after, 0) if wrap else (after,):
        tenant = (
            waiting()
            .filter(tenant_id__gt=floor)
            .order_by("tenant_id")
            .values_list("tenant_id", flat=True)
            .first()
        )
        if tenant is not None:
            return int(tenant)
    return None


# --- embedding claimed rows --------------------------------------------------------------------


def _embed_claimed(rows: list[Chunk]) -> tuple[int, int]:
    """Embed claimed rows' own vectors (inside the claiming transaction); their sentences are
    left waiting (sentence_marks). Returns (embedded, failed).

    A failure splits the batch until the failing chunk is alone; it alone records the error."""
    if not rows:
        return 0, 0
    embedder = get_embedder()
    try:
        began = time.perf_counter()
        try:
            vectors = embedder.embed([row.embedding_input for row in rows])
        finally:
            _timing.model_seconds = (
                getattr(_timing, "model_seconds", 0.0) + time.perf_counter() - began
            )
        check_vectors(embedder, vectors, len(rows))
    except EmbedderUnavailable:
        raise
    except Exception as exc:  # the batch's fault: find the chunk that causes it
        if len(rows) > 1:
            half = len(rows) // 2
            first, second = _embed_claimed(rows[:half]), _embed_claimed(rows[half:])
            return first[0] + second[0], first[1] + second[1]
        logger.warning("embedding chunk %s failed: %s", rows[0].pk, exc)
        Chunk.objects.filter(pk=rows[0].pk).update(
            embedding_error=f"{exc.__class__.__name__}: {exc}"[:2000],
            embedding_attempts=F("embedding_attempts") + 1,
        )
        return 0, 1
    ids = [row.pk for row in rows]
    clear_sentences(ids)
    _write_vectors(ids, vectors, embedder.name, sentence_marks(rows))
    return len(rows), 0


def _write_vectors(
    ids: list[int], vectors: list[list[float]], model: str, split: list[int | None]
) -> None:
    """One UPDATE … FROM (VALUES …) for the whole batch: bulk_update's CASE per column cost six
    times as much here (19 against 3 ms a chunk), a share of the model's own time. `split`: each
    chunk's `sentence_vectors` (0: it gets none; None: its sentences wait)."""
    values = ", ".join(["(%s::bigint, %s::halfvec, %s::smallint)"] * len(ids))
    params: list[Any] = [model, timezone.now()]
    for pk, vector, count in zip(ids, vectors, split, strict=True):
        params += [pk, halfvec_text(vector), count]
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {Chunk._meta.db_table} c SET embedding = v.vector, embedding_model = %s,"
            " embedding_error = '', embedding_attempts = c.embedding_attempts + 1, indexed_at ="
            f" %s, sentence_vectors = v.split FROM (VALUES {values}) AS v(id, vector, split) WHERE"
            " c.id = v.id RETURNING c.tenant_id",
            params,
        )
        per_tenant = Counter(tenant_id for (tenant_id,) in cursor.fetchall())
    metrics.count_arrivals(dict(per_tenant), kind="embedded")  # the dashboard's rate, on commit


def _embed_or_record(rows: list[Chunk]) -> tuple[int, int]:
    """Like _embed_claimed, but an unavailable embedder is recorded on the rows (no attempt
    counted) instead of raised: for callers with no lane to back off (commands, eager mode), which
    embed the rows' sentences after it (_embed_sentences_of)."""
    try:
        return _embed_claimed(rows)
    except EmbedderUnavailable as exc:
        logger.warning("embedder unavailable for %d chunks: %s", len(rows), exc)
        Chunk.objects.filter(pk__in=[r.pk for r in rows]).update(
            embedding_error=f"{exc.__class__.__name__}: {exc}"[:2000]
        )
        return 0, len(rows)


def _embed_sentences_of(chunk_ids: list[int]) -> None:
    """The sentence vectors of these chunks now (those embedded and waiting for them)."""
    try:
        embed_sentences(batch=BACKFILL_BATCH, ids=chunk_ids)
    except EmbedderUnavailable as exc:  # they stay waiting: the lane embeds them later
        logger.warning("embedder unavailable for sentences of %d chunks: %s", len(chunk_ids), exc)


def embed_chunks(chunk_ids: list[int]) -> dict[str, int]:
    """Embed these chunks now (those still without a current embedding), and their sentences, in
    batches."""
    batch = BACKFILL_BATCH
    name = get_embedder().name
    embedded = failed = 0
    for start in range(0, len(chunk_ids), batch):
        ids = chunk_ids[start : start + batch]
        with transaction.atomic():
            # These rows are known: lock them directly (no length-alike window).
            done, bad = _embed_or_record(_lock(Q(pk__in=ids) & _stale_rows(name)))
            embedded, failed = embedded + done, failed + bad
        _embed_sentences_of(ids)
    return {"embedded": embedded, "failed": failed}


def request_embedding(chunk_ids: list[int]) -> None:
    """New chunks wait in the table for the embed lane, woken at commit. With
    MEMORYHUB_TASKS_EAGER (tests, one-off tools) they are embedded inline after commit instead."""
    if not chunk_ids:
        return
    notify_work()
    if settings.MEMORYHUB_TASKS_EAGER:
        ids = list(chunk_ids)
        transaction.on_commit(lambda: embed_chunks(ids))


def pending_embeddings(*, tenant_id: int | None = None) -> ChunkQuerySet:
    """Chunks still without an embedding of the current model (what a backfill would embed)."""
    qs = Chunk.objects.filter(_stale_rows(get_embedder().name))
    return qs.filter(tenant_id=tenant_id) if tenant_id is not None else qs


def backfill_embeddings(
    *,
    tenant_id: int | None = None,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, int]:
    """Embed chunks still without an embedding of the current model, set-aside ones included
    (batches of 50).

    Each chunk is tried at most once per call, so a failing embedder cannot loop forever; the
    failures stay recorded and the next run tries them again. `progress(embedded, failed)` is
    called after each batch.
    """
    batch = BACKFILL_BATCH
    query = _stale_rows(get_embedder().name)
    if tenant_id is not None:
        query &= Q(tenant_id=tenant_id)
    tried: set[int] = set()
    embedded = failed = 0
    while limit is None or len(tried) < limit:
        size = batch if limit is None else min(batch, limit - len(tried))
        with transaction.atomic():
            rows = _claim(query, size, tried)
            if not rows:
                break
            tried.update(r.pk for r in rows)
            done, bad = _embed_or_record(rows)
        _embed_sentences_of([r.pk for r in rows])
        embedded, failed = embedded + done, failed + bad
        if progress is not None:
            progress(embedded, failed)
    remaining = Chunk.objects.filter(query).count()
    return {"embedded": embedded, "failed": failed, "remaining": remaining}


def reindex_chunks(chunk_ids: list[int]) -> int:
    """Recompute the embedding of these chunks now (model change, tools). Returns how many."""
    ids = list(chunk_ids)
    Chunk.objects.filter(pk__in=ids).update(
        embedding=None, embedding_model="", embedding_error="", embedding_attempts=0
    )
    return embed_chunks(ids)["embedded"]


def queue_for_embedding(chunk_ids: list[int]) -> int:
    """Put these chunks back in the lane's queue (admin re-embed, retry of set-aside chunks)."""
    with transaction.atomic():
        count = Chunk.objects.filter(pk__in=list(chunk_ids)).update(
            embedding=None, embedding_model="", embedding_error="", embedding_attempts=0
        )
        request_embedding(list(chunk_ids))
    return count


# --- the lane ----------------------------------------------------------------------------------


class EmbedLane:
    """Embeds waiting chunks a batch at a time, one tenant after another."""

    name = "embed"
    listens = True

    def __init__(self) -> None:
        self.idle_seconds = lanes.WORK_IDLE_SECONDS
        self._tenant = 0  # round-robin cursor
        self._stale_checked = 0.0
        self._prepared = False

    def step(self) -> StepResult:
        if not self._prepared:  # a lane on a machine of its own makes its ONNX model itself
            prepare_embedder()
            self._prepared = True
        # Appends write chunks (and the search statistics' delta rows) in the web processes; the
        # lane, always running, folds those deltas while they are few (at most every 30 s).
        termstats.maybe_compact()
        if self._sentences_due() and (sentences := self._sentence_step()) is not None:
            return sentences
        # A tenant whose waiting rows all turn out held by another lane is passed over at once: the
        # step goes on to the next one, once round; it ends empty only when no tenant had any.
        tried: set[int] = set()
        tenant = next_tenant(self._tenant)
        while tenant is not None and tenant not in tried:
            tried.add(tenant)
            self._tenant = tenant
            _take_model_seconds()
            result = self._embed_tenant(tenant)
            if result.found_work:
                result.model_seconds = _take_model_seconds()
                return result
            tenant = next_tenant(tenant)
        if tried:  # every tenant's rows were held by other lanes: theirs to do
            return StepResult()
        return self._sentence_step() or self._stale_model_step()

    def has_work(self, before: datetime | None = None) -> bool:
        """Whether rows this lane could claim now wait (written before `before`, when given;
        memoryhub.plumbing.background asks after an empty step): by the claim's definition, less the
        rows other lanes hold."""
        rows = waiting() if before is None else waiting().filter(indexed_at__lt=before)
        with transaction.atomic():
            return bool(
                list(rows.select_for_update(skip_locked=True).values_list("id", flat=True)[:1])
            )

    def _embed_tenant(self, tenant: int) -> StepResult:
        # The budget bounds the batch's SQL (statement_timeout); encode() itself is bounded by the
        # batch: at most BACKFILL_BATCH texts, each cut at the model's 256 tokens.
        with transaction.atomic(), time_budget(lanes.STEP_SECONDS):
            no_commit_wait()
            rows = _claim(waiting(tenant), BACKFILL_BATCH, set())
            try:
                done, failed = _embed_claimed(rows)
            except EmbedderUnavailable as exc:
                raise LaneBackoff(f"embedder unavailable: {exc}") from exc
        return StepResult(done=done, failed=failed)

    def _sentences_due(self) -> bool:
        """Whether sentence work takes this step: the chunk next in line for its sentences got its
        own vector more than SENTENCE_GRACE_SECONDS before every chunk still waiting for its own
        was appended (a waiting chunk's indexed_at: when it was written)."""
        since = sentence_vectors.waiting_since()
        if since is None:
            return False
        deadline = since + timedelta(seconds=SENTENCE_GRACE_SECONDS)
        return not waiting().filter(indexed_at__lt=deadline).exists()

    def _sentence_step(self) -> StepResult | None:
        """Chunks with their own vector get their sentence vectors, about a chunk batch's worth of
        sentences per step (the partial index chunk_pending_sentences finds them); None when none
        is left."""
        try:
            with time_budget(lanes.STEP_SECONDS):
                done = embed_sentence_batch(batch=BACKFILL_BATCH)
        except EmbedderUnavailable as exc:
            raise LaneBackoff(f"embedder unavailable: {exc}") from exc
        if done is None:
            return None
        return StepResult(done=done.chunks, model_seconds=done.model_seconds)

    def _stale_model_step(self) -> StepResult:
        """Vectors of another model (the embedder was changed): re-embed them when idle. Looked
        for once a minute at most: without an index that is a scan of the table."""
        if time.monotonic() - self._stale_checked < STALE_MODEL_CHECK_SECONDS:
            return StepResult()
        name = get_embedder().name
        with transaction.atomic():
            ids = list(
                Chunk.objects.filter(embedding__isnull=False)
                .exclude(embedding_model=name)
                .order_by("id")
                .values_list("id", flat=True)[:BACKFILL_BATCH]
            )
            if not ids:
                self._stale_checked = time.monotonic()
                return StepResult()
            try:
                done, failed = _embed_claimed(_lock(Q(pk__in=ids) & _stale_rows(name)))
            except EmbedderUnavailable as exc:
                raise LaneBackoff(f"embedder unavailable: {exc}") from exc
        return StepResult(done=done, failed=failed)


# --- the backlog, per tenant -------------------------------------------------------------------


def embedding_rate() -> float:
    """Chunks a second the live embed lanes achieve while busy (their measured rates, summed)."""
    return lane_rate("embed")


def backlog(*, tenant_id: int | None = None) -> list[dict[str, Any]]:
    """Per tenant with chunks waiting, set aside or waiting for their sentence vectors: waiting,
    set aside, the ETA of its last chunk at the measured rate (None when no embed lane has measured
    one) and `sentences_waiting` (chunks searchable by their own vector whose sentences the lane
    still has to embed). Counted by the lane's own definitions (ChunkQuerySet.embedding_waiting /
    embedding_set_aside, sentence_vectors.waiting_for_sentences), over their partial indexes."""
    waiting_now = backlog_waiting()
    aside_qs = Chunk.objects.embedding_set_aside()
    split_qs = sentence_vectors.waiting_for_sentences()
    if tenant_id is not None:
        aside_qs, split_qs = (
            aside_qs.filter(tenant_id=tenant_id),
            split_qs.filter(tenant_id=tenant_id),
        )
    aside, split = aside_qs.per_tenant(), split_qs.per_tenant()
    mine = (set(aside) | set(split)) | (
        {t for t in waiting_now if t == tenant_id} if tenant_id is not None else set(waiting_now)
    )
    names = dict(Tenant.objects.filter(pk__in=mine).values_list("pk", "name"))
    etas = round_robin_etas(waiting_now, embedding_rate())
    rows = [
        {
            "tenant_id": t,
            "tenant": names.get(t, ""),
            "waiting": waiting_now.get(t, 0),
            "set_aside": aside.get(t, 0),
            "eta_seconds": etas.get(t),
            "sentences_waiting": split.get(t, 0),
        }
        for t in mine
    ]
    return sorted(rows, key=lambda r: (-r["waiting"], r["tenant"]))


def backlog_waiting() -> dict[int, int]:
    """Chunks waiting per tenant (the lane's definition)."""
    return waiting().per_tenant()
