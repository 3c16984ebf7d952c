"""Facts per owner and with history (docs/memory-model.md#facts): two users' `home_city` are two
facts, an upsert by one owner never touches another's row, every change of content opens a version,
and `as_of` answers from the versions true then (facts list, search, context)."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from django.utils import timezone

from memoryhub.models import Fact, FactVersion
from retrieval.models import Chunk
from tests.base import error_code, make_client, make_key

FACTS = "/api/v1/facts/"


def home(client: Any, city: str, user: str | None = None, **extra: Any) -> Any:
    body = {
        "content": f"{(user or 'I').title()} lives in {city}",
        "category": "profile",
        "key": "home_city",
        **({"user_id": user} if user is not None else {}),
        **extra,
    }
    return client.post(FACTS, body, format="json")


def snapshot() -> list[tuple[Any, ...]]:
    return sorted(
        Fact.objects.values_list("pk", "user_id", "content", "key", "external_id", "updated_at")
    )


def pause() -> None:
    # Versions are ordered by time: two writes in the same microsecond would be one moment.
    time.sleep(0.01)


@pytest.fixture
def user_keys(cast) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    return {user: make_client(make_key(cast.alice_tenant, user=user)) for user in ("ann", "bob")}


@pytest.mark.django_db
def test_two_users_same_key_are_two_facts_with_the_tenant_key(alice) -> None:
    ann = home(alice, "Berlin", "ann")
    bob = home(alice, "Paris", "bob")
    assert ann.status_code == bob.status_code == 201
    assert ann.json()["id"] != bob.json()["id"] and bob.json()["created"] is True
    listed = alice.get(FACTS, {"user_id": "ann"}).json()["results"]
    assert [f["content"] for f in listed] == ["Ann lives in Berlin"]
    # Each owner's upsert updates their own row only.
    again = home(alice, "Lisbon", "ann")
    assert again.status_code == 200 and again.json()["id"] == ann.json()["id"]
    assert Fact.objects.get(pk=bob.json()["id"]).content == "Bob lives in Paris"


@pytest.mark.django_db
def test_user_keys_upsert_their_own_fact_and_never_touch_or_reveal_the_other(user_keys) -> None:
    ann_key, bob_key = user_keys["ann"], user_keys["bob"]
    ann = home(ann_key, "Berlin")
    bob = home(bob_key, "Paris")
    # Before: bob's upsert found ann's row, overwrote it and then answered 404 (committed anyway).
    assert bob.status_code == 201, bob.content
    assert bob.json()["user_id"] == "bob" and bob.json()["id"] != ann.json()["id"]
    assert ann_key.get(f"{FACTS}{ann.json()['id']}/").json()["content"] == "I lives in Berlin"
    # Another user's fact is answered like a missing one, on reads and writes, and nothing changes.
    before = snapshot()
    missing = bob_key.get(f"{FACTS}999999/")
    for response in (
        bob_key.get(f"{FACTS}{ann.json()['id']}/"),
        bob_key.patch(f"{FACTS}{ann.json()['id']}/", {"content": "x"}, format="json"),
        bob_key.delete(f"{FACTS}{ann.json()['id']}/"),
        bob_key.get(f"{FACTS}{ann.json()['id']}/history/"),
    ):
        assert response.status_code == 404
        assert error_code(response) == "fact_not_found"
        assert response.json()["error"]["message"].replace(
            str(ann.json()["id"]), "N"
        ) == missing.json()["error"]["message"].replace("999999", "N")
    assert snapshot() == before


@pytest.mark.django_db
def test_a_user_key_reads_shared_facts_but_cannot_change_them(alice, user_keys) -> None:
    shared = alice.post(
        FACTS, {"content": "The office is in Porto", "key": "office"}, format="json"
    ).json()
    ann_key = user_keys["ann"]
    assert ann_key.get(f"{FACTS}{shared['id']}/").status_code == 200
    before = snapshot()
    for response in (
        ann_key.patch(f"{FACTS}{shared['id']}/", {"content": "mine"}, format="json"),
        ann_key.patch(f"{FACTS}{shared['id']}/", {"user_id": "ann"}, format="json"),
        ann_key.delete(f"{FACTS}{shared['id']}/"),
    ):
        assert response.status_code == 403
        assert error_code(response) == "shared_read_only"
    assert snapshot() == before
    # Its own upsert of the same key is a fact of its own, not the shared one.
    own = ann_key.post(FACTS, {"content": "My office is at home", "key": "office"}, format="json")
    assert own.status_code == 201 and own.json()["id"] != shared["id"]


@pytest.mark.django_db
def test_history_keeps_every_version_with_times(alice) -> None:
    first = home(alice, "Berlin", "ann").json()
    pause()
    changed_at = timezone.now()
    pause()
    second = home(alice, "Lisbon", "ann").json()
    assert second["id"] == first["id"] and second["content"] == "Ann lives in Lisbon"
    listed = alice.get(FACTS, {"user_id": "ann"}).json()["results"]
    assert [f["content"] for f in listed] == ["Ann lives in Lisbon"]
    history = alice.get(f"{FACTS}{first['id']}/history/").json()["versions"]
    assert [v["content"] for v in history] == ["Ann lives in Berlin", "Ann lives in Lisbon"]
    assert history[0]["valid_to"] == history[1]["valid_from"] and history[1]["valid_to"] is None
    assert [v["change"] for v in history] == ["created", "updated"]
    assert history[0]["closed_by"] == "updated" and history[1]["current"] is True
    # A change of importance alone is no new version.
    alice.patch(f"{FACTS}{first['id']}/", {"importance": 0.9}, format="json")
    assert len(alice.get(f"{FACTS}{first['id']}/history/").json()["versions"]) == 2
    # As of a moment before the change, the list answers Berlin; now, Lisbon.
    then = alice.get(FACTS, {"user_id": "ann", "as_of": changed_at.isoformat()}).json()["results"]
    assert [(f["id"], f["content"]) for f in then] == [(first["id"], "Ann lives in Berlin")]
    assert then[0]["valid_to"] is not None
    before_all = alice.get(FACTS, {"as_of": "2001-01-01T00:00:00Z"}).json()
    assert before_all["results"] == [] and before_all["count"] == 0
    # Filters history cannot answer are refused, not ignored; a bad time is a 400 too.
    refused = alice.get(FACTS, {"as_of": changed_at.isoformat(), "tags": "x", "meta.k": "v"})
    assert refused.status_code == 400 and error_code(refused) == "as_of_filter_unsupported"
    assert refused.json()["error"]["details"]["fields"] == ["meta.k", "tags"]
    assert alice.get(FACTS, {"as_of": "yesterday"}).status_code == 400


@pytest.mark.django_db
def test_patch_opens_a_version_and_delete_keeps_the_history(alice, user_keys) -> None:
    fact = home(user_keys["ann"], "Berlin").json()
    pause()
    user_keys["ann"].patch(
        f"{FACTS}{fact['id']}/", {"content": "I live in Lisbon", "source": "user"}, format="json"
    )
    pause()
    deleted_at = timezone.now()
    pause()
    assert user_keys["ann"].delete(f"{FACTS}{fact['id']}/").status_code == 200
    assert user_keys["ann"].get(f"{FACTS}{fact['id']}/").status_code == 404
    history = user_keys["ann"].get(f"{FACTS}{fact['id']}/history/").json()["versions"]
    assert [(v["content"], v["source"], v["closed_by"]) for v in history] == [
        ("I lives in Berlin", "agent", "updated"),
        ("I live in Lisbon", "user", "deleted"),
    ]
    # The list as of before the delete still shows it; bob's key sees none of it.
    then = user_keys["ann"].get(FACTS, {"as_of": deleted_at.isoformat()}).json()["results"]
    assert [f["content"] for f in then] == ["I live in Lisbon"]
    assert user_keys["bob"].get(FACTS, {"as_of": deleted_at.isoformat()}).json()["results"] == []
    # Forgetting the user deletes the history too.
    assert alice.delete("/api/v1/users/ann/").status_code == 200
    assert not FactVersion.objects.filter(user_id="ann").exists()
    assert not Chunk.every_version.filter(kind="fact", user_id="ann").exists()


@pytest.mark.django_db
def test_client_chosen_ids_are_unique_per_owner(alice) -> None:
    body = {"content": "Window seat", "category": "travel", "external_id": "pref-seat"}
    ann = alice.post(FACTS, {**body, "user_id": "ann"}, format="json")
    bob = alice.post(FACTS, {**body, "user_id": "bob", "content": "Aisle seat"}, format="json")
    assert ann.status_code == bob.status_code == 201 and ann.json()["id"] != bob.json()["id"]
    assert ann.json()["external_id"] == "pref-seat"
    # Writing the same id again updates that owner's fact, whatever else the body says.
    again = alice.post(
        FACTS,
        {**body, "user_id": "ann", "content": "Aisle seat now", "category": "prefs"},
        format="json",
    )
    assert again.status_code == 200 and again.json()["id"] == ann.json()["id"]
    assert again.json()["content"] == "Aisle seat now" and again.json()["category"] == "prefs"
    assert Fact.objects.get(pk=bob.json()["id"]).content == "Aisle seat"
    # PATCH onto an id the owner already uses is refused, nothing changes.
    other = alice.post(FACTS, {"content": "Vegetarian", "user_id": "ann"}, format="json").json()
    before = snapshot()
    clash = alice.patch(f"{FACTS}{other['id']}/", {"external_id": "pref-seat"}, format="json")
    assert clash.status_code == 409 and error_code(clash) == "fact_exists"
    assert snapshot() == before


@pytest.mark.django_db
def test_search_answers_from_current_versions_and_as_of_from_past_ones(
    alice, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        fact = home(alice, "Berlin", "ann").json()
    pause()
    between = timezone.now()
    pause()
    with django_capture_on_commit_callbacks(execute=True):
        home(alice, "Lisbon", "ann")

    def found(**body: Any) -> list[str]:
        response = alice.post(
            "/api/v1/search/",
            {"query": "Ann lives in which city", "user_id": "ann", "kinds": ["fact"], **body},
            format="json",
        )
        assert response.status_code == 200, response.content
        return [r["text"] for r in response.json()["results"]]

    assert found() == ["Ann lives in Lisbon"]
    assert found(as_of=between.isoformat()) == ["Ann lives in Berlin"]
    assert found(as_of="2001-01-01T00:00:00Z") == []
    # The superseded chunks are kept, closed when the new version began.
    old = Chunk.every_version.get(kind="fact", source_id=str(fact["id"]), valid_to__isnull=False)
    assert old.text == "Ann lives in Berlin" and old.valid_to > between


@pytest.mark.django_db
def test_context_as_of_says_the_old_fact_and_now_the_new_one_dated(
    alice, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        home(alice, "Berlin", "ann")
    pause()
    between = timezone.now()
    pause()
    with django_capture_on_commit_callbacks(execute=True):
        home(alice, "Lisbon", "ann")

    def block(**body: Any) -> str:
        response = alice.post(
            "/api/v1/context/",
            {"query": "Which city does Ann live in", "user_id": "ann", **body},
            format="json",
        )
        assert response.status_code == 200, response.content
        return response.json()["markdown"]

    now = block()
    assert "Ann lives in Lisbon" in now and "Berlin" not in now
    assert re.search(
        rf"\(fact since {timezone.now():%Y-%m-%d} \d\d:\d\d\) Ann lives in Lisbon", now
    ), now
    then = block(as_of=between.isoformat())
    assert "Ann lives in Berlin" in then and "Lisbon" not in then


@pytest.mark.django_db
def test_export_and_import_carry_the_history(alice, cast) -> None:
    fact = home(alice, "Berlin", "ann").json()
    pause()
    home(alice, "Lisbon", "ann")
    exported = alice.post("/api/v1/export/", {}, format="json")
    assert exported.status_code == 200, exported.content
    body = exported.json()
    versions = body["records"]["memoryhub.FactVersion"]
    assert [v["fields"]["content"] for v in versions] == [
        "Ann lives in Berlin",
        "Ann lives in Lisbon",
    ]
    assert versions[0]["fields"]["valid_to"] == versions[1]["fields"]["valid_from"]
    # Into a new tenant: the fact and both versions arrive.
    from tests.base import make_tenant

    carol = make_client(make_key(make_tenant("carol")))
    imported = carol.post("/api/v1/import/", body, format="json")
    assert imported.status_code in (200, 201), imported.content
    new_fact = carol.get(FACTS, {"user_id": "ann"}).json()["results"]
    assert [f["content"] for f in new_fact] == ["Ann lives in Lisbon"]
    history = carol.get(f"{FACTS}{new_fact[0]['id']}/history/").json()["versions"]
    assert [v["content"] for v in history] == ["Ann lives in Berlin", "Ann lives in Lisbon"]
    assert fact["id"]  # the original stays in alice's tenant
    assert alice.get(f"{FACTS}{fact['id']}/history/").status_code == 200


@pytest.mark.django_db
def test_the_current_fact_ranks_above_an_older_message_in_search_and_context(
    alice, index, django_capture_on_commit_callbacks
) -> None:
    assert (
        alice.post("/api/v1/sessions/", {"id": "trip", "user_id": "ann"}, format="json").status_code
        == 201
    )
    index(
        alice,
        "trip",
        {"role": "user", "content": "I live in Berlin", "created_at": "2025-03-02T10:00:00Z"},
        {
            "role": "assistant",
            "content": "Noted, Berlin it is.",
            "created_at": "2025-03-02T10:00:05Z",
        },
    )
    with django_capture_on_commit_callbacks(execute=True):
        home(alice, "Lisbon", "ann")
    query = {"query": "Which city do I live in?", "user_id": "ann", "scope": "account"}
    results = alice.post("/api/v1/search/", query, format="json").json()["results"]
    assert results[0]["text"] == "Ann lives in Lisbon", [r["text"] for r in results]
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)
    context = alice.post("/api/v1/context/", query, format="json").json()
    relevant = [i["text"] for i in context["items"] if i["source"] == "relevant"]
    assert relevant == [r["text"] for r in results]
    # The older message is still there, dated, so that an agent can tell old from new.
    assert "(user, said 2025-03-02 10:00) I live in Berlin" in context["markdown"]


@pytest.mark.django_db
def test_a_fact_deleted_by_any_path_closes_its_last_version(alice) -> None:
    """Consolidation, a conversation's end and the admin delete rows directly: the history stays
    and the last version is closed, so that nothing deleted looks current as of today."""
    fact = home(alice, "Berlin", "ann").json()
    Fact.objects.filter(pk=fact["id"]).delete()
    version = FactVersion.objects.get(fact_id=fact["id"])
    assert version.valid_to is not None and version.closed_by == "deleted"
    assert alice.get(FACTS, {"as_of": timezone.now().isoformat()}).json()["results"] == []
