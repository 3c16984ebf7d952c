"""Each action against the real function it calls; agent_goal against a fake webhook
on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.utils import timezone

from retrieval.lifecycle.models import ConsolidationReport
from retrieval.models import Chunk
from scheduling.dispatcher import execute_run
from scheduling.models import Run, Schedule
from tests.base import post_events

pytestmark = pytest.mark.django_db


def run_action(tenant, action: str, goal: str = "", **params: Any) -> Run:  # type: ignore[no-untyped-def]
    schedule = Schedule.objects.create(
        tenant=tenant,
        name=action,
        action=action,
        goal=goal,
        params=params,
        authority_scopes=["read", "write", "admin"],
        cadence_type="interval",
        cadence_value="3600",
        user_id="u1",
        next_run_at=timezone.now() + timedelta(hours=1),
    )
    run = Run.objects.create(tenant=tenant, schedule=schedule, manual=True)
    execute_run(str(run.pk))
    run.refresh_from_db()
    return run


def test_embed_backfill_embeds_only_this_tenants_chunks(
    cast, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):  # indexing runs after commit
        post_events(cast.alice, "a1", {"role": "user", "content": "alice likes green tea"})
        post_events(cast.bob, "b1", {"role": "user", "content": "bob likes coffee"})
    Chunk.objects.update(embedding=None, embedding_model="")
    alice_chunks = Chunk.objects.filter(tenant=cast.alice_tenant).count()
    assert alice_chunks >= 1
    run = run_action(cast.alice_tenant, "embed_backfill")
    assert run.status == "succeeded"
    assert json.loads(run.output) == {"embedded": alice_chunks, "failed": 0, "remaining": 0}
    assert not Chunk.objects.filter(tenant=cast.alice_tenant, embedding__isnull=True).exists()
    assert Chunk.objects.filter(tenant=cast.bob_tenant, embedding__isnull=True).exists()


def test_summarise_reports_what_summarise_due_did(cast, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from memoryhub.models import SummaryNode

    monkeypatch.setattr("memoryhub.summaries.LEAF_EVENTS", 2)
    for client, session in ((cast.alice, "a1"), (cast.bob, "b1")):
        post_events(
            client, session, *({"role": "user", "content": f"message {i}"} for i in range(3))
        )
    SummaryNode.objects.all().delete()  # whatever appends built: the action must build it
    run = run_action(cast.alice_tenant, "summarise")
    assert run.status == "succeeded"
    report = json.loads(run.output)
    assert report["sessions_checked"] == 1 and report["tree_nodes_built"] >= 1
    assert (
        SummaryNode.objects.filter(session__tenant=cast.alice_tenant).count()
        == report["tree_nodes_built"]
    )
    assert not SummaryNode.objects.filter(session__tenant=cast.bob_tenant).exists()
    assert run.output_summary == run.output[:500]


def test_consolidate_runs_real_consolidation_and_reports(cast) -> None:  # type: ignore[no-untyped-def]
    post_events(cast.alice, "a1", {"role": "user", "content": "remember the blue door"})
    run = run_action(cast.alice_tenant, "consolidate")
    assert run.status == "succeeded"
    report = json.loads(run.output)
    assert report["dry_run"] is False and "counts" in report and "ids" not in report
    stored = ConsolidationReport.objects.get(pk=report["report_id"])
    assert stored.tenant_id == cast.alice_tenant.pk
    dry = json.loads(run_action(cast.alice_tenant, "consolidate", dry_run=True).output)
    assert dry["dry_run"] is True and dry["report_id"] is None


def test_prune_runs_keeps_newest_n_per_schedule(cast) -> None:  # type: ignore[no-untyped-def]
    schedule = Schedule.objects.create(
        tenant=cast.alice_tenant,
        name="s",
        action="summarise",
        cadence_type="interval",
        cadence_value="60",
        authority_scopes=["read", "write", "admin"],
    )
    now = timezone.now()
    for i in range(5):
        Run.objects.create(
            tenant=cast.alice_tenant,
            schedule=schedule,
            status="succeeded",
            started_at=now - timedelta(minutes=10 - i),
        )
    run = run_action(cast.alice_tenant, "prune_runs", keep=2)
    assert json.loads(run.output)["runs_deleted"] == 3
    kept = list(schedule.runs.order_by("started_at").values_list("started_at", flat=True))
    assert kept == [now - timedelta(minutes=7), now - timedelta(minutes=6)]


class FakeAgent(BaseHTTPRequestHandler):
    # (status, reply, delay): a delay of None answers only once the client has given up
    # (`released`).
    replies: list[tuple[int, Any, float | None]] = []
    received: list[dict[str, Any]] = []
    released = threading.Event()

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeAgent.received.append({"body": body, "auth": self.headers.get("Authorization")})
        status, reply, delay = FakeAgent.replies.pop(0)
        if delay is None:
            FakeAgent.released.wait(120)
        else:
            time.sleep(delay)
        data = json.dumps(reply).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (timeout test)
            pass

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def agent(settings, monkeypatch) -> Iterator[type[FakeAgent]]:  # type: ignore[no-untyped-def]
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeAgent)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    FakeAgent.replies, FakeAgent.received = [], []
    FakeAgent.released.clear()
    settings.MEMORYHUB_AGENT_WEBHOOK_URL = f"http://127.0.0.1:{server.server_port}/goal"
    settings.MEMORYHUB_AGENT_WEBHOOK_TOKEN = "s3cret"
    settings.MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS = ("127.0.0.1/32",)  # refused by default
    yield FakeAgent
    FakeAgent.released.set()
    server.shutdown()
    server.server_close()


def test_agent_goal_posts_goal_and_records_reply(cast, agent) -> None:  # type: ignore[no-untyped-def]
    agent.replies.append(
        (
            200,
            {
                "status": "succeeded",
                "output": "Booked the table for 8.",
                "turn_count": 4,
                "cost": 0.0123,
            },
            0,
        )
    )
    run = run_action(cast.alice_tenant, "agent_goal", goal="book a table")
    assert (run.status, run.output, run.turn_count, run.cost) == (
        "succeeded",
        "Booked the table for 8.",
        4,
        0.0123,
    )
    sent = agent.received[0]
    assert sent["auth"] == "Bearer s3cret"
    assert sent["body"]["goal"] == "book a table" and sent["body"]["run_id"] == str(run.pk)
    assert sent["body"]["tenant"] == "alice" and sent["body"]["user_id"] == "u1"
    assert Schedule.objects.get(pk=run.schedule_id).last_run_status == "succeeded"


def test_agent_goal_failures_are_failed_runs(cast, agent, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    agent.replies.append((500, {"detail": "agent crashed"}, 0))
    crashed = run_action(cast.alice_tenant, "agent_goal", goal="g")
    assert (
        crashed.status == "failed"
        and "HTTP 500" in crashed.output
        and "agent crashed" in crashed.output
    )
    agent.replies.append(
        (200, {"status": "failed", "output": "could not find it", "turn_count": 2, "cost": 0.5}, 0)
    )
    gave_up = run_action(cast.alice_tenant, "agent_goal", goal="g")
    assert (gave_up.status, gave_up.output, gave_up.turn_count, gave_up.cost) == (
        "failed",
        "could not find it",
        2,
        0.5,
    )
    # An agent that never answers in time: the webhook's timeout, short here, is the only clock.
    monkeypatch.setattr("scheduling.actions.AGENT_WEBHOOK_TIMEOUT_SECONDS", 0.5)
    agent.replies.append((200, {"output": "late"}, None))
    # gives up at the 0.5 s webhook timeout
    slow = run_action(cast.alice_tenant, "agent_goal", goal="g")
    agent.released.set()
    assert slow.status == "failed" and "unreachable" in slow.output.lower()
