"""Webhooks per tenant (/webhooks/, admin scope): secrets shown once, validation, isolation; an
agent_goal schedule needs one (webhook_required); channel_context_id on schedules; the admin."""

from __future__ import annotations

import socket

import pytest
from django.utils import timezone

from scheduling.models import Schedule, Webhook
from tests.base import error_code, make_client, make_key

pytestmark = pytest.mark.django_db

URL = "/api/v1/webhooks/"


def add(client, kind="notification", url="https://hooks.example.org/memoryhub", **body):  # type: ignore[no-untyped-def]
    return client.post(URL, {"kind": kind, "url": url, **body}, format="json")


def agent_schedule(client, **body):  # type: ignore[no-untyped-def]
    values = {
        "name": "plants",
        "action": "agent_goal",
        "goal": "water the plants",
        "cadence": {"type": "interval", "value": "1h"},
    }
    return client.post("/api/v1/schedules/", {**values, **body}, format="json")


def test_create_shows_the_secret_once(alice) -> None:  # type: ignore[no-untyped-def]
    response = add(alice, description="ops channel")
    assert response.status_code == 201, response.json()
    created = response.json()
    assert created["secret"].startswith("whsec_") and len(created["secret"]) > 40
    assert created["kind"] == "notification" and created["description"] == "ops channel"
    listed = alice.get(URL).json()["results"]
    assert [h["id"] for h in listed] == [created["id"]] and "secret" not in listed[0]
    one = alice.get(f"{URL}{created['id']}/").json()
    assert one["url"] == "https://hooks.example.org/memoryhub" and "secret" not in one
    assert created["secret"] not in alice.get(URL).content.decode()
    assert Webhook.objects.get().secret == created["secret"]


def test_a_secret_may_be_given(alice) -> None:  # type: ignore[no-untyped-def]
    response = add(alice, kind="agent", secret="my-own-secret-of-24-chars")
    assert response.status_code == 201 and response.json()["secret"] == "my-own-secret-of-24-chars"


@pytest.mark.parametrize(
    "body, code",
    [
        ({"url": "ftp://hooks.example.org/x"}, "invalid_url"),
        ({"url": "not a url"}, "invalid_url"),
        ({"url": "https://user:pw@hooks.example.org/x"}, "invalid_url"),
        ({"secret": "short"}, "secret_too_short"),
        ({"kind": "email"}, "validation_error"),
        ({"headers": {"x": "y"}}, "unknown_field"),
    ],
)
def test_bad_input_is_400_and_stores_nothing(alice, body, code) -> None:  # type: ignore[no-untyped-def]
    response = add(alice, **body)
    assert response.status_code == 400, response.json()
    assert error_code(response) == code
    assert not Webhook.objects.exists()


def test_one_webhook_per_kind_then_delete(alice) -> None:  # type: ignore[no-untyped-def]
    first = add(alice).json()
    again = add(alice, url="https://other.example.org/")
    assert again.status_code == 409 and error_code(again) == "webhook_exists"
    assert add(alice, kind="agent").status_code == 201
    response = alice.delete(f"{URL}{first['id']}/")
    assert response.status_code == 200 and response.json() == {"id": first["id"], "deleted": True}
    assert alice.get(f"{URL}{first['id']}/").status_code == 404
    assert alice.get(f"{URL}not-an-id/").status_code == 404
    assert add(alice, url="https://other.example.org/").status_code == 201


def test_bob_cannot_see_or_delete_alices_webhooks(alice, bob) -> None:  # type: ignore[no-untyped-def]
    hook = add(alice).json()
    assert bob.get(URL).json()["results"] == []
    for response in (bob.get(f"{URL}{hook['id']}/"), bob.delete(f"{URL}{hook['id']}/")):
        assert response.status_code == 404 and error_code(response) == "webhook_not_found"
    assert Webhook.objects.filter(pk=hook["id"]).exists()
    # Bob's own agent webhook does not make alice's agent_goal schedules acceptable.
    assert add(bob, kind="agent").status_code == 201
    assert error_code(agent_schedule(alice)) == "webhook_required"


def test_webhooks_need_an_admin_key_for_the_whole_tenant(cast) -> None:  # type: ignore[no-untyped-def]
    writer = make_client(make_key(cast.alice_tenant, scopes=("read", "write")))
    for response in (writer.get(URL), add(writer)):
        assert response.status_code == 403 and error_code(response) == "insufficient_scope"
    limited = make_client(make_key(cast.alice_tenant, workspace="team-a"))
    assert error_code(add(limited)) == "workspace_limited_key"
    one_user = make_client(make_key(cast.alice_tenant, user="u1"))
    assert error_code(one_user.get(URL)) == "user_limited_key"
    assert not Webhook.objects.exists()


def test_agent_goal_without_a_webhook_is_refused_when_made(alice, settings) -> None:  # type: ignore[no-untyped-def]
    settings.MEMORYHUB_AGENT_WEBHOOK_URL = ""
    response = agent_schedule(alice)
    assert response.status_code == 400 and error_code(response) == "webhook_required"
    assert "action" in response.json()["error"]["details"]["fields"]
    assert not Schedule.objects.exists()
    # Changing another schedule into one is refused too.
    sid = alice.post(
        "/api/v1/schedules/",
        {
            "name": "s",
            "action": "summarise",
            "goal": "g",
            "cadence": {"type": "interval", "value": "1h"},
        },
        format="json",
    ).json()["id"]
    response = alice.patch(f"/api/v1/schedules/{sid}/", {"action": "agent_goal"}, format="json")
    assert (
        error_code(response) == "webhook_required"
        and Schedule.objects.get(pk=sid).action == "summarise"
    )
    # With the tenant's own agent webhook, or the server default, it is accepted.
    hook = add(alice, kind="agent").json()
    assert agent_schedule(alice).status_code == 201
    alice.delete(f"{URL}{hook['id']}/")
    settings.MEMORYHUB_AGENT_WEBHOOK_URL = "http://127.0.0.1:9/agent"
    assert agent_schedule(alice, name="default").status_code == 201


def test_resuming_an_agent_goal_schedule_needs_a_webhook(cast, settings) -> None:  # type: ignore[no-untyped-def]
    settings.MEMORYHUB_AGENT_WEBHOOK_URL = ""
    schedule = Schedule.objects.create(
        tenant=cast.alice_tenant,
        name="imported",
        action="agent_goal",
        goal="g",
        cadence_type="interval",
        cadence_value="3600",
        status="paused",
        next_run_at=timezone.now(),
        authority_scopes=["read", "write"],
    )
    response = cast.alice.post(f"/api/v1/schedules/{schedule.pk}/resume/")
    assert error_code(response) == "webhook_required"
    schedule.refresh_from_db()
    assert schedule.status == "paused"


def test_channel_context_id_through_the_api(alice) -> None:  # type: ignore[no-untyped-def]
    body = {
        "name": "s",
        "action": "summarise",
        "cadence": {"type": "interval", "value": "1h"},
        "channel": "telegram",
        "channel_context_id": "chat-991",
    }
    created = alice.post("/api/v1/schedules/", body, format="json").json()
    assert created["channel_context_id"] == "chat-991"
    patched = alice.patch(
        f"/api/v1/schedules/{created['id']}/", {"channel_context_id": "chat-992"}, format="json"
    ).json()
    assert patched["channel_context_id"] == "chat-992"
    assert alice.get("/api/v1/schedules/", {"channel_context_id": "chat-992"}).json()["count"] == 1
    assert alice.get("/api/v1/schedules/", {"channel_context_id": "chat-991"}).json()["count"] == 0


def test_admin_webhooks_generate_a_secret_shown_once(admin_client, cast) -> None:  # type: ignore[no-untyped-def]
    response = admin_client.post(
        "/admin/scheduling/webhook/add/",
        {
            "tenant": cast.alice_tenant.pk,
            "kind": "notification",
            "url": "https://hooks.example.org/a",
            "description": "",
            "new_secret": "",
        },
        follow=True,
    )
    hook = Webhook.objects.get()
    assert hook.secret.startswith("whsec_") and hook.secret in response.content.decode()
    change = admin_client.get(f"/admin/scheduling/webhook/{hook.pk}/change/").content.decode()
    assert hook.secret not in change and "https://hooks.example.org/a" in change
    # Saving with the secret left blank keeps it; a short one is refused.
    admin_client.post(
        f"/admin/scheduling/webhook/{hook.pk}/change/",
        {
            "tenant": cast.alice_tenant.pk,
            "kind": "notification",
            "url": "https://hooks.example.org/b",
            "description": "",
            "new_secret": "",
        },
    )
    kept = Webhook.objects.get()
    assert (kept.url, kept.secret) == ("https://hooks.example.org/b", hook.secret)
    refused = admin_client.post(
        f"/admin/scheduling/webhook/{hook.pk}/change/",
        {
            "tenant": cast.alice_tenant.pk,
            "kind": "notification",
            "url": "ftp://x.org/",
            "new_secret": "short",
        },
    )
    assert refused.status_code == 200 and Webhook.objects.get().url == "https://hooks.example.org/b"


def test_admin_refuses_an_agent_goal_schedule_without_a_webhook(
    admin_client, cast, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.MEMORYHUB_AGENT_WEBHOOK_URL = ""
    form = {
        "tenant": cast.alice_tenant.pk,
        "name": "plants",
        "goal": "water",
        "action": "agent_goal",
        "params": "{}",
        "cadence_type": "interval",
        "cadence_value": "3600",
        "timezone": "UTC",
        "notification_policy": "always",
        "status": "active",
        "consecutive_failures": 0,
        "created_at_0": "2026-01-01",
        "created_at_1": "00:00:00",
        "runs-TOTAL_FORMS": 0,
        "runs-INITIAL_FORMS": 0,
    }
    page = admin_client.post("/admin/scheduling/schedule/add/", form)
    assert page.status_code == 200 and "needs an agent webhook" in page.content.decode()
    assert not Schedule.objects.exists()
    Webhook.objects.create(
        tenant=cast.alice_tenant, kind="agent", url="https://a.example.org/", secret="s" * 20
    )
    assert admin_client.post("/admin/scheduling/schedule/add/", form).status_code == 302
    assert Schedule.objects.get().action == "agent_goal"


# --- no requests to this machine, private networks or metadata services -----------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/admin/",
        "http://localhost:9/x",
        "http://app.localhost/x",
        "http://[::1]/x",
        "http://169.254.169.254/latest/meta-data/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://10.1.2.3/hook",
        "http://192.168.0.10/hook",
        "http://172.16.0.1/hook",
        "http://0.0.0.0:8000/",
        "http://2130706433/",
        "http://127.1/",
        "http://[::ffff:127.0.0.1]/x",
        "http://100.64.0.1/",
    ],
)
def test_webhooks_to_this_machine_or_private_networks_are_refused(alice, url) -> None:  # type: ignore[no-untyped-def]
    response = add(alice, kind="agent", url=url)
    assert response.status_code == 400, response.json()
    assert error_code(response) == "destination_not_allowed"
    assert (
        response.json()["error"]["details"]["fields"]["url"][0]["code"] == "destination_not_allowed"
    )
    assert not Webhook.objects.exists()


def test_the_operator_allows_a_private_network(alice, settings) -> None:  # type: ignore[no-untyped-def]
    settings.MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS = ("10.0.0.0/8",)
    assert add(alice, kind="agent", url="http://10.1.2.3/hook").status_code == 201
    assert error_code(add(alice, url="http://192.168.0.10/hook")) == "destination_not_allowed"


def test_a_name_that_resolves_to_a_refused_address_when_sent_is_not_called(  # type: ignore[no-untyped-def]
    alice, cast, hook_server, settings, monkeypatch
) -> None:
    """Stored as a public name, resolved to 127.0.0.1 when the run sends (DNS rebinding): the run
    fails as refused, nothing reaches the local service and no reply of it is stored."""
    from tests.scheduling.test_actions import run_action

    local = hook_server()  # a service on this machine that must not be reached
    local.reply(200, {"status": "succeeded", "output": "internal secrets"})
    settings.MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS = ()
    port = int(local.url.rsplit(":", 1)[1].split("/")[0])
    resolve = socket.getaddrinfo

    def rebinding(host, *args, **kwargs):  # type: ignore[no-untyped-def]
        return resolve("127.0.0.1" if host == "agent.example.org" else host, *args, **kwargs)

    assert add(alice, kind="agent", url=f"http://agent.example.org:{port}/hook").status_code == 201
    monkeypatch.setattr(socket, "getaddrinfo", rebinding)  # the name points here now
    run = run_action(cast.alice_tenant, "agent_goal", goal="read the internal page")
    assert run.status == "failed" and run.error == "action_failed"
    assert "refused" in run.output and "127.0.0.1" in run.output, run.output
    assert "internal secrets" not in run.output and local.received == []
    # The same URL once the operator allows this machine: the webhook is called.
    settings.MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS = ("127.0.0.1/32",)
    assert run_action(cast.alice_tenant, "agent_goal", goal="again").output == "internal secrets"
    assert len(local.received) == 1
