"""Import and export in the admin: the API's JSON files, superusers only, all or nothing."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile

from accounts.models import Tenant
from memoryhub.models import Event, Session
from tests.base import make_tenant, post_events

URL = "/admin/transfer/"


@pytest.fixture(autouse=True)
def _fast_passwords(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def superuser_client(client, db):  # type: ignore[no-untyped-def]
    client.force_login(
        get_user_model().objects.create_superuser("root", "r@example.com", "pw-long-enough-123")
    )
    return client


def export(client, **fields):  # type: ignore[no-untyped-def]
    data = {"action": "export", **{f"export-{k}": v for k, v in fields.items()}}
    return client.post(URL, data)


def test_export_downloads_one_tenants_memory(superuser_client, alice, bob) -> None:
    post_events(
        alice, "a-chat", {"role": "user", "content": "alice's secret: the key is under the mat"}
    )
    post_events(bob, "b-chat", {"role": "user", "content": "bob's words"})
    tenant = Tenant.objects.get(name="alice")
    response = export(superuser_client, tenant=tenant.pk, scope="tenant")
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith(
        'attachment; filename="memoryhub-alice-tenant-'
    )
    data = json.loads(response.content)
    assert data["format"] == "memoryhub-export" and data["schema_version"] == 1
    assert [s["id"] for s in data["sessions"]] == ["a-chat"]
    assert "bob's words" not in response.content.decode()


def test_export_of_an_unknown_session_is_a_form_error(superuser_client, alice) -> None:
    tenant = Tenant.objects.get(name="alice")
    response = export(superuser_client, tenant=tenant.pk, scope="session", session="nope")
    assert response.status_code == 200
    assert "has no session" in response.content.decode()


def test_import_round_trips_into_another_tenant(superuser_client, alice) -> None:
    post_events(
        alice, "a-chat", {"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}
    )
    alice_tenant = Tenant.objects.get(name="alice")
    exported = export(superuser_client, tenant=alice_tenant.pk, scope="tenant").content
    carol = make_tenant("carol")
    response = superuser_client.post(
        URL,
        {
            "action": "import",
            "import-tenant": carol.pk,
            "import-file": SimpleUploadedFile(
                "export.json", exported, content_type="application/json"
            ),
        },
        follow=True,
    )
    assert response.status_code == 200
    assert "Imported into carol" in response.content.decode()
    session = Session.objects.get(tenant=carol, external_id="a-chat")
    assert list(
        Event.objects.filter(session=session).order_by("sequence").values_list("content", flat=True)
    ) == ["one", "two"]
    assert Session.objects.filter(tenant=alice_tenant).count() == 1  # the source is untouched


def test_a_bad_file_stores_nothing_and_says_why(superuser_client, db) -> None:
    carol = make_tenant("carol")
    for body, code in (
        (b"{not json", "malformed_json"),
        (b'{"format": "other"}', "invalid_import"),
    ):
        response = superuser_client.post(
            URL,
            {
                "action": "import",
                "import-tenant": carol.pk,
                "import-file": SimpleUploadedFile(
                    "bad.json", body, content_type="application/json"
                ),
            },
        )
        assert response.status_code == 200
        assert code in response.content.decode()
    assert not Session.objects.filter(tenant=carol).exists()


def test_only_superusers_import_or_export(client, db) -> None:  # type: ignore[no-untyped-def]
    staff = get_user_model().objects.create_user(
        "staff", password="pw-long-enough-123", is_staff=True
    )
    client.force_login(staff)
    assert client.get(URL).status_code == 403
    client.logout()
    assert client.get(URL).status_code == 302  # to the login page


def test_a_re_import_offers_skip_and_merge_and_reports_what_it_did(superuser_client, alice) -> None:
    post_events(
        alice, "a-chat", {"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}
    )
    alice_tenant = Tenant.objects.get(name="alice")
    exported = export(superuser_client, tenant=alice_tenant.pk, scope="tenant").content
    page = superuser_client.get(URL).content.decode()
    assert (
        'name="import-on_conflict" value="merge"' in page
        and "Imported schedules arrive paused" in page
    )

    def again(option: str) -> str:
        return superuser_client.post(
            URL,
            {
                "action": "import",
                "import-tenant": alice_tenant.pk,
                "import-on_conflict": option,
                "import-file": SimpleUploadedFile(
                    "export.json", exported, content_type="application/json"
                ),
            },
            follow=True,
        ).content.decode()

    assert "session_exists" in again("fail") and "&#x27;a-chat&#x27; already exists" in again(
        "fail"
    )
    skipped = again("skip")
    assert (
        "Imported into alice: nothing; skipped (already stored) 2 chunks, 2 events, 1 session"
        in skipped
    )
    assert "skipped sessions: a-chat" in skipped
    assert "merged into 1 session; merged sessions: a-chat" in again("merge")
    session = Session.objects.get(tenant=alice_tenant, external_id="a-chat")
    assert Event.objects.filter(session=session).count() == 2  # never doubled
