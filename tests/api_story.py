"""The story the API documentation's examples tell (a travel assistant's tenant), built through the
REST API itself, and the checks the example test makes: a response validated against the OpenAPI
schema (strictly: no undocumented field) and compared in shape with the documented example.

The path parameters of every example are the ids of this story: session chat-42 of user-123, note
note-tea, the session's channel, and the fact, summary, schedule, run, document (the Lisbon guide)
and agent webhook it creates.
"""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from accounts.models import Tenant

SESSION, USER, NOTE = "chat-42", "user-123", "note-tea"


def build_story(client: APIClient, tenant: Tenant) -> dict[str, str]:
    """Create the story's records; returns the path parameters of the examples."""
    from memoryhub.models import Session, SummaryNode

    def ok(response: Any) -> dict[str, Any]:
        assert response.status_code in (200, 201, 202), response.content
        return response.json()

    ok(
        client.post(
            "/api/v1/sessions/",
            {"id": SESSION, "user_id": USER, "agent": "travel-agent", "title": "Trip to Lisbon"},
            format="json",
        )
    )
    ok(
        client.post(
            f"/api/v1/sessions/{SESSION}/events/",
            {
                "events": [
                    {
                        "role": "user",
                        "content": "I'm flying to Lisbon on May 3rd. I prefer aisle seats.",
                    },
                    {
                        "role": "assistant",
                        "content": "Noted: Lisbon on May 3rd, and an aisle seat.",
                    },
                ]
            },
            format="json",
        )
    )
    ok(
        client.post(
            "/api/v1/notes/",
            {
                "note_id": NOTE,
                "content": "The user drinks green tea, no sugar.",
                "tags": ["preferences"],
                "user_id": USER,
            },
            format="json",
        )
    )
    fact = ok(
        client.post(
            "/api/v1/facts/",
            {
                "content": "Prefers aisle seats.",
                "category": "travel",
                "key": "seat",
                "user_id": USER,
                "external_id": "seat-pref",
            },
            format="json",
        )
    )
    ok(
        client.put(
            f"/api/v1/sessions/{SESSION}/scratchpad/",
            {"items": [{"key": "goal", "value": "Book the Lisbon flight"}]},
            format="json",
        )
    )
    session = Session.objects.get(tenant=tenant, external_id=SESSION)
    where = {
        "tenant": tenant,
        "workspace_id": session.workspace_id,
        "channel_id": session.channel_id,
        "session": session,
        "user_id": USER,
    }
    root = SummaryNode.objects.create(
        **where,
        level="root",
        depth=1,
        sequence_start=1,
        sequence_end=2,
        source_count=1,
        text="The user plans a trip to Lisbon on May 3rd.",
    )
    SummaryNode.objects.create(
        **where,
        level="leaf",
        parent=root,
        sequence_start=1,
        sequence_end=2,
        source_count=2,
        text="User flies to Lisbon on May 3rd; wants an aisle seat.",
    )
    schedule = ok(
        client.post(
            "/api/v1/schedules/",
            {
                "name": "Nightly summaries",
                "action": "summarise",
                "cadence": {"type": "cron", "value": "0 3 * * *", "timezone": "Europe/Lisbon"},
            },
            format="json",
        )
    )
    run = ok(client.post(f"/api/v1/schedules/{schedule['id']}/run/"))
    document = ok(
        client.post(
            "/api/v1/documents/",
            {
                "source_uri": "https://example.com/lisbon-guide",
                "user_id": USER,
                "text": (
                    "Lisbon guide. Trams: line 28 crosses the old town. Airport: the metro red"
                    " line."
                ),
            },
            format="json",
        )
    )
    # An agent webhook (agent_goal runs call it): the story's summarise run never does.
    webhook = ok(
        client.post(
            "/api/v1/webhooks/",
            {
                "kind": "agent",
                "url": "https://agent.example.com/goal",
                "description": "The travel agent",
            },
            format="json",
        )
    )
    return {
        "session_id": SESSION,
        "user_id": USER,
        "note_id": NOTE,
        "fact_id": str(fact["id"]),
        "external_id": "seat-pref",
        "node_id": str(root.pk),
        "schedule_id": schedule["id"],
        "run_id": run["id"],
        "channel_id": str(session.channel_id),
        "document_id": str(document["id"]),
        "webhook_id": webhook["id"],
        "workspace": session.workspace.name,
    }


# --- the OpenAPI schema as JSON Schema ------------------------------------------------------------


def json_schema(
    schema: dict[str, Any],
    components: dict[str, Any],
    *,
    strict: bool,
    inside: frozenset[str] = frozenset(),
) -> Any:
    """An OpenAPI 3.0 schema as JSON Schema: $refs inlined, `nullable` as a null alternative, and
    (strict) objects that list their properties refusing any other. A component met again inside
    itself (JsonValue's arrays and objects) is inlined once; deeper, anything is accepted."""
    if "$ref" in schema:
        name = schema["$ref"].split("/")[-1]
        if name in inside:
            return {}
        return json_schema(components[name], components, strict=strict, inside=inside | {name})
    out: dict[str, Any] = {}
    for name, value in schema.items():
        if name in ("properties",):
            out[name] = {
                k: json_schema(v, components, strict=strict, inside=inside)
                for k, v in value.items()
            }
        elif name in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[name] = json_schema(value, components, strict=strict, inside=inside)
        elif name in ("allOf", "oneOf", "anyOf"):
            out[name] = [json_schema(v, components, strict=strict, inside=inside) for v in value]
        elif name not in (
            "nullable",
            "readOnly",
            "writeOnly",
            "example",
            "examples",
            "description",
            "title",
        ):
            out[name] = value
    if strict and "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    if schema.get("nullable"):
        return {"anyOf": [out, {"type": "null"}]}
    return out


def schema_errors(
    value: Any, schema: dict[str, Any], components: dict[str, Any], *, strict: bool
) -> list[str]:
    from jsonschema import Draft7Validator

    validator = Draft7Validator(json_schema(schema, components, strict=strict))
    return [
        f"{'/'.join(str(p) for p in e.absolute_path) or '(body)'}: {e.message}"
        for e in validator.iter_errors(value)
    ]


def _resolve(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    while True:
        if "$ref" in schema:
            schema = components[schema["$ref"].split("/")[-1]]
        elif len(schema.get("allOf", [])) == 1:
            schema = schema["allOf"][0]
        else:
            return schema


def shape_errors(
    example: Any, actual: Any, schema: dict[str, Any], components: dict[str, Any], path: str = ""
) -> list[str]:
    """Where `actual` differs in shape from the documented `example`: a documented field the example
    shows that the response lacks, or a value of another JSON type (a null stands for any type).
    Free-form objects (metadata, counts by kind) are the caller's data: their keys are not
    compared."""
    schema = _resolve(schema, components)
    if example is None or actual is None:
        return []
    if isinstance(example, dict):
        if not isinstance(actual, dict):
            return [f"{path or '(body)'}: object documented, {type(actual).__name__} answered"]
        properties = schema.get("properties")
        if not properties:
            return []
        errors = [
            f"{path}.{k}: documented, not answered"
            for k in example
            if k in properties and k not in actual
        ]
        for k in example:
            if k in actual and k in properties:
                errors += shape_errors(
                    example[k], actual[k], properties[k], components, f"{path}.{k}"
                )
        return errors
    if isinstance(example, list):
        if not isinstance(actual, list):
            return [f"{path}: array documented, {type(actual).__name__} answered"]
        if not (example and actual):
            return []
        return shape_errors(
            example[0], actual[0], schema.get("items", {}), components, f"{path}[0]"
        )
    same = isinstance(example, bool) == isinstance(actual, bool) and (
        isinstance(example, (int, float))
        and isinstance(actual, (int, float))
        or type(example) is type(actual)
    )
    return (
        []
        if same
        else [f"{path}: {type(example).__name__} documented, {type(actual).__name__} answered"]
    )
