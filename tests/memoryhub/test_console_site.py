"""The console's admin site without a browser: every registered model is in exactly one group of
the sidebar and index, the operator's groups come first and internals last, there is no "View
site", a fact's History page lists its versions, and the Memories list names each kind of memory
by the id the API uses."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib import admin

from memoryhub.models import Fact, Note, Session, SummaryNode
from memoryhub.plumbing.console_site import GROUPS, INTERNALS, ConsoleSite
from retrieval.admin_helpers import api_id
from retrieval.models import Chunk
from tests.base import make_client, make_key, make_tenant, post_events, remember

pytestmark = pytest.mark.django_db


def test_the_site_is_the_consoles_and_has_no_view_site() -> None:
    assert isinstance(admin.site, ConsoleSite)
    assert admin.site.site_url is None


def test_every_model_is_in_one_group_operators_first_internals_last(admin_client) -> None:  # type: ignore[no-untyped-def]
    response = admin_client.get("/admin/")
    assert response.status_code == 200
    groups = response.context["app_list"]
    assert [g["app_label"] for g in groups] == [label for label, _, _ in GROUPS] + [INTERNALS[0]]
    listed = [
        f"{m['model']._meta.app_label}.{m['model']._meta.object_name}"
        for g in groups
        for m in g["models"]
    ]
    registered = {f"{m._meta.app_label}.{m._meta.object_name}" for m in admin.site._registry}
    assert sorted(listed) == sorted(registered)  # each exactly once, none lost
    people = [m["name"] for m in groups[0]["models"]]
    assert people[:4] == [
        "People (end users)",
        "Conversations (sessions)",
        "Messages (events)",
        "Memories",
    ]
    assert "Chunks" in [m["name"] for m in groups[-1]["models"]]
    html = response.content.decode()
    assert (
        "View site" not in html
        and 'href="/api/v1/docs/"' in html
        and 'href="/admin/dashboard/"' in html
    )


def test_an_apps_own_page_stays_djangos(admin_client) -> None:  # type: ignore[no-untyped-def]
    response = admin_client.get("/admin/scheduling/")
    assert response.status_code == 200
    assert [g["app_label"] for g in response.context["app_list"]] == ["scheduling"]


def test_a_facts_history_page_lists_its_versions(admin_client) -> None:  # type: ignore[no-untyped-def]
    client = make_client(make_key(make_tenant("alice")))
    fact_id = client.post(
        "/api/v1/facts/", {"content": "Lives in Berlin", "key": "city"}, format="json"
    ).json()["id"]
    assert (
        client.patch(
            f"/api/v1/facts/{fact_id}/", {"content": "Lives in Lisbon"}, format="json"
        ).status_code
        == 200
    )
    response = admin_client.get(f"/admin/memoryhub/fact/{fact_id}/history/")
    assert response.status_code == 200
    assert [v.content for v in response.context["versions"]] == [
        "Lives in Berlin",
        "Lives in Lisbon",
    ]
    html = response.content.decode()
    assert html.count('class="mh-version"') == 2 and "doesn’t have a change history" not in html
    assert admin_client.get("/admin/memoryhub/fact/999999/history/").status_code in (302, 404)


def test_the_memories_list_names_each_kind_by_the_apis_id(admin_client) -> None:  # type: ignore[no-untyped-def]
    tenant = make_tenant("alice")
    assert (
        post_events(
            make_client(make_key(tenant)),
            "trip",
            {"role": "user", "content": "Booked the Lisbon train"},
        ).status_code
        == 201
    )
    session = Session.objects.get(tenant=tenant, external_id="trip")
    fact = remember(
        Fact.objects.create(
            tenant=tenant, workspace_id=session.workspace_id, content="Likes trains"
        )
    )
    note = remember(
        Note.objects.create(
            tenant=tenant, workspace_id=session.workspace_id, content="Train at nine"
        )
    )
    node = remember(
        SummaryNode.objects.create(
            tenant=tenant,
            session=session,
            level="leaf",
            sequence_start=1,
            sequence_end=1,
            text="Booked a train",
        )
    )
    expected: dict[str, Any] = {
        "event": "trip #1",
        "fact": f"fact {fact.pk}",
        "note": note.note_id,
        "summary": f"summary {node.pk}",
    }
    chunks = {c.kind: c for c in Chunk.objects.filter(tenant=tenant).select_related("session")}
    assert {kind: api_id(chunks[kind]) for kind in expected} == expected
    html = admin_client.get("/admin/lifecycle/memory/").content.decode()
    for shown in expected.values():
        assert f">{shown}</a>" in html
