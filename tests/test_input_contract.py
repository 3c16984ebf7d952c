"""The API's input contract: input that once answered 500, and query parameters refused by name."""

from __future__ import annotations

import re

import pytest

from tests.base import error_code

pytestmark = pytest.mark.django_db


def test_a_cadence_patch_without_its_type_is_a_400(alice) -> None:  # type: ignore[no-untyped-def]
    created = alice.post("/api/v1/schedules/", {"name": "n", "action": "summarise",
                                                "cadence": {"type": "interval", "value": "15m"}}, format="json")
    assert created.status_code == 201, created.content
    url = f"/api/v1/schedules/{created.json()['id']}/"
    for cadence in ({"value": "1h"}, {"type": "interval"}, {"timezone": "UTC"}):
        response = alice.patch(url, {"cadence": cadence}, format="json")
        assert response.status_code == 400, (cadence, response.content)
        assert error_code(response) == "validation_error"
        missing = {"type", "value"} - set(cadence)
        assert {f"cadence.{name}" for name in missing} <= set(response.json()["error"]["details"]["fields"])
    assert alice.get(url).json()["cadence"]["value"] == "15m"  # nothing changed


@pytest.mark.parametrize("tool_calls", [[None], [{"name": "f"}, None], [1], ["f"]])
def test_a_tool_call_that_is_not_an_object_is_a_400(alice, tool_calls) -> None:  # type: ignore[no-untyped-def]
    for body in ({"role": "assistant", "content": "", "tool_calls": tool_calls},
                 {"events": [{"role": "assistant", "content": "x", "tool_calls": tool_calls}]}):
        response = alice.post("/api/v1/sessions/s1/events/", body, format="json")
        assert response.status_code == 400, (body, response.content)
    assert alice.get("/api/v1/sessions/s1/").status_code == 404  # nothing stored


# --- Query parameters: what an operation does not declare is refused by name ---------------------

def _operations() -> list[tuple[str, str, frozenset[str]]]:
    from memoryhub.api.parameters import declared_query_parameters

    return sorted((method, path, names) for (method, path), (names, _) in declared_query_parameters().items())


def _concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "1", path)


def test_every_operation_refuses_an_unknown_query_parameter_by_name(alice) -> None:  # type: ignore[no-untyped-def]
    operations = _operations()
    assert len(operations) >= 40
    lists = [(m, p) for m, p, names in operations if "limit" in names]
    assert len(lists) >= 8  # sessions, notes, facts, summaries, schedules, runs, channels, documents, browse…
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
