"""GET /api/v1/key/: the caller's own key, its tenant, limits and scopes; never its secret, never
another key's."""

from __future__ import annotations

from accounts.models import ApiKey
from tests.base import error_code, make_client, make_key

URL = "/api/v1/key/"


def test_a_tenant_wide_key_names_its_tenant_and_scopes(cast) -> None:  # type: ignore[no-untyped-def]
    response = cast.alice.get(URL)
    assert response.status_code == 200, response.content
    assert response.json() == {
        "tenant": cast.alice_tenant.name,
        "workspace": None,
        "user_id": None,
        "scopes": ["admin", "read", "write"],
    }
    assert cast.alice_key not in response.content.decode()
    assert cast.bob.get(URL).json()["tenant"] == cast.bob_tenant.name


def test_a_limited_key_names_its_workspace_and_user(cast) -> None:  # type: ignore[no-untyped-def]
    raw = make_key(cast.alice_tenant, ("read",), workspace="beta", user="ann")
    body = make_client(raw).get(URL).json()
    assert body == {
        "tenant": cast.alice_tenant.name,
        "workspace": "beta",
        "user_id": "ann",
        "scopes": ["read"],
    }
    prefix = ApiKey.parse_prefix(raw)
    assert prefix is not None and raw not in str(body) and raw.split("_", 2)[2] not in str(body)


def test_no_key_a_wrong_key_and_bad_input_are_refused(cast, anon) -> None:  # type: ignore[no-untyped-def]
    assert anon.get(URL).status_code == 401
    wrong = make_client("mh_00000000_nothing")
    assert wrong.get(URL).status_code == 401
    response = cast.alice.get(URL, {"workspace": "beta"})
    assert (response.status_code, error_code(response)) == (400, "unknown_parameter")
    writer = make_client(make_key(cast.alice_tenant, ("write",)))
    assert (writer.get(URL).status_code, error_code(writer.get(URL))) == (403, "insufficient_scope")
