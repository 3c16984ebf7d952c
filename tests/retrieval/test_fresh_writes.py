"""Fresh writes rank on the evidence they have: while a message's vector is still to be computed
(an embedding backlog), fusion scores it on its words, not as if its meaning were the farthest of
all the candidates'."""

from __future__ import annotations

from typing import Any

import pytest

from retrieval.models import Chunk
from retrieval.search import fusion
from retrieval.search.request import SearchRequest
from tests.base import post_events
from tests.retrieval.conftest import search

FRESH = "PR 4411 migrated table tblzz81 to the partitioned layout"
BACKLOG = 2000


def texts(response: Any) -> list[str]:
    assert response.status_code == 200, response.content
    return [r["text"] for r in response.json()["results"]]


@pytest.fixture
def backlog(alice, index, settings) -> None:  # type: ignore[no-untyped-def]
    """Three embedded messages of another session about other tables; then, with the embedding lane
    behind, thousands of messages without vectors and the fresh one."""
    index(
        alice,
        "ops",
        *[
            {
                "role": "user",
                "content": f"PR {4400 + i} migrated table orders_{i} and which indexes it needed",
            }
            for i in range(3)
        ],
    )
    settings.MEMORYHUB_TASKS_EAGER = False  # nothing embeds from here on: the lane is behind
    for batch in range(BACKLOG // 200):
        response = post_events(
            alice,
            f"chatter-{batch}",
            *[
                {
                    "role": "user",
                    "content": f"backlog line {batch * 200 + j}: lunch at noon, coffee after",
                }
                for j in range(200)
            ],
        )
        assert response.status_code in (200, 201), response.content
    assert post_events(alice, "db", {"role": "user", "content": FRESH}).status_code in (200, 201)
    assert Chunk.objects.filter(tenant__name="alice", embedding__isnull=True).count() > BACKLOG
    assert not Chunk.objects.get(tenant__name="alice", text=FRESH).embedding_model


@pytest.mark.parametrize(
    "query",
    [
        "which PR migrated table tblzz81?",
        "which PR migrated table tblzz18?",  # a typo of the rare word
    ],
)
def test_a_fresh_exact_match_ranks_first_under_an_embedding_backlog(
    alice, backlog, query: str
) -> None:
    found = texts(search(alice, query=query, scope="account"))
    assert found[0] == FRESH
    assert len(found) == 4  # the three embedded ones follow; the backlog's unrelated lines do not


def test_a_pending_vector_shares_its_weight_out_over_the_parts_the_candidate_has() -> None:
    assert fusion.pending_weights((0.7, 0.3), 0, True) == (0.7, 0.3)
    assert fusion.pending_weights((0.7, 0.3), 0, False) == pytest.approx((0.0, 1.0))
    assert fusion.pending_weights((0.3, 0.3, 0.4), 1, False) == pytest.approx(
        (0.3 / 0.7, 0.0, 0.4 / 0.7)
    )


@pytest.mark.parametrize(
    "options", [{}, {"fusion": "rrf"}, {"profile": "memory"}, {"profile": "seed002"}]
)
def test_every_fusion_scores_the_words_of_a_pending_candidate_as_an_embedded_one_with_the_best_vector(  # noqa: E501
    options: dict[str, Any],
) -> None:
    from retrieval.search.request import Candidate

    def candidate(pk: int) -> Candidate:
        return Candidate(
            pk=pk,
            session_id=1,
            text="",
            kind="event",
            created_ts=0.0,
            sequence_start=pk,
            sequence_end=pk,
            relevance=0.5,
            importance=0.5,
            contextual=False,
        )

    req = SearchRequest(tenant_id=1, query="q", exact_weights=True, **options)
    chunks = {pk: candidate(pk) for pk in (1, 2, 3)}
    vec = {1: 0.9, 2: 0.1}  # 3 is pending
    txt = {1: 0.2, 2: 0.2, 3: 0.8}
    scores = fusion.base_scores(req, chunks, vec, txt)
    assert max(scores, key=scores.get) == 3
    parts = fusion.fusion_parts(req, chunks, vec, txt, [1, 2, 3])
    for pk, score in scores.items():
        assert sum(p["part"] for p in parts[pk].values()) == pytest.approx(score)


# The relevance floor by default.

STORED = [
    "the Lisbon flight is at 9",
    "Pack the blue suitcase and the camera.",
    "Dinner with Marta on Friday.",
]


@pytest.fixture
def trip(alice, index) -> None:  # type: ignore[no-untyped-def]
    index(alice, "trip", *[{"role": "user", "content": text} for text in STORED])


def test_a_query_sharing_nothing_with_what_is_stored_lists_nothing(alice, trip) -> None:
    assert texts(search(alice, query="quantum chromodynamics lecture notes", scope="account")) == []
    context = alice.post(
        "/api/v1/context/", {"query": "quantum chromodynamics lecture notes"}, format="json"
    )
    assert context.status_code == 200, context.content
    assert context.json()["markdown"] == ""


def test_the_floor_keeps_word_matches_and_can_be_lowered_by_the_request(alice, trip) -> None:
    assert texts(search(alice, query="Lisbon flight", scope="account"))[0] == STORED[0]
    # min_cosine -1: the floor at its lowest, everything fusion ranked.
    assert (
        len(
            texts(
                search(
                    alice,
                    query="quantum chromodynamics lecture notes",
                    scope="account",
                    min_cosine=-1,
                )
            )
        )
        == 3
    )
