"""The embed lane's one definition of its work: what it chooses, claims and counts, and what
/stats/, the dashboard and `manage.py queue_status` say it will do, are the same rows. A fact
corrected before its first vector was made leaves a superseded chunk that is no one's work."""

from __future__ import annotations

import logging
import math
import threading
from typing import Any

import pytest
from django.db import connections, transaction
from django.db.models import Count
from django.utils import timezone

from accounts.models import Tenant
from memoryhub.admin.dashboard import tenant_rows
from memoryhub.plumbing import background
from memoryhub.plumbing.background import Heartbeat, StepResult
from retrieval import embedders, embedding
from retrieval.embedding import EmbedLane
from retrieval.models import SUPERSEDED_UNEMBEDDED, Chunk
from scheduling.management.commands.queue_status import queue_status
from tests.base import make_client, make_key, make_tenant, post_events

pytestmark = pytest.mark.django_db

BATCH = 50


@pytest.fixture
def lane_mode(settings, monkeypatch):  # type: ignore[no-untyped-def]
    settings.MEMORYHUB_TASKS_EAGER = False  # chunks wait in the table for the lane
    monkeypatch.setattr("retrieval.indexing.CONTEXT_MESSAGES", 0)
    monkeypatch.setattr("retrieval.embedding.BACKFILL_BATCH", BATCH)
    return settings


class Counting(embedders.HashEmbedder):
    """The hash embedder, counting its calls (a chunk batch's sentences follow in a call of
    their own)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return super().embed(texts)


def correct_a_fact_twice(name: str) -> Any:
    """A tenant whose client writes a fact and corrects it within seconds, before any vector."""
    client = make_client(make_key(make_tenant(name)))
    for city in ("Oslo", "Bergen"):
        response = client.post(
            "/api/v1/facts/",
            {"content": f"I live in {city}", "category": "profile", "key": "home_city"},
            format="json",
        )
        assert response.status_code in (200, 201), response.content
    return client


def reported(clients: dict[str, Any]) -> dict[str, dict[str, int]]:
    """What each surface says the lane will embed per tenant."""
    backlog = {row["tenant"]: row["waiting"] for row in queue_status()["embedding_backlog"]}
    dashboard = {row["tenant"].name: row.get("waiting", 0) for row in tenant_rows()}
    stats = {name: client.get("/api/v1/stats/").json() for name, client in clients.items()}
    return {
        name: {
            "queue_status": backlog.get(name, 0),
            "dashboard": dashboard[name],
            "stats": stats[name]["chunks"]["pending_embedding"],
            "stats_queue": stats[name]["queue"]["embedding_waiting"],
        }
        for name in clients
    }


def test_superseded_facts_never_stall_the_lane_and_every_count_agrees(
    lane_mode, monkeypatch
) -> None:
    counting = Counting()
    monkeypatch.setitem(embedders._instances, "hash", counting)
    clients = {name: correct_a_fact_twice(name) for name in ("early", "middle", "late")}
    superseded = Chunk.every_version.filter(valid_to__isnull=False, embedding__isnull=True)
    assert superseded.count() == 3  # one never-embedded superseded version in each tenant
    # set aside, why
    assert set(superseded.values_list("embedding_error", flat=True)) == {SUPERSEDED_UNEMBEDDED}
    clients["new"] = make_client(make_key(make_tenant("new")))
    for start in range(0, 300, 100):
        response = post_events(
            clients["new"],
            "import",
            *[
                {"role": "user", "content": f"message {i} of the import"}
                for i in range(start, start + 100)
            ],
        )
        assert response.status_code == 201, response.content

    before = {name: reported({name: client})[name] for name, client in clients.items()}
    embedded_before = dict(
        Chunk.objects.filter(embedding__isnull=False)
        .values_list("tenant__name")
        .annotate(n=Count("id"))
        .values_list("tenant__name", "n")
    )

    lane = EmbedLane()
    steps = empty = 0
    while Chunk.objects.filter(tenant__name="new", embedding__isnull=True).exists() and steps < 40:
        steps += 1
        result = lane.step()
        empty += not result.found_work
        assert result.model_seconds > 0  # the lane says how much of its step the model took
    assert empty == 0, "the lane chose a tenant with nothing it could claim"
    # At the model's speed: one step per fact tenant (its current version), then full batches.
    assert steps == 3 + math.ceil(300 / BATCH)
    assert not lane.step().found_work and not lane.has_work()
    assert embedding.next_tenant(0) is None  # no tenant is chosen for rows it cannot claim

    done = {
        name: Chunk.objects.filter(tenant__name=name, embedding__isnull=False).count()
        - embedded_before.get(name, 0)
        for name in clients
    }
    assert done == {"early": 1, "middle": 1, "late": 1, "new": 300}
    for name, surfaces in before.items():  # what every surface said is what the lane did
        assert set(surfaces.values()) == {done[name]}, (name, surfaces)
    after = {name: reported({name: client})[name] for name, client in clients.items()}
    assert all(set(surfaces.values()) == {0} for surfaces in after.values()), after
    assert superseded.count() == 3  # never chosen, never claimed
    assert queue_status()["embedding_backlog"] == []  # set aside only as superseded: not the lane's


@pytest.mark.django_db(transaction=True)
def test_a_tenant_whose_rows_another_lane_holds_is_passed_over_in_the_same_step(lane_mode) -> None:
    """A step that finds nothing to claim for one tenant goes on to the next at once."""
    a, b = (make_client(make_key(make_tenant(name))) for name in ("aaa", "bbb"))
    post_events(a, "s", {"role": "user", "content": "held by another lane"})
    post_events(b, "s", *[{"role": "user", "content": f"b {i}"} for i in range(3)])
    holding, release = threading.Event(), threading.Event()

    def other_lane() -> None:  # holds the rows of "aaa" as a lane embedding them does
        try:
            with transaction.atomic():
                assert embedding._lock(embedding.waiting(Tenant.objects.get(name="aaa").pk))
                holding.set()
                release.wait(10)
        finally:
            connections.close_all()

    thread = threading.Thread(target=other_lane)
    thread.start()
    try:
        assert holding.wait(10)
        lane = EmbedLane()
        assert embedding.next_tenant(0) == Tenant.objects.get(name="aaa").pk  # chosen first
        assert lane.step().done == 3  # nothing to claim there: on to "bbb" in the same step
        assert not lane.step().found_work and not lane.has_work()  # the held row is not its to do
    finally:
        release.set()
        thread.join()
    assert EmbedLane().step().done == 1


class Stub:
    name = "stub"
    idle_seconds = 0.0
    listens = False

    def __init__(self, waits: bool) -> None:
        self.waits = waits

    def step(self) -> StepResult:
        return StepResult()

    def has_work(self, before: Any) -> bool:
        return self.waits


def test_an_empty_step_while_work_waits_is_reported_and_stepped_again_once(caplog) -> None:
    beat = Heartbeat("stub")
    with caplog.at_level(logging.ERROR, logger="memoryhub.plumbing.background"):
        assert background._work_waits(Stub(waits=True), beat, timezone.now())  # step again at once
        # a second in a row: sleep
        assert not background._work_waits(Stub(waits=True), beat, timezone.now())
    assert beat.empty_steps == 2
    assert "found nothing while work it can do waits" in caplog.text
    from memoryhub.models import Worker

    assert Worker.objects.get(lane="stub").empty_steps == 2  # the dashboard's counter
    # nothing waits: no bug
    assert not background._work_waits(Stub(waits=False), beat, timezone.now())
    assert beat.empty_steps == 2 and beat._empty_in_row == 0


def test_the_dashboard_shows_the_lanes_empty_steps(staff_client) -> None:
    from memoryhub.models import Worker

    Worker.objects.create(lane="embed", name="host:1", empty_steps=7, model_share=0.93)
    page = staff_client.get("/admin/dashboard/").content.decode()
    assert 'class="mh-empty-steps">7<' in page and "<td>93 %</td>" in page
