"""Building blocks shared by every API view: strict input, the caller's key, pagination."""

from __future__ import annotations

import copy
import difflib
import re
from typing import Any
from urllib.parse import urlencode

from rest_framework import serializers
from rest_framework.request import Request

from accounts.models import ApiKey
from memoryhub.errors import Invalid


class StrictSerializer(serializers.Serializer):
    # Refuses fields it does not know, so that a typo is a 400 and not silently ignored.
    #
    # Its fields are copied from a per-class set of unbound prototypes, not deep-copied from the
    # declarations on every request as DRF does: a search body has ~30 fields, and their deep copy
    # was ~1 ms of every request's CPU (DRF re-creates each field from its arguments). A plain field
    # keeps no state of its own between validations, so a shallow copy (bound to this serializer)
    # serves; a nested serializer is still deep-copied.
    # (Comments, not a docstring: the OpenAPI document shows a serializer's docstring to API users,
    # subclasses' included; their descriptions are memoryhub.api.docs.SCHEMA_DESCRIPTIONS.)

    # Names the request may use instead of this serializer's fields (an event's body may be the
    # bulk form {"events": [...]}): an unknown field may be suggested as one of them.
    also_accepted: tuple[str, ...] = ()

    def get_fields(self) -> dict[str, serializers.Field]:
        cls = type(self)
        prototypes = cls.__dict__.get("_field_prototypes")
        if prototypes is None:
            prototypes = copy.deepcopy(self._declared_fields)
            cls._field_prototypes = prototypes  # type: ignore[attr-defined]
        return {
            name: copy.deepcopy(field)
            if isinstance(field, serializers.BaseSerializer)
            else shallow_copy(field)
            for name, field in prototypes.items()
        }

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise serializers.ValidationError(
                {
                    "non_field_errors": [
                        serializers.ErrorDetail("Expected a JSON object.", code="not_an_object")
                    ]
                }
            )
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(
                {
                    name: [
                        serializers.ErrorDetail(
                            unknown_field_message(name, [*self.fields, *self.also_accepted]),
                            code="unknown_field",
                        )
                    ]
                    for name in unknown
                }
            )
        # PostgreSQL text and jsonb cannot hold U+0000: refuse it here rather than fail on insert.
        with_nul = [name for name, value in data.items() if _has_nul(value)]
        if with_nul:
            raise serializers.ValidationError(
                {
                    name: [
                        serializers.ErrorDetail(
                            "Null characters are not allowed.", code="null_characters_not_allowed"
                        )
                    ]
                    for name in with_nul
                }
            )
        wrong = {
            name: message
            for name, field in self.fields.items()
            if name in data and not field.read_only and (message := _wrong_type(field, data[name]))
        }
        if wrong:
            raise serializers.ValidationError(
                {
                    name: [serializers.ErrorDetail(message, code="invalid")]
                    for name, message in wrong.items()
                }
            )
        return super().to_internal_value(data)


def shallow_copy(field: serializers.Field) -> serializers.Field:
    """What copy.copy makes of a field (a new instance holding the same attributes), without its
    generic __reduce_ex__ round: that was most of a search body's field set-up per request."""
    copied = type(field).__new__(type(field))
    copied.__dict__.update(field.__dict__)
    return copied


# DRF quietly converts between JSON types ("0" -> 0, 5 -> "5", "yes" -> True): a body field must
# arrive as the type the schema gives it. Query parameters are strings and are not checked here.
_JSON_TYPES: tuple[tuple[type[serializers.Field], tuple[type, ...], str], ...] = (
    (serializers.BooleanField, (bool,), "a boolean"),
    (serializers.IntegerField, (int, float), "a number"),
    (serializers.FloatField, (int, float), "a number"),
    (serializers.DecimalField, (int, float), "a number"),
    (serializers.CharField, (str,), "a string"),
    (serializers.ChoiceField, (str,), "a string"),
    (serializers.DateTimeField, (str,), "a string"),
    (serializers.DateField, (str,), "a string"),
    (serializers.ListField, (list,), "a list"),
    (serializers.DictField, (dict,), "an object"),
)


def _wrong_type(field: serializers.Field, value: Any) -> str | None:
    """Why `value` is not of the JSON type `field` takes (None when it is, or when DRF decides)."""
    if value is None:
        return None  # allow_null decides
    for cls, types, name in _JSON_TYPES:
        if isinstance(field, cls):
            if isinstance(value, bool) and bool not in types or not isinstance(value, types):
                return f"Expected {name}, not {_json_type(value)}."
            if _too_long_with_padding(field, value):
                return f"Ensure this field has no more than {field.max_length} characters."
            if isinstance(field, serializers.ListField):
                return next(
                    (
                        f"Item {i}: {problem}"
                        for i, item in enumerate(value)
                        if (problem := _wrong_type(field.child, item))
                    ),
                    None,
                )
            if isinstance(field, serializers.DictField):
                return next(
                    (
                        f"{key!r}: {problem}"
                        for key, item in value.items()
                        if (problem := _wrong_type(field.child, item))
                    ),
                    None,
                )
            return None
    return None


def _too_long_with_padding(field: serializers.Field, value: Any) -> bool:
    """DRF trims a string before it checks max_length, so "x" padded with spaces past the limit
    would pass; the schema's maxLength counts every character sent. An unpadded string
    is left to DRF (its max_length code)."""
    limit = getattr(field, "max_length", None)
    return (
        isinstance(field, serializers.CharField)
        and limit is not None
        and isinstance(value, str)
        and len(value) > limit
        and value != value.strip()
    )


def _json_type(value: Any) -> str:
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)


# Names other memory APIs use for a field of ours (OpenAI/Anthropic message lists, mem0's calls).
FIELD_ALIASES = {
    "messages": "events",
    "message": "content",
    "text": "content",
    "memory": "content",
    "limit": "top_k",
    "k": "top_k",
    "session_id": "session",
    "user": "user_id",
    "filters": "tags",
}


def unknown_field_message(name: str, known: list[str], *, what: str = "field") -> str:
    """ "Unknown field." and, when one is near, the field meant: an agent (or a model calling a
    tool) corrects itself from the message alone. `what` names it ("query parameter")."""
    alias = FIELD_ALIASES.get(name)
    guess = (
        alias
        if alias in known
        else next(iter(difflib.get_close_matches(name, known, n=1, cutoff=0.75)), None)
    )
    return f"Unknown {what}. Did you mean '{guess}'?" if guess else f"Unknown {what}."


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def api_key(request: Request) -> ApiKey:
    key = request.auth
    assert isinstance(key, ApiKey)  # guaranteed by HasApiScope
    return key


def parse_input(
    serializer_class: type[serializers.Serializer], data: Any, **kwargs: Any
) -> dict[str, Any]:
    serializer = serializer_class(data=data, **kwargs)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def query_params(
    request: Request, serializer_class: type[serializers.Serializer]
) -> dict[str, Any]:
    """Validate the query parameters a serializer names (one operation may read several
    serializers'; one it does not declare at all was refused before the view ran:
    memoryhub.api.parameters)."""
    fields = serializer_class().fields
    data = {k: v for k, v in request.query_params.items() if k in fields}
    # DRF reads "0.0" and " 5" as integers; the schema's integer is digits only.
    not_whole = {
        name: ["A valid integer is required."]
        for name, value in data.items()
        if isinstance(fields[name], serializers.IntegerField) and not _WHOLE_NUMBER.fullmatch(value)
    }
    if not_whole:
        raise _invalid_parameter(not_whole)
    return parse_params(serializer_class, data)


_WHOLE_NUMBER = re.compile(r"-?[0-9]+")


def parse_params(
    serializer_class: type[serializers.Serializer], data: dict[str, Any]
) -> dict[str, Any]:
    """Validate parameters (a GET's query, an MCP tool's arguments); a bad one is
    `invalid_parameter`."""
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        raise _invalid_parameter(serializer.errors)
    return dict(serializer.validated_data)


def _invalid_parameter(errors: dict[str, Any]) -> Invalid:
    name, problems = next(iter(errors.items()))
    return Invalid(
        "invalid_parameter",
        f"Query parameter {name!r}: {problems[0]}",
        details={"fields": {k: [str(p) for p in v] for k, v in errors.items()}},
    )


def page_url(request: Request, **params: Any) -> str:
    query = request.query_params.copy()
    for name, value in params.items():
        query[name] = str(value)
    return request.build_absolute_uri(request.path) + "?" + urlencode(sorted(query.items()))


class LimitOffset(serializers.Serializer):
    limit = serializers.IntegerField(min_value=1, max_value=1000, default=50)
    offset = serializers.IntegerField(min_value=0, max_value=2**62, default=0)


def paginate(
    request: Request, queryset: Any, *, default_limit: int = 50
) -> tuple[list[Any], dict[str, Any]]:
    """limit/offset paging: returns the page and {count, next, previous}."""
    params = query_params(request, LimitOffset)
    limit = params["limit"] if "limit" in request.query_params else default_limit
    offset = params["offset"]
    count = queryset.count()
    rows = list(queryset[offset : offset + limit])
    meta = {
        "count": count,
        "next": page_url(request, limit=limit, offset=offset + limit)
        if offset + limit < count
        else None,
        "previous": page_url(request, limit=limit, offset=max(offset - limit, 0))
        if offset
        else None,
    }
    return rows, meta
