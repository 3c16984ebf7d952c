"""Facts (docs/memory-model.md#facts): upsert on (scope, category, key), filters, patch, delete,
indexing, isolation."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from memoryhub.facts import upsert
from memoryhub.models import Fact, Session
from memoryhub.notes import Placement
from retrieval.models import Chunk
from tests.base import error_code, make_client, make_key, post_events

FACTS = "/api/v1/facts/"


def fact_url(fact_id: int) -> str:
    return f"{FACTS}{fact_id}/"


def chunks_of(fact_id: int) -> list[Chunk]:
    return list(Chunk.objects.filter(kind="fact", source_id=str(fact_id)))


def test_create_full_entry(alice) -> None:  # type: ignore[no-untyped-def]
    r = alice.post(
        FACTS,
        {
            "content": "User prefers metric units",
            "category": "preference",
            "key": "units",
            "importance": 0.8,
            "tags": ["Prefs"],
            "metadata": {"origin": "chat"},
            "lifetime": "long_term",
            "source": "user",
        },
        format="json",
    )
    assert r.status_code == 201, r.json()
    body = r.json()
    for name in (
        "id",
        "content",
        "category",
        "key",
        "scope",
        "lifetime",
        "source",
        "importance",
        "access_count",
        "accessed_at",
        "tags",
        "metadata",
        "session",
        "source_session",
        "created_at",
        "updated_at",
    ):
        assert name in body
    assert body["scope"] == "workspace" and body["access_count"] == 0 and body["tags"] == ["prefs"]
    assert body["created"] is True
    assert [c.text for c in chunks_of(body["id"])] == ["User prefers metric units"]
    chunk = chunks_of(body["id"])[0]
    assert chunk.tier == "workspace" and chunk.lifetime == "long_term" and chunk.importance == 0.8
    assert alice.get(fact_url(body["id"])).json()["content"] == "User prefers metric units"


def test_upsert_on_scope_category_key(alice, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        first = alice.post(
            FACTS,
            {
                "content": "Lives in Paris",
                "category": "profile",
                "key": "city",
                "tags": ["geo"],
                "importance": 0.4,
            },
            format="json",
        ).json()
    Fact.objects.filter(pk=first["id"]).update(access_count=5)
    with django_capture_on_commit_callbacks(execute=True):
        second = alice.post(
            FACTS, {"content": "Lives in Lyon", "category": "profile", "key": "city"}, format="json"
        )
    assert second.status_code == 200 and second.json()["created"] is False
    assert second.json()["id"] == first["id"]
    fact = Fact.objects.get()
    # untouched
    assert fact.content == "Lives in Lyon" and fact.tags == ["geo"] and fact.importance == 0.4
    assert fact.access_count == 5
    chunks = chunks_of(fact.pk)
    assert [c.text for c in chunks] == ["Lives in Lyon"] and chunks[0].embedding is not None
    # another category, another scope, or no key: new facts
    assert (
        alice.post(
            FACTS, {"content": "Lyon office", "category": "work", "key": "city"}, format="json"
        ).status_code
        == 201
    )
    assert (
        alice.post(
            FACTS,
            {"content": "Paris", "category": "profile", "key": "city", "workspace": "w2"},
            format="json",
        ).status_code
        == 201
    )
    assert (
        alice.post(FACTS, {"content": "no key 1", "category": "profile"}, format="json").status_code
        == 201
    )
    assert (
        alice.post(FACTS, {"content": "no key 2", "category": "profile"}, format="json").status_code
        == 201
    )
    assert Fact.objects.count() == 5


@pytest.mark.django_db(transaction=True)
def test_concurrent_upserts_of_one_key_make_one_fact(cast) -> None:  # type: ignore[no-untyped-def]
    from accounts.models import Workspace

    workspace = Workspace.get_default(cast.alice_tenant)
    writers = 5
    barrier = threading.Barrier(writers)
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            barrier.wait()
            upsert(
                tenant_id=cast.alice_tenant.pk,
                placement=Placement("workspace", workspace, None, None),
                data={"content": f"v{n}", "category": "c", "key": "k"},
                given={"content", "category", "key"},
            )
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert Fact.objects.filter(key="k").count() == 1
    fact = Fact.objects.get(key="k")
    assert Chunk.objects.filter(kind="fact", source_id=str(fact.pk)).count() == 1


def test_scopes(alice) -> None:  # type: ignore[no-untyped-def]
    post_events(alice, "s1", {"role": "user", "content": "hi"})
    conv = alice.post(
        FACTS,
        {"content": "temp", "scope": "conversation", "session": "s1", "lifetime": "conversation"},
        format="json",
    ).json()
    assert conv["scope"] == "conversation" and conv["session"] == "s1"
    learnt = alice.post(
        FACTS, {"content": "durable", "session": "s1", "scope": "workspace"}, format="json"
    ).json()
    assert learnt["session"] is None and learnt["source_session"] == "s1"
    chan = alice.post(
        FACTS, {"content": "topic fact", "scope": "channel", "channel": "support"}, format="json"
    ).json()
    assert chan["channel"] == "support"
    acct = alice.post(FACTS, {"content": "account fact", "scope": "account"}, format="json").json()
    assert acct["workspace"] is None
    assert Chunk.objects.get(kind="fact", source_id=str(acct["id"])).tier == "account"
    # forgetting the session removes the conversation fact, keeps the learnt one (unlinked)
    assert alice.delete("/api/v1/sessions/s1/").status_code == 200
    assert not Fact.objects.filter(pk=conv["id"]).exists()
    assert not chunks_of(conv["id"])
    kept = alice.get(fact_url(learnt["id"])).json()
    assert kept["content"] == "durable" and kept["source_session"] is None
    assert len(chunks_of(learnt["id"])) == 1


def test_list_filters(alice) -> None:  # type: ignore[no-untyped-def]
    def add(**fields) -> int:  # type: ignore[no-untyped-def]
        r = alice.post(FACTS, fields, format="json")
        assert r.status_code == 201, r.json()
        return r.json()["id"]

    a = add(
        content="Drinks oat milk",
        category="diet",
        key="milk",
        tags=["food", "pref"],
        metadata={"confidence": "high", "n": 2},
        source="user",
    )
    b = add(
        content="Allergic to peanuts",
        category="health",
        key="allergy",
        tags=["food"],
        metadata={"confidence": "low"},
        lifetime="short_term",
    )
    c = add(content="Uses vim", category="tools", scope="account", user_id="u-1")

    def ids(query: str) -> list[int]:
        r = alice.get(FACTS + query)
        assert r.status_code == 200, r.json()
        return sorted(f["id"] for f in r.json()["results"])

    assert ids("") == sorted([a, b, c])
    assert ids("?scope=account") == [c]
    assert ids("?category=diet") == [a]
    assert ids("?key=allergy") == [b]
    assert ids("?meta.confidence=high") == [a]
    assert ids("?meta.n=2") == [a]
    assert ids("?meta.confidence=high&meta.n=3") == []
    assert ids("?tags=food") == sorted([a, b])
    assert ids("?tags=food,pref") == [a]
    assert ids("?q=peanut") == [b]
    assert ids("?q=DIET") == [a]
    assert ids("?lifetime=short_term") == [b]
    assert ids("?source=user") == [a]
    assert ids("?user_id=u-1") == [c]
    assert error_code(alice.get(FACTS + "?scope=nowhere")) == "invalid_parameter"
    page = alice.get(FACTS + "?limit=1").json()
    assert page["count"] == 3 and page["next"]


def test_patch_and_delete(alice) -> None:  # type: ignore[no-untyped-def]
    f = alice.post(FACTS, {"content": "old", "category": "c", "key": "k1"}, format="json").json()
    g = alice.post(FACTS, {"content": "other", "category": "c", "key": "k2"}, format="json").json()
    r = alice.patch(
        fact_url(f["id"]), {"content": "new", "importance": 0.9, "tags": ["A"]}, format="json"
    )
    assert r.status_code == 200 and r.json()["content"] == "new" and r.json()["tags"] == ["a"]
    assert [c.text for c in chunks_of(f["id"])] == ["new"]
    clash = alice.patch(fact_url(f["id"]), {"key": "k2"}, format="json")
    assert clash.status_code == 409 and error_code(clash) == "fact_exists"
    assert Fact.objects.get(pk=f["id"]).key == "k1"
    for body, code in [
        ({"importance": 1.5}, "validation_error"),
        ({"content": " "}, "empty_content"),
        ({"scope": "account"}, "unknown_field"),
        ({"tags": ["x", None]}, "invalid_tags"),
    ]:
        bad = alice.patch(fact_url(f["id"]), body, format="json")
        assert bad.status_code == 400 and error_code(bad) == code, (body, bad.json())
    fact = Fact.objects.get(pk=f["id"])
    assert (fact.content, fact.importance, fact.tier) == ("new", 0.9, "workspace")
    assert alice.delete(fact_url(f["id"])).json() == {"id": str(f["id"]), "deleted": True}
    assert not Fact.objects.filter(pk=f["id"]).exists() and chunks_of(f["id"]) == []
    assert error_code(alice.get(fact_url(f["id"]))) == "fact_not_found"
    assert (
        error_code(alice.patch(fact_url(f["id"]), {"content": "x"}, format="json"))
        == "fact_not_found"
    )
    assert len(chunks_of(g["id"])) == 1


@pytest.mark.parametrize(
    "body,code",
    [
        ({}, "validation_error"),
        ({"content": ""}, "empty_content"),
        ({"content": "x", "importance": -0.1}, "validation_error"),
        ({"content": "x", "importance": "high"}, "validation_error"),
        ({"content": "x", "scope": "planet"}, "validation_error"),
        ({"content": "x", "lifetime": "forever"}, "validation_error"),
        ({"content": "x", "category": " "}, "validation_error"),
        ({"content": "x", "scope": "conversation"}, "session_required"),
        ({"content": "x", "session": "nope"}, "session_not_found"),
        ({"content": "x", "source_session": "nope"}, "session_not_found"),
        ({"content": "x", "scope": "account", "workspace": "w"}, "scope_mismatch"),
        ({"content": "x", "tags": [["nested"]]}, "invalid_tags"),
        ({"content": "x", "metadata": "text"}, "validation_error"),
        ({"content": "x", "access_count": 9}, "unknown_field"),
    ],
)
def test_bad_input_stores_nothing(alice, body, code) -> None:  # type: ignore[no-untyped-def]
    r = alice.post(FACTS, body, format="json")
    assert r.status_code in (400, 404) and error_code(r) == code, r.json()
    assert not Fact.objects.exists() and not Chunk.objects.filter(kind="fact").exists()


def test_bad_upsert_keeps_the_stored_fact(alice) -> None:  # type: ignore[no-untyped-def]
    alice.post(FACTS, {"content": "keep", "category": "c", "key": "k"}, format="json")
    r = alice.post(
        FACTS, {"content": "new", "category": "c", "key": "k", "importance": 7}, format="json"
    )
    assert r.status_code == 400
    assert Fact.objects.get().content == "keep"


def test_search_finds_facts(alice, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        alice.post(
            FACTS,
            {"content": "The staging database runs PostgreSQL 16", "category": "infra"},
            format="json",
        )
    r = alice.post("/api/v1/search/", {"query": "staging database", "mode": "text"}, format="json")
    results = r.json()["results"]
    assert (
        results and results[0]["kind"] == "fact" and results[0]["metadata"]["category"] == "infra"
    )


def test_cross_tenant_isolation(alice, bob) -> None:  # type: ignore[no-untyped-def]
    f = alice.post(
        FACTS, {"content": "alice secret", "category": "c", "key": "k"}, format="json"
    ).json()
    assert bob.get(FACTS).json()["count"] == 0
    assert error_code(bob.get(fact_url(f["id"]))) == "fact_not_found"
    assert (
        error_code(bob.patch(fact_url(f["id"]), {"content": "pwned"}, format="json"))
        == "fact_not_found"
    )
    assert error_code(bob.delete(fact_url(f["id"]))) == "fact_not_found"
    # the same (scope, category, key) in bob's tenant is bob's own fact
    r = bob.post(FACTS, {"content": "bob's", "category": "c", "key": "k"}, format="json")
    assert r.status_code == 201 and r.json()["id"] != f["id"]
    assert Fact.objects.get(pk=f["id"]).content == "alice secret"
    post_events(alice, "s-alice", {"role": "user", "content": "hi"})
    r = bob.post(FACTS, {"content": "x", "session": "s-alice"}, format="json")
    assert r.status_code == 404 and error_code(r) == "session_not_found"


def test_workspace_limited_key(cast) -> None:  # type: ignore[no-untyped-def]
    acct = cast.alice.post(
        FACTS, {"content": "account wide", "scope": "account"}, format="json"
    ).json()
    main = cast.alice.post(FACTS, {"content": "default ws"}, format="json").json()
    limited = make_client(make_key(cast.alice_tenant, workspace="lab"))
    assert limited.get(FACTS).json()["count"] == 0
    for fid in (acct["id"], main["id"]):
        assert limited.get(fact_url(fid)).status_code == 404
        assert limited.delete(fact_url(fid)).status_code == 404
    r = limited.post(FACTS, {"content": "lab fact", "category": "c", "key": "k"}, format="json")
    assert r.status_code == 201 and r.json()["workspace"] == "lab"
    r = limited.post(FACTS, {"content": "x", "scope": "account"}, format="json")
    assert r.status_code == 403 and error_code(r) == "workspace_forbidden"
    assert Fact.objects.count() == 3


def test_fact_session_is_confined_to_the_key(cast) -> None:  # type: ignore[no-untyped-def]
    post_events(cast.alice, "s1", {"role": "user", "content": "hi"})
    limited = make_client(make_key(cast.alice_tenant, workspace="lab"))
    r = limited.post(FACTS, {"content": "x", "session": "s1"}, format="json")
    assert r.status_code == 404
    assert Session.objects.count() == 1 and not Fact.objects.exists()


def test_access_counted_by_memory_searches_shows_on_the_fact(
    alice, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        f = alice.post(
            FACTS, {"content": "The office wifi password rotates monthly"}, format="json"
        ).json()
    assert f["access_count"] == 0 and f["accessed_at"] is None
    r = alice.post(
        "/api/v1/search/", {"query": "wifi password", "profile": "memory"}, format="json"
    )
    assert r.status_code == 200, r.json()
    assert any(x["kind"] == "fact" for x in r.json()["results"])
    got = alice.get(fact_url(f["id"])).json()
    assert got["access_count"] >= 1 and got["accessed_at"] is not None
    listed = alice.get(FACTS).json()["results"][0]
    assert listed["access_count"] == got["access_count"]


def test_list_query_count_does_not_grow_with_rows(alice, django_assert_max_num_queries) -> None:  # type: ignore[no-untyped-def]
    post_events(alice, "s1", {"role": "user", "content": "hi"})
    for i in range(15):
        alice.post(
            FACTS,
            {
                "content": f"fact {i}",
                "session": "s1",
                "scope": "conversation" if i % 2 else "workspace",
            },
            format="json",
        )
    with django_assert_max_num_queries(6):
        r = alice.get(FACTS)
    assert r.json()["count"] == 15


def test_a_fact_made_in_a_session_without_a_scope_is_its_owners_everywhere(cast) -> None:  # type: ignore[no-untyped-def]  # noqa: E501
    """As a note is (docs/memory-model.md#tiers): account tier, kept when the session ends; a key
    limited to one workspace makes it workspace tier."""
    alice = cast.alice
    post_events(alice, "s1", {"role": "user", "content": "hi", "user_id": "ann"})
    made = alice.post(
        FACTS,
        {"content": "Ann lives in Lyon", "category": "profile", "session": "s1"},
        format="json",
    ).json()
    assert (made["scope"], made["workspace"], made["user_id"]) == ("account", None, "ann")
    assert alice.delete("/api/v1/sessions/s1/").status_code == 200
    assert Fact.objects.get(pk=made["id"]).tier == "account"

    limited = make_client(make_key(cast.alice_tenant, workspace="alpha"))
    post_events(limited, "s2", {"role": "user", "content": "hi"})
    boxed = limited.post(FACTS, {"content": "boxed", "session": "s2"}, format="json").json()
    assert (boxed["scope"], boxed["workspace"]) == ("workspace", "alpha")


def test_a_fact_written_before_the_account_default_is_updated_not_duplicated(alice) -> None:  # type: ignore[no-untyped-def]  # noqa: E501
    """Before, a session's fact without a scope was workspace tier: the same write (session,
    category, key, no scope) updates that fact instead of making an account one beside it."""
    post_events(alice, "s1", {"role": "user", "content": "hi", "user_id": "ann"})
    old = alice.post(
        FACTS,
        {
            "content": "Lyon",
            "category": "profile",
            "key": "city",
            "session": "s1",
            "scope": "workspace",
        },
        format="json",
    ).json()
    again = alice.post(
        FACTS,
        {"content": "Paris", "category": "profile", "key": "city", "session": "s1"},
        format="json",
    )
    assert again.status_code == 200 and again.json()["id"] == old["id"]
    assert again.json()["content"] == "Paris" and again.json()["scope"] == "workspace"
    assert Fact.objects.filter(user_id="ann", category="profile", key="city").count() == 1
