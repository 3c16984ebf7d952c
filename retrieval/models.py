"""Chunks (the unit of retrieval: text, full-text vector, embedding) and ingested documents."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pgtrigger
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import connection, models
from django.db.models import Count, F, Q
from django.db.models.functions import Coalesce, Collate, Substr
from django.utils import timezone
from pgvector.django import HalfVectorField, HnswIndex

from accounts.models import Channel, Tenant, Workspace
from accounts.querysets import KeyScopedQuerySet
from memoryhub.models import Session
from memoryhub.searchable import KINDS, LIFETIMES, TIERS
from retrieval.embedders import DIMENSIONS
from retrieval.termstats import TERM_STAT_TRIGGERS

SCHEMA_VERSION = 1


class ChunkQuerySet(models.QuerySet["Chunk"]):
    def for_tenant(self, tenant_id: int) -> ChunkQuerySet:
        return self.filter(tenant_id=tenant_id)

    # What the embed lane still has to do, the one definition: next tenant, claim, backlog, /stats/,
    # the dashboard, `manage.py queue_status` and the metrics samples all go through these two, so
    # they can never disagree (a superseded fact's chunk that was never embedded is no work: the
    # lane once chose its tenant by a definition that counted it, and then found nothing to claim,
    # for good). The partial index chunk_pending_embedding has the condition both share.

    def embedding_waiting(self) -> ChunkQuerySet:
        """Chunks the embed lane will embed: current (not a superseded fact version), no vector yet,
        fewer failed attempts than EMBED_MAX_ATTEMPTS."""
        return self.filter(embedding_waiting_q())

    def embedding_set_aside(self) -> ChunkQuerySet:
        """Current chunks without a vector the lane will not try again (their `embedding_error` says
        why); the admin's retry puts them back."""
        return self.filter(PENDING_INDEX_CONDITION, embedding_attempts__gte=EMBED_MAX_ATTEMPTS)

    def sentences_waiting(self) -> ChunkQuerySet:
        """Chunks with their own vector whose sentences are not embedded yet: the embed lane's
        second kind of work (retrieval.sentence_vectors.waiting_for_sentences), over the partial
        index chunk_pending_sentences."""
        return self.filter(SENTENCES_PENDING_CONDITION)

    def per_tenant(self) -> dict[int, int]:
        """How many of these chunks each tenant has (a tenant with none is left out)."""
        return dict(
            self.order_by()
            .values_list("tenant_id")
            .annotate(n=Count("id"))
            .values_list("tenant_id", "n")
        )

    def with_access(self) -> ChunkQuerySet:
        """Each chunk with the `access_count` (0: never returned by search) and `accessed_at`
        (None) of its ChunkAccess row."""
        return self.annotate(
            access_count=Coalesce(F("access__access_count"), 0),
            accessed_at=F("access__accessed_at"),
        )


# A chunk whose embedding failed this many times is set aside (skipped until retried in the admin).
EMBED_MAX_ATTEMPTS = 3
# Current chunks without a vector: the partial index chunk_pending_embedding's condition.
PENDING_INDEX_CONDITION = Q(embedding__isnull=True, valid_to__isnull=True)
# Chunks with a vector but no sentence vectors yet: the partial index chunk_pending_sentences's.
SENTENCES_PENDING_CONDITION = Q(sentence_vectors__isnull=True, embedding__isnull=False)
# The importance from which context assembly recalls a memory whatever the query (salient, when
# relevant; critical from 0.85, always): the partial index chunk_important holds these chunks.
IMPORTANT_FROM = 0.7
# A memory pinned by its metadata is critical whatever its importance (chunk_pinned).
PINNED = {"pinned": True}
# The reason a superseded version that was never embedded is set aside with (retire_searchable).
SUPERSEDED_UNEMBEDDED = "superseded before it was embedded"


def embedding_waiting_q() -> Q:
    """ChunkQuerySet.embedding_waiting() as a condition (for a Count's filter)."""
    return PENDING_INDEX_CONDITION & Q(embedding_attempts__lt=EMBED_MAX_ATTEMPTS)


class CurrentChunks(models.Manager):  # type: ignore[type-arg]
    """Chunks of what memory holds now: a fact's superseded versions (valid_to set) are left out.
    The base manager (cascades, forget-user) still sees every row."""

    def get_queryset(self) -> Any:
        return super().get_queryset().filter(valid_to__isnull=True)


class Chunk(models.Model):
    # No single-column index on the four keys: each leads a composite index below (tenant: four of
    # them; session: chunk_session_hash; workspace: chunk_workspace_tier; channel:
    # chunk_channel_created), which serves the same lookups. Every index costs each append and each
    # non-heap-only update a write (migration 0011).
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)
    kind = models.CharField(max_length=10, choices=[(k, k) for k in KINDS], default="event")
    # Events: "" (the session and sequence range say where the chunk comes from); other kinds:
    # the memory's id (note id, fact id, summary id, document id).
    source_id = models.CharField(max_length=200, blank=True, default="")
    session = models.ForeignKey(
        Session, on_delete=models.CASCADE, null=True, blank=True, related_name="+", db_index=False
    )
    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, null=True, blank=True, related_name="+", db_index=False
    )
    channel = models.ForeignKey(
        Channel, on_delete=models.CASCADE, null=True, blank=True, related_name="+", db_index=False
    )
    tier = models.CharField(max_length=12, choices=[(t, t) for t in TIERS], default="conversation")
    lifetime = models.CharField(
        max_length=12, choices=[(v, v) for v in LIFETIMES], default="conversation"
    )
    user_id = models.CharField(max_length=200, blank=True, default="")
    role = models.CharField(max_length=10, blank=True, default="")
    agent = models.CharField(max_length=200, blank=True, default="")
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    sequence_start = models.BigIntegerField(null=True, blank=True)
    sequence_end = models.BigIntegerField(null=True, blank=True)
    # How many chunks the message has (events; 1 for anything else): full text scores a chunk as its
    # whole message, and reads the siblings only of a message that has some.
    message_chunks = models.IntegerField(default=1, db_default=1)
    text = models.TextField()
    # Earlier text of the conversation embedded together with this chunk (not shown, not searched
    # by full text): it lets a short answer be found by the question it answers.
    context = models.TextField(blank=True, default="")
    content_hash = models.CharField(max_length=64)
    metadata = models.JSONField(default=dict, blank=True)
    importance = models.FloatField(default=0.5)
    # How often search returned it, and when last: ChunkAccess, a row of its own.
    created_at = models.DateTimeField(
        default=timezone.now, help_text="When the source was written."
    )
    indexed_at = models.DateTimeField(default=timezone.now)
    embedding = HalfVectorField(dimensions=DIMENSIONS, null=True, blank=True)
    embedding_model = models.CharField(max_length=100, blank=True, default="")
    embedding_error = models.TextField(blank=True, default="")
    embedding_attempts = models.IntegerField(default=0)
    # How many sentence vectors (ChunkSentence) the chunk has; null: not split yet (the embed lane
    # embeds a chunk's own vector first and its sentences after).
    sentence_vectors = models.SmallIntegerField(null=True, blank=True)
    search_vector = SearchVectorField(null=True, blank=True, editable=False)

    # Set on the chunks of a fact's superseded version (docs/memory-model.md#fact-history): when
    # that version stopped being true. Searches leave such chunks out unless asked `as_of` a moment
    # they were valid.
    valid_to = models.DateTimeField(null=True, blank=True)

    objects = CurrentChunks.from_queryset(ChunkQuerySet)()
    every_version = ChunkQuerySet.as_manager()

    class Meta:
        base_manager_name = "every_version"
        indexes = [
            models.Index(fields=["tenant", "kind", "source_id"], name="chunk_tenant_source"),
            models.Index(fields=["session", "content_hash"], name="chunk_session_hash"),
            models.Index(fields=["tenant", "created_at"], name="chunk_tenant_created"),
            models.Index(fields=["channel", "created_at"], name="chunk_channel_created"),
            # Scope widening ORs "this workspace's wider tiers" and "the account tier" into filters.
            models.Index(fields=["workspace", "tier"], name="chunk_workspace_tier"),
            models.Index(fields=["tenant", "tier"], name="chunk_tenant_tier"),
            # A search limited to one end user (theirs and shared) in a big tenant: its vector
            # search is exact over these rows (retrieval.search.sql.vector_source).
            models.Index(fields=["tenant", "user_id"], name="chunk_tenant_user"),
            # What context assembly reads whatever the query, without a scan of every chunk in
            # scope (three scans were 150 ms of a context at 100k chunks): the important memories
            # (retrieval.context: salient from IMPORTANT_FROM, critical above), the pinned ones, and
            # the chunks of memories other than messages (retrieval.context_memories).
            models.Index(
                fields=["tenant", "-importance", "-created_at"],
                name="chunk_important",
                condition=Q(importance__gte=IMPORTANT_FROM),
            ),
            models.Index(
                fields=["tenant", "-importance", "-created_at"],
                name="chunk_pinned",
                condition=Q(metadata__contains=PINNED),
            ),
            models.Index(
                fields=["tenant", "kind", "source_id"],
                name="chunk_memory_parts",
                condition=~Q(kind="event") & ~Q(source_id=""),
            ),
            # Full text scores a chunk as its whole message: the other chunks of its event.
            models.Index(
                fields=["session", "sequence_start"],
                name="chunk_message",
                condition=Q(kind="event"),
            ),
            models.Index(
                fields=["tenant", "id"],
                name="chunk_pending_embedding",
                condition=PENDING_INDEX_CONDITION,
            ),
            models.Index(
                fields=["id"],
                name="chunk_pending_sentences",
                condition=SENTENCES_PENDING_CONDITION,
            ),
            GinIndex(fields=["tags"], name="chunk_tags"),
            # fastupdate off: a pending list after bulk inserts slowed selective queries 3–4×.
            GinIndex(fields=["search_vector"], name="chunk_search_vector", fastupdate=False),
            # ef_construction 128, twice pgvector's default: one user's 1M chunks, recall@100
            # of a walk with ef_search 1,000 0.942 → 0.981 (bench/README.md, "Many users").
            HnswIndex(
                name="chunk_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=128,
                opclasses=["halfvec_cosine_ops"],
            ),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=KINDS), name="chunk_kind_valid"),
        ]
        triggers = [
            # The chunk's own words weigh A; the conversation context it was written in weighs D,
            # so a reply can be found (at a discount) by the words of the message it answers.
            *TERM_STAT_TRIGGERS,
            # PostgreSQL's parser keeps paths, e-mails, URLs and snake_case names whole
            # ("kv/oldpathzeta"): their parts are indexed too, so "oldpathzeta" finds them.
            pgtrigger.Trigger(
                name="chunk_search_vector",
                when=pgtrigger.Before,
                operation=pgtrigger.Insert | pgtrigger.UpdateOf("text", "context"),
                declare=[("parts", "text")],
                func=r"""
                    parts := regexp_replace(array_to_string(ARRAY(
                        SELECT (regexp_matches(coalesce(NEW.text, ''), '\S*\w[/@.:_#=+-]+\w\S*', 'g'))[1]
                    ), ' '), '[^[:alnum:]]+', ' ', 'g');
                    NEW.search_vector :=
                        setweight(to_tsvector('pg_catalog.english', coalesce(NEW.text, '')), 'A')
                        || setweight(to_tsvector('pg_catalog.english', parts), 'A')
                        || setweight(to_tsvector('pg_catalog.english', coalesce(NEW.context, '')), 'D');
                    RETURN NEW;
                """,  # noqa: E501
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} chunk {self.pk}"

    @property
    def embedding_input(self) -> str:
        return f"{self.context}\n{self.text}" if self.context else self.text


class ChunkSentence(models.Model):
    """One sentence of a chunk, embedded alone (retrieval.chunking.sentences): written with the
    chunk's own vector, by the same model, and replaced with it. Search scores a candidate by the
    higher of its own cosine and its best sentence's (retrieval.search.weights.SENTENCES)."""

    # Deleted with its chunk by the database (a foreign key ON DELETE CASCADE, added by migration
    # 0014), as ChunkAccess rows are.
    chunk = models.ForeignKey(
        Chunk, on_delete=models.DO_NOTHING, related_name="+", db_constraint=False
    )
    embedding = HalfVectorField(dimensions=DIMENSIONS)

    def __str__(self) -> str:
        return f"sentence of chunk {self.chunk_id}"


class ChunkAccess(models.Model):
    """How often search has returned a chunk, and when it last did (decay's clock,
    docs/ranking.md#decay): a narrow row of its own, written by the web workers' batched
    reinforcement (retrieval.search.sql.accesses). In the chunk row, each count written was a new
    version of a wide row that every index of the chunk table, the HNSW graph and the full-text
    index included, had to point to again, and that fired the term statistics' update trigger
    (migration 0013, bench/README.md stop 31). A chunk never returned has no row: 0 uses, its
    clock from its creation.

    Deleting a chunk deletes its row (a foreign key ON DELETE CASCADE, added by the migration:
    chunks are deleted in bulk by statements the ORM does not see)."""

    chunk = models.OneToOneField(
        Chunk,
        on_delete=models.DO_NOTHING,
        primary_key=True,
        related_name="access",
        db_constraint=False,
    )
    access_count = models.IntegerField(default=0)
    accessed_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"chunk {self.chunk_id}: {self.access_count} uses"

    @classmethod
    def add(cls, counts: list[tuple[int, int]], at: datetime | None) -> None:
        """Add (chunk id, accesses) to the chunks' rows, last access `at` (kept if later), in one
        statement. In id order: the chunks are key-share locked (a chunk deleted meanwhile is
        left out, not a foreign-key error) and their rows written in the SELECT's order. Two
        processes adding overlapping batches (web workers) otherwise lock them in their own
        orders and deadlock (seen under 8 clients)."""
        ordered = sorted(counts)
        table = cls._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} (chunk_id, access_count, accessed_at) SELECT c.id, v.n, %s"
                f" FROM unnest(%s::bigint[], %s::int[]) AS v(id, n) JOIN {Chunk._meta.db_table} c"
                " ON c.id = v.id ORDER BY c.id FOR KEY SHARE OF c ON CONFLICT (chunk_id) DO UPDATE"
                f" SET access_count = {table}.access_count + excluded.access_count, accessed_at ="
                f" GREATEST({table}.accessed_at, excluded.accessed_at)",
                [at, [pk for pk, _ in ordered], [n for _, n in ordered]],
            )


class DocumentQuerySet(KeyScopedQuerySet):
    pass


class Document(models.Model):
    """A document ingested through POST /documents/; its content hash skips unchanged re-ingests.

    Its identity is its place and its URI: workspace, session (when given), owner and
    source URI. The same URI in another workspace, session or user's hands is another document, so
    a key confined to one of them can neither replace nor detect the others.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    session = models.ForeignKey(
        Session, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    source_uri = models.CharField(max_length=2000)
    user_id = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="The end user the document belongs to; empty: shared.",
    )
    content_hash = models.CharField(max_length=64)
    metadata = models.JSONField(default=dict, blank=True)
    chunk_count = models.IntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = DocumentQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "workspace", "user_id", "source_uri"],
                condition=Q(session__isnull=True),
                name="document_unique_uri_in_workspace",
            ),
            models.UniqueConstraint(
                fields=["session", "user_id", "source_uri"],
                condition=Q(session__isnull=False),
                name="document_unique_uri_in_session",
            ),
        ]
        indexes = [models.Index(fields=["tenant", "-updated_at"], name="document_tenant_updated")]

    def __str__(self) -> str:
        return self.source_uri

    @property
    def source_id(self) -> str:
        return f"doc-{self.pk}"

    def touch(self, moment: datetime | None = None) -> None:
        self.updated_at = moment or timezone.now()


def chunk_metadata(**fields: Any) -> dict[str, Any]:
    return {
        **{k: v for k, v in fields.items() if v not in (None, "", [], {})},
        "schema_version": SCHEMA_VERSION,
    }


class TermStat(models.Model):
    """Full-text statistics kept, not counted: per (tenant, workspace, channel), how many
    chunks say each lexeme in their own words (weight A). workspace/channel 0 is "none"; -1/-1 is
    the tenant's total over every bucket.

    Maintained by statement triggers on retrieval_chunk (retrieval.termstats), which only append
    delta rows (delta=true): no row is ever updated by a writer, so concurrent indexing never waits
    on a statistics row or deadlocks over one. A reader sums the rows of a key (exact at any time);
    retrieval.termstats.compact folds the deltas of each key into one row.
    """

    tenant_id = models.BigIntegerField()
    workspace_id = models.BigIntegerField()
    channel_id = models.BigIntegerField()
    lexeme = models.TextField()
    n = models.BigIntegerField()
    delta = models.BooleanField(db_default=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["tenant_id", "lexeme", "workspace_id", "channel_id"],
                include=["n"],
                name="termstat_lookup",
            ),
            models.Index(
                fields=["tenant_id", "lexeme"], condition=Q(delta=True), name="termstat_delta"
            ),
            # Lexemes by their letters after the first, for a query word whose first letter is the
            # typo (retrieval.search.fuzzy); "C": a prefix range means the same in any collation.
            models.Index(
                F("tenant_id"),
                Collate(Substr("lexeme", 2), "C"),
                include=["lexeme", "workspace_id", "channel_id", "n"],
                name="termstat_tail",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.lexeme!r} × {self.n} (tenant {self.tenant_id}, channel {self.channel_id})"


class ScopeSize(models.Model):
    """Chunks per (tenant, workspace, channel, owner), kept like TermStat (same triggers, deltas,
    compaction); -1/-1 is the tenant's total per owner. The size of a scope for IDF, and for the
    choice between an HNSW and an exact vector search (retrieval.search.sql.vector_source)."""

    tenant_id = models.BigIntegerField()
    workspace_id = models.BigIntegerField()
    channel_id = models.BigIntegerField()
    user_id = models.CharField(max_length=200)
    n = models.BigIntegerField()
    delta = models.BooleanField(db_default=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["tenant_id", "workspace_id", "channel_id", "user_id"],
                include=["n"],
                name="scopesize_lookup",
            ),
            models.Index(fields=["tenant_id"], condition=Q(delta=True), name="scopesize_delta"),
        ]

    def __str__(self) -> str:
        return (
            f"{self.n} chunks (tenant {self.tenant_id}, channel {self.channel_id}, user"
            f" {self.user_id!r})"
        )
