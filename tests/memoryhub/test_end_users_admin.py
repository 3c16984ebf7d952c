"""The admin's End users (the console starts from people): per tenant, search by user id,
what each owns, last seen, the explorer link, forgetting with a confirmation page; the same user
id in two tenants is two people; the admin index's badge of reviews waiting."""

from __future__ import annotations

import html as html_lib
import json
import re
from typing import Any

import pytest
from django.contrib.admin import helpers
from django.contrib.auth.models import Permission, User

from memoryhub.models import EndUser, Event, Fact, Note, Session
from retrieval.lifecycle.models import ConsolidationReport, PendingDeletion
from retrieval.models import Chunk
from tests.base import Cast, post_events

USERS = "/admin/memoryhub/enduser/"


def _own(
    cast_client: Any, tenant: Any, session: str, user: str, facts: int = 0, notes: int = 0
) -> None:
    response = post_events(
        cast_client, session, {"role": "user", "content": f"{user} says hello in {session}"}
    )
    assert response.status_code in (200, 201), response.content
    s = Session.objects.get(tenant=tenant, external_id=session)
    Session.objects.filter(pk=s.pk).update(user_id=user)
    for i in range(facts):
        Fact.objects.create(
            tenant=tenant, workspace_id=s.workspace_id, user_id=user, content=f"{user} fact {i}"
        )
    for i in range(notes):
        Note.objects.create(
            tenant=tenant, workspace_id=s.workspace_id, user_id=user, content=f"{user} note {i}"
        )


@pytest.fixture
def people(cast: Cast) -> None:
    """sam and dana in alice's tenant; another sam (same id, someone else) in bob's."""
    _own(cast.alice, cast.alice_tenant, "sam-1", "sam", facts=2, notes=1)
    _own(cast.alice, cast.alice_tenant, "sam-2", "sam")
    _own(cast.alice, cast.alice_tenant, "dana-1", "dana", facts=1)
    _own(cast.bob, cast.bob_tenant, "bob-sam", "sam", facts=5)


def _rows(response: Any) -> dict[tuple[str, str], EndUser]:
    assert response.status_code == 200, response.content[:500]
    return {(u.tenant.name, u.user_id): u for u in response.context["cl"].result_list}


def test_a_tenants_users_with_what_they_own(staff_client, cast, people) -> None:
    rows = _rows(staff_client.get(USERS, {"tenant__id__exact": cast.alice_tenant.pk}))
    assert set(rows) == {("alice", "sam"), ("alice", "dana")}  # bob's sam is not alice's
    sam = rows[("alice", "sam")]
    assert (sam.sessions, sam.facts, sam.notes) == (2, 2, 1)
    assert (rows[("alice", "dana")].sessions, rows[("alice", "dana")].facts) == (1, 1)
    assert sam.last_seen >= Session.objects.get(external_id="sam-2").updated_at
    html = staff_client.get(USERS, {"tenant__id__exact": cast.alice_tenant.pk}).content.decode()
    assert f'href="/admin/console/explorer/?tenant={cast.alice_tenant.pk}&amp;user=sam"' in html


def test_the_same_user_id_in_two_tenants_is_two_people(staff_client, cast, people) -> None:
    rows = _rows(staff_client.get(USERS, {"q": "sam"}))
    assert set(rows) == {("alice", "sam"), ("bob", "sam")}
    assert rows[("alice", "sam")].facts == 2 and rows[("bob", "sam")].facts == 5
    bob_only = _rows(staff_client.get(USERS, {"tenant__id__exact": cast.bob_tenant.pk}))
    assert set(bob_only) == {("bob", "sam")}


def test_search_by_user_id(staff_client, cast, people) -> None:
    assert set(_rows(staff_client.get(USERS, {"q": "dan"}))) == {("alice", "dana")}
    assert _rows(staff_client.get(USERS, {"q": "nobody-like-this"})) == {}


def test_forget_asks_first_then_forgets_only_that_tenants_user(staff_client, cast, people) -> None:
    pk = f"{cast.alice_tenant.pk}:sam"
    page = staff_client.get(f"{USERS}{pk}/forget/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Forget these end users?" in html and "cannot be undone" in html
    assert [(u.user_id, u.tenant.name, n) for u, n in page.context["users"]] == [
        ("sam", "alice", 2)
    ]
    # asking changed nothing
    assert Session.objects.filter(tenant=cast.alice_tenant, user_id="sam").count() == 2

    staff_client.post(
        USERS, {"action": "forget_users", helpers.ACTION_CHECKBOX_NAME: [pk], "confirm": "yes"}
    )
    assert not Session.objects.filter(tenant=cast.alice_tenant, user_id="sam").exists()
    assert not Fact.objects.filter(tenant=cast.alice_tenant, user_id="sam").exists()
    assert not Note.objects.filter(tenant=cast.alice_tenant, user_id="sam").exists()
    assert not Chunk.objects.filter(tenant=cast.alice_tenant, user_id="sam").exists()
    # dana, and bob's sam (the same id, someone else), are whole.
    assert Session.objects.filter(tenant=cast.alice_tenant, user_id="dana").count() == 1
    assert Session.objects.filter(tenant=cast.bob_tenant, user_id="sam").count() == 1
    assert Fact.objects.filter(tenant=cast.bob_tenant, user_id="sam").count() == 5
    assert Event.objects.filter(session__tenant=cast.bob_tenant).count() == 1
    assert set(_rows(staff_client.get(USERS))) == {("alice", "dana"), ("bob", "sam")}


def test_the_action_without_confirmation_only_asks(staff_client, cast, people) -> None:
    pk = f"{cast.bob_tenant.pk}:sam"
    page = staff_client.post(USERS, {"action": "forget_users", helpers.ACTION_CHECKBOX_NAME: [pk]})
    assert page.status_code == 200 and "Yes, forget 1 user" in page.content.decode()
    assert Fact.objects.filter(tenant=cast.bob_tenant, user_id="sam").count() == 5


def test_bad_input_changes_nothing(staff_client, cast, people) -> None:
    before = (Session.objects.count(), Fact.objects.count(), Note.objects.count())
    assert staff_client.get(f"{USERS}{cast.alice_tenant.pk}:nobody/forget/").status_code == 404
    assert staff_client.get(f"{USERS}999999:sam/forget/").status_code == 404
    # An id of no user, a pk of the wrong shape, a user id with the other tenant's number: nothing
    # goes.
    for selected in ([f"{cast.alice_tenant.pk}:nobody"], ["sam"], [f"{cast.bob_tenant.pk}:dana"]):
        staff_client.post(
            USERS,
            {"action": "forget_users", helpers.ACTION_CHECKBOX_NAME: selected, "confirm": "yes"},
        )
    assert (Session.objects.count(), Fact.objects.count(), Note.objects.count()) == before


def test_staff_without_the_right_cannot_forget(client, cast, people) -> None:
    viewer = User.objects.create_user("viewer", password="pw-123456", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_enduser"))
    client.force_login(viewer)
    pk = f"{cast.alice_tenant.pk}:sam"
    assert set(_rows(client.get(USERS))) == {("alice", "sam"), ("alice", "dana"), ("bob", "sam")}
    assert client.get(f"{USERS}{pk}/forget/").status_code == 404
    client.post(
        USERS, {"action": "forget_users", helpers.ACTION_CHECKBOX_NAME: [pk], "confirm": "yes"}
    )
    assert Session.objects.filter(tenant=cast.alice_tenant, user_id="sam").count() == 2


def test_the_admin_index_says_how_many_reviews_wait(staff_client, cast, people) -> None:
    assert b"mh-review-badge" not in staff_client.get("/admin/").content
    report = ConsolidationReport.objects.create(tenant=cast.alice_tenant)
    ids = list(Chunk.objects.filter(tenant=cast.alice_tenant).values_list("pk", flat=True)[:3])
    PendingDeletion.objects.create(
        tenant=cast.alice_tenant, report=report, step="prune", chunk_ids=ids
    )
    PendingDeletion.objects.create(
        tenant=cast.bob_tenant, report=report, step="prune", chunk_ids=[1]
    )
    PendingDeletion.objects.create(
        tenant=cast.bob_tenant, report=report, step="prune", chunk_ids=[2], status="approved"
    )
    html = staff_client.get("/admin/").content.decode()
    assert '<span class="mh-count">2</span> consolidation reviews waiting' in html
    assert f"{len(ids) + 1} memories" in html and "alice: 1, bob: 1" in html
    assert 'href="/admin/lifecycle/pendingdeletion/?status__exact=pending"' in html


def test_memory_and_chunk_lists_name_each_memorys_owner(staff_client, cast, people) -> None:
    Chunk.objects.filter(session__external_id="sam-1").update(user_id="sam")
    for url in ("/admin/lifecycle/memory/", "/admin/retrieval/chunk/"):
        html = staff_client.get(url, {"q": "says hello"}).content.decode()
        owners = sorted(re.findall(r'<td class="field-owner">([^<]*)</td>', html))
        assert owners == ["sam", "shared", "shared", "shared"], (url, owners)


def test_a_user_id_with_any_characters_is_listed_linked_and_forgotten(
    staff_client, cast, people
) -> None:
    odd = "ann/o'neil_5F?x=1#2 ü"
    _own(cast.alice, cast.alice_tenant, "odd-chat", odd, notes=1)
    rows = _rows(staff_client.get(USERS, {"q": "o'neil"}))
    assert set(rows) == {("alice", odd)}
    html = staff_client.get(USERS, {"q": "o'neil"}).content.decode()
    link = re.search(r'href="([^"]+/forget/)" class="mh-forget-user"', html).group(1)
    page = staff_client.get(html_lib.unescape(link))
    assert page.status_code == 200 and [u.user_id for u, _ in page.context["users"]] == [odd]
    staff_client.post(
        USERS,
        {
            "action": "forget_users",
            helpers.ACTION_CHECKBOX_NAME: page.context["selected"],
            "confirm": "yes",
        },
    )
    assert (
        not Session.objects.filter(user_id=odd).exists()
        and not Note.objects.filter(user_id=odd).exists()
    )
    assert Session.objects.filter(tenant=cast.alice_tenant, user_id="sam").count() == 2


def test_export_beside_forget_downloads_everything_of_that_user_only(
    staff_client, client, cast, people
) -> None:
    html = staff_client.get(
        USERS, {"tenant__id__exact": cast.alice_tenant.pk, "q": "sam"}
    ).content.decode()
    link = re.search(
        r'href="([^"]+/export/)" class="mh-export-user">export</a> · <a href="[^"]+/forget/"', html
    )
    assert link is not None, html
    response = staff_client.get(html_lib.unescape(link.group(1)))
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith(
        'attachment; filename="memoryhub-alice-user-sam-'
    )
    data = json.loads(response.content)
    assert data["scope"] == {"type": "user", "user_id": "sam"}
    assert sorted(s["id"] for s in data["sessions"]) == ["sam-1", "sam-2"]
    assert len(data["records"]["memoryhub.Fact"]) == 2  # alice's sam's, not bob's sam's five
    assert "dana" not in response.content.decode()
    assert staff_client.get(f"{USERS}{cast.alice_tenant.pk}:nobody/export/").status_code == 404
    viewer = User.objects.create_user("viewer", password="pw-123456", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_enduser"))
    client.force_login(viewer)
    # exports are superusers'
    assert client.get(html_lib.unescape(link.group(1))).status_code == 403
