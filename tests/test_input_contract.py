"""The API's input contract: input that once answered 500, and query parameters refused by name."""

from __future__ import annotations

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
