"""Run notifications are delivered: POSTed, signed, to the tenant's notification webhook, retried
with backoff, recorded (API run detail and admin); one tenant's runs never reach another's hooks."""

from __future__ import annotations

import socket
from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling.dispatcher import dispatch
from scheduling.models import Delivery, Run, Schedule

pytestmark = pytest.mark.django_db


def add_hook(client, kind: str, url: str, **body):  # type: ignore[no-untyped-def]
    response = client.post("/api/v1/webhooks/", {"kind": kind, "url": url, **body}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def new_schedule(client, **body):  # type: ignore[no-untyped-def]
    values = {
        "name": "digest",
        "action": "summarise",
        "cadence": {"type": "interval", "value": "1h"},
        "channel": "slack",
        "channel_context_id": "C042/thread-17",
    }
    response = client.post("/api/v1/schedules/", {**values, **body}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["id"]


@pytest.fixture
def run_now(django_capture_on_commit_callbacks):  # type: ignore[no-untyped-def]
    """POST …/run/ with the run and its first delivery attempt executed as after their commits."""

    def go(client, sid):  # type: ignore[no-untyped-def]
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(f"/api/v1/schedules/{sid}/run/")
        assert response.status_code == 202
        return client.get(f"/api/v1/runs/{response.json()['id']}/").json()

    return go


@pytest.fixture
def tick(django_capture_on_commit_callbacks):  # type: ignore[no-untyped-def]
    """One dispatcher pass, with the retries it enqueues executed."""

    def go():  # type: ignore[no-untyped-def]
        with django_capture_on_commit_callbacks(execute=True):
            return dispatch()

    return go


def backoff_passes(delivery: Delivery) -> None:
    """Let the wait before the next attempt run out (instead of sleeping through it)."""
    Delivery.objects.filter(pk=delivery.pk).update(
        next_attempt_at=timezone.now() - timedelta(seconds=1)
    )


def test_a_finished_run_is_delivered_signed_and_recorded(alice, hook_server, run_now) -> None:  # type: ignore[no-untyped-def]
    server = hook_server()
    secret = add_hook(alice, "notification", server.url)["secret"]
    sid = new_schedule(alice, user_id="u1")
    run = run_now(alice, sid)
    assert len(server.received) == 1
    got = server.received[0]
    assert got.signed_by(secret) and not got.signed_by(secret + "x")
    body = got.body
    assert body["event"] == "schedule.run.finished" and body["tenant"] == "alice"
    assert body["run"]["id"] == run["id"] and body["run"]["status"] == "succeeded"
    assert body["schedule"]["id"] == sid and body["schedule"]["user_id"] == "u1"
    assert (body["schedule"]["channel"], body["schedule"]["channel_context_id"]) == (
        "slack",
        "C042/thread-17",
    )
    assert got.headers["x-memoryhub-delivery"] == body["delivery_id"]
    assert run["notified"] is True
    delivery = run["delivery"]
    assert (delivery["status"], delivery["attempts"], delivery["last_error"]) == (
        "delivered",
        1,
        "",
    )
    assert delivery["delivered_at"] and delivery["next_attempt_at"] is None


def test_a_500_is_retried_with_growing_backoff_until_delivered(
    alice, hook_server, run_now, tick, settings, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("scheduling.notifications.BACKOFF_SECONDS", 30)
    server = hook_server()
    secret = add_hook(alice, "notification", server.url)["secret"]
    server.reply(500, {"detail": "receiver down"})
    server.reply(503, {"detail": "still down"})
    before = timezone.now()
    run = run_now(alice, new_schedule(alice))
    assert run["notified"] is False
    first = run["delivery"]
    assert (first["status"], first["attempts"], first["last_status_code"]) == ("pending", 1, 500)
    assert "HTTP 500" in first["last_error"] and "receiver down" in first["last_error"]
    delivery = Delivery.objects.get()
    assert (
        before + timedelta(seconds=30)
        <= delivery.next_attempt_at
        <= timezone.now() + timedelta(seconds=30)
    )
    tick()  # not due yet: nothing is sent
    assert len(server.received) == 1
    backoff_passes(delivery)
    before = timezone.now()
    tick()
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("pending", 2, 503)
    assert (
        before + timedelta(seconds=60)
        <= delivery.next_attempt_at
        <= timezone.now() + timedelta(seconds=60)
    )
    backoff_passes(delivery)
    tick()
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("delivered", 3, 200)
    assert len(server.received) == 3 and all(r.signed_by(secret) for r in server.received)
    # Every attempt sends the same body (one delivery id), so a receiver can drop repeats.
    assert len({r.raw for r in server.received}) == 1
    assert Run.objects.get(pk=run["id"]).notified is True
    tick()
    assert len(server.received) == 3


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"


def test_after_the_last_attempt_the_failure_is_recorded(
    alice, admin_client, run_now, tick, settings, django_capture_on_commit_callbacks, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("scheduling.notifications.MAX_ATTEMPTS", 2)
    # a closed port here, not refused
    settings.MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS = ("127.0.0.1/32",)
    add_hook(alice, "notification", _closed_port_url())
    run = run_now(alice, new_schedule(alice))
    delivery = Delivery.objects.get()
    backoff_passes(delivery)
    tick()
    detail = alice.get(f"/api/v1/runs/{run['id']}/").json()
    assert detail["notified"] is False
    assert (detail["delivery"]["status"], detail["delivery"]["attempts"]) == ("failed", 2)
    assert (
        "unreachable" in detail["delivery"]["last_error"]
        and detail["delivery"]["next_attempt_at"] is None
    )
    assert tick() and Delivery.objects.get().attempts == 2  # given up: no more attempts
    # The operator sees it and may try again (as many attempts again).
    page = admin_client.get("/admin/scheduling/delivery/").content.decode()
    assert "failed" in page and "unreachable" in page
    assert "failed (2/2)" in admin_client.get("/admin/scheduling/run/").content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(
            "/admin/scheduling/delivery/",
            {"action": "retry_action", "_selected_action": [str(delivery.pk)]},
        )
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.max_attempts) == ("pending", 3, 4)


def test_without_a_webhook_the_run_says_so_and_can_be_sent_later(
    alice, admin_client, hook_server, run_now, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    run = run_now(alice, new_schedule(alice))
    assert run["delivery"]["status"] == "no_webhook" and run["delivery"]["attempts"] == 0
    server = hook_server()
    secret = add_hook(alice, "notification", server.url)["secret"]
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(
            "/admin/scheduling/delivery/",
            {"action": "retry_action", "_selected_action": [str(Delivery.objects.get().pk)]},
        )
    assert alice.get(f"/api/v1/runs/{run['id']}/").json()["delivery"]["status"] == "delivered"
    assert server.received[0].signed_by(secret)


def test_policy_never_sends_nothing(alice, hook_server, run_now) -> None:  # type: ignore[no-untyped-def]
    server = hook_server()
    add_hook(alice, "notification", server.url)
    run = run_now(alice, new_schedule(alice, notification_policy="never"))
    assert run["delivery"] is None and run["notified"] is False and server.received == []


def test_a_redirect_is_not_followed(alice, hook_server, run_now) -> None:  # type: ignore[no-untyped-def]
    server, elsewhere = hook_server(), hook_server()
    add_hook(alice, "notification", server.url)
    server.reply(307, {}, Location=elsewhere.url)
    run = run_now(alice, new_schedule(alice))
    assert run["delivery"]["status"] == "pending" and run["delivery"]["last_status_code"] == 307
    assert elsewhere.received == []


def test_tenants_never_reach_each_others_webhooks(cast, hook_server, run_now) -> None:  # type: ignore[no-untyped-def]
    alice_hook, bob_hook = hook_server(), hook_server()
    alice_agent, bob_agent = hook_server(), hook_server()
    alice_secret = add_hook(cast.alice, "notification", alice_hook.url)["secret"]
    bob_secret = add_hook(cast.bob, "notification", bob_hook.url)["secret"]
    alice_agent_secret = add_hook(cast.alice, "agent", alice_agent.url)["secret"]
    add_hook(cast.bob, "agent", bob_agent.url)
    alice_agent.reply(200, {"status": "succeeded", "output": "done", "turn_count": 1})
    run_now(cast.alice, new_schedule(cast.alice))
    goal_run = run_now(
        cast.alice, new_schedule(cast.alice, name="agent", action="agent_goal", goal="water plants")
    )
    assert goal_run["status"] == "succeeded" and goal_run["output"] == "done"
    assert [r.body["goal"] for r in alice_agent.received] == ["water plants"]
    assert alice_agent.received[0].signed_by(alice_agent_secret)
    # the server default's token is not theirs
    assert "authorization" not in alice_agent.received[0].headers
    assert len(alice_hook.received) == 2 and all(
        r.signed_by(alice_secret) for r in alice_hook.received
    )
    assert not any(r.signed_by(bob_secret) for r in alice_hook.received)
    assert bob_hook.received == [] and bob_agent.received == []
    # Bob's runs go to bob's receiver only.
    run_now(cast.bob, new_schedule(cast.bob))
    assert len(bob_hook.received) == 1 and len(alice_hook.received) == 2
    assert Schedule.objects.filter(tenant=cast.bob_tenant).count() == 1


def test_run_lists_read_deliveries_without_a_query_per_run(alice, run_now) -> None:  # type: ignore[no-untyped-def]
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    sid = new_schedule(alice)

    def queries() -> int:
        with CaptureQueriesContext(connection) as ctx:
            response = alice.get(f"/api/v1/schedules/{sid}/runs/")
        assert response.status_code == 200
        assert all(r["delivery"]["status"] == "no_webhook" for r in response.json()["results"])
        return len(ctx.captured_queries)

    run_now(alice, sid)
    one = queries()
    for _ in range(4):
        run_now(alice, sid)
    assert Delivery.objects.count() == 5 and queries() == one
