"""/stats/ for a key limited to an end user or a workspace: the embed queue of what it may read,
never the tenant's (another user's appends must not move it)."""

from __future__ import annotations

import pytest

from memoryhub.models import Worker
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
