"""A session's default recall: its owner's whole memory, nearest first; never another user's
conversation, another tenant's, or (for a user) a conversation nobody owns. Notes made in a
conversation are the owner's long-term memory unless asked for as conversation-tier."""

from __future__ import annotations

from typing import Any

import pytest

from retrieval.models import Chunk
from retrieval.search.nearness import NEAR_STEP, nearest_first
from retrieval.search.request import Candidate, SearchRequest
from tests.base import make_client, make_key, new_session

SAID = "I booked the Seaview guesthouse for the whole week."
QUESTION = "which guesthouse did I book"


def _converse(
    client: Any, index: Any, session: str, user: str | None, text: str | None = SAID
) -> None:
    new_session(client, session, channel="travel", **({"user_id": user} if user else {}))
    if text:
        index(client, session, {"role": "user", "content": text})


def _search(client: Any, **body: Any) -> list[dict[str, Any]]:
    response = client.post(
        "/api/v1/search/", {"query": QUESTION, "top_k": 50, **body}, format="json"
    )
    assert response.status_code == 200, response.content
    return response.json()["results"]


def _context(client: Any, **body: Any) -> dict[str, Any]:
    response = client.post("/api/v1/context/", {"query": QUESTION, **body}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_a_new_conversation_recalls_what_she_said_in_an_earlier_one(cast, index) -> None:
    """ann said it in trip3; from her new, empty trip4 (same channel) search and context find it."""
    _converse(cast.alice, index, "trip3", "ann")
    _converse(cast.alice, index, "trip4", "ann", text=None)
    found = _search(cast.alice, session="trip4")
    assert [(r["text"], r["session"]) for r in found] == [(SAID, "trip3")]
    context = _context(cast.alice, session="trip4")
    assert [i["text"] for i in context["items"]] == [SAID]
    assert "Seaview guesthouse" in context["markdown"]
    # A scope still narrows: her new conversation alone holds nothing about it.
    assert _search(cast.alice, session="trip4", scope="conversation") == []


def test_a_new_conversation_in_another_channel_recalls_it_by_its_words(cast, index) -> None:
    """The words of the question are weighed over the nearest channel, and over her whole memory
    when that channel never says them: full text still finds what she said elsewhere."""
    _converse(cast.alice, index, "trip3", "ann")
    new_session(cast.alice, "chat9", user_id="ann", channel="general")
    index(cast.alice, "chat9", {"role": "user", "content": "Good morning!"})
    for mode in ("hybrid", "text"):
        assert [
            (r["text"], r["session"]) for r in _search(cast.alice, session="chat9", mode=mode)
        ] == [(SAID, "trip3")], mode


@pytest.fixture
def twins(cast, index) -> None:
    """The same session ids, channel names and words on every side: ann's trip3 and trip4 in both
    tenants, bob's and an unowned conversation beside ann's in alice's tenant (session ids are
    unique per tenant, so theirs carry a prefix)."""
    for client in (cast.alice, cast.bob):
        _converse(client, index, "trip3", "ann")
        _converse(client, index, "trip4", "ann", text=None)
    _converse(cast.alice, index, "bob-trip3", "bob")
    _converse(cast.alice, index, "anon-trip3", None)
    _converse(cast.alice, index, "anon-trip4", None, text=None)


@pytest.mark.parametrize("mode", ["hybrid", "text", "vector"])
def test_the_wider_default_lists_only_the_owners_conversations(cast, twins, mode) -> None:
    ann_key = make_client(make_key(cast.alice_tenant, ("read",), user="ann"))
    for client in (cast.alice, ann_key):
        found = _search(client, session="trip4", mode=mode)
        assert [(r["session"], r["user_id"]) for r in found] == [("trip3", "ann")], (mode, found)
        assert set(
            Chunk.objects.filter(pk__in=[r["chunk_id"] for r in found]).values_list(
                "tenant_id", flat=True
            )
        ) == {cast.alice_tenant.pk}
        items = _context(client, session="trip4")["items"]
        assert {(i["session"], i["user_id"]) for i in items} <= {("trip3", "ann")}
    # The other tenant's ann, with the same ids, reads her own tenant's trip3 only.
    found = _search(cast.bob, session="trip4", mode=mode)
    assert [(r["session"], r["user_id"]) for r in found] == [("trip3", "ann")]
    assert set(
        Chunk.objects.filter(pk__in=[r["chunk_id"] for r in found]).values_list(
            "tenant_id", flat=True
        )
    ) == {cast.bob_tenant.pk}


def test_a_conversation_nobody_owns_recalls_only_the_tenants_unowned_ones(cast, twins) -> None:
    """A session with no owner is the tenant's: its default reads the tenant's unowned
    conversations, never a user's."""
    found = _search(cast.alice, session="anon-trip4")
    assert [(r["session"], r["user_id"]) for r in found] == [("anon-trip3", "")]
    items = _context(cast.alice, session="anon-trip4")["items"]
    assert [(i["session"], i["user_id"]) for i in items] == [("anon-trip3", "")]


def test_a_note_made_in_a_conversation_is_hers_everywhere_and_outlives_it(cast, index) -> None:
    client = cast.alice
    _converse(client, index, "trip3", "ann", text=None)
    _converse(client, index, "trip4", "ann", text=None)
    made = client.post(
        "/api/v1/notes/",
        {"content": "Ann's guesthouse is the Seaview, room 12.", "session": "trip3"},
        format="json",
    )
    assert made.status_code == 201, made.content
    assert (made.json()["scope"], made.json()["user_id"]) == ("account", "ann")
    asked = client.post(
        "/api/v1/notes/",
        {
            "content": "Guesthouse shuttle code 4471 for this chat only.",
            "session": "trip3",
            "scope": "conversation",
        },
        format="json",
    )
    assert asked.status_code == 201, asked.content
    assert (
        client.patch("/api/v1/sessions/trip3/", {"status": "archived"}, format="json").status_code
        == 200
    )
    assert client.get(f"/api/v1/notes/{made.json()['id']}/").status_code == 200
    # asked for: cleared
    assert client.get(f"/api/v1/notes/{asked.json()['id']}/").status_code == 404
    assert [r["text"] for r in _search(client, session="trip4")] == [
        "Ann's guesthouse is the Seaview, room 12."
    ]
    assert "Seaview, room 12" in _context(client, session="trip4")["markdown"]


def test_a_conversation_note_from_before_is_kept_by_replacing_it_workspace_wide(
    cast, index
) -> None:
    """The upgrade note of docs/memory-semantics.md: a conversation-tier note stays one until it is
    replaced."""
    client = cast.alice
    _converse(client, index, "trip3", "ann", text=None)
    made = client.post(
        "/api/v1/notes/",
        {"content": "Seaview room 12", "session": "trip3", "scope": "conversation"},
        format="json",
    ).json()
    kept = client.put(
        f"/api/v1/notes/{made['id']}/",
        {"content": "Seaview room 12", "session": "trip3", "scope": "workspace"},
        format="json",
    )
    assert kept.status_code == 200, kept.content
    assert (
        client.patch("/api/v1/sessions/trip3/", {"status": "archived"}, format="json").status_code
        == 200
    )
    assert client.get(f"/api/v1/notes/{made['id']}/").json()["scope"] == "workspace"


def test_a_workspace_limited_key_makes_a_session_note_workspace_wide(cast, index) -> None:
    """Such a key cannot write account-wide memories: its durable default is its workspace."""
    limited = make_client(make_key(cast.alice_tenant, ("read", "write"), workspace="travel-desk"))
    new_session(limited, "desk-1", user_id="ann")
    made = limited.post(
        "/api/v1/notes/", {"content": "Prefers a sea view.", "session": "desk-1"}, format="json"
    )
    assert made.status_code == 201, made.content
    assert (made.json()["scope"], made.json()["workspace"]) == ("workspace", "travel-desk")


def _candidate(
    pk: int,
    kind: str = "event",
    session: int | None = 1,
    channel: int | None = 10,
    workspace: int | None = 100,
) -> Candidate:
    return Candidate(
        pk=pk,
        session_id=session,
        text=f"t{pk}",
        contextual=False,
        created_ts=0.0,
        sequence_end=1,
        importance=0.5,
        kind=kind,
        sequence_start=1,
        channel_id=channel,
        workspace_id=workspace,
    )


def test_nearer_conversations_rank_first_at_equal_scores_but_a_better_match_still_wins() -> None:
    req = SearchRequest(
        tenant_id=1,
        session_id=1,
        session_channel_id=10,
        session_workspace_id=100,
        nearest_first=True,
    )
    chunks = {
        1: _candidate(1),
        2: _candidate(2, session=2),
        3: _candidate(3, session=3, channel=11),
        4: _candidate(4, session=4, channel=12, workspace=101),
        5: _candidate(5, "note", None, None, None),
    }
    scores = nearest_first(req, chunks, dict.fromkeys(chunks, 0.5))
    assert sorted(scores, key=lambda pk: -scores[pk]) == [1, 5, 2, 3, 4]
    assert scores[5] == scores[1] == 0.5  # a note applies here by its tier: not lowered
    assert scores[4] == pytest.approx(0.5 * (1 - 3 * NEAR_STEP))
    far_but_better = nearest_first(req, chunks, {1: 0.5, 4: 0.7})
    assert far_but_better[4] > far_but_better[1]
    # An explicit scope reads its range without the preference.
    assert nearest_first(SearchRequest(tenant_id=1, session_id=1), chunks, {1: 0.5, 4: 0.5}) == {
        1: 0.5,
        4: 0.5,
    }
