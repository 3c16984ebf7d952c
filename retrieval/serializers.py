"""Input validation and output shapes of search, context, browse, stats and documents."""

from __future__ import annotations

from django.conf import settings
from rest_framework import serializers

from memoryhub.api.common import StrictSerializer
from memoryhub.api.fields import MetadataField, StrictFloatField
from memoryhub.models import Role
from memoryhub.searchable import KINDS
from retrieval.embedders import DIMENSIONS
from retrieval.search import FUSIONS, MODES, PROFILES, SCOPES
from retrieval.vectors import vector_problem


class TopKField(serializers.IntegerField):
    def __init__(self, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(min_value=1, **kwargs)

    def to_internal_value(self, data):  # type: ignore[no-untyped-def]
        value = super().to_internal_value(data)
        if value > settings.MEMORYHUB_SEARCH_MAX_TOP_K:
            raise serializers.ValidationError(
                f"Ensure this value is less than or equal to {settings.MEMORYHUB_SEARCH_MAX_TOP_K}.", code="max_value"
            )
        return value


class SearchInput(StrictSerializer):
    query = serializers.CharField(max_length=4000, required=False, allow_blank=True, default="", trim_whitespace=False)
    query_embedding = serializers.ListField(
        child=StrictFloatField(), min_length=DIMENSIONS, max_length=DIMENSIONS, required=False, allow_null=True,
        default=None,
    )
    session = serializers.CharField(max_length=200, required=False)
    channel = serializers.CharField(max_length=100, required=False)
    workspace = serializers.CharField(max_length=100, required=False)
    scope = serializers.ChoiceField(choices=[*SCOPES, "session"], required=False)
    tags = serializers.ListField(child=serializers.CharField(max_length=64), max_length=16, required=False, default=list)
    roles = serializers.ListField(child=serializers.ChoiceField(choices=Role.choices), required=False, default=list)
    kinds = serializers.ListField(child=serializers.ChoiceField(choices=KINDS), required=False, default=list)
    agent = serializers.CharField(max_length=200, required=False, allow_null=True, default=None)
    user_id = serializers.CharField(max_length=200, required=False, allow_null=True, default=None)
    since = serializers.DateTimeField(required=False, allow_null=True, default=None)
    until = serializers.DateTimeField(required=False, allow_null=True, default=None)
    top_k = TopKField(required=False, default=10)
    mode = serializers.ChoiceField(
        choices=MODES, required=False, default="hybrid",
        help_text="hybrid (meaning and words), vector (meaning), text (words, BM25; a misspelt word also matches "
                  "the closest stored ones), fuzzy (text, every word widened to similar ones), exact (the query as a "
                  "substring) or regex (the query as a PostgreSQL regular expression over the text, at most "
                  "MEMORYHUB_SEARCH_REGEX_MAX_LENGTH characters; a pattern that does not compile is "
                  "`invalid_regex`, one that runs past MEMORYHUB_SEARCH_REGEX_TIMEOUT_MS is `regex_timeout`). "
                  "exact and regex return the newest matches first, each scored 1.")
    case_sensitive = serializers.BooleanField(
        required=False, default=False, help_text="Modes exact and regex: match case (default: ignore it).")
    explain = serializers.BooleanField(
        required=False, default=False,
        help_text="Each result carries `explain`: why it ranked there (fusion's parts, the fused score, every "
                  "re-ranking step that moved it with its score or rank before and after). Off: the response "
                  "is as without the field.")
    fusion = serializers.ChoiceField(choices=FUSIONS, required=False, default="weighted")
    vector_weight = serializers.FloatField(min_value=0.0, max_value=1.0, required=False, default=0.7)
    text_weight = serializers.FloatField(min_value=0.0, max_value=1.0, required=False, default=0.3)
    profile = serializers.ChoiceField(choices=PROFILES, required=False, allow_null=True, default="default")
    expand = serializers.BooleanField(
        required=False, default=False,
        help_text="Summary hits carry `expanded`: their child summaries and the messages they condense "
                  "(at most 20; GET /summaries/{id}/ pages the rest).")

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
        return attrs


class ExplainStepOutput(serializers.Serializer):
    step = serializers.ChoiceField(
        choices=["feedback", "session_prior", "date_hint", "summary_expansion", "mmr", "diversity", "session_cap",
                 "dedup", "coverage"],
        help_text="feedback: ranked against the query vector moved toward the first pass's best results; "
                  "session_prior: blended with its conversation's best matches; date_hint: written within a date "
                  "the query names; summary_expansion: took the place of a summary of it that ranked higher; "
                  "mmr: maximal marginal relevance (results too similar to ones above move down); diversity, "
                  "session_cap: per-conversation limits; dedup: near-duplicates above it dropped; coverage: the "
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
    weight = serializers.FloatField(required=False)
    rank = serializers.IntegerField(required=False, allow_null=True, help_text="rrf: the rank in this signal's list.")
    part = serializers.FloatField(help_text="What it adds to the fused score.")


class ExplainOutput(serializers.Serializer):
    mode = serializers.CharField()
    fusion = serializers.CharField()
    profile = serializers.CharField()
    parts = serializers.DictField(
        child=ExplainPartOutput(),
        help_text="Fusion's terms by signal: vector and text (hybrid), the one signal (vector; text for text and fuzzy), and "
                  "relevance (the memory profile's decay, recency, importance and use). Empty for exact and regex.")
    fused = serializers.FloatField(help_text="The parts' sum: the score before any step.")
    steps = ExplainStepOutput(many=True, help_text="The stages that moved this result, in the order they ran.")
    score = serializers.FloatField(help_text="The final score (the result's `score`).")
    rank = serializers.IntegerField(help_text="Its place in the results (1 = first).")
    note = serializers.CharField(required=False)


class SearchResultOutput(serializers.Serializer):
    chunk_id = serializers.IntegerField()
    text = serializers.CharField()
    score = serializers.FloatField()
    session = serializers.CharField(allow_null=True)
    sequence_start = serializers.IntegerField(allow_null=True)
    sequence_end = serializers.IntegerField(allow_null=True)
    kind = serializers.CharField()
    metadata = serializers.DictField()
    created_at = serializers.DateTimeField()
    role = serializers.CharField(allow_null=True)
    tags = serializers.ListField(child=serializers.CharField())
    importance = serializers.FloatField()
    channel = serializers.CharField(allow_null=True)
    workspace = serializers.CharField(allow_null=True)
    embedded = serializers.BooleanField(
        help_text="False while the memory waits for its embedding: written in the same instant as the "
                  "append and found by full text at once, it joins vector search when its vector lands.")
    scores = serializers.DictField(child=serializers.FloatField(allow_null=True))
    expanded = serializers.DictField(required=False, help_text="With expand: a summary's children and messages.")
    explain = ExplainOutput(required=False, help_text="With explain: why this result ranked here.")


class ContextInput(StrictSerializer):
    session = serializers.CharField(
        max_length=200, required=False, allow_null=True, default=None,
        help_text="The conversation the context is for: its recent messages come first, and its user owns "
                  "what is recalled unless user_id says otherwise.")
    user_id = serializers.CharField(
        max_length=200, required=False, allow_null=True, default=None,
        help_text="Recall as this end user: their memories and shared ones, never another user's.")
    query = serializers.CharField(max_length=4000, required=False, allow_blank=True, default="")
    budget = serializers.IntegerField(min_value=50, max_value=200_000, required=False, default=None)
    scope = serializers.ChoiceField(choices=[*SCOPES, "session"], required=False, default=None,
                                    help_text="Default: workspace with a session, account without.")
    top_k = TopKField(required=False, default=10)
    tags = serializers.ListField(child=serializers.CharField(max_length=64), max_length=16, required=False, default=list)
    kinds = serializers.ListField(child=serializers.ChoiceField(choices=KINDS), required=False, default=list)


class BrowseParams(serializers.Serializer):
    session = serializers.CharField(required=False)
    channel = serializers.CharField(required=False)
    workspace = serializers.CharField(required=False)
    agent = serializers.CharField(required=False)
    user_id = serializers.CharField(required=False, help_text="Events of this user's conversations "
                                                              "and of conversations with no user.")
    role = serializers.ChoiceField(choices=Role.choices, required=False)
    since = serializers.DateTimeField(required=False)
    until = serializers.DateTimeField(required=False)


class DocumentInput(StrictSerializer):
    source_uri = serializers.CharField(max_length=2000)
    text = serializers.CharField(max_length=2_000_000, trim_whitespace=False)
    session = serializers.CharField(max_length=200, required=False, allow_null=True, default=None)
    workspace = serializers.CharField(max_length=100, required=False, allow_null=True, default=None)
    channel = serializers.CharField(max_length=100, required=False, allow_null=True, default=None)
    metadata = MetadataField(required=False, default=dict)
    tags = serializers.ListField(child=serializers.CharField(max_length=64), max_length=16, required=False, default=list)
    user_id = serializers.CharField(max_length=200, required=False, allow_blank=True, default="",
                                    help_text="The end user the document belongs to (default: the session's "
                                              "user, else shared).")

    def validate_text(self, text: str) -> str:
        if not text.strip():
            raise serializers.ValidationError("Document text is empty.", code="blank")
        return text
