"""What search, context and browse take: their input validation and the fields they share (what
they answer: retrieval/output_serializers.py)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from rest_framework import serializers

from memoryhub.api.common import StrictSerializer
from memoryhub.api.fields import StrictFloatField, StrictIntegerField
from memoryhub.api.placement import (
    agent_field,
    channel_field,
    session_field,
    tags_field,
    user_field,
    workspace_field,
)
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


SCOPE_HELP = (
    "How far to read conversations' messages: conversation (= session), channel, workspace "
    "or account (the whole tenant). Notes, facts and documents apply where they were made "
    "whatever the scope: with a session, those of its conversation, channel, workspace and "
    "account. Default: with a session, its user's whole memory (every conversation of theirs; "
    "for a session nobody owns, the tenant's unowned conversations), nearer ones ranked first "
    "(this conversation, its channel, its workspace); channel with a channel, workspace with a "
    "workspace, else account. A scope narrows to that range."
)


def as_of_field() -> serializers.DateTimeField:
    """Search's and context's `as_of`: the memory as it stood at that moment."""
    return serializers.DateTimeField(
        required=False,
        allow_null=True,
        default=None,
        help_text=(
            "Answer as the memory stood at this moment (ISO 8601; default: now): nothing recorded"
            " after it, and of each fact the version that was true then. Relative dates in the"
            ' query ("yesterday", "last week", "three months ago") are read against it.'
        ),
    )


def MIN_COSINE_FIELD() -> serializers.FloatField:  # noqa: N802 - a field factory, used as a field
    return serializers.FloatField(
        min_value=-1.0,
        max_value=1.0,
        required=False,
        allow_null=True,
        default=None,
        help_text=(
            "Only memories at least this close in meaning to the query (cosine of the embeddings, "
            "e.g. 0.655). A memory sharing the query's words but not its meaning is left out too. "
            "Default: search and context keep a memory that shares a query word or has cosine "
            "of at least 0.2; -1 keeps everything ranked."
        ),
    )


class SearchInput(StrictSerializer):
    query = serializers.CharField(
        max_length=4000,
        required=False,
        allow_blank=True,
        default="",
        trim_whitespace=False,
        help_text="What to look for, in natural language (or a query_embedding).",
    )
    query_embedding = serializers.ListField(
        child=StrictFloatField(),
        min_length=DIMENSIONS,
        max_length=DIMENSIONS,
        required=False,
        allow_null=True,
        default=None,
        help_text=(
            f"A ready query vector ({DIMENSIONS} floats) instead of embedding the query text."
        ),
    )
    session = session_field("recall", max_length=200, required=False)
    channel = channel_field("recall", max_length=100, required=False)
    workspace = workspace_field("recall", max_length=100, required=False)
    scope = serializers.ChoiceField(
        choices=[*SCOPES, "session"], required=False, help_text=SCOPE_HELP
    )
    tags = tags_field(
        "filter",
        of="memories",
        cls=serializers.ListField,
        child=serializers.CharField(max_length=64),
        max_length=16,
        required=False,
        default=list,
    )
    roles = serializers.ListField(
        child=serializers.ChoiceField(choices=Role.choices),
        required=False,
        default=list,
        help_text="Only messages of these roles (user, assistant, tool, system).",
    )
    kinds = serializers.ListField(
        child=serializers.ChoiceField(choices=KINDS),
        required=False,
        default=list,
        help_text="Only these kinds: event (messages), note, fact, summary, document.",
    )
    agent = agent_field(
        "filter", of="memories", max_length=200, required=False, allow_null=True, default=None
    )
    user_id = user_field("recall", max_length=200, required=False, allow_null=True, default=None)
    since = serializers.DateTimeField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Only memories from this time on (ISO 8601).",
    )
    until = serializers.DateTimeField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Only memories before this time (after since).",
    )
    as_of = as_of_field()
    top_k = TopKField(
        required=False,
        default=10,
        help_text="How many results (default 10; the server sets the most).",
    )
    mode = serializers.ChoiceField(
        choices=MODES,
        required=False,
        default="hybrid",
        help_text=(
            "hybrid (meaning and words, the default), vector (meaning), text (words, BM25; a"
            " misspelt word also matches the closest stored ones), fuzzy (text, every word widened"
            " to similar ones), exact (the query as a substring) or regex (the query as a"
            " PostgreSQL regular expression over the text, at most the server's length limit; a"
            " pattern that does not compile is `invalid_regex`, one that runs past the server's"
            " time limit is `regex_timeout`). exact and regex return the newest matches first, each"
            " scored 1."
        ),
    )
    case_sensitive = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Modes exact and regex: match case (default: ignore it).",
    )
    explain = serializers.BooleanField(
        required=False,
        default=False,
        help_text=(
            "Each result carries `explain`: why it ranked there (fusion's parts, the fused score,"
            " every re-ranking step that moved it with its score or rank before and after). Off:"
            " the response is as without the field."
        ),
    )
    fusion = serializers.ChoiceField(
        choices=FUSIONS,
        required=False,
        default="weighted",
        help_text=(
            "How hybrid mode merges its two rankings: weighted scores or rrf "
            "(reciprocal rank fusion)."
        ),
    )
    vector_weight = serializers.FloatField(
        min_value=0.0,
        max_value=1.0,
        required=False,
        default=None,
        help_text=(
            "Weighted fusion: the meaning score's weight, used exactly as given "
            "(no adaptive balancing, no feedback step). When neither weight is "
            "sent: 0.7, moved a share of the way "
            "toward the list whose best results stand out most for this "
            "query; explain shows the weights used."
        ),
    )
    text_weight = serializers.FloatField(
        min_value=0.0,
        max_value=1.0,
        required=False,
        default=None,
        help_text=(
            "Weighted fusion: the word score's weight, used exactly as given "
            "(default 0.3, balanced as vector_weight is when neither is sent)."
        ),
    )
    profile = serializers.ChoiceField(
        choices=PROFILES,
        required=False,
        allow_null=True,
        default="default",
        help_text=(
            "Ranking profile: default, memory (favours important, recent and "
            "often recalled memories), or seed002 (a published memory formula as "
            "written: 0.3 BM25 + 0.3 cosine + 0.3 e^(-0.05 days since last "
            "access)(1 + 0.02 accesses) + 0.1 importance; no re-ranking)."
        ),
    )
    decay_weight = serializers.FloatField(
        min_value=0.0,
        max_value=1.0,
        required=False,
        default=0.0,
        help_text=(
            "Default profile: this share of each result's score comes from its decayed relevance "
            "(importance · tier rate^hours since last use · (1 + ln(1 + uses)), at as_of or now). "
            "Default 0: on LoCoMo and LongMemEval it cost recall."
        ),
    )
    min_cosine = MIN_COSINE_FIELD()
    expand = serializers.BooleanField(
        required=False,
        default=False,
        help_text=(
            "Summary hits carry `expanded`: their child summaries and the messages they condense "
            "(at most 20; GET /summaries/{id}/ pages the rest)."
        ),
    )
    synthesize = serializers.BooleanField(
        required=False,
        default=False,
        help_text=(
            "Also answer the query from the results with the configured language model (the one the"
            " server's operator set up for summaries): `synthesis` is {answer, citations: [{index,"
            " chunk_id}] of results it rests on, model}. The model sees only these results. Without"
            " a model: 400 llm_not_configured. When the model fails or times out the results still"
            " come back, and `synthesis` is {error: {code: llm_unavailable | llm_timeout |"
            " llm_bad_reply, message}, model}."
        ),
    )
    group_by = serializers.ChoiceField(
        choices=GROUPINGS,
        required=False,
        allow_null=True,
        default=None,
        help_text=(
            "session: which conversations are about the query. top_k then counts conversations,"
            " ranked by the evidence of all their matching messages; `sessions` lists them with"
            " their scores, and `results` holds each one's best hits_per_session matches (a text"
            " repeated within it once), conversation by conversation. Memories outside any"
            " conversation (notes, facts, documents without a session) are left out."
        ),
    )
    hits_per_session = StrictIntegerField(
        min_value=1,
        max_value=MAX_HITS_PER_SESSION,
        required=False,
        allow_null=True,
        default=None,
        help_text=(
            "With group_by: the matches shown per conversation (default"
            f" {DEFAULT_HITS_PER_SESSION})."
        ),
    )

    def validate_tags(self, tags: list[str]) -> list[str]:
        return sorted({t.strip().lower() for t in tags if t.strip()})

    def validate_query_embedding(self, vector: list[float] | None) -> list[float] | None:
        problem = vector_problem(vector) if vector is not None else None
        if problem:
            raise serializers.ValidationError(
                f"Unusable query_embedding: {problem}.", code="invalid_embedding"
            )
        return vector

    def validate(self, attrs):  # type: ignore[no-untyped-def]
        attrs["profile"] = attrs.get("profile") or "default"
        if not attrs["query"].strip() and attrs.get("query_embedding") is None:
            raise serializers.ValidationError(
                {"query": ["Give query text or a query_embedding."]}, code="query_required"
            )
        if attrs.get("since") and attrs.get("until") and attrs["since"] >= attrs["until"]:
            raise serializers.ValidationError(
                {"since": ["since must be before until."]}, code="invalid_time_range"
            )
        if attrs.get("hits_per_session") is not None and attrs.get("group_by") is None:
            raise serializers.ValidationError(
                {"hits_per_session": ["hits_per_session needs group_by 'session'."]},
                code="group_by_required",
            )
        return attrs


class ContextInput(StrictSerializer):
    session = session_field(
        "recall",
        note="Its recent messages come first.",
        max_length=200,
        required=False,
        allow_null=True,
        default=None,
    )
    user_id = user_field("recall", max_length=200, required=False, allow_null=True, default=None)
    query = serializers.CharField(
        max_length=4000,
        required=False,
        allow_blank=True,
        default="",
        help_text="The new message or question: memories relevant to it are recalled.",
    )
    as_of = as_of_field()
    budget = serializers.IntegerField(
        min_value=50,
        max_value=200_000,
        required=False,
        default=None,
        help_text="Token budget of the block (default 4000 unless the server sets another).",
    )
    scope = serializers.ChoiceField(
        choices=[*SCOPES, "session"], required=False, default=None, help_text=SCOPE_HELP
    )
    top_k = TopKField(required=False, default=10, help_text="At most this many relevant memories.")
    tags = tags_field(
        "filter",
        of="memories",
        cls=serializers.ListField,
        child=serializers.CharField(max_length=64),
        max_length=16,
        required=False,
        default=list,
    )
    kinds = serializers.ListField(
        child=serializers.ChoiceField(choices=KINDS),
        required=False,
        default=list,
        help_text="Only these kinds of memory.",
    )
    min_cosine = MIN_COSINE_FIELD()


class BrowseParams(serializers.Serializer):
    session = session_field("filter", of="events", required=False)
    channel = channel_field("filter", of="events", required=False)
    workspace = workspace_field("filter", of="events", required=False)
    agent = agent_field("filter", of="events", required=False)
    user_id = user_field(
        "filter", of="events", note="Conversations nobody owns are included.", required=False
    )
    role = serializers.ChoiceField(
        choices=Role.choices, required=False, help_text="Only events of this role."
    )
    since = serializers.DateTimeField(required=False, help_text="Only events from this time on.")
    until = serializers.DateTimeField(required=False, help_text="Only events before this time.")
