"""The operator dashboard: figures per tenant, queue status and charts, for staff only."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.utils import timezone
from django_q.models import Failure

from memoryhub.plumbing import counters
from tests.base import post_events


def chart(response, chart_id: str) -> dict:  # type: ignore[type-arg]
    return next(c for c in response.context["data"]["charts"] if c["id"] == chart_id)


def test_dashboard_shows_each_tenants_figures_and_todays_events(staff_client, alice, bob) -> None:
    post_events(
        alice, "s1", {"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}
    )
    post_events(bob, "s2", {"role": "user", "content": "three"})
    response = staff_client.get("/admin/dashboard/")
    assert response.status_code == 200
    rows = {row["tenant"].name: row for row in response.context["tenants"]}
    assert rows["alice"]["sessions"] == 1 and rows["alice"]["events"] == 2
    assert rows["bob"]["sessions"] == 1 and rows["bob"]["events"] == 1
    events_chart = chart(response, "events")
    assert events_chart["title"] == "Events per day"
    dated = next(s for s in events_chart["series"] if s["label"].startswith("dated"))
    assert dated["values"][-1] == 3 and sum(dated["values"]) == 3
    assert b'id="mh-tenants"' in response.content
    assert b"memoryhub/vendor/uplot/uPlot.iife.min.js" in response.content  # served locally, no CDN
    assert b"cdn" not in response.content.lower()


def test_dashboard_lists_failed_tasks_with_a_way_to_resubmit(staff_client) -> None:
    now = timezone.now()
    Failure.objects.create(
        id="f" * 32,
        name="broken-task",
        func="retrieval.tasks.embed",
        started=now,
        stopped=now,
        success=False,
        result="boom",
    )
    response = staff_client.get("/admin/dashboard/")
    assert response.context["queue"]["failed_24h"] == 1
    assert b"broken-task" in response.content
    assert b"/admin/django_q/failure/" in response.content


def test_dashboard_is_for_staff_only(client, db) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/admin/dashboard/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    user = get_user_model().objects.create_user("agent", password="pw-long-enough-123")
    client.force_login(user)
    assert client.get("/admin/dashboard/").status_code == 302


def test_admin_index_links_to_the_dashboard(staff_client) -> None:
    assert b"/admin/dashboard/" in staff_client.get("/admin/").content


def test_searches_are_counted_per_tenant_and_day(staff_client, alice, bob) -> None:
    from memoryhub.models import ApiUsage

    post_events(alice, "s1", {"role": "user", "content": "the harbour opens at dawn"})
    for _ in range(2):
        assert alice.post("/api/v1/search/", {"query": "harbour"}, format="json").status_code == 200
    assert (
        alice.post("/api/v1/search/", {"query": "x", "top_k": 0}, format="json").status_code == 400
    )
    assert bob.post("/api/v1/search/", {"query": "harbour"}, format="json").status_code == 200
    assert alice.get("/api/v1/sessions/s1/events/").status_code == 200  # reads are not counted
    usage = {(u.tenant.name, u.name): u for u in ApiUsage.objects.select_related("tenant")}
    assert set(usage) == {("alice", "search"), ("bob", "search")}  # appends are counted as events
    assert usage["alice", "search"].requests == 3 and usage["alice", "search"].errors == 1
    assert (
        usage["alice", "search"].day == timezone.localdate()
        and usage["alice", "search"].total_ms > 0
    )
    assert usage["bob", "search"].requests == 1

    response = staff_client.get("/admin/dashboard/")
    searches = chart(response, "search")
    requests = next(s for s in searches["series"] if s["label"] == "requests")
    latency = next(s for s in searches["series"] if s["label"] == "mean ms")
    assert requests["values"][-1] == 4 and searches["totals"]["requests"] == 4
    assert latency["scale"] == "ms" and latency["values"][-1] > 0 and latency["values"][0] is None
    rows = {row["tenant"].name: row for row in response.context["tenants"]}
    assert rows["alice"]["searches"] == 3 and rows["bob"]["searches"] == 1
    assert staff_client.get("/admin/memoryhub/apiusage/").status_code == 200


def test_usage_counters_are_not_exported_as_memory(alice) -> None:
    from memoryhub.models import ApiUsage, Note
    from memoryhub.transfer import record_models

    assert alice.post("/api/v1/search/", {"query": "anything"}, format="json").status_code == 200
    assert ApiUsage.objects.exists()
    exported = record_models()
    assert ApiUsage not in exported and Note in exported


def test_counts_are_buffered_in_the_process_and_written_together(
    alice, settings, monkeypatch
) -> None:
    from memoryhub.api.middleware import usage
    from memoryhub.models import ApiUsage

    monkeypatch.setattr(counters, "FLUSH_SECONDS", 3600)
    usage.flush()
    for _ in range(3):
        assert alice.post(
            "/api/v1/context/", {"session": "s1", "query": "q"}, format="json"
        ).status_code in (200, 404)
    assert not ApiUsage.objects.exists()  # nothing written per request
    usage.flush()
    row = ApiUsage.objects.get()
    assert row.name == "context" and row.requests == 3


def test_counts_of_a_deleted_tenant_are_dropped_not_failed(db) -> None:
    from django.utils import timezone

    from memoryhub.models import ApiUsage
    from tests.base import make_tenant

    kept = make_tenant("kept")
    ApiUsage.add(
        {
            (kept.pk, timezone.localdate(), "search"): [2, 0, 10.0],
            (kept.pk + 999, timezone.localdate(), "search"): [1, 0, 5.0],
        }
    )
    assert list(ApiUsage.objects.values_list("tenant_id", "requests")) == [(kept.pk, 2)]


def test_dashboard_shows_the_lanes_and_each_tenants_backlog_with_an_eta(
    staff_client, alice, bob, settings, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    from memoryhub.models import Session, StepFailure, Worker
    from retrieval.models import Chunk

    settings.MEMORYHUB_TASKS_EAGER = False  # chunks wait for the embed lane
    monkeypatch.setattr("retrieval.models.EMBED_MAX_ATTEMPTS", 2)
    post_events(alice, "s1", *[{"role": "user", "content": f"message {i}"} for i in range(6)])
    post_events(bob, "s2", {"role": "user", "content": "three"})
    Chunk.objects.filter(text="message 5").update(
        embedding_attempts=2, embedding_error="ValueError: bad"
    )
    Worker.objects.create(lane="embed", name="box:7", rate=2.0, busy=True)
    StepFailure.objects.create(
        tenant=Session.objects.get(external_id="s1").tenant,
        step="session",
        attempts=3,
        session=Session.objects.get(external_id="s1"),
        set_aside=True,
        error="boom",
    )
    response = staff_client.get("/admin/dashboard/")
    rows = {row["tenant"].name: row for row in response.context["tenants"]}
    assert (rows["alice"]["waiting"], rows["alice"]["set_aside"]) == (5, 1)
    # 2 a second, tenants in turn: bob's one chunk and one of alice's take 1 s, alice's other 4 take
    # 2 s.
    assert rows["bob"]["eta"] == timedelta(seconds=1) and rows["alice"]["eta"] == timedelta(
        seconds=3
    )
    assert [w.name for w in response.context["workers"]] == ["box:7"]
    assert b'id="mh-workers"' in response.content and b"1 session set aside" in response.content
    assert b"embedded=aside" in response.content  # a link to the set-aside chunks, to retry them


def test_dashboard_counts_each_tenants_chunks_waiting_for_their_sentence_vectors(
    staff_client, alice, bob, index
) -> None:  # type: ignore[no-untyped-def]
    from retrieval.models import Chunk

    index(alice, "chat", {"role": "user", "content": "one"}, {"role": "user", "content": "two"})
    index(bob, "chat", {"role": "user", "content": "three"})
    # Searchable by their own vectors, their sentence vectors still to come: alice's two only.
    Chunk.objects.filter(tenant__name="alice", embedding__isnull=False).update(
        sentence_vectors=None
    )
    response = staff_client.get("/admin/dashboard/")
    rows = {row["tenant"].name: row for row in response.context["tenants"]}
    assert rows["alice"]["sentences_waiting"] == 2 and "sentences_waiting" not in rows["bob"]
    assert b'<td class="mh-sentences-waiting">2</td>' in response.content
