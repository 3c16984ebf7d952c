"""What search, context, browse and stats answer, as the API documents them (their requests:
retrieval/serializers.py)."""

from __future__ import annotations

from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

from memoryhub.api.events import EventOutput
from memoryhub.api.placement import (
    channel_field,
    metadata_field,
    session_field,
    tags_field,
    user_field,
    workspace_field,
)


class SessionGroupOutput(serializers.Serializer):
    session = session_field("show")
    channel = channel_field("show", allow_null=True)
    workspace = workspace_field("show", allow_null=True)
    score = serializers.FloatField(
        help_text=(
            "Its evidence for the query: the p-norm of its messages' scores, "
            "blended in hybrid search with the query words they say; comparable "
            "within one response only."
        )
    )
    hits = serializers.IntegerField(
        help_text="How many of `results` are its (they follow one another)."
    )


class CitationOutput(serializers.Serializer):
    index = serializers.IntegerField(help_text="The cited result's position in `results` (from 0).")
    chunk_id = serializers.IntegerField(help_text="The cited result's chunk_id.")


class SynthesisErrorOutput(serializers.Serializer):
    code = serializers.ChoiceField(
        choices=["llm_unavailable", "llm_timeout", "llm_bad_reply"],
        help_text="Why there is no answer.",
    )
    message = serializers.CharField(
        help_text="A sentence for people (the details are in the server's log)."
    )


class SynthesisOutput(serializers.Serializer):
    # retrieval.synthesis.synthesize's answer: an answer with citations, or an error.

    answer = serializers.CharField(
        required=False,
        help_text=(
            "The model's answer from the results (empty when there were none: no model call)."
        ),
    )
    citations = CitationOutput(
        many=True,
        required=False,
        help_text=(
            "The results the answer rests on, as the model cited them; citations of "
            "anything it was not shown are dropped."
        ),
    )
    error = SynthesisErrorOutput(
        required=False, help_text="Instead of answer and citations: the model failed."
    )
    model = serializers.CharField(help_text="The language model that was asked.")


class ExplainStepOutput(serializers.Serializer):
    step = serializers.ChoiceField(
        choices=[
            "feedback",
            "date_hint",
            "summary_expansion",
            "one_per_message",
            "mmr",
            "dedup",
            "coverage",
        ],
        help_text=(
            "feedback: ranked against the query vector moved toward the first pass's best results;"
            " date_hint: written within a date the query names; summary_expansion: took the place"
            " of a summary of it that ranked higher; one_per_message: other chunks of the same"
            " message above it dropped (each message is listed once); mmr: maximal marginal"
            " relevance (results too similar to ones above move down); dedup: near-duplicates above"
            " it dropped; coverage: the last places go first to conversations not listed yet."
        ),
    )
    detail = serializers.CharField(
        help_text="The step in words (its weight, the dates, the summary)."
    )
    score_before = serializers.FloatField(
        required=False, help_text="Score steps: the score before the step."
    )
    score_after = serializers.FloatField(
        required=False, help_text="Score steps: the score after it."
    )
    vector_before = serializers.FloatField(
        required=False, allow_null=True, help_text="feedback: the cosine to the query."
    )
    vector_after = serializers.FloatField(
        required=False, allow_null=True, help_text="feedback: the cosine to the moved query vector."
    )
    rank_before = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="Rank steps: the rank before the step (1 = first).",
    )
    rank_after = serializers.IntegerField(
        required=False, allow_null=True, help_text="Rank steps: the rank after it."
    )


class ExplainPartOutput(serializers.Serializer):
    raw = serializers.FloatField(
        allow_null=True,
        help_text=(
            "The signal's own score (cosine, BM25, decayed "
            "relevance); null when it did not score this result."
        ),
    )
    normalised = serializers.FloatField(
        required=False, help_text="Min-max over the candidates (weighted fusion)."
    )
    weight = serializers.FloatField(
        required=False, help_text="Weighted fusion: the signal's weight."
    )
    rank = serializers.IntegerField(
        required=False, allow_null=True, help_text="rrf: the rank in this signal's list."
    )
    part = serializers.FloatField(help_text="What it adds to the fused score.")
    best_sentence = serializers.FloatField(
        required=False,
        help_text=(
            "vector: the cosine of the result's best sentence, embedded alone (long "
            "messages); raw is the higher of it and the result's own cosine."
        ),
    )


class ExplainOutput(serializers.Serializer):
    mode = serializers.CharField(help_text="The search's mode.")
    fusion = serializers.CharField(help_text="The search's fusion (weighted or rrf).")
    profile = serializers.CharField(help_text="The search's ranking profile.")
    parts = serializers.DictField(
        child=ExplainPartOutput(),
        help_text=(
            "Fusion's terms by signal: vector and text (hybrid), the one signal (vector; text for"
            " text and fuzzy), and relevance (the memory profile's decay, recency, importance and"
            " use; the seed002 profile's temporal score), importance (the seed002 profile). Empty"
            " for exact and regex."
        ),
    )
    fused = serializers.FloatField(help_text="The parts' sum: the score before any step.")
    steps = ExplainStepOutput(
        many=True, help_text="The stages that moved this result, in the order they ran."
    )
    score = serializers.FloatField(help_text="The final score (the result's `score`).")
    rank = serializers.IntegerField(help_text="Its place in the results (1 = first).")
    note = serializers.CharField(
        required=False, help_text="For exact and regex: how they order results."
    )


class SearchResultOutput(serializers.Serializer):
    chunk_id = serializers.IntegerField(help_text="The matching chunk's id.")
    text = serializers.CharField(help_text="The chunk's text.")
    score = serializers.FloatField(
        help_text="The ranking score (higher is better; comparable within one answer)."
    )
    session = session_field("show", allow_null=True)
    sequence_start = serializers.IntegerField(
        allow_null=True, help_text="The first event sequence it covers."
    )
    sequence_end = serializers.IntegerField(
        allow_null=True, help_text="The last event sequence it covers."
    )
    kind = serializers.CharField(help_text="event, note, fact, summary or document.")
    metadata = metadata_field(
        "show", note="With where it comes from (event id, note id, fact id, …)."
    )
    created_at = serializers.DateTimeField(help_text="When the memory was made.")
    role = serializers.CharField(allow_null=True, help_text="Who spoke, for messages.")
    tags = tags_field("show", cls=serializers.ListField, child=serializers.CharField())
    importance = serializers.FloatField(help_text="0–1: its weight in recall.")
    channel = channel_field("show", allow_null=True)
    workspace = workspace_field("show", allow_null=True)
    user_id = user_field("show")
    scores = serializers.DictField(
        child=serializers.FloatField(allow_null=True),
        help_text=(
            "The parts of the score: vector (cosine) and text (full-text rank); "
            "null when that part did not match."
        ),
    )
    embedded = serializers.BooleanField(
        help_text=(
            "False while the memory waits for its embedding: written in the same instant as the "
            "append and found by full text at once, it joins vector search when its vector lands."
        )
    )
    expanded = serializers.DictField(
        required=False, help_text="With expand: a summary's children and messages."
    )
    explain = ExplainOutput(required=False, help_text="With explain: why this result ranked here.")


class ContextItemOutput(serializers.Serializer):
    source = serializers.ChoiceField(
        choices=["recent", "critical", "summary", "salient", "relevant"],
        help_text=(
            "Why it is in: recent message, critical memory (importance "
            "0.85 or more, or pinned: always, in a reserved part of the "
            "budget), summary of the session's earlier messages (its "
            "rolling summary, summary-tree nodes), salient (important "
            "and relevant) memory, or relevant to the query."
        ),
    )
    text = serializers.CharField(
        help_text=(
            "The memory's text: a memory of several chunks whole (or the "
            "picked chunks in order) and once."
        )
    )
    score = serializers.FloatField(help_text="Its rank among the candidates.")
    kind = serializers.CharField(help_text="event, note, fact, summary or document.")
    session = session_field("show", allow_null=True)
    sequence_start = serializers.IntegerField(
        allow_null=True, help_text="The first event sequence it covers."
    )
    sequence_end = serializers.IntegerField(
        allow_null=True, help_text="The last event sequence it covers."
    )
    created_at = serializers.DateTimeField(help_text="When the memory was made.")
    role = serializers.CharField(allow_null=True, help_text="Who spoke, for messages.")
    chunk_id = serializers.IntegerField(
        allow_null=True,
        help_text=(
            "The chunk's id (of a memory of several "
            "chunks, the first picked; null for recent "
            "messages and the session's summaries)."
        ),
    )
    user_id = user_field("show")
    tokens = serializers.IntegerField(help_text="What it costs of the budget.")


class BrowsedEventOutput(EventOutput):
    session = session_field("show")
    channel = channel_field("show")


def _counts(help_text: str) -> serializers.DictField:
    return serializers.DictField(child=serializers.IntegerField(), help_text=help_text)


StatsOutput = inline_serializer(
    "Stats",
    {
        "tenant": serializers.CharField(help_text="The tenant's name."),
        "sessions": serializers.IntegerField(help_text="Sessions stored."),
        "active_sessions": serializers.IntegerField(help_text="Sessions not archived."),
        "events": serializers.IntegerField(help_text="Events stored."),
        "unsummarised_messages": serializers.IntegerField(
            help_text="Events no summary-tree leaf covers yet."
        ),
        "rolling_unsummarised_messages": serializers.IntegerField(
            help_text="Events no rolling summary covers yet."
        ),
        "compaction": inline_serializer(
            "CompactionStats",
            {
                "sessions_behind": serializers.IntegerField(
                    help_text="Sessions with events no summary-tree leaf covers."
                ),
                "messages_behind": serializers.IntegerField(
                    help_text="Those events (the tree's backlog)."
                ),
                "tree_depth": serializers.IntegerField(
                    help_text="Levels of the deepest summary tree (0: none)."
                ),
                "last_run_at": serializers.DateTimeField(
                    allow_null=True, help_text="When the newest summary node was written."
                ),
            },
            help_text="The summary tree's progress.",
        ),
        "chunks": inline_serializer(
            "ChunkStats",
            {
                "total": serializers.IntegerField(help_text="Searchable chunks."),
                "embedded": serializers.IntegerField(
                    help_text="Chunks with a vector of the current model."
                ),
                "pending_embedding": serializers.IntegerField(
                    help_text="Chunks still waiting for a vector."
                ),
                "embedding_errors": serializers.IntegerField(
                    help_text="Chunks whose embedding failed."
                ),
                "by_kind": _counts("Chunks by kind (event, note, fact, summary, document)."),
                "embedding_coverage": serializers.FloatField(
                    help_text="embedded / total (1.0 when there are none)."
                ),
                "embedding_model": serializers.CharField(
                    help_text="The model vectors are made with."
                ),
            },
            help_text="The search index.",
        ),
        "documents": serializers.IntegerField(help_text="Documents ingested."),
        "notes": serializers.IntegerField(help_text="Notes stored."),
        "facts": serializers.IntegerField(help_text="Facts stored."),
        "summaries": serializers.IntegerField(help_text="Summary tree nodes."),
        "summary_tree_depth": serializers.IntegerField(
            help_text="Levels of the deepest summary tree (0: none)."
        ),
        "schedules": inline_serializer(
            "ScheduleStats",
            {
                "total": serializers.IntegerField(help_text="Schedules."),
                "by_status": _counts("Schedules by status."),
                "failing": serializers.IntegerField(help_text="Schedules whose last run failed."),
            },
            help_text="Scheduled work.",
        ),
        # The task cluster's own figures (queued/failed tasks) cover every tenant: operators see
        # them in the admin, an API key never does.
        "queue": inline_serializer(
            "QueueStats",
            {
                "pending_embeddings": serializers.IntegerField(
                    help_text="Chunks waiting for a vector."
                ),
                "embedding_waiting": serializers.IntegerField(
                    help_text=(
                        "Chunks in the embed lane's queue: the tenant's, or for a key limited to a"
                        " workspace or an end user, those it may read."
                    )
                ),
                "embedding_set_aside": serializers.IntegerField(
                    help_text=(
                        "Chunks set aside after repeated embedding failures (retried from the"
                        " admin)."
                    )
                ),
                "embedding_eta_seconds": serializers.FloatField(
                    allow_null=True,
                    help_text=(
                        "When the tenant's last waiting chunk should have its vector, at the "
                        "measured rate (null: no rate measured yet, or a key limited to a "
                        "workspace or an end user: the tenant's queue is not theirs to see)."
                    ),
                ),
                "embedding_rate_per_second": serializers.FloatField(
                    help_text="Chunks the embed lanes embed per second."
                ),
                "sentences_waiting": serializers.IntegerField(
                    help_text=(
                        "Chunks searchable by their own vector whose sentence vectors the embed"
                        " lane has still to write (the tenant's, or those a limited key may read)."
                    )
                ),
            },
            help_text="Background work.",
        ),
    },
)
