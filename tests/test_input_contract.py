"""The API's input contract: input that once answered 500, and query parameters refused by name."""

from __future__ import annotations

import re

import pytest

from tests.base import error_code

pytestmark = pytest.mark.django_db


def test_a_cadence_patch_without_its_type_is_a_400(alice) -> None:  # type: ignore[no-untyped-def]
    created = alice.post(
        "/api/v1/schedules/",
        {"name": "n", "action": "summarise", "cadence": {"type": "interval", "value": "15m"}},
        format="json",
    )
    assert created.status_code == 201, created.content
    url = f"/api/v1/schedules/{created.json()['id']}/"
    for cadence in ({"value": "1h"}, {"type": "interval"}, {"timezone": "UTC"}):
        response = alice.patch(url, {"cadence": cadence}, format="json")
        assert response.status_code == 400, (cadence, response.content)
        assert error_code(response) == "validation_error"
        missing = {"type", "value"} - set(cadence)
        assert {f"cadence.{name}" for name in missing} <= set(
            response.json()["error"]["details"]["fields"]
        )
    assert alice.get(url).json()["cadence"]["value"] == "15m"  # nothing changed


@pytest.mark.parametrize("tool_calls", [[None], [{"name": "f"}, None], [1], ["f"]])
def test_a_tool_call_that_is_not_an_object_is_a_400(alice, tool_calls) -> None:  # type: ignore[no-untyped-def]
    for body in (
        {"role": "assistant", "content": "", "tool_calls": tool_calls},
        {"events": [{"role": "assistant", "content": "x", "tool_calls": tool_calls}]},
    ):
        response = alice.post("/api/v1/sessions/s1/events/", body, format="json")
        assert response.status_code == 400, (body, response.content)
    assert alice.get("/api/v1/sessions/s1/").status_code == 404  # nothing stored


# --- Query parameters: what an operation does not declare is refused by name ---------------------


def _operations() -> list[tuple[str, str, frozenset[str]]]:
    from memoryhub.api.parameters import declared_query_parameters

    return sorted(
        (method, path, names) for (method, path), (names, _) in declared_query_parameters().items()
    )


def _concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "1", path)


def test_every_operation_refuses_an_unknown_query_parameter_by_name(alice) -> None:  # type: ignore[no-untyped-def]
    operations = _operations()
    assert len(operations) >= 40
    lists = [(m, p) for m, p, names in operations if "limit" in names]
    # sessions, notes, facts, summaries, schedules, runs, channels, documents, browse…
    assert len(lists) >= 8
    for method, path, names in operations:
        for typo, meant in (("usr_id", "user_id"), ("limt", "limit"), ("colour", None)):
            response = getattr(alice, method)(f"{_concrete(path)}?{typo}=5", format="json")
            assert response.status_code == 400, (method, path, typo, response.content)
            assert error_code(response) == "unknown_parameter", (method, path, response.content)
            error = response.json()["error"]
            assert typo in error["details"]["fields"], error
            if meant in names:
                assert f"Did you mean '{meant}'?" in error["message"], (method, path, error)
            else:
                assert "Did you mean" not in error["message"], (method, path, error)


def test_every_declared_query_parameter_is_known(alice) -> None:  # type: ignore[no-untyped-def]
    from memoryhub.api.parameters import declared_query_parameters

    for (method, path), (names, prefixes) in sorted(declared_query_parameters().items()):
        if method != "get":
            continue
        for name in [*names, *(f"{prefix}topic" for prefix in prefixes)]:
            response = alice.get(f"{_concrete(path)}?{name}=1")
            if response.status_code == 400:
                assert error_code(response) != "unknown_parameter", (path, name, response.content)


def test_facts_know_their_client_id_filter_and_meta_filters(alice) -> None:  # type: ignore[no-untyped-def]
    assert alice.get("/api/v1/facts/?external_id=ext1").status_code == 200
    assert alice.get("/api/v1/facts/?meta.topic=billing").status_code == 200
    refused = alice.get("/api/v1/facts/?meta.=x")
    assert error_code(refused) == "unknown_parameter"
    typo = alice.get("/api/v1/facts/?externl_id=ext1")
    assert "Did you mean 'external_id'?" in typo.json()["error"]["message"]


def test_the_key_is_checked_before_the_parameters(anon) -> None:  # type: ignore[no-untyped-def]
    assert anon.get("/api/v1/sessions/?usr_id=ann").status_code == 401


# --- The schema says what the server refuses, the server refuses what the schema refuses ----------


def _schema(alice) -> dict:  # type: ignore[no-untyped-def,type-arg]
    response = alice.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    return response.json()


def _strings(schema, path=""):  # type: ignore[no-untyped-def]
    if isinstance(schema, dict):
        if schema.get("type") == "string":
            yield path, schema
        for key, value in schema.items():
            if key != "not":
                yield from _strings(value, f"{path}.{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            yield from _strings(value, f"{path}[{index}]")


def _refuses_nul(string: dict) -> bool:  # type: ignore[type-arg]
    refused = string.get("not", {})
    branches = refused.get("anyOf", [refused])
    return (
        "enum" in string
        or "format" in string
        or any(b.get("pattern") == r"\x00" for b in branches)
        or string.get("pattern", "").startswith("^[A-Za-z0-9]")
    )


def test_the_schema_states_that_no_request_string_holds_a_nul(alice) -> None:  # type: ignore[no-untyped-def]
    schema = _schema(alice)
    components = schema["components"]["schemas"]
    requests = {name: c for name, c in components.items() if name.endswith("Request")}
    assert len(requests) >= 20
    missing = [
        f"{name}{path}"
        for name, component in requests.items()
        for path, s in _strings(component)
        if not _refuses_nul(s)
    ]
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                if parameter["schema"].get("type") == "string" and not _refuses_nul(
                    parameter["schema"]
                ):
                    missing.append(f"{method} {path} ?{parameter['name']}")
    assert not missing, missing
    assert components["NoteInputRequest"]["properties"]["metadata"]["additionalProperties"] == {
        "$ref": "#/components/schemas/JsonValue"
    }
    # The server refuses what the schema refuses: NUL in a metadata value, and in a key.
    for metadata in ({"a": ["x\x00"]}, {"k\x00": 1}):
        refused = alice.post(
            "/api/v1/notes/", {"content": "x", "metadata": metadata}, format="json"
        )
        assert error_code(refused) == "null_characters_not_allowed"


def test_blank_content_and_blank_filters_are_stated(alice) -> None:  # type: ignore[no-untyped-def]
    import re as regex

    schema = _schema(alice)
    content = schema["components"]["schemas"]["NoteInputRequest"]["properties"]["content"]
    blank = content["not"]["anyOf"][0]["pattern"]
    assert regex.fullmatch(blank, " \t\n") and not regex.fullmatch(blank, " x ")
    assert (
        error_code(alice.post("/api/v1/notes/", {"content": " \n"}, format="json"))
        == "empty_content"
    )
    user_id = next(
        p
        for p in schema["paths"]["/api/v1/schedules/"]["get"]["parameters"]
        if p["name"] == "user_id"
    )
    assert user_id["schema"]["minLength"] == 1
    assert error_code(alice.get("/api/v1/schedules/?user_id=")) == "invalid_parameter"


@pytest.mark.parametrize("value", ["0.0", "1e3", " 5", "5 "])
def test_an_integer_query_value_is_digits_only(alice, value) -> None:  # type: ignore[no-untyped-def]
    assert (
        alice.post(
            "/api/v1/sessions/s1/events/", {"role": "user", "content": "hi"}, format="json"
        ).status_code
        == 201
    )
    response = alice.get("/api/v1/sessions/s1/events/", {"after": value})
    assert response.status_code == 400 and error_code(response) == "invalid_parameter", (
        response.content
    )
    assert alice.get("/api/v1/sessions/s1/events/", {"after": "0"}).status_code == 200


def test_a_native_message_is_one_of_the_documented_shapes(alice) -> None:  # type: ignore[no-untyped-def]
    schema = _schema(alice)
    restored = schema["components"]["schemas"]["Restored"]["properties"]["messages"]["items"]
    # a native message is a valid chat message too
    assert "anyOf" in restored and "oneOf" not in restored


def test_the_fuzz_harness_excuses_nul_only_in_keys() -> None:
    from tests.fuzzing import CHECKS, _nul_only_in_keys

    assert _nul_only_in_keys({"metadata": {"k\x00": 1}})
    assert not _nul_only_in_keys({"metadata": {"k\x00": "v\x00"}})
    assert not _nul_only_in_keys({"title": "a\x00"}) and not _nul_only_in_keys({"a": 1})
    assert len(CHECKS) >= 15  # every check schemathesis registers, and the envelope


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/v1/search/", {"query": "tea", "session": 5}),
        ("/api/v1/search/", {"query": "tea", "user_id": 5}),
        ("/api/v1/context/", {"session": 5}),
        ("/api/v1/documents/", {"source_uri": "u", "text": "t", "workspace": 5}),
        (
            "/api/v1/schedules/",
            {
                "name": "n",
                "action": "summarise",
                "cadence": {"type": "interval", "value": "1h"},
                "user_id": 5,
            },
        ),
        ("/api/v1/notes/", {"content": "c", "session": 5}),
    ],
)
def test_a_number_for_a_placement_string_is_a_400_on_every_endpoint(alice, path, body) -> None:  # type: ignore[no-untyped-def]
    response = alice.post(path, body, format="json")
    assert response.status_code == 400, (path, body, response.content)
    assert error_code(response) == "validation_error"
    field = next(name for name in body if isinstance(body[name], int))
    assert field in response.json()["error"]["details"]["fields"], response.content
