"""The alternative rankings (docs/ranking.md#profiles): decay in the default profile (decay_weight),
the published formula (profile "seed002"), the relevance floor (min_cosine on search and
context)."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from memoryhub.searchable import Searchable
from memoryhub.signals import memory_saved
from retrieval.decay import relevance_at, seed002_temporal
from retrieval.models import Chunk, ChunkAccess
from retrieval.search import weights
from retrieval.search.fusion import fuse
from retrieval.search.request import Candidate, SearchRequest
from tests.base import error_code
from tests.retrieval.conftest import search


@pytest.fixture
def fact(django_capture_on_commit_callbacks) -> Callable[..., None]:  # type: ignore[no-untyped-def]
    """A memory saved and indexed, embedded by the tasks its commit enqueues (eager mode)."""

    def save(
        tenant_id: int,
        source_id: str,
        text: str,
        *,
        days_old: float = 0.0,
        importance: float = 0.5,
        tier: str = "conversation",
    ) -> None:
        with django_capture_on_commit_callbacks(execute=True):
            memory_saved.send(
                sender=None,
                kind="fact",
                searchable=Searchable(
                    kind="fact",
                    source_id=source_id,
                    tenant_id=tenant_id,
                    text=text,
                    tier=tier,
                    importance=importance,
                    created_at=timezone.now() - timedelta(days=days_old),
                ),
            )
        assert Chunk.objects.filter(
            tenant_id=tenant_id, text=text, embedding__isnull=False
        ).exists()

    return save


def _texts(response: Any) -> list[str]:
    assert response.status_code == 200, response.content
    return [r["text"] for r in response.json()["results"]]


def cand(pk: int, *, relevance: float = 0.0, importance: float = 0.5) -> Candidate:
    return Candidate(
        pk=pk,
        session_id=None,
        text=f"t{pk}",
        contextual=False,
        created_ts=0.0,
        sequence_end=None,
        importance=importance,
        relevance=relevance,
    )


# --- on plain data --------------------------------------------------------------------------------


def test_seed002_profile_is_seed_002s_formula() -> None:
    chunks = {
        1: cand(1, relevance=1.0, importance=0.9),
        2: cand(2, relevance=0.2, importance=0.5),
        3: cand(3, relevance=0.0, importance=0.1),
    }
    vec = {1: 0.8, 2: 0.4, 3: -0.2}  # raw cosines: a negative one counts 0
    txt = {2: 4.0, 3: 2.0}  # BM25 scaled 0-1 over the candidates; 1 has no text match
    fused = fuse(SearchRequest(tenant_id=1, profile="seed002"), chunks, vec, txt)
    assert fused == pytest.approx(
        {
            1: 0.3 * 0.0 + 0.3 * 0.8 + 0.3 * 1.0 + 0.1 * 0.9,
            2: 0.3 * 1.0 + 0.3 * 0.4 + 0.3 * 0.2 + 0.1 * 0.5,
            3: 0.3 * 0.0 + 0.3 * 0.0 + 0.3 * 0.0 + 0.1 * 0.1,
        }
    )


def test_seed002_temporal_score() -> None:
    assert seed002_temporal(0, 0) == 1.0
    assert seed002_temporal(10, 0) == pytest.approx(math.exp(-0.5))
    assert seed002_temporal(10, 5) == pytest.approx(math.exp(-0.5) * 1.1)
    assert seed002_temporal(-3, 0) == 1.0  # a future time counts as now


def test_decay_weight_blends_the_decayed_relevance_into_the_default_score(monkeypatch) -> None:
    monkeypatch.setattr(weights, "BALANCE", 0.0)
    chunks = {1: cand(1, relevance=0.0), 2: cand(2, relevance=3.0)}
    vec, txt = {1: 0.9, 2: 0.5}, {1: 2.0, 2: 1.0}
    plain = fuse(SearchRequest(tenant_id=1), chunks, vec, txt)
    assert plain == pytest.approx({1: 1.0, 2: 0.0})
    decayed = fuse(SearchRequest(tenant_id=1, decay_weight=0.4), chunks, vec, txt)
    # relevance capped at 1
    assert decayed == pytest.approx({1: 0.6 * 1.0, 2: 0.6 * 0.0 + 0.4 * 1.0 * 1.0})


# --- through the API ------------------------------------------------------------------------------


def test_with_decay_an_old_memory_ranks_below_a_new_one_it_outscores_otherwise(
    alice, cast, fact
) -> None:
    tenant = cast.alice_tenant.pk
    fact(tenant, "old", "quince jam recipe from grandmother", days_old=30, importance=0.8)
    fact(tenant, "new", "quince jam", importance=0.8)
    query = {"query": "quince jam recipe from grandmother"}
    assert _texts(search(alice, **query))[0] == "quince jam recipe from grandmother"
    ChunkAccess.objects.all().delete()  # that search was a use of both: undo it
    decayed = _texts(search(alice, **query, decay_weight=0.6))
    assert decayed[0] == "quince jam"  # a month old at 0.99/h: its decayed relevance is ~0


def test_seed002_profile_ranks_by_time_since_use_and_importance(alice, cast, fact) -> None:
    tenant = cast.alice_tenant.pk
    fact(tenant, "old", "medlar tart for ten", days_old=10, importance=0.6)
    fact(tenant, "new", "medlar tart for two", importance=0.6)
    fact(tenant, "key", "medlar tart for six", importance=1.0)
    results = search(alice, query="medlar tart", profile="seed002", explain=True).json()["results"]
    assert len(results) == 3
    for result in results:
        parts = result["explain"]["parts"]
        days = 10 if result["text"].endswith("ten") else 0
        # SQL agrees
        assert parts["relevance"]["raw"] == pytest.approx(seed002_temporal(days, 0), abs=1e-4)
        assert parts["importance"]["raw"] == (1.0 if result["text"].endswith("six") else 0.6)
        assert (
            parts["text"]["weight"]
            == parts["vector"]["weight"]
            == parts["relevance"]["weight"]
            == 0.3
        )
        assert parts["vector"]["normalised"] == pytest.approx(
            max(parts["vector"]["raw"], 0.0), abs=1e-4
        )
        assert result["score"] == pytest.approx(sum(p["part"] for p in parts.values()), abs=1e-4)
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)
    # Every search counts as a use (docs/ranking.md#reinforcement): the three are reinforced and
    # start again from now.
    assert {c.access_count for c in Chunk.objects.with_access()} == {1}
    again = {
        r["text"]: r["explain"]["parts"]["relevance"]["raw"]
        for r in search(alice, query="medlar tart", profile="seed002", explain=True).json()[
            "results"
        ]
    }
    assert again["medlar tart for ten"] == pytest.approx(seed002_temporal(0, 1), abs=1e-4)


def test_memory_profile_decays_to_the_requests_as_of(alice, cast, fact) -> None:
    """Decay is measured to when the question is asked: a replay at as_of sees the memory as young
    as it was then."""
    tenant = cast.alice_tenant.pk
    fact(tenant, "f", "loquat memory", days_old=30, importance=0.8)
    created = Chunk.objects.get().created_at
    now = search(alice, query="loquat", profile="memory")
    ChunkAccess.objects.all().delete()
    then = search(
        alice, query="loquat", profile="memory", as_of=(created + timedelta(hours=1)).isoformat()
    )
    gap = then.json()["results"][0]["score"] - now.json()["results"][0]["score"]
    assert gap == pytest.approx(
        0.4
        * (
            relevance_at(0.8, "conversation", None, created, 0, created + timedelta(hours=1))
            - relevance_at(0.8, "conversation", None, created, 0)
        ),
        abs=1e-3,
    )


def test_min_cosine_keeps_only_memories_close_in_meaning(alice, cast, fact) -> None:
    tenant = cast.alice_tenant.pk
    fact(tenant, "a", "persimmon harvest")
    fact(tenant, "b", "persimmon harvest fair in the old market square on rainy tuesdays")
    assert sorted(_texts(search(alice, query="persimmon harvest"))) == [
        "persimmon harvest",
        "persimmon harvest fair in the old market square on rainy tuesdays",
    ]
    # The second says the query's words, not its meaning: the floor leaves it out.
    assert _texts(search(alice, query="persimmon harvest", min_cosine=0.9)) == ["persimmon harvest"]
    assert _texts(search(alice, query="persimmon harvest", min_cosine=1.0 - 1e-6)) in (
        ["persimmon harvest"],
        [],
    )


def test_context_min_cosine_is_seed_004s_floor(alice, cast, fact) -> None:
    tenant = cast.alice_tenant.pk
    fact(tenant, "a", "persimmon harvest")
    fact(tenant, "b", "persimmon harvest fair in the old market square on rainy tuesdays")

    def relevant(**body: Any) -> list[str]:
        response = alice.post(
            "/api/v1/context/", {"query": "persimmon harvest", **body}, format="json"
        )
        assert response.status_code == 200, response.content
        return sorted(i["text"] for i in response.json()["items"])

    assert len(relevant()) == 2  # the default floor: it says every word of the query
    assert relevant(min_cosine=0.9) == ["persimmon harvest"]


def test_other_tenants_memories_stay_out_whatever_the_profile(alice, bob, cast, fact) -> None:
    fact(cast.alice_tenant.pk, "x", "kumquat secret", importance=1.0)
    fact(cast.bob_tenant.pk, "x", "kumquat note")
    for body in ({"profile": "seed002"}, {"decay_weight": 1.0}, {"min_cosine": -1.0}):
        assert _texts(search(bob, query="kumquat", **body)) == ["kumquat note"]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"decay_weight": 1.5}, "max_value"),
        ({"decay_weight": -0.1}, "min_value"),
        ({"decay_weight": "x"}, "invalid"),
        ({"min_cosine": 1.01}, "max_value"),
        ({"min_cosine": -2}, "min_value"),
        ({"profile": "seed003"}, "invalid_choice"),
    ],
)
def test_bad_ranking_values_are_a_400_with_a_code(
    alice, cast, fact, body: dict[str, Any], code: str
) -> None:
    fact(cast.alice_tenant.pk, "x", "kumquat")
    before = list(ChunkAccess.objects.values_list("chunk_id", "access_count"))
    response = search(alice, query="kumquat", **body)
    assert response.status_code == 400, response.content
    assert error_code(response) == "validation_error"
    name = next(iter(body))
    assert [e["code"] for e in response.json()["error"]["details"]["fields"][name]] == [code]
    # nothing counted
    assert list(ChunkAccess.objects.values_list("chunk_id", "access_count")) == before
    context = alice.post("/api/v1/context/", {"query": "kumquat", "min_cosine": 3}, format="json")
    assert context.status_code == 400 and error_code(context) == "validation_error"
