"""Channels through the API (GET/POST /channels/, GET/PATCH /channels/{id}/), with a
description and a default channel per workspace."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import reverse

from accounts.models import Channel
from memoryhub.models import Session
from tests.base import error_code, make_client, make_key, make_tenant, new_session

CHANNELS = "/api/v1/channels/"


def create(client: Any, **body: Any) -> Any:
    return client.post(CHANNELS, body, format="json")


def names(client: Any, **params: Any) -> list[tuple[str, str, bool]]:
    response = client.get(CHANNELS, params)
    assert response.status_code == 200, response.content
    return [(c["workspace"], c["name"], c["is_default"]) for c in response.json()["results"]]


def test_a_workspace_starts_with_its_default_channel(alice) -> None:
    assert names(alice) == [("default", "general", True)]


def test_create_list_and_get(alice) -> None:
    response = create(alice, name="travel", description="Trips and bookings")
    assert response.status_code == 201, response.content
    body = response.json()
    assert {k: body[k] for k in ("name", "description", "workspace", "is_default")} == {
        "name": "travel",
        "description": "Trips and bookings",
        "workspace": "default",
        "is_default": False,
    }
    create(alice, name="papers", workspace="research")
    assert names(alice) == [
        ("default", "general", True),
        ("default", "travel", False),
        ("research", "general", True),
        ("research", "papers", False),
    ]
    assert names(alice, workspace="research", is_default="false") == [("research", "papers", False)]
    assert alice.get(f"{CHANNELS}{body['id']}/").json()["description"] == "Trips and bookings"
    page = alice.get(CHANNELS, {"limit": 2}).json()
    assert page["count"] == 4 and len(page["results"]) == 2 and page["next"]


def test_sessions_use_the_channels_of_the_api(alice) -> None:
    channel = create(alice, name="support").json()
    new_session(alice, "s1", channel="support")
    assert Session.objects.get(external_id="s1").channel_id == channel["id"]


def test_a_new_default_channel_takes_the_sessions_that_name_none(alice) -> None:
    new_session(alice, "before")
    response = create(alice, name="lobby", is_default=True)
    assert response.status_code == 201 and response.json()["is_default"] is True
    assert names(alice) == [("default", "general", False), ("default", "lobby", True)]
    new_session(alice, "after")
    assert alice.get("/api/v1/sessions/after/").json()["channel"] == "lobby"
    assert alice.get("/api/v1/sessions/before/").json()["channel"] == "general"


def test_patch_renames_describes_and_moves_the_default(alice) -> None:
    travel = create(alice, name="travel").json()
    general = Channel.objects.get(tenant__name="alice", name="general")
    response = alice.patch(
        f"{CHANNELS}{travel['id']}/", {"name": "trips", "description": "Where to go"}, format="json"
    )
    assert response.status_code == 200 and response.json()["name"] == "trips"
    assert response.json()["description"] == "Where to go"
    response = alice.patch(f"{CHANNELS}{travel['id']}/", {"is_default": True}, format="json")
    assert response.json()["is_default"] is True
    general.refresh_from_db()
    assert general.is_default is False


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"name": "   "}, 400, "validation_error"),  # blank once trimmed
        ({"name": "x" * 101}, 400, "validation_error"),
        ({"name": 7}, 400, "validation_error"),
        ({"name": "ok", "colour": "blue"}, 400, "unknown_field"),
        ({"description": "no name"}, 400, "validation_error"),
        ({"name": "general"}, 409, "channel_exists"),
    ],
)
def test_bad_creates_are_refused_and_store_nothing(
    alice, body: dict[str, Any], status: int, code: str
) -> None:
    response = create(alice, **body)
    assert response.status_code == status, response.content
    assert error_code(response) == code
    assert Channel.objects.filter(tenant__name="alice").count() == 1


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (
            {"is_default": False},
            409,
            "default_channel_required",
        ),  # stored state, not the input's shape
        ({"name": "travel"}, 409, "channel_exists"),
        ({"name": ""}, 400, "validation_error"),
        ({"workspace": "elsewhere"}, 400, "unknown_field"),
    ],
)
def test_bad_patches_are_refused_and_change_nothing(
    alice, body: dict[str, Any], status: int, code: str
) -> None:
    create(alice, name="travel")
    general = Channel.objects.get(tenant__name="alice", name="general")
    response = alice.patch(f"{CHANNELS}{general.pk}/", body, format="json")
    assert response.status_code == status, response.content
    assert error_code(response) == code
    general.refresh_from_db()
    assert (general.name, general.is_default) == ("general", True)


def test_channels_are_confined_to_the_tenant(alice, bob) -> None:
    travel = create(alice, name="travel").json()
    assert bob.get(f"{CHANNELS}{travel['id']}/").status_code == 404
    response = bob.patch(f"{CHANNELS}{travel['id']}/", {"name": "stolen"}, format="json")
    assert response.status_code == 404 and error_code(response) == "channel_not_found"
    assert names(bob) == [("default", "general", True)]
    assert Channel.objects.get(pk=travel["id"]).name == "travel"


def test_a_workspace_limited_key_sees_and_changes_only_its_workspace(alice, cast) -> None:
    create(alice, name="papers", workspace="research")
    other = create(alice, name="travel").json()
    limited = make_client(make_key(cast.alice_tenant, workspace="research"))
    assert names(limited) == [("research", "general", True), ("research", "papers", False)]
    response = create(limited, name="x", workspace="default")
    assert response.status_code == 403 and error_code(response) == "workspace_forbidden"
    assert create(limited, name="notes").json()["workspace"] == "research"
    assert (
        limited.patch(f"{CHANNELS}{other['id']}/", {"name": "y"}, format="json").status_code == 404
    )


def test_a_user_limited_or_read_only_key_reads_but_does_not_write(alice, cast) -> None:
    travel = create(alice, name="travel").json()
    user_key = make_client(make_key(cast.alice_tenant, user="u1"))
    assert ("default", "travel", False) in names(user_key)
    response = create(user_key, name="mine")
    assert response.status_code == 403 and error_code(response) == "user_limited_key"
    response = user_key.patch(f"{CHANNELS}{travel['id']}/", {"description": "hi"}, format="json")
    assert response.status_code == 403 and error_code(response) == "user_limited_key"
    reader = make_client(make_key(cast.alice_tenant, scopes=("read",)))
    assert reader.get(CHANNELS).status_code == 200
    response = create(reader, name="nope")
    assert response.status_code == 403 and error_code(response) == "insufficient_scope"
    assert not Channel.objects.filter(name__in=["mine", "nope"]).exists()


def test_descriptions_and_the_default_travel_in_exports(
    alice, django_capture_on_commit_callbacks
) -> None:
    create(alice, name="lobby", description="Where everyone starts", is_default=True)
    new_session(alice, "s1")
    exported = alice.post("/api/v1/export/", {}, format="json").json()
    carol = make_client(make_key(make_tenant("carol")))
    with django_capture_on_commit_callbacks(execute=True):
        response = carol.post(
            "/api/v1/import/", json.dumps(exported), content_type="application/json"
        )
    assert response.status_code == 201, response.content
    assert names(carol) == [("default", "general", False), ("default", "lobby", True)]
    assert (
        carol.get(CHANNELS, {"name": "lobby"}).json()["results"][0]["description"]
        == "Where everyone starts"
    )


@pytest.fixture
def _fast_passwords(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.mark.usefixtures("_fast_passwords")
def test_the_admin_makes_a_channel_the_default(admin_client, alice) -> None:
    travel = create(alice, name="travel", description="Trips").json()
    changelist = reverse("admin:accounts_channel_changelist")
    page = admin_client.get(changelist)
    assert page.status_code == 200 and "Trips" in page.content.decode()
    admin_client.post(changelist, {"action": "make_default", "_selected_action": [travel["id"]]})
    assert Channel.objects.get(pk=travel["id"]).is_default is True
    assert Channel.objects.get(tenant__name="alice", name="general").is_default is False
    general = Channel.objects.get(tenant__name="alice", name="general")
    admin_client.post(
        changelist, {"action": "make_default", "_selected_action": [travel["id"], general.pk]}
    )
    assert Channel.objects.get(pk=travel["id"]).is_default is True  # two in one workspace: refused


def test_the_list_costs_the_same_queries_for_many_channels(alice) -> None:
    create(alice, name="one")
    alice.get(CHANNELS)  # the key is looked up and touched once

    def count() -> int:
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as captured:
            assert alice.get(CHANNELS).status_code == 200
        return len(captured.captured_queries)

    few = count()
    for i in range(10):
        create(alice, name=f"topic-{i}", workspace=f"w{i % 3}")
    assert count() == few
