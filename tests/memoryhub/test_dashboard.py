"""The operator dashboard: figures per tenant, queue status and charts, for staff only."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from django_q.models import Failure

from tests.base import post_events


@pytest.fixture
def staff_client(client, db):  # type: ignore[no-untyped-def]
    user = get_user_model().objects.create_superuser("op", "op@example.com", "pw-long-enough-123")
    client.force_login(user)
    return client


def test_dashboard_shows_each_tenants_figures_and_todays_events(staff_client, alice, bob) -> None:
    post_events(alice, "s1", {"role": "user", "content": "one"}, {"role": "assistant", "content": "two"})
    post_events(bob, "s2", {"role": "user", "content": "three"})
    response = staff_client.get("/admin/dashboard/")
    assert response.status_code == 200
    rows = {row["tenant"].name: row for row in response.context["tenants"]}
    assert rows["alice"]["sessions"] == 1 and rows["alice"]["events"] == 2
    assert rows["bob"]["sessions"] == 1 and rows["bob"]["events"] == 1
    events_chart = response.context["charts"][0]
    assert events_chart.title == "Events stored per day"
    assert events_chart.total == 3
    assert events_chart.bars[-1].day == timezone.localdate() and events_chart.bars[-1].value == 3
    assert events_chart.bars[-1].height == 100.0
    assert b'id="mh-tenants"' in response.content


def test_dashboard_lists_failed_tasks_with_a_way_to_resubmit(staff_client) -> None:
    now = timezone.now()
    Failure.objects.create(id="f" * 32, name="broken-task", func="retrieval.tasks.embed", started=now,
                           stopped=now, success=False, result="boom")
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
