"""Admin of notes, facts, summaries and scratchpads."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from memoryhub.models import Fact, Note, Scratchpad, Session, SummaryNode
from memoryhub.summaries import build_tree
from retrieval.models import Chunk
from tests.base import post_events

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fast_passwords(settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    monkeypatch.setattr("memoryhub.summaries.LEAF_EVENTS", 2)


def changelist(model: type) -> str:
    return reverse(f"admin:memoryhub_{model._meta.model_name}_changelist")


def change(obj: Any) -> str:
    return reverse(f"admin:memoryhub_{obj._meta.model_name}_change", args=[obj.pk])


@pytest.fixture
def data(alice, bob) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    post_events(
        alice,
        "s1",
        {"role": "user", "content": "Deploy window is Friday 18:00 UTC"},
        {"role": "assistant", "content": "Noted: ticket OPS-77"},
        {"role": "user", "content": "and rollback plan B"},
    )
    alice.post(
        "/api/v1/notes/",
        {
            "note_id": "runbook",
            "content": "Runbook lives at wiki/ops/runbook",
            "tags": ["ops", "wiki"],
            "source": "agent",
        },
        format="json",
    )
    alice.post(
        "/api/v1/facts/",
        {
            "content": "Prefers dark mode",
            "category": "preference",
            "key": "theme",
            "source": "user",
            "tags": ["ui"],
        },
        format="json",
    )
    alice.post(
        "/api/v1/facts/",
        {"content": "Team size is 12", "category": "org", "scope": "account", "source": "agent"},
        format="json",
    )
    alice.put(
        "/api/v1/sessions/s1/scratchpad/",
        {"items": [{"key": "todo", "value": "check OPS-77"}]},
        format="json",
    )
    bob.post("/api/v1/notes/", {"note_id": "bob-note", "content": "bob's note"}, format="json")
    session = Session.objects.get(external_id="s1")
    build_tree(session, final=True)
    return {"session": session}


@pytest.mark.parametrize("model", [Note, Fact, SummaryNode, Scratchpad])
def test_list_and_change_pages_load(admin_client, data, model) -> None:  # type: ignore[no-untyped-def]
    assert admin_client.get(changelist(model)).status_code == 200
    obj = model.objects.first()
    assert admin_client.get(change(obj)).status_code == 200


def test_fact_filters(admin_client, data) -> None:  # type: ignore[no-untyped-def]
    def listed(params: dict[str, str]) -> str:
        response = admin_client.get(changelist(Fact), params)
        assert response.status_code == 200
        return response.content.decode()

    assert "Prefers dark mode" in listed({"tier": "workspace"}) and "Team size" not in listed(
        {"tier": "workspace"}
    )
    assert "Team size" in listed({"tier": "account"})
    assert "Prefers dark mode" in listed({"source": "user"}) and "Team size" not in listed(
        {"source": "user"}
    )
    assert "Team size" in listed({"category": "org"}) and "dark mode" not in listed(
        {"category": "org"}
    )
    assert "dark mode" in listed({"tag": "ui"}) and "Team size" not in listed({"tag": "ui"})
    assert "Team size" in listed({"q": "team"}) and "dark mode" not in listed({"q": "team"})


def test_note_tag_filter_and_search(admin_client, data) -> None:  # type: ignore[no-untyped-def]
    html = admin_client.get(changelist(Note), {"tag": "ops"}).content.decode()
    assert "runbook" in html and "bob-note" not in html
    html = admin_client.get(changelist(Note), {"q": "wiki/ops"}).content.decode()
    assert "runbook" in html and "bob-note" not in html


def test_admin_edit_reindexes_and_delete_unindexes(admin_client, data) -> None:  # type: ignore[no-untyped-def]
    note = Note.objects.get(note_id="runbook")
    form = {
        "tenant": note.tenant_id,
        "workspace": note.workspace_id,
        "channel": "",
        "session": "",
        "note_id": "runbook",
        "user_id": "",
        "content": "Runbook moved to wiki/ops/v2",
        "source": "agent",
        "tags": "ops",
        "metadata": "{}",
        "tier": "workspace",
        "importance": "0.5",
    }
    response = admin_client.post(change(note), form)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert [c.text for c in Chunk.objects.filter(kind="note", source_id="runbook")] == [
        "Runbook moved to wiki/ops/v2"
    ]
    delete_url = reverse("admin:memoryhub_note_delete", args=[note.pk])
    assert admin_client.post(delete_url, {"post": "yes"}).status_code == 302
    assert not Chunk.objects.filter(kind="note", source_id="runbook").exists()


def test_fact_pin_action(admin_client, data) -> None:  # type: ignore[no-untyped-def]
    fact = Fact.objects.get(key="theme")
    admin_client.post(changelist(Fact), {"action": "pin", "_selected_action": [fact.pk]})
    fact.refresh_from_db()
    assert fact.importance == 1.0
    assert Chunk.objects.get(kind="fact", source_id=str(fact.pk)).importance == 1.0


def test_summary_page_shows_sources_and_children(admin_client, data) -> None:  # type: ignore[no-untyped-def]
    branch = SummaryNode.objects.get(level="branch")
    html = admin_client.get(change(branch)).content.decode()
    assert "child nodes" in html.lower()
    leaf = SummaryNode.objects.filter(level="leaf").order_by("sequence_start").first()
    html = admin_client.get(change(leaf)).content.decode()
    assert "Deploy window is Friday 18:00 UTC" in html and "Noted: ticket OPS-77" in html
    assert (
        'name="earliest_at_0"' in html and 'name="model"' in html and 'value="extractive"' in html
    )


def test_summary_list_shows_time_span_and_model(admin_client, data) -> None:  # type: ignore[no-untyped-def]
    html = admin_client.get(changelist(SummaryNode)).content.decode()
    assert "column-earliest_at" in html and "column-latest_at" in html and "column-model" in html


def test_scratchpad_is_read_only_with_badge(admin_client, data) -> None:  # type: ignore[no-untyped-def]
    pad = Scratchpad.objects.get()
    html = admin_client.get(changelist(Scratchpad)).content.decode()
    assert "Working note" in html
    html = admin_client.get(change(pad)).content.decode()
    assert "Working note" in html and "check OPS-77" in html
    assert 'name="_save"' not in html  # view only
    response = admin_client.post(change(pad), {"version": 99})
    assert response.status_code == 403
    assert admin_client.get(reverse("admin:memoryhub_scratchpad_add")).status_code == 403
    pad.refresh_from_db()
    assert pad.version == 1


def test_fact_page_shows_history_and_an_edit_opens_a_version(admin_client, data) -> None:  # type: ignore[no-untyped-def]
    """The admin shows a fact's versions, and an operator's edit of its content is a
    version of its own (source operator); deleting keeps the history."""
    from django.forms.models import model_to_dict

    from memoryhub.models import FactVersion

    fact = Fact.objects.get(key="theme")
    page = admin_client.get(change(fact)).content.decode()
    assert "History (every version, oldest first)" in page and "<td>Prefers dark mode</td>" in page
    form = {
        k: ("" if v is None else v)
        for k, v in model_to_dict(fact).items()
        if k
        not in (
            "id",
            "scope_key",
            "access_count",
            "accessed_at",
            "created_at",
            "updated_at",
            "valid_from",
        )
    }
    form.update({"content": "Prefers light mode", "tags": ",".join(fact.tags), "metadata": "{}"})
    response = admin_client.post(change(fact), form)
    assert response.status_code == 302, response.content.decode()[:3000]
    versions = list(FactVersion.objects.filter(fact_id=fact.pk).order_by("valid_from"))
    assert [(v.content, v.source, v.valid_to is None) for v in versions] == [
        ("Prefers dark mode", fact.source, False),
        ("Prefers light mode", "operator", True),
    ]
    assert [c.text for c in Chunk.objects.filter(kind="fact", source_id=str(fact.pk))] == [
        "Prefers light mode"
    ]
    assert (
        Chunk.every_version.filter(
            kind="fact", source_id=str(fact.pk), valid_to__isnull=False
        ).count()
        == 1
    )
    delete_url = reverse("admin:memoryhub_fact_delete", args=[fact.pk])
    assert admin_client.post(delete_url, {"post": "yes"}).status_code == 302
    assert not Chunk.objects.filter(kind="fact", source_id=str(fact.pk)).exists()
    assert FactVersion.objects.filter(fact_id=fact.pk, valid_to__isnull=True).count() == 0
    assert FactVersion.objects.filter(fact_id=fact.pk).count() == 2
    listed = admin_client.get(reverse("admin:memoryhub_factversion_changelist")).content.decode()
    assert "Prefers light mode" in listed and "Prefers dark mode" in listed
