"""Input validation and output shapes of search, context, browse, stats and documents."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

from memoryhub.api.common import StrictSerializer
from memoryhub.api.events import EventOutput
from memoryhub.api.fields import MetadataField, StrictFloatField, StrictIntegerField
from memoryhub.models import Role
from memoryhub.searchable import KINDS
from retrieval.embedders import DIMENSIONS
from retrieval.search import FUSIONS, MODES, PROFILES, SCOPES
from retrieval.search.request import (
    DEFAULT_HITS_PER_SESSION,
    GROUPINGS,
    MAX_HITS_PER_SESSION,
    MAX_TOP_K,
)
from retrieval.vectors import vector_problem


class TopKField(serializers.IntegerField):
    def __init__(self, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(min_value=1, **kwargs)

    def to_internal_value(self, data):  # type: ignore[no-untyped-def]
        value = super().to_internal_value(data)
        if value > MAX_TOP_K:
            raise serializers.ValidationError(
                f"Ensure this value is less than or equal to {MAX_TOP_K}.", code="max_value"
            )
        return value


class TopKFieldSchema(OpenApiSerializerFieldExtension):
    """The schema's maximum is the setting's, read when the schema is made (as the check above)."""

    target_class = TopKField

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        return {"type": "integer", "minimum": 1, "maximum": MAX_TOP_K}


SCOPE_HELP = ("How far to read other conversations' messages: conversation (= session), channel, workspace "
              "or account (the whole tenant). Notes, facts and documents apply where they were made "
              "whatever the scope: with a session, those of its conversation, channel, workspace and "
              "account. Default: conversation with a session, channel with a channel, workspace with a "
              "workspace, else account.")


def as_of_field() -> serializers.DateTimeField:
    """Search's and context's `as_of`: the memory as it stood at that moment."""
    return serializers.DateTimeField(
        required=False, allow_null=True, default=None,
        help_text="Answer as the memory stood at this moment (ISO 8601; default: now): nothing recorded after "
                  "it, and of each fact the version that was true then. Relative dates in the query "
                  "(\"yesterday\", \"last week\", \"three months ago\") are read against it.")


def MIN_COSINE_FIELD() -> serializers.FloatField:  # noqa: N802 - a field factory, used as a field
    return serializers.FloatField(
        min_value=-1.0, max_value=1.0, required=False, allow_null=True, default=None,
        help_text="Only memories at least this close in meaning to the query (cosine of the embeddings, "
                  "e.g. 0.655). A memory sharing the query's words but not its meaning is left out too. "
                  "Default: search and context keep a memory that shares a query word or has cosine "
                  "of at least 0.2; -1 keeps everything ranked.")


class SearchInput(StrictSerializer):
    query = serializers.CharField(max_length=4000, required=False, allow_blank=True, default="", trim_whitespace=False,
                                  help_text="What to look for, in natural language (or a query_embedding).")
    query_embedding = serializers.ListField(
        child=StrictFloatField(), min_length=DIMENSIONS, max_length=DIMENSIONS, required=False, allow_null=True,
        default=None, help_text=f"A ready query vector ({DIMENSIONS} floats) instead of embedding the query text.",
    )
    session = serializers.CharField(max_length=200, required=False,
                                    help_text="Search as this conversation: its memories first (scope), its user's.")
    channel = serializers.CharField(max_length=100, required=False, help_text="Search this channel's memories.")
    workspace = serializers.CharField(max_length=100, required=False, help_text="Search this workspace's memories.")
    scope = serializers.ChoiceField(choices=[*SCOPES, "session"], required=False, help_text=SCOPE_HELP)
    tags = serializers.ListField(child=serializers.CharField(max_length=64), max_length=16, required=False, default=list,
                                 help_text="Only memories with all these tags.")
    roles = serializers.ListField(child=serializers.ChoiceField(choices=Role.choices), required=False, default=list,
                                  help_text="Only messages of these roles (user, assistant, tool, system).")
    kinds = serializers.ListField(child=serializers.ChoiceField(choices=KINDS), required=False, default=list,
                                  help_text="Only these kinds: event (messages), note, fact, summary, document.")
    agent = serializers.CharField(max_length=200, required=False, allow_null=True, default=None,
                                  help_text="Only memories of this agent's sessions.")
    user_id = serializers.CharField(max_length=200, required=False, allow_null=True, default=None,
                                    help_text="Search as this end user: their memories and shared knowledge (notes, facts "
                                              "and documents without an owner), never another user's nor a "
                                              "conversation nobody owns (default: the session's user).")
    since = serializers.DateTimeField(required=False, allow_null=True, default=None,
                                      help_text="Only memories from this time on (ISO 8601).")
    until = serializers.DateTimeField(required=False, allow_null=True, default=None,
                                      help_text="Only memories before this time (after since).")
    as_of = as_of_field()
    top_k = TopKField(required=False, default=10,
                      help_text="How many results (default 10; the server sets the most).")
    mode = serializers.ChoiceField(
        choices=MODES, required=False, default="hybrid",
        help_text="hybrid (meaning and words, the default), vector (meaning), text (words, BM25; a misspelt word also matches "
                  "the closest stored ones), fuzzy (text, every word widened to similar ones), exact (the query as a "
                  "substring) or regex (the query as a PostgreSQL regular expression over the text, at most "
                  "the server's length limit; a pattern that does not compile is `invalid_regex`, one that runs "
                  "past the server's time limit is `regex_timeout`). "
                  "exact and regex return the newest matches first, each scored 1.")
    case_sensitive = serializers.BooleanField(
        required=False, default=False, help_text="Modes exact and regex: match case (default: ignore it).")
    explain = serializers.BooleanField(
        required=False, default=False,
        help_text="Each result carries `explain`: why it ranked there (fusion's parts, the fused score, every "
                  "re-ranking step that moved it with its score or rank before and after). Off: the response "
                  "is as without the field.")
    fusion = serializers.ChoiceField(choices=FUSIONS, required=False, default="weighted",
                                     help_text="How hybrid mode merges its two rankings: weighted scores or rrf "
                                               "(reciprocal rank fusion).")
    vector_weight = serializers.FloatField(min_value=0.0, max_value=1.0, required=False, default=None,
                                           help_text="Weighted fusion: the meaning score's weight, used exactly as given "
                                                     "(no adaptive balancing, no feedback step). When neither weight is "
                                                     "sent: 0.7, moved a share of the way "
                                                     "toward the list whose best results stand out most for this "
                                                     "query; explain shows the weights used.")
    text_weight = serializers.FloatField(min_value=0.0, max_value=1.0, required=False, default=None,
                                         help_text="Weighted fusion: the word score's weight, used exactly as given "
                                                   "(default 0.3, balanced as vector_weight is when neither is sent).")
    profile = serializers.ChoiceField(choices=PROFILES, required=False, allow_null=True, default="default",
                                      help_text="Ranking profile: default, memory (favours important, recent and "
                                                "often recalled memories), or seed002 (a published memory formula as "
                                                "written: 0.3 BM25 + 0.3 cosine + 0.3 e^(-0.05 days since last "
                                                "access)(1 + 0.02 accesses) + 0.1 importance; no re-ranking).")
    decay_weight = serializers.FloatField(
        min_value=0.0, max_value=1.0, required=False, default=0.0,
        help_text="Default profile: this share of each result's score comes from its decayed relevance "
                  "(importance · tier rate^hours since last use · (1 + ln(1 + uses)), at as_of or now). "
                  "Default 0: on LoCoMo and LongMemEval it cost recall.")
    min_cosine = MIN_COSINE_FIELD()
    expand = serializers.BooleanField(
        required=False, default=False,
        help_text="Summary hits carry `expanded`: their child summaries and the messages they condense "
                  "(at most 20; GET /summaries/{id}/ pages the rest).")
    synthesize = serializers.BooleanField(
        required=False, default=False,
        help_text="Also answer the query from the results with the configured language model (the one the "
                  "server's operator set up for summaries): `synthesis` is {answer, citations: [{index, "
                  "chunk_id}] of results it rests on, model}. The model sees only these results. Without a model: "
                  "400 llm_not_configured. When the model fails or times out the results still come back, and "
                  "`synthesis` is {error: {code: llm_unavailable | llm_timeout | llm_bad_reply, message}, model}.")
    group_by = serializers.ChoiceField(
        choices=GROUPINGS, required=False, allow_null=True, default=None,
        help_text="session: which conversations are about the query. top_k then counts conversations, ranked "
                  "by the evidence of all their matching messages; `sessions` lists them with their scores, "
                  "and `results` holds each one's best hits_per_session matches (a text repeated within it once), "
                  "conversation by conversation. "
                  "Memories outside any conversation (notes, facts, documents without a session) are left out.")
    hits_per_session = StrictIntegerField(
        min_value=1, max_value=MAX_HITS_PER_SESSION, required=False, allow_null=True, default=None,
        help_text=f"With group_by: the matches shown per conversation (default {DEFAULT_HITS_PER_SESSION}).")

    def validate_tags(self, tags: list[str]) -> list[str]:
        return sorted({t.strip().lower() for t in tags if t.strip()})

    def validate_query_embedding(self, vector: list[float] | None) -> list[float] | None:
        problem = vector_problem(vector) if vector is not None else None
        if problem:
            raise serializers.ValidationError(f"Unusable query_embedding: {problem}.", code="invalid_embedding")
        return vector

    def validate(self, attrs):  # type: ignore[no-untyped-def]
        attrs["profile"] = attrs.get("profile") or "default"
        if not attrs["query"].strip() and attrs.get("query_embedding") is None:
            raise serializers.ValidationError(
                {"query": ["Give query text or a query_embedding."]}, code="query_required"
            )
        if attrs.get("since") and attrs.get("until") and attrs["since"] >= attrs["until"]:
            raise serializers.ValidationError({"since": ["since must be before until."]}, code="invalid_time_range")
        if attrs.get("hits_per_session") is not None and attrs.get("group_by") is None:
            raise serializers.ValidationError({"hits_per_session": ["hits_per_session needs group_by 'session'."]},
                                              code="group_by_required")
        return attrs


class SessionGroupOutput(serializers.Serializer):
    session = serializers.CharField(help_text="The conversation's id.")
    channel = serializers.CharField(allow_null=True, help_text="Its channel.")
    workspace = serializers.CharField(allow_null=True, help_text="Its workspace.")
    score = serializers.FloatField(help_text="Its evidence for the query: the p-norm of its messages' scores, "
                                             "blended in hybrid search with the query words they say; comparable "
                                             "within one response only.")
    hits = serializers.IntegerField(help_text="How many of `results` are its (they follow one another).")


class CitationOutput(serializers.Serializer):
    index = serializers.IntegerField(help_text="The cited result's position in `results` (from 0).")
    chunk_id = serializers.IntegerField(help_text="The cited result's chunk_id.")


class SynthesisErrorOutput(serializers.Serializer):
    code = serializers.ChoiceField(choices=["llm_unavailable", "llm_timeout", "llm_bad_reply"],
                                   help_text="Why there is no answer.")
    message = serializers.CharField(help_text="A sentence for people (the details are in the server's log).")


class SynthesisOutput(serializers.Serializer):
    # retrieval.synthesis.synthesize's answer: an answer with citations, or an error.

    answer = serializers.CharField(required=False, help_text="The model's answer from the results (empty when "
                                                             "there were none: no model call).")
    citations = CitationOutput(many=True, required=False,
                               help_text="The results the answer rests on, as the model cited them; citations of "
                                         "anything it was not shown are dropped.")
    error = SynthesisErrorOutput(required=False, help_text="Instead of answer and citations: the model failed.")
    model = serializers.CharField(help_text="The language model that was asked.")


class ExplainStepOutput(serializers.Serializer):
    step = serializers.ChoiceField(
        choices=["feedback", "date_hint", "summary_expansion", "one_per_message", "mmr", "dedup", "coverage"],
        help_text="feedback: ranked against the query vector moved toward the first pass's best results; "
                  "date_hint: written within a date "
                  "the query names; summary_expansion: took the place of a summary of it that ranked higher; "
                  "one_per_message: other chunks of the same message above it dropped (each message is listed once); "
                  "mmr: maximal marginal relevance (results too similar to ones above move down); "
                  "dedup: near-duplicates above it dropped; coverage: the "
                  "last places go first to conversations not listed yet.")
    detail = serializers.CharField(help_text="The step in words (its weight, the dates, the summary).")
    score_before = serializers.FloatField(required=False, help_text="Score steps: the score before the step.")
    score_after = serializers.FloatField(required=False, help_text="Score steps: the score after it.")
    vector_before = serializers.FloatField(required=False, allow_null=True,
                                           help_text="feedback: the cosine to the query.")
    vector_after = serializers.FloatField(required=False, allow_null=True,
                                          help_text="feedback: the cosine to the moved query vector.")
    rank_before = serializers.IntegerField(required=False, allow_null=True,
                                           help_text="Rank steps: the rank before the step (1 = first).")
    rank_after = serializers.IntegerField(required=False, allow_null=True, help_text="Rank steps: the rank after it.")


class ExplainPartOutput(serializers.Serializer):
    raw = serializers.FloatField(allow_null=True, help_text="The signal's own score (cosine, BM25, decayed "
                                                            "relevance); null when it did not score this result.")
    normalised = serializers.FloatField(required=False, help_text="Min-max over the candidates (weighted fusion).")
    weight = serializers.FloatField(required=False, help_text="Weighted fusion: the signal's weight.")
    rank = serializers.IntegerField(required=False, allow_null=True, help_text="rrf: the rank in this signal's list.")
    part = serializers.FloatField(help_text="What it adds to the fused score.")
    best_sentence = serializers.FloatField(
        required=False, help_text="vector: the cosine of the result's best sentence, embedded alone (long "
                                  "messages); raw is the higher of it and the result's own cosine.")


class ExplainOutput(serializers.Serializer):
    mode = serializers.CharField(help_text="The search's mode.")
    fusion = serializers.CharField(help_text="The search's fusion (weighted or rrf).")
    profile = serializers.CharField(help_text="The search's ranking profile.")
    parts = serializers.DictField(
        child=ExplainPartOutput(),
        help_text="Fusion's terms by signal: vector and text (hybrid), the one signal (vector; text for text and fuzzy), and "
                  "relevance (the memory profile's decay, recency, importance and use; the seed002 profile's "
                  "temporal score), importance (the seed002 profile). Empty for exact and regex.")
    fused = serializers.FloatField(help_text="The parts' sum: the score before any step.")
    steps = ExplainStepOutput(many=True, help_text="The stages that moved this result, in the order they ran.")
    score = serializers.FloatField(help_text="The final score (the result's `score`).")
    rank = serializers.IntegerField(help_text="Its place in the results (1 = first).")
    note = serializers.CharField(required=False, help_text="For exact and regex: how they order results.")


class SearchResultOutput(serializers.Serializer):
    chunk_id = serializers.IntegerField(help_text="The matching chunk's id.")
    text = serializers.CharField(help_text="The chunk's text.")
    score = serializers.FloatField(help_text="The ranking score (higher is better; comparable within one answer).")
    session = serializers.CharField(allow_null=True, help_text="The session it comes from, if any.")
    sequence_start = serializers.IntegerField(allow_null=True, help_text="The first event sequence it covers.")
    sequence_end = serializers.IntegerField(allow_null=True, help_text="The last event sequence it covers.")
    kind = serializers.CharField(help_text="event, note, fact, summary or document.")
    metadata = serializers.DictField(help_text="Where it comes from (event id, note id, fact id, …) and the "
                                               "caller's metadata.")
    created_at = serializers.DateTimeField(help_text="When the memory was made.")
    role = serializers.CharField(allow_null=True, help_text="Who spoke, for messages.")
    tags = serializers.ListField(child=serializers.CharField(), help_text="Its tags.")
    importance = serializers.FloatField(help_text="0–1: its weight in recall.")
    channel = serializers.CharField(allow_null=True, help_text="Its channel, if any.")
    workspace = serializers.CharField(allow_null=True, help_text="Its workspace, if any.")
    user_id = serializers.CharField(help_text="The end user it belongs to (empty: shared knowledge).")
    scores = serializers.DictField(child=serializers.FloatField(allow_null=True),
                                   help_text="The parts of the score: vector (cosine) and text (full-text rank); "
                                             "null when that part did not match.")
    embedded = serializers.BooleanField(
        help_text="False while the memory waits for its embedding: written in the same instant as the "
                  "append and found by full text at once, it joins vector search when its vector lands.")
    expanded = serializers.DictField(required=False, help_text="With expand: a summary's children and messages.")
    explain = ExplainOutput(required=False, help_text="With explain: why this result ranked here.")


class ContextInput(StrictSerializer):
    session = serializers.CharField(
        max_length=200, required=False, allow_null=True, default=None,
        help_text="The conversation the context is for: its recent messages come first, and its user owns "
                  "what is recalled unless user_id says otherwise.")
    user_id = serializers.CharField(
        max_length=200, required=False, allow_null=True, default=None,
        help_text="Recall as this end user: their memories and shared knowledge (notes, facts and "
                  "documents without an owner), never another user's nor a conversation nobody owns.")
    query = serializers.CharField(max_length=4000, required=False, allow_blank=True, default="",
                                  help_text="The new message or question: memories relevant to it are recalled.")
    as_of = as_of_field()
    budget = serializers.IntegerField(min_value=50, max_value=200_000, required=False, default=None,
                                      help_text="Token budget of the block (default 4000 unless the server sets another).")
    scope = serializers.ChoiceField(choices=[*SCOPES, "session"], required=False, default=None,
                                    help_text=SCOPE_HELP)
    top_k = TopKField(required=False, default=10, help_text="At most this many relevant memories.")
    tags = serializers.ListField(child=serializers.CharField(max_length=64), max_length=16, required=False, default=list,
                                 help_text="Only memories with all these tags.")
    kinds = serializers.ListField(child=serializers.ChoiceField(choices=KINDS), required=False, default=list,
                                  help_text="Only these kinds of memory.")
    min_cosine = MIN_COSINE_FIELD()


class ContextItemOutput(serializers.Serializer):
    source = serializers.ChoiceField(choices=["recent", "critical", "summary", "salient", "relevant"],
                                     help_text="Why it is in: recent message, critical memory (importance "
                                               "0.85 or more, or pinned: always, in a reserved part of the "
                                               "budget), summary of the session's earlier messages (its "
                                               "rolling summary, summary-tree nodes), salient (important "
                                               "and relevant) memory, or relevant to the query.")
    text = serializers.CharField(help_text="The memory's text: a memory of several chunks whole (or the "
                                           "picked chunks in order) and once.")
    score = serializers.FloatField(help_text="Its rank among the candidates.")
    kind = serializers.CharField(help_text="event, note, fact, summary or document.")
    session = serializers.CharField(allow_null=True, help_text="The session it comes from, if any.")
    sequence_start = serializers.IntegerField(allow_null=True, help_text="The first event sequence it covers.")
    sequence_end = serializers.IntegerField(allow_null=True, help_text="The last event sequence it covers.")
    created_at = serializers.DateTimeField(help_text="When the memory was made.")
    role = serializers.CharField(allow_null=True, help_text="Who spoke, for messages.")
    chunk_id = serializers.IntegerField(allow_null=True, help_text="The chunk's id (of a memory of several "
                                                                   "chunks, the first picked; null for recent "
                                                                   "messages and the session's summaries).")
    user_id = serializers.CharField(help_text="The end user it belongs to (empty: shared knowledge).")
    tokens = serializers.IntegerField(help_text="What it costs of the budget.")


class BrowseParams(serializers.Serializer):
    session = serializers.CharField(required=False, help_text="Only this session's events.")
    channel = serializers.CharField(required=False, help_text="Only events of this channel's sessions.")
    workspace = serializers.CharField(required=False, help_text="Only events of this workspace's sessions.")
    agent = serializers.CharField(required=False, help_text="Only events of this agent's sessions.")
    user_id = serializers.CharField(required=False, help_text="Events of this user's conversations "
                                                              "and of conversations with no user.")
    role = serializers.ChoiceField(choices=Role.choices, required=False, help_text="Only events of this role.")
    since = serializers.DateTimeField(required=False, help_text="Only events from this time on.")
    until = serializers.DateTimeField(required=False, help_text="Only events before this time.")


class DocumentInput(StrictSerializer):
    source_uri = serializers.CharField(max_length=2000, help_text="Where the text comes from (a URL, a path): "
                                                                  "ingesting the same URI again replaces it.")
    text = serializers.CharField(max_length=2_000_000, trim_whitespace=False,
                                 help_text="The document's text, chunked and indexed for search.")
    session = serializers.CharField(max_length=200, required=False, allow_null=True, default=None,
                                    help_text="The session it belongs to, if any.")
    workspace = serializers.CharField(max_length=100, required=False, allow_null=True, default=None,
                                      help_text="The workspace it belongs to (default: the key's, else default).")
    channel = serializers.CharField(max_length=100, required=False, allow_null=True, default=None,
                                    help_text="The channel it belongs to, if any.")
    metadata = MetadataField(required=False, default=dict, help_text="Any JSON object of the caller's.")
    tags = serializers.ListField(child=serializers.CharField(max_length=64), max_length=16, required=False, default=list,
                                 help_text="Labels, usable as search filters.")
    user_id = serializers.CharField(max_length=200, required=False, allow_blank=True, default="",
                                    help_text="The end user the document belongs to (default: the session's "
                                              "user, else shared).")

    def validate_text(self, text: str) -> str:
        if not text.strip():
            raise serializers.ValidationError("Document text is empty.", code="blank")
        return text


class BrowsedEventOutput(EventOutput):
    session = serializers.CharField(help_text="The session the event belongs to.")
    channel = serializers.CharField(help_text="The session's channel.")


def _counts(help_text: str) -> serializers.DictField:
    return serializers.DictField(child=serializers.IntegerField(), help_text=help_text)


StatsOutput = inline_serializer("Stats", {
    "tenant": serializers.CharField(help_text="The tenant's name."),
    "sessions": serializers.IntegerField(help_text="Sessions stored."),
    "active_sessions": serializers.IntegerField(help_text="Sessions not archived."),
    "events": serializers.IntegerField(help_text="Events stored."),
    "unsummarised_messages": serializers.IntegerField(help_text="Events no summary-tree leaf covers yet."),
    "rolling_unsummarised_messages": serializers.IntegerField(
        help_text="Events no rolling summary covers yet."),
    "compaction": inline_serializer("CompactionStats", {
        "sessions_behind": serializers.IntegerField(help_text="Sessions with events no summary-tree leaf covers."),
        "messages_behind": serializers.IntegerField(help_text="Those events (the tree's backlog)."),
        "tree_depth": serializers.IntegerField(help_text="Levels of the deepest summary tree (0: none)."),
        "last_run_at": serializers.DateTimeField(allow_null=True,
                                                 help_text="When the newest summary node was written."),
    }, help_text="The summary tree's progress."),
    "chunks": inline_serializer("ChunkStats", {
        "total": serializers.IntegerField(help_text="Searchable chunks."),
        "embedded": serializers.IntegerField(help_text="Chunks with a vector of the current model."),
        "pending_embedding": serializers.IntegerField(help_text="Chunks still waiting for a vector."),
        "embedding_errors": serializers.IntegerField(help_text="Chunks whose embedding failed."),
        "by_kind": _counts("Chunks by kind (event, note, fact, summary, document)."),
        "embedding_coverage": serializers.FloatField(help_text="embedded / total (1.0 when there are none)."),
        "embedding_model": serializers.CharField(help_text="The model vectors are made with."),
    }, help_text="The search index."),
    "documents": serializers.IntegerField(help_text="Documents ingested."),
    "notes": serializers.IntegerField(help_text="Notes stored."),
    "facts": serializers.IntegerField(help_text="Facts stored."),
    "summaries": serializers.IntegerField(help_text="Summary tree nodes."),
    "summary_tree_depth": serializers.IntegerField(help_text="Levels of the deepest summary tree (0: none)."),
    "schedules": inline_serializer("ScheduleStats", {
        "total": serializers.IntegerField(help_text="Schedules."),
        "by_status": _counts("Schedules by status."),
        "failing": serializers.IntegerField(help_text="Schedules whose last run failed."),
    }, help_text="Scheduled work."),
    # The task cluster's own figures (queued/failed tasks) cover every tenant: operators see them in
    # the admin, an API key never does.
    "queue": inline_serializer("QueueStats", {
        "pending_embeddings": serializers.IntegerField(help_text="Chunks waiting for a vector."),
        "embedding_waiting": serializers.IntegerField(
            help_text="Chunks in the embed lane's queue: the tenant's, or for a key limited to a workspace or an "
                      "end user, those it may read."),
        "embedding_set_aside": serializers.IntegerField(
            help_text="Chunks set aside after repeated embedding failures (retried from the admin)."),
        "embedding_eta_seconds": serializers.FloatField(
            allow_null=True, help_text="When the tenant's last waiting chunk should have its vector, at the "
                                       "measured rate (null: no rate measured yet, or a key limited to a "
                                       "workspace or an end user: the tenant's queue is not theirs to see)."),
        "embedding_rate_per_second": serializers.FloatField(help_text="Chunks the embed lanes embed per second."),
    }, help_text="Background work."),
})

