"""The operator admin for accounts, sessions and events: lists, search, filters, keys."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.messages import get_messages
from django.urls import reverse

from accounts.models import ApiKey, Channel, Tenant, Workspace
from memoryhub.models import ApiUsage, Event, RollingSummary, ScratchpadItem, Session
from tests.base import make_client, make_key, make_tenant, post_events

pytestmark = pytest.mark.django_db

FOUNDATION_MODELS = [Tenant, Workspace, Channel, ApiKey, Session, Event, RollingSummary, ApiUsage]


@pytest.fixture(autouse=True)
def _fast_passwords(settings) -> None:  # type: ignore[no-untyped-def]
    # admin_client logs in a freshly created superuser: skip the deliberately slow hasher.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def data(alice, bob) -> dict[str, Any]:
    alice.post(
        "/api/v1/sessions/",
        {
            "id": "alpha-chat",
            "title": "Quarterly planning",
            "agent": "planner",
            "workspace": "research",
        },
        format="json",
    )
    post_events(
        alice,
        "alpha-chat",
        {"role": "user", "content": "Budget for the unicorn project?"},
        {"role": "tool", "tool_name": "ledger", "tool_args": {"q": "unicorn"}},
    )
    post_events(bob, "bravo-chat", {"role": "user", "content": "Bob's private words"})
    alice.patch("/api/v1/sessions/alpha-chat/", {"status": "archived"}, format="json")
    alice.post("/api/v1/search/", {"query": "unicorn budget"}, format="json")  # an ApiUsage row
    session = Session.objects.get(external_id="alpha-chat")
    RollingSummary.objects.create(
        session=session, tenant_id=session.tenant_id, text="They planned.", epoch=1
    )
    return {"session": session}


def changelist(model: type) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")


def listed(response: Any) -> str:
    assert response.status_code == 200
    return response.content.decode()


def test_every_foundation_model_is_registered() -> None:
    project_models = [
        m
        for m in apps.get_app_config("accounts").get_models()
        # inline
    ] + [m for m in apps.get_app_config("memoryhub").get_models() if m is not ScratchpadItem]
    assert set(FOUNDATION_MODELS) <= set(project_models)
    for model in project_models:
        assert admin.site.is_registered(model), model
        model_admin = admin.site._registry[model]
        assert model_admin.search_fields, f"{model.__name__} admin has no search"
        assert model_admin.list_filter, f"{model.__name__} admin has no filters"


@pytest.mark.parametrize("model", FOUNDATION_MODELS)
def test_list_pages_load_with_data(admin_client, data, model: type) -> None:
    html = listed(admin_client.get(changelist(model)))
    assert "result_list" in html, "no rows listed"


@pytest.mark.parametrize("model", FOUNDATION_MODELS)
def test_change_pages_load(admin_client, data, model: type) -> None:
    obj = model.objects.first()
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[obj.pk])
    assert admin_client.get(url).status_code == 200


def test_session_list_shows_sessions_of_every_tenant_with_their_placement(
    admin_client, data
) -> None:
    html = listed(admin_client.get(changelist(Session)))
    assert "alpha-chat" in html and "bravo-chat" in html and "research" in html


def test_every_admin_page_carries_the_list_layout_css(admin_client, data) -> None:
    """Ids on one line and long texts wrapped (memoryhub/admin.css), on Django's pages and ours."""
    for url in (changelist(Session), "/admin/"):
        assert b"memoryhub/admin.css" in admin_client.get(url).content, url


def test_session_search_and_filters(admin_client, data) -> None:
    html = listed(admin_client.get(changelist(Session), {"q": "Quarterly"}))
    assert "alpha-chat" in html and "bravo-chat" not in html
    html = listed(admin_client.get(changelist(Session), {"q": data["session"].ref_code}))
    assert "alpha-chat" in html and "bravo-chat" not in html
    html = listed(admin_client.get(changelist(Session), {"status__exact": "archived"}))
    assert "alpha-chat" in html and "bravo-chat" not in html
    bob = Tenant.objects.get(name="bob")
    html = listed(admin_client.get(changelist(Session), {"tenant__id__exact": bob.pk}))
    assert "bravo-chat" in html and "alpha-chat" not in html


def test_event_search_and_filters(admin_client, data) -> None:
    html = listed(admin_client.get(changelist(Event), {"q": "unicorn"}))
    assert "Budget for the unicorn project?" in html and "Bob&#x27;s private words" not in html
    html = listed(admin_client.get(changelist(Event), {"role__exact": "tool"}))
    assert "Called ledger with" in html and "unicorn project?" not in html
    html = listed(admin_client.get(changelist(Event), {"q": "bravo-chat"}))
    assert "private words" in html and "unicorn" not in html
    html = listed(admin_client.get(changelist(Event), {"session__id__exact": data["session"].pk}))
    assert "unicorn" in html and "private words" not in html


def test_apikey_search_and_filters(admin_client, data, cast) -> None:
    alice_prefix = ApiKey.parse_prefix(cast.alice_key)
    bob_prefix = ApiKey.parse_prefix(cast.bob_key)
    html = listed(admin_client.get(changelist(ApiKey), {"q": alice_prefix}))
    assert alice_prefix in html and bob_prefix not in html
    ApiKey.objects.get(prefix=bob_prefix).revoke()
    html = listed(admin_client.get(changelist(ApiKey), {"revoked_at__isempty": "0"}))
    assert bob_prefix in html and alice_prefix not in html
    assert cast.alice_key not in listed(admin_client.get(changelist(ApiKey)))


def test_tenant_workspace_channel_search(admin_client, data) -> None:
    assert "alice" in listed(admin_client.get(changelist(Tenant), {"q": "ali"}))
    html = listed(admin_client.get(changelist(Workspace), {"q": "research"}))
    assert "research" in html
    html = listed(admin_client.get(changelist(Channel), {"q": "general"}))
    assert "general" in html


def test_event_list_query_count_does_not_grow_with_rows(
    admin_client, alice, django_assert_max_num_queries
) -> None:
    for s in range(5):
        post_events(alice, f"s{s}", *[{"role": "user", "content": f"e{i}"} for i in range(20)])
    with django_assert_max_num_queries(12) as captured:
        listed(admin_client.get(changelist(Event)))
    few = len(captured.captured_queries)
    for s in range(5, 10):
        post_events(alice, f"s{s}", *[{"role": "assistant", "content": f"e{i}"} for i in range(20)])
    with django_assert_max_num_queries(few) as captured:
        html = listed(admin_client.get(changelist(Event)))
    assert html.count("s9") >= 1
    assert not any(
        "count(*)" in q["sql"].lower()
        and "memoryhub_event" in q["sql"]
        and "limit" not in q["sql"].lower()
        for q in captured.captured_queries
    ), "an unbounded COUNT over the events table"


def test_session_list_query_count_is_bounded(
    admin_client, alice, django_assert_max_num_queries
) -> None:
    for s in range(30):
        alice.post(
            "/api/v1/sessions/",
            {"id": f"s{s}", "workspace": f"w{s % 4}", "channel": f"c{s % 3}"},
            format="json",
        )
    with django_assert_max_num_queries(14):
        listed(admin_client.get(changelist(Session)))


def test_events_are_read_only_in_the_admin(admin_client, data) -> None:
    event = Event.objects.filter(content__contains="unicorn").get()
    url = reverse("admin:memoryhub_event_change", args=[event.pk])
    html = listed(admin_client.get(url))
    assert 'name="_save"' not in html
    response = admin_client.post(url, {"content": "rewritten"})
    assert response.status_code == 403
    assert admin_client.get(reverse("admin:memoryhub_event_add")).status_code == 403
    assert (
        admin_client.post(
            reverse("admin:memoryhub_event_delete", args=[event.pk]), {"post": "yes"}
        ).status_code
        == 403
    )
    admin_client.post(
        changelist(Event),
        {"action": "delete_selected", "_selected_action": [event.pk], "post": "yes"},
    )
    assert Event.objects.filter(pk=event.pk).exists()
    event.refresh_from_db()
    assert event.content == "Budget for the unicorn project?"


def test_create_api_key_in_the_admin_shows_it_once(admin_client, cast) -> None:
    response = admin_client.post(
        reverse("admin:accounts_apikey_add"),
        {
            "tenant": cast.alice_tenant.pk,
            "workspace": "",
            "name": "from admin",
            "scopes": "read,write",
            "revoked_at_0": "",
            "revoked_at_1": "",
        },
        follow=True,
    )
    assert response.status_code == 200
    shown = [str(m) for m in get_messages(response.wsgi_request)]
    raws = [match for text in shown for match in re.findall(r"mh_[0-9a-f]{8}_\S+", text)]
    assert len(raws) == 1, shown
    raw = raws[0]
    key = ApiKey.objects.get(name="from admin")
    assert (
        key.prefix == ApiKey.parse_prefix(raw)
        and key.matches(raw)
        and key.scopes == ["read", "write"]
    )
    assert raw not in key.key_hash
    client = make_client(raw)
    assert (
        client.post("/api/v1/sessions/", {"id": "via-admin-key"}, format="json").status_code == 201
    )
    assert Session.objects.get(external_id="via-admin-key").tenant_id == cast.alice_tenant.pk
    # Never again: neither the list nor the change page shows it.
    assert raw not in listed(admin_client.get(changelist(ApiKey)))
    change = reverse("admin:accounts_apikey_change", args=[key.pk])
    assert raw not in listed(admin_client.get(change))


def test_admin_refuses_unknown_scopes(admin_client, cast) -> None:
    response = admin_client.post(
        reverse("admin:accounts_apikey_add"),
        {
            "tenant": cast.alice_tenant.pk,
            "name": "bad",
            "scopes": "read,root",
            "revoked_at_0": "",
            "revoked_at_1": "",
        },
    )
    assert response.status_code == 200  # the form again, with its error
    assert not ApiKey.objects.filter(name="bad").exists()


def test_revoke_action(admin_client, cast) -> None:
    key = ApiKey.objects.get(prefix=ApiKey.parse_prefix(cast.bob_key))
    response = admin_client.post(
        changelist(ApiKey), {"action": "revoke_keys", "_selected_action": [key.pk]}
    )
    assert response.status_code == 302
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert cast.bob.get("/api/v1/sessions/").status_code == 401


def test_archive_and_forget_actions(admin_client, data) -> None:
    bravo = Session.objects.get(external_id="bravo-chat")
    admin_client.post(
        changelist(Session), {"action": "archive_sessions", "_selected_action": [bravo.pk]}
    )
    before = bravo.updated_at
    bravo.refresh_from_db()
    assert bravo.status == "archived" and bravo.updated_at > before
    page = admin_client.post(
        changelist(Session), {"action": "forget_sessions", "_selected_action": [bravo.pk]}
    )
    # a confirmation first
    assert page.status_code == 200 and b"Forget these sessions?" in page.content
    assert b"bravo-chat" in page.content and Session.objects.filter(pk=bravo.pk).exists()
    admin_client.post(
        changelist(Session),
        {"action": "forget_sessions", "_selected_action": [bravo.pk], "confirm": "yes"},
    )
    assert not Session.objects.filter(pk=bravo.pk).exists()
    assert not Event.objects.filter(session_id=bravo.pk).exists()
    assert Session.objects.filter(external_id="alpha-chat").exists()


def test_forget_action_respects_the_immutable_transcript(admin_client, data) -> None:
    session = data["session"]
    Tenant.objects.filter(pk=session.tenant_id).update(immutable_transcript=True)
    admin_client.post(
        changelist(Session),
        {"action": "forget_sessions", "_selected_action": [session.pk], "confirm": "yes"},
    )
    assert Session.objects.filter(pk=session.pk).exists()
    assert session.events.count() == 2


def test_non_staff_users_are_kept_out(client, django_user_model) -> None:
    user = django_user_model.objects.create_user(username="visitor", password="pw-visitor-123")
    client.force_login(user)
    response = client.get(changelist(Session))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_limited_key_created_by_make_key_is_listed_with_its_workspace(admin_client) -> None:
    tenant = make_tenant("carol")
    make_key(tenant, scopes=("read",), workspace="only-here")
    html = listed(admin_client.get(changelist(ApiKey), {"tenant__id__exact": tenant.pk}))
    assert "only-here" in html


def test_admin_refuses_a_key_limited_to_another_tenants_workspace(admin_client, cast) -> None:
    from accounts.models import Workspace

    bobs = Workspace.get_named(cast.bob_tenant, "bob-space")
    response = admin_client.post(
        reverse("admin:accounts_apikey_add"),
        {
            "tenant": cast.alice_tenant.pk,
            "workspace": bobs.pk,
            "name": "crossed",
            "scopes": "read",
            "revoked_at_0": "",
            "revoked_at_1": "",
        },
    )
    assert response.status_code == 200
    assert "another tenant" in response.content.decode()
    assert not ApiKey.objects.filter(name="crossed").exists()
