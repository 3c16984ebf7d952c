"""What a request may carry, as the OpenAPI document states it (steps of
memoryhub.api.docs.complete_schema): no field a strict body does not know, no blank string where
one is refused, no NUL character anywhere, the path ids' patterns, the bodies that are required, and
the one import format."""

from __future__ import annotations

from typing import Any

from memoryhub.models import SESSION_ID_REGEX

# Path ids the server checks against a pattern (memoryhub.models.SESSION_ID_REGEX): an id outside
# it is refused, so the schema says so.
PATH_PATTERNS = {"session_id": SESSION_ID_REGEX, "note_id": SESSION_ID_REGEX}


def forbid_unknown_fields(result: dict[str, Any], generator: Any) -> None:
    """`additionalProperties: false` on the request bodies of StrictSerializers, which refuse a
    field they do not know (`unknown_field`): the schema must not invite what the server refuses."""
    from memoryhub.api.common import StrictSerializer

    schemas = result.get("components", {}).get("schemas", {})
    registry = getattr(generator, "registry", None)
    for (name, kind), component in (getattr(registry, "_components", None) or {}).items():
        serializer = component.object
        cls = serializer if isinstance(serializer, type) else type(serializer)
        if kind == "schemas" and name in schemas and issubclass(cls, StrictSerializer):
            schemas[name]["additionalProperties"] = False
            _require_items(schemas[name], serializer)


def _require_items(schema: dict[str, Any], serializer: Any) -> None:
    """minItems 1 on a list field that refuses an empty list (allow_empty=False), which
    drf-spectacular does not carry into the schema."""
    from rest_framework import serializers

    fields = serializer().fields if isinstance(serializer, type) else serializer.fields
    for name, field in fields.items():
        prop = schema.get("properties", {}).get(name)
        if (
            prop is not None
            and isinstance(field, (serializers.ListField, serializers.ListSerializer))
            and not field.allow_empty
        ):
            prop.setdefault("minItems", 1)
        if prop is not None and _trimmed_and_not_blank(field):
            _not_blank(prop)
        elif (
            prop is not None
            and getattr(field, "refuses_blank", False)
            and prop.get("type") == "string"
        ):
            # Not trimmed, so not a pattern of its own: "not only white space" (with a maxLength of
            # 50,000, a pattern would cost generators seconds per string).
            prop["not"] = {"pattern": BLANK}
        if (
            prop is not None
            and isinstance(field, serializers.ListField)
            and _trimmed_and_not_blank(field.child)
            and isinstance(prop.get("items"), dict)
        ):
            _not_blank(prop["items"])


def _trimmed_and_not_blank(field: Any) -> bool:
    from rest_framework import serializers

    return (
        isinstance(field, serializers.CharField)
        and field.trim_whitespace
        and not field.allow_blank
        and not isinstance(
            field, (serializers.RegexField, serializers.URLField, serializers.EmailField)
        )
    )


def _not_blank(schema: dict[str, Any]) -> None:
    """DRF trims a CharField and then refuses it blank: a string of spaces is no more valid than
    ""."""
    if (
        schema.get("type") == "string"
        and "pattern" not in schema
        and "enum" not in schema
        and "format" not in schema
    ):
        schema["pattern"] = NOT_BLANK


# A character str.strip() keeps: Python's white space, not ECMA's \s (which has U+FEFF and lacks
# U+001C–U+001F and U+0085).
NOT_BLANK = "[^\t\n\v\f\r \x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
# Only what str.strip() removes, or nothing.
BLANK = "^[" + NOT_BLANK[2:-1] + "]*$"


def refuse_blank_query_strings(result: dict[str, Any], generator: Any) -> None:
    """Query parameters are read by serializers of CharFields (common.query_params), which refuse a
    blank value unless they allow it (`?user_id=` is not "no filter"): such a parameter has
    minLength 1, and a required character is a character other than white space too."""
    blank_refused = _blank_refusing_query_parameters(generator)
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []) if isinstance(operation, dict) else []:
                schema = parameter.get("schema", {})
                if parameter.get("in") != "query" or schema.get("type") != "string":
                    continue
                if (method, path, parameter["name"]) in blank_refused or "enum" in schema:
                    schema.setdefault("minLength", 1)
                if schema.get("minLength", 0) >= 1:
                    _not_blank(schema)


def _blank_refusing_query_parameters(generator: Any) -> set[tuple[str, str, str]]:
    """(method, path, name) of the query parameters a view reads with a CharField that refuses a
    blank value: the serializers each operation names in its `parameters`."""
    from rest_framework import serializers

    found: set[tuple[str, str, str]] = set()
    for path, _regex, method, callback in getattr(generator, "endpoints", None) or []:
        view = generator.create_view(callback, method)
        for item in view.schema.get_override_parameters():
            if isinstance(item, type) and issubclass(item, serializers.Serializer):
                for name, field in item().fields.items():
                    if isinstance(field, serializers.CharField) and not field.allow_blank:
                        found.add((method.lower(), path, name))
    return found


# PostgreSQL text and jsonb cannot hold U+0000: every string a request carries refuses it
# (StrictSerializer, and the middleware for the path and query). Stated on every string of every
# request as `not: {pattern: NUL}` (a pattern of the whole string, with the long maxLengths of
# contents, cost generators seconds per string); free-form JSON (metadata, params, tool arguments…)
# is a JsonValue whose strings say it too. Object keys cannot be stated in OpenAPI 3.0
# (propertyNames is 3.1): the descriptions say it.
NUL = r"\x00"
JSON_VALUE = {
    "nullable": True,
    "description": (
        "Any JSON value; no string (nor object key) in it may hold a NUL character (U+0000)."
    ),
    "anyOf": [
        {"type": "string", "not": {"pattern": NUL}},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "array", "items": {"$ref": "#/components/schemas/JsonValue"}},
        {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/JsonValue"}},
    ],
}


def refuse_null_characters(result: dict[str, Any]) -> None:
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components["JsonValue"] = JSON_VALUE
    for name, component in components.items():
        if name.endswith("Request"):
            _no_nul(component)
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                if parameter.get("in") in ("query", "path") and isinstance(
                    parameter.get("schema"), dict
                ):
                    _no_nul(parameter["schema"])
            body = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
            if isinstance(body.get("schema"), dict):
                _no_nul(body["schema"])


def state_import_header(result: dict[str, Any]) -> None:
    """An import reads one format at one version (memoryhub.transfer.format.check_header)."""
    from memoryhub.transfer.format import FORMAT, SCHEMA_VERSION

    properties = (
        result.get("components", {})
        .get("schemas", {})
        .get("ExportDocumentRequest", {})
        .get("properties", {})
    )
    if "format" in properties:
        properties["format"]["enum"] = [FORMAT]
        properties["format"].pop("pattern", None)
    if "schema_version" in properties:
        properties["schema_version"].update(minimum=SCHEMA_VERSION, maximum=SCHEMA_VERSION)


def _free_form(schema: dict[str, Any]) -> bool:
    """Any JSON ({}), or an object of anything (additionalProperties true, no properties)."""
    keys = set(schema) - {"description", "nullable", "readOnly", "writeOnly", "title", "default"}
    if not keys:
        return True
    return (
        schema.get("type") == "object"
        and schema.get("additionalProperties") is True
        and not schema.get("properties")
        and keys <= {"type", "additionalProperties"}
    )


def _no_nul(schema: Any) -> None:
    if not isinstance(schema, dict) or "$ref" in schema:
        return
    for key in ("properties",):
        for name, child in list(schema.get(key, {}).items()):
            if isinstance(child, dict) and _free_form(child):
                schema[key][name] = _json_value(child)
            else:
                _no_nul(child)
    for key in ("items", "additionalProperties"):
        child = schema.get(key)
        if (
            isinstance(child, dict)
            and _free_form(child)
            and not (key == "additionalProperties" and child == {})
        ):
            schema[key] = _json_value(child)
        elif isinstance(child, dict):
            _no_nul(child)
    for key in ("oneOf", "anyOf", "allOf"):
        for index, child in enumerate(schema.get(key, [])):
            if isinstance(child, dict) and _free_form(child):
                schema[key][index] = _json_value(child)
            else:
                _no_nul(child)
    if (
        schema.get("type") == "string"
        and "enum" not in schema
        and "format" not in schema
        and schema.get("pattern") not in PATTERNS_WITHOUT_NUL
    ):
        refused = schema.get("not")
        schema["not"] = {"anyOf": [refused, {"pattern": NUL}]} if refused else {"pattern": NUL}


# Patterns that leave NUL out already (ids: letters, digits and a few signs).
PATTERNS_WITHOUT_NUL = frozenset(PATH_PATTERNS.values())


def _json_value(schema: dict[str, Any]) -> dict[str, Any]:
    """A free-form schema as a JsonValue (an object stays an object), keeping its description."""
    described = {k: schema[k] for k in ("description",) if k in schema}
    if schema.get("type") == "object":
        return {
            **described,
            "type": "object",
            "additionalProperties": {"$ref": "#/components/schemas/JsonValue"},
        }
    return {**described, "allOf": [{"$ref": "#/components/schemas/JsonValue"}]}


def require_needed_bodies(result: dict[str, Any]) -> None:
    """A body whose every shape has required fields is itself required: without one the server
    answers 400 (drf-spectacular sees that for a plain serializer, not for a oneOf of them)."""
    components = result.get("components", {}).get("schemas", {})
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            body = operation.get("requestBody") if isinstance(operation, dict) else None
            schema = (body or {}).get("content", {}).get("application/json", {}).get("schema")
            if schema is not None and _needs_fields(schema, components):
                body["required"] = True


def _needs_fields(schema: dict[str, Any], components: dict[str, Any]) -> bool:
    if "$ref" in schema:
        return _needs_fields(components.get(schema["$ref"].rsplit("/", 1)[-1], {}), components)
    if "oneOf" in schema:
        return all(_needs_fields(alternative, components) for alternative in schema["oneOf"])
    return bool(schema.get("required"))
