"""/stats/'s embed queue: for a key limited to an end user or a workspace, that of what it may
read, never the tenant's (another user's appends must not move it); the chunks waiting for their
sentence vectors counted the same way."""

from __future__ import annotations

from typing import Any

import pytest

from memoryhub.models import Worker
from retrieval.models import Chunk
from tests.base import make_client, make_key, post_events

pytestmark = pytest.mark.django_db


def test_a_limited_keys_queue_does_not_move_with_another_users_appends(
    cast, settings, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    settings.MEMORYHUB_TASKS_EAGER = False  # chunks wait in the table
    monkeypatch.setattr("retrieval.indexing.CONTEXT_MESSAGES", 0)
    Worker.objects.create(lane="embed", name="host:1", rate=2.0)
    ann = make_client(make_key(cast.alice_tenant, ("read", "write"), user="ann"))
    alpha = make_client(make_key(cast.alice_tenant, ("read", "write"), workspace="alpha"))
    post_events(ann, "ann-chat", {"role": "user", "content": "ann's message"})
    before = ann.get("/api/v1/stats/").json()["queue"]
    alpha_before = alpha.get("/api/v1/stats/").json()["queue"]
    post_events(
        cast.alice,
        "bob-chat",
        *[{"role": "user", "content": f"bob {i}"} for i in range(6)],
    )
    cast.alice.patch("/api/v1/sessions/bob-chat/", {"user_id": "bob"}, format="json")
    after = ann.get("/api/v1/stats/").json()["queue"]
    assert before == after, (before, after)
    assert after["embedding_waiting"] == 1 and after["embedding_eta_seconds"] is None
    assert alpha.get("/api/v1/stats/").json()["queue"] == alpha_before
    # The tenant-wide key still sees the tenant's queue and its ETA.
    tenant = cast.alice.get("/api/v1/stats/").json()["queue"]
    assert tenant["embedding_waiting"] == 7 and tenant["embedding_eta_seconds"] is not None


def _waiting_for_sentences(tenant: Any) -> None:
    """Every chunk of the tenant searchable by its own vector, its sentence vectors still to come
    (what the embed lane leaves between its two steps)."""
    assert Chunk.objects.filter(tenant=tenant, embedding__isnull=True).count() == 0
    Chunk.objects.filter(tenant=tenant).update(sentence_vectors=None)


def test_stats_count_the_tenants_chunks_waiting_for_their_sentence_vectors(cast, index) -> None:
    index(
        cast.alice, "chat", {"role": "user", "content": "one"}, {"role": "user", "content": "two"}
    )
    index(cast.bob, "chat", {"role": "user", "content": "bob's"})
    # Sentences done (a one-sentence chunk has none to write): nothing waits.
    assert cast.alice.get("/api/v1/stats/").json()["queue"]["sentences_waiting"] == 0
    _waiting_for_sentences(cast.alice_tenant)
    _waiting_for_sentences(cast.bob_tenant)
    assert cast.alice.get("/api/v1/stats/").json()["queue"]["sentences_waiting"] == 2
    assert cast.bob.get("/api/v1/stats/").json()["queue"]["sentences_waiting"] == 1
    Chunk.objects.filter(tenant=cast.alice_tenant, text="one").update(sentence_vectors=0)
    assert cast.alice.get("/api/v1/stats/").json()["queue"]["sentences_waiting"] == 1


def test_a_limited_key_counts_only_the_sentence_work_it_may_read(cast, index) -> None:
    ann = make_client(make_key(cast.alice_tenant, ("read", "write"), user="ann"))
    ben = make_client(make_key(cast.alice_tenant, ("read", "write"), user="ben"))
    alpha = make_client(make_key(cast.alice_tenant, ("read", "write"), workspace="alpha"))
    index(ann, "ann-chat", {"role": "user", "content": "ann's"})
    index(ben, "ben-chat", *[{"role": "user", "content": f"ben {i}"} for i in range(3)])
    index(alpha, "alpha-chat", *[{"role": "user", "content": f"alpha {i}"} for i in range(2)])
    # Another tenant with ann's very session name and owner waits too: never counted for her.
    other = make_client(make_key(cast.bob_tenant, ("read", "write"), user="ann"))
    index(other, "ann-chat", {"role": "user", "content": "the other ann's"})
    _waiting_for_sentences(cast.alice_tenant)
    _waiting_for_sentences(cast.bob_tenant)
    assert ann.get("/api/v1/stats/").json()["queue"]["sentences_waiting"] == 1
    assert ben.get("/api/v1/stats/").json()["queue"]["sentences_waiting"] == 3
    assert alpha.get("/api/v1/stats/").json()["queue"]["sentences_waiting"] == 2
    assert cast.alice.get("/api/v1/stats/").json()["queue"]["sentences_waiting"] == 6
