"""Every hostile input found by an attack on the server is a 4xx in the envelope, never a 500."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memoryhub.models import Event, Fact, Note
from retrieval.models import Chunk
from tests.base import error_code, new_session


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def post_raw(client: Any, url: str, body: str, method: str = "post") -> Any:
    return getattr(client, method)(url, data=body, content_type="application/json")


DEEP_URLS = [
    ("post", "/api/v1/sessions/"),
    ("post", "/api/v1/sessions/s1/events/"),
    ("post", "/api/v1/notes/"),
    ("post", "/api/v1/facts/"),
    ("put", "/api/v1/sessions/s1/scratchpad/"),
    ("post", "/api/v1/search/"),
    ("post", "/api/v1/schedules/"),
    ("post", "/api/v1/import/"),
]


@pytest.mark.parametrize("method, url", DEEP_URLS)
def test_json_nested_900_deep(alice, method: str, url: str) -> None:
    new_session(alice, "s1")
    for body in (deep(900), '{"metadata": ' + '{"a": ' * 900 + "1" + "}" * 901):
        response = post_raw(alice, url, body, method)
        assert response.status_code == 400, (url, response.content[:300])
        assert error_code(response) == "too_deeply_nested"


SURROGATE = '"\\ud800"'


@pytest.mark.parametrize(
    "event",
    [
        '{"role": "user", "content": "hi", "metadata": {' + SURROGATE + ": 1}}",
        '{"role": "user", "content": "hi", "metadata": {"k": ' + SURROGATE + "}}",
        '{"role": "tool", "tool_name": "t", "tool_args": {"a": ' + SURROGATE + "}}",
        '{"role": "user", "content": ' + SURROGATE + "}",
    ],
)
def test_lone_surrogate_in_event(alice, event: str) -> None:
    response = post_raw(alice, "/api/v1/sessions/s1/events/", event)
    assert response.status_code == 400, response.content
    assert error_code(response) == "invalid_unicode"
    assert not Event.objects.exists()


def test_lone_surrogates_elsewhere(alice) -> None:
    new_session(alice, "s1")
    cases = [
        ("post", "/api/v1/facts/", '{"content": "x", "metadata": {"a": ' + SURROGATE + "}}"),
        ("post", "/api/v1/notes/", '{"content": "x", "tags": [' + SURROGATE + "]}"),
        ("put", "/api/v1/sessions/s1/scratchpad/", '{"items": [' + SURROGATE + "]}"),
        ("put", "/api/v1/sessions/s1/scratchpad/", '{"items": {"k": "\\udfff"}}'),
    ]
    for method, url, body in cases:
        response = post_raw(alice, url, body, method)
        assert response.status_code == 400, (url, response.content)
        assert error_code(response) == "invalid_unicode"
    assert not Fact.objects.exists() and not Note.objects.exists()


def test_a_surrogate_pair_is_one_character(alice) -> None:
    body = '{"role": "user", "content": "smile \\ud83d\\ude00", "metadata": {"\\ud83d\\ude00": 1}}'
    response = post_raw(alice, "/api/v1/sessions/s1/events/", body)
    assert response.status_code == 201, response.content
    assert Event.objects.get().content == "smile \U0001f600"


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400", "NaN", "Infinity"])
@pytest.mark.parametrize("url", ["/api/v1/notes/", "/api/v1/facts/"])
def test_meta_filter_with_non_finite_numbers(alice, url: str, value: str) -> None:
    # Not a JSON number: the filter matches the text only.
    assert (
        alice.post(url, {"content": "as text", "metadata": {"x": value}}, format="json").status_code
        == 201
    )
    assert (
        alice.post(url, {"content": "other", "metadata": {"x": 1}}, format="json").status_code
        == 201
    )
    response = alice.get(url, {"meta.x": value})
    assert response.status_code == 200, response.content
    assert [item["content"] for item in response.json()["results"]] == ["as text"]


def embedding(value: float) -> list[float]:
    return [value] * 384


@pytest.mark.parametrize(
    "vector", [embedding(70000.0), embedding(0.0), embedding(1e-45), [1e300] + [0.0] * 383]
)
def test_query_embedding_out_of_range_or_zero(alice, vector: list[float]) -> None:
    response = alice.post(
        "/api/v1/search/", {"query_embedding": vector, "mode": "vector"}, format="json"
    )
    assert response.status_code == 400, response.content
    assert error_code(response) == "invalid_embedding"


@pytest.mark.parametrize(
    "cadence",
    [
        {"type": "cron", "value": "0 0 31 2 *"},
        {"type": "cron", "value": "0 0 30 2 *"},
        {"type": "once", "value": "9999-12-31T23:59:59-14:00"},
        {"type": "once", "value": "9999-12-31T23:59:59+14:00"},
    ],
)
def test_cadence_that_never_fires_or_overflows(alice, cadence: dict[str, str]) -> None:
    body = {"name": "x", "action": "summarise", "cadence": cadence}
    response = alice.post("/api/v1/schedules/", body, format="json")
    assert response.status_code == 400, response.content
    error_code(response)


def test_import_with_all_zero_embeddings_keeps_search_working(alice, index) -> None:
    index(alice, "s1", {"role": "user", "content": "the lisbon flight leaves at nine"})
    export = alice.post("/api/v1/export/", {}, format="json").json()
    assert export["chunks"]
    for chunk in export["chunks"]:
        chunk["embedding"] = [0.0] * 384
    alice.delete("/api/v1/sessions/s1/")
    response = post_raw(alice, "/api/v1/import/", json.dumps(export))
    assert response.status_code == 201, response.content
    # Imported without the unusable vectors, to be embedded again.
    assert not Chunk.objects.exclude(embedding=None).exists()
    for mode in ("vector", "hybrid", "text"):
        response = alice.post(
            "/api/v1/search/", {"query": "lisbon flight", "mode": mode}, format="json"
        )
        assert response.status_code == 200, response.content


def test_import_with_out_of_range_embedding_is_refused(alice, index) -> None:
    index(alice, "s1", {"role": "user", "content": "the lisbon flight leaves at nine"})
    export = alice.post("/api/v1/export/", {}, format="json").json()
    export["chunks"][0]["embedding"] = [70000.0] * 384
    alice.delete("/api/v1/sessions/s1/")
    response = post_raw(alice, "/api/v1/import/", json.dumps(export))
    assert response.status_code == 400, response.content
    assert error_code(response) == "invalid_import"
    assert "chunks[0].embedding" in response.json()["error"]["message"]


def test_import_conflict_names_no_constraint(alice) -> None:
    assert (
        alice.post("/api/v1/notes/", {"note_id": "n1", "content": "x"}, format="json").status_code
        == 201
    )
    export = alice.post("/api/v1/export/", {}, format="json").json()
    response = post_raw(alice, "/api/v1/import/", json.dumps(export))
    assert response.status_code == 409, response.content
    error = response.json()["error"]
    assert error["code"] == "import_conflict"
    assert "constraint" not in error["message"] and "uniq" not in error["message"], error
    assert "_" not in error["message"] and "Key (" not in error["message"], error
    assert (
        error["message"]
        == "The file conflicts with stored data: a note in it already exists in this tenant."
    )


def test_import_of_a_fact_with_two_current_versions_says_so(alice, cast) -> None:  # type: ignore[no-untyped-def]
    fact = alice.post(
        "/api/v1/facts/", {"content": "Ann lives in Lyon.", "key": "city"}, format="json"
    ).json()
    alice.patch(f"/api/v1/facts/{fact['id']}/", {"content": "Ann lives in Oslo."}, format="json")
    export = alice.post("/api/v1/export/", {}, format="json").json()
    first = export["records"]["memoryhub.FactVersion"][0]["fields"]
    assert first["valid_to"] is not None
    first.update(valid_to=None, closed_by="")  # two versions of the fact are now current
    response = post_raw(cast.bob, "/api/v1/import/", json.dumps(export))
    assert response.status_code == 400 and error_code(response) == "invalid_import", (
        response.content
    )
    message = response.json()["error"]["message"]
    assert "more than one current version" in message and "already exists" not in message, message
    assert not Fact.objects.filter(tenant__name="bob").exists()


@pytest.mark.parametrize(
    "method, url, body, field",
    [
        ("post", "/api/v1/search/", {"query": "x", "agent": 5}, "agent"),
        ("post", "/api/v1/context/", {"query": "x", "agent": 5}, "agent"),
        ("post", "/api/v1/sessions/", {"id": "s9", "agent": 5}, "agent"),
        (
            "put",
            "/api/v1/sessions/s1/summary/",
            {"text": "t", "expected_epoch": "0"},
            "expected_epoch",
        ),
        ("post", "/api/v1/sessions/", {"id": "s9", "get_or_create": "yes"}, "get_or_create"),
        ("post", "/api/v1/search/", {"query": "x", "top_k": "5"}, "top_k"),
        ("post", "/api/v1/search/", {"query": "x", "roles": [1]}, "roles"),
        ("post", "/api/v1/notes/", {"content": "x", "importance": "0.5"}, "importance"),
        (
            "post",
            "/api/v1/schedules/",
            {"name": 7, "action": "summarise", "cadence": {"type": "interval", "value": "1h"}},
            "name",
        ),
    ],
)
def test_wrong_json_types_are_refused(alice, method: str, url: str, body: dict, field: str) -> None:
    new_session(alice, "s1")
    response = getattr(alice, method)(url, body, format="json")
    assert response.status_code == 400, response.content
    error_code(response)
    assert field in response.json()["error"]["details"]["fields"], response.json()


@pytest.mark.parametrize(
    "method, url, body, field",
    [
        ("post", "/api/v1/context/", {"query": "x", "tags": [" " + "t" * 64]}, "tags"),
        ("post", "/api/v1/sessions/", {"id": "s9", "agent": "a" * 200 + "  "}, "agent"),
    ],
)
def test_padding_does_not_stretch_max_length(
    alice, method: str, url: str, body: dict, field: str
) -> None:
    """DRF trims before it measures: the schema's maxLength counts what was sent."""
    response = getattr(alice, method)(url, body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["details"]["fields"], response.json()


@pytest.mark.parametrize("final", ["null", "maybe", ""])
def test_summary_tree_final_must_be_a_boolean(alice, final: str) -> None:
    new_session(alice, "s1")
    response = alice.post(f"/api/v1/sessions/s1/summary/tree/?final={final}")
    assert response.status_code == 400, response.content
    assert error_code(response) == "invalid_parameter"


def test_summary_tree_final_true(alice) -> None:
    new_session(alice, "s1")
    assert alice.post("/api/v1/sessions/s1/summary/tree/?final=true").status_code == 202
    assert alice.post("/api/v1/sessions/s1/summary/tree/").status_code == 202


def test_a_foreign_host_header_is_refused_not_reflected(alice) -> None:
    alice.post("/api/v1/notes/", {"content": "a"}, format="json")
    alice.post("/api/v1/notes/", {"content": "b"}, format="json")
    response = alice.get("/api/v1/notes/?limit=1", HTTP_HOST="evil.example")
    assert response.status_code == 400
    assert error_code(response) == "host_not_allowed"
    assert b"evil.example" not in response.content
    next_link = alice.get("/api/v1/notes/?limit=1").json()["next"]
    assert next_link.startswith("http://testserver/api/v1/notes/?")


@pytest.mark.parametrize(
    "raw, bind, expected",
    [
        ("", "127.0.0.1", ["localhost", "127.0.0.1", "[::1]"]),
        ("", "0.0.0.0", ["localhost", "127.0.0.1", "[::1]"]),
        ("", "memory.internal", ["localhost", "127.0.0.1", "[::1]", "memory.internal"]),
        ("", "::1", ["localhost", "127.0.0.1", "[::1]"]),
        ("", "fd00::5", ["localhost", "127.0.0.1", "[::1]", "[fd00::5]"]),
        ("hub.example.com, .example.org", "0.0.0.0", ["hub.example.com", ".example.org"]),
    ],
)
def test_allowed_hosts_follow_host_unless_given(raw: str, bind: str, expected: list[str]) -> None:
    from memoryhub.plumbing.env import allowed_hosts

    assert allowed_hosts(raw, bind) == expected
