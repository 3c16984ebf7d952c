"""POST /search/: modes, fusion, bounds, bad input, filters, and long messages (one place at their
best chunk, scored as a whole). Which memories a search reaches is test_search_scope.py, how many
statements it takes test_search_statements.py, the optional ranking settings
test_search_ranking_options.py."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from memoryhub.searchable import Searchable
from memoryhub.signals import memory_saved
from retrieval.models import Chunk
from retrieval.search import weights
from tests.base import error_code, make_client, make_key, search_texts
from tests.retrieval.conftest import search, texts


def test_result_shape(alice, garden) -> None:
    response = search(alice, query="tomatoes garden")
    assert response.status_code == 200
    first = response.json()["results"][0]
    assert {
        "chunk_id",
        "text",
        "score",
        "session",
        "sequence_start",
        "sequence_end",
        "kind",
        "metadata",
        "created_at",
    } <= set(first)
    assert first["session"] == "garden" and first["kind"] == "event"
    assert first["text"] == "I planted tomatoes and basil in the garden."
    assert first["metadata"]["event_id"]


@pytest.mark.parametrize("mode", ["text", "vector", "hybrid"])
def test_each_mode_finds_the_matching_event(alice, garden, mode: str) -> None:
    assert (
        texts(search(alice, query="quarterly report", mode=mode))[0]
        == "The quarterly report is due on Friday."
    )


def test_text_mode_returns_only_matching_chunks_ranked_by_rarity(alice, garden) -> None:
    found = texts(search(alice, query="tomatoes basil", mode="text"))
    # "basil" is rarer than "tomatoes": the chunk with both comes first, the other after it; the
    # reply that follows a tomato message matches through its context only, at a discount, last.
    assert found == [
        "I planted tomatoes and basil in the garden.",
        "Tomatoes need plenty of sun and water.",
        "My sister Ana visits every Sunday.",
    ]


def test_context_only_matches_can_be_switched_off(alice, garden, settings, monkeypatch) -> None:
    monkeypatch.setattr(weights, "TEXT_CONTEXT_WEIGHT", 0.0)
    found = texts(search(alice, query="tomatoes basil", mode="text"))
    assert found == [
        "I planted tomatoes and basil in the garden.",
        "Tomatoes need plenty of sun and water.",
    ]


def test_text_mode_matches_natural_language_questions_word_by_word(alice, garden) -> None:
    assert texts(search(alice, query="When does my sister come over?", mode="text")) == [
        "My sister Ana visits every Sunday."
    ]


@pytest.mark.parametrize(
    "query", ['"unclosed', "a & | ! (", "))) OR -", "'; DROP TABLE x; --", ":*", "\\"]
)
def test_query_text_that_is_not_tsquery_syntax_never_errors(alice, garden, query: str) -> None:
    for mode in ("text", "hybrid", "exact"):
        assert search(alice, query=query, mode=mode).status_code == 200


def test_websearch_phrases_and_exclusions_are_honoured(alice, garden) -> None:
    assert texts(search(alice, query="tomatoes -basil", mode="text")) == [
        "Tomatoes need plenty of sun and water."
    ]
    assert texts(search(alice, query='"plenty of sun"', mode="text")) == [
        "Tomatoes need plenty of sun and water."
    ]


def test_exact_mode_finds_substrings(alice, garden) -> None:
    assert texts(search(alice, query="report dead", mode="exact")) == [
        'Called calendar with {"event": "report deadline"}'
    ]
    assert texts(search(alice, query="100%", mode="exact")) == []


def test_weighted_fusion_blends_both_lists(alice, garden) -> None:
    results = search(alice, query="tomatoes sun", fusion="weighted").json()["results"]
    assert results[0]["text"] == "Tomatoes need plenty of sun and water."
    assert results[0]["score"] == pytest.approx(1.0)  # top of both lists after min-max
    assert all(0.0 <= r["score"] <= 1.0 for r in results)


def test_weights_change_the_order(alice, index) -> None:
    from retrieval.embedders import get_embedder

    index(alice, "s1", {"role": "user", "content": "zebra stripes"})
    index(alice, "s2", {"role": "user", "content": "okapi forest"})
    # Text asks for the okapi, the vector points at the zebra: the weights decide.
    body = {
        "query": "okapi",
        "query_embedding": get_embedder().embed(["zebra"])[0],
        "mode": "hybrid",
    }
    assert texts(search(alice, **body, vector_weight=0.0, text_weight=1.0))[0] == "okapi forest"
    assert texts(search(alice, **body, vector_weight=1.0, text_weight=0.0))[0] == "zebra stripes"


def test_rrf_fusion_scores_by_rank(alice, garden) -> None:
    results = search(alice, query="tomatoes sun", fusion="rrf").json()["results"]
    assert results[0]["text"] == "Tomatoes need plenty of sun and water."
    assert results[0]["score"] == pytest.approx(2 / 61, abs=1e-6)  # first in both lists


def test_ties_are_broken_by_recency(alice, index) -> None:
    index(
        alice, "s", {"role": "user", "content": "apple pie", "created_at": "2024-01-01T00:00:00Z"}
    )
    index(
        alice, "s", {"role": "user", "content": "apple tart", "created_at": "2024-06-01T00:00:00Z"}
    )
    assert texts(search(alice, query="apple", mode="text")) == ["apple tart", "apple pie"]


def test_a_word_is_findable_right_after_it_is_written(alice, index) -> None:
    # Document frequencies are cached for a minute; a word nobody had written must not stay unknown.
    index(alice, "s", {"role": "user", "content": "plain words"})
    assert texts(search(alice, query="zanzibar", mode="text")) == []
    index(alice, "s", {"role": "user", "content": "a trip to zanzibar"})
    assert texts(search(alice, query="zanzibar", mode="text")) == ["a trip to zanzibar"]


def test_precomputed_query_embedding(alice, garden) -> None:
    from retrieval.embedders import get_embedder

    vector = get_embedder().embed(["quarterly report"])[0]
    found = texts(search(alice, query_embedding=vector, mode="vector"))
    assert found[0] == "The quarterly report is due on Friday."


def test_near_identical_results_are_deduplicated(alice, index) -> None:
    index(alice, "a", {"role": "user", "content": "the server restarts at midnight"})
    index(alice, "b", {"role": "user", "content": "The server restarts at midnight!"})
    assert len(texts(search(alice, query="server restarts midnight"))) == 1


def test_top_k_limits_results_and_is_bounded(alice, index) -> None:
    index(
        alice,
        "s",
        *[{"role": "user", "content": f"note number {i} about llamas"} for i in range(15)],
    )
    assert len(texts(search(alice, query="llamas", top_k=3))) == 3
    assert len(texts(search(alice, query="llamas"))) == 10
    for bad in (0, 101, -1, "many"):
        response = search(alice, query="llamas", top_k=bad)
        assert response.status_code == 400
        fields = response.json()["error"]["details"]["fields"]
        assert fields["top_k"][0]["code"] in {"min_value", "max_value", "invalid"}, fields


@pytest.mark.parametrize(
    "embedding,code",
    [
        ([0.1] * 383, "min_length"),
        ([0.1] * 385, "max_length"),
        (["x", *[0.1] * 383], "invalid"),
        ([], "min_length"),
    ],
)
def test_query_embedding_of_the_wrong_dimension_is_a_400(
    alice, garden, embedding: list[Any], code: str
) -> None:
    response = search(alice, query_embedding=embedding)
    assert response.status_code == 400
    assert error_code(response) == "validation_error"
    fields = response.json()["error"]["details"]["fields"]
    assert [f[0]["code"] for name, f in fields.items() if name.startswith("query_embedding")] == [
        code
    ], fields


@pytest.mark.parametrize(
    "body,code",
    [
        ({}, "query_required"),
        ({"query": "   "}, "query_required"),
        ({"query": "x", "mode": "psychic"}, "invalid_choice"),
        ({"query": "x", "fusion": "max"}, "invalid_choice"),
        ({"query": "x", "bogus": 1}, "unknown_field"),
        ({"query_embedding": [0.1, 0.2]}, "invalid"),
        ({"query": "x", "vector_weight": 2}, "invalid"),
        (
            {"query": "x", "since": "2024-02-01T00:00:00Z", "until": "2024-01-01T00:00:00Z"},
            "invalid_time_range",
        ),
        ({"query": "x", "roles": ["robot"]}, "invalid"),
        ({"query": "x", "scope": "conversation"}, "invalid_scope"),
    ],
)
def test_bad_input_is_a_clear_400(alice, garden, body: dict[str, Any], code: str) -> None:
    response = search(alice, **body)
    assert response.status_code == 400, response.content
    if code not in ("invalid", "invalid_choice"):
        assert error_code(response) == code
    else:
        error_code(response)


def test_unknown_session_channel_workspace_are_404(alice, garden) -> None:
    assert error_code(search(alice, query="x", session="nope")) == "session_not_found"
    assert error_code(search(alice, query="x", channel="nope")) == "channel_not_found"
    assert error_code(search(alice, query="x", workspace="nope")) == "workspace_not_found"


def test_needs_a_key(anon) -> None:
    assert anon.post("/api/v1/search/", {"query": "x"}, format="json").status_code == 401


def test_a_read_only_key_may_search(cast, garden) -> None:
    client = make_client(make_key(cast.alice_tenant, ("read",)))
    assert texts(search(client, query="tomatoes"))


# --- filters -----------------------------------------------------------------------------------


def test_session_filter(alice, garden) -> None:
    found = texts(
        search(alice, query="tomatoes report sister", session="work", scope="conversation")
    )
    assert found and all("report" in t for t in found)


def test_role_filter(alice, garden) -> None:
    found = texts(search(alice, query="tomatoes", roles=["assistant"]))
    assert found == ["Tomatoes need plenty of sun and water."]


def test_tags_must_all_be_present(alice, index) -> None:
    index(
        alice,
        "s",
        {"role": "user", "content": "alpha memo", "metadata": {"tags": ["a", "b"]}},
        {"role": "user", "content": "alpha note", "metadata": {"tags": ["a"]}},
    )
    assert texts(search(alice, query="alpha", tags=["a", "B"])) == ["alpha memo"]
    assert set(texts(search(alice, query="alpha", tags=["a"]))) == {"alpha memo", "alpha note"}
    assert texts(search(alice, query="alpha", tags=["c"])) == []


def test_time_range_filter(alice, index) -> None:
    index(
        alice,
        "s",
        {"role": "user", "content": "old bicycle", "created_at": "2023-01-01T00:00:00Z"},
        {"role": "user", "content": "new bicycle", "created_at": "2024-06-01T00:00:00Z"},
    )
    assert texts(search(alice, query="bicycle", since="2024-01-01T00:00:00Z")) == ["new bicycle"]
    assert texts(search(alice, query="bicycle", until="2024-01-01T00:00:00Z")) == ["old bicycle"]


def test_agent_filter(alice, index) -> None:
    alice.post("/api/v1/sessions/", {"id": "planner", "agent": "planner-bot"}, format="json")
    index(alice, "planner", {"role": "user", "content": "paint the fence"})
    index(alice, "other", {"role": "user", "content": "paint the door"})
    assert texts(search(alice, query="paint", agent="planner-bot")) == ["paint the fence"]


def test_user_filter(alice, index) -> None:
    alice.post("/api/v1/sessions/", {"id": "u1", "user_id": "user-1"}, format="json")
    alice.post("/api/v1/sessions/", {"id": "u2", "user_id": "user-2"}, format="json")
    index(alice, "u1", {"role": "user", "content": "walnut for one"})
    index(alice, "u2", {"role": "user", "content": "walnut for two"})
    assert texts(search(alice, query="walnut", user_id="user-2")) == ["walnut for two"]


def test_kind_filter(alice, garden, cast) -> None:
    memory_saved.send(
        sender=None,
        kind="note",
        searchable=Searchable(
            kind="note",
            source_id="note-9",
            tenant_id=cast.alice_tenant.pk,
            text="tomatoes are fruit",
            created_at=timezone.now(),
            tier="account",
        ),
    )
    assert texts(search(alice, query="tomatoes", kinds=["note"])) == ["tomatoes are fruit"]


def test_every_result_says_its_kind(alice, index, cast) -> None:
    t = cast.alice_tenant.pk
    for kind in ("note", "fact", "summary"):
        memory_saved.send(
            sender=None,
            kind=kind,
            searchable=Searchable(
                kind=kind,
                source_id=f"{kind}-1",
                tenant_id=t,
                text=f"lychee {kind}",
                created_at=timezone.now(),
                tier="account",
            ),
        )
    assert (
        alice.post(
            "/api/v1/documents/",
            {"source_uri": "file:///l.txt", "text": "lychee document"},
            format="json",
        ).status_code
        == 201
    )
    index(alice, "s", {"role": "user", "content": "lychee event"})
    found = {
        r["text"]: r["kind"] for r in search(alice, query="lychee", top_k=20).json()["results"]
    }
    assert found == {f"lychee {k}": k for k in ("note", "fact", "summary", "document", "event")}
    only = search(alice, query="lychee", kinds=["fact", "document"]).json()["results"]
    assert sorted(r["kind"] for r in only) == ["document", "fact"]


def test_channel_and_workspace_filters(alice, index) -> None:
    alice.post("/api/v1/sessions/", {"id": "c1", "channel": "cooking"}, format="json")
    alice.post("/api/v1/sessions/", {"id": "w1", "workspace": "proj"}, format="json")
    index(alice, "c1", {"role": "user", "content": "pasta recipe"})
    index(alice, "w1", {"role": "user", "content": "pasta budget"})
    index(alice, "plain", {"role": "user", "content": "pasta party"})
    assert texts(search(alice, query="pasta", channel="cooking")) == ["pasta recipe"]
    assert texts(search(alice, query="pasta", workspace="proj")) == ["pasta budget"]
    assert len(texts(search(alice, query="pasta"))) == 3


def test_full_text_finds_the_parts_of_paths_emails_and_urls(alice, index) -> None:
    index(
        alice,
        "ops",
        {"role": "user", "content": "Moved the secret to kv/oldpathzeta yesterday."},
        {
            "role": "user",
            "content": "Write to ops@zetacorp.io about https://x.io/deploy and my_build_flag.",
        },
    )
    for query, expected in (
        ("oldpathzeta", "kv/oldpathzeta"),
        ("zetacorp", "ops@zetacorp.io"),
        ("deploy", "https://x.io/deploy"),
        ("build flag", "my_build_flag"),
        ("kv/oldpathzeta", "kv/oldpathzeta"),
        ("ops@zetacorp.io", "ops@zetacorp.io"),
    ):
        texts = search_texts(alice, query=query, mode="text")
        assert any(expected in t for t in texts), (query, texts)


@pytest.mark.parametrize("mode", ["hybrid", "text", "vector"])
def test_a_long_message_takes_one_place_at_its_best_chunk(
    alice, index, settings, mode, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    topics = [
        "radiators",
        "thermostat",
        "chimney",
        "gutters",
        "insulation",
        "fuse box",
        "water heater",
        "roof tiles",
    ]
    long_answer = " ".join(
        f"Before winter, bleed boiler pump valve {i} and then check the {topic} in room {i}: "
        f"{' '.join(f'{topic[:3]}{i}x{j}' for j in range(8))}."
        for i, topic in enumerate(topics * 2)
    )
    index(
        alice,
        "s",
        {"role": "assistant", "content": long_answer},
        {"role": "user", "content": "The boiler pump valve was bled last winter by Tom."},
    )
    assert Chunk.objects.filter(role="assistant").count() >= 3  # the answer is several chunks
    body = search(alice, query="boiler pump valve bled winter", mode=mode, top_k=5).json()
    sequences = [r["sequence_start"] for r in body["results"]]
    assert sorted(sequences) == [1, 2]  # each message once
    monkeypatch.setattr(weights, "ONE_PER_MESSAGE", False)
    every = search(alice, query="boiler pump valve bled winter", mode=mode, top_k=5).json()[
        "results"
    ]
    assert [r["sequence_start"] for r in every].count(1) >= 2


def test_full_text_scores_a_long_message_as_a_whole(alice, index, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The two words are said in different chunks of one long answer: scored as the whole message
    it says both in fewer words than the short message that also says both, and comes first;
    scored chunk by chunk, each of its chunks says one word, and the short message comes first."""
    filler = "It is what it is, and that is all there is to it. " * 14  # stop words only: no length
    long_answer = f"Marmalade. {filler}{filler}Zanzibar."
    index(
        alice,
        "s",
        {"role": "assistant", "content": long_answer},
        {"role": "user", "content": "Marmalade, zanzibar and a shelf."},
    )
    assert Chunk.objects.filter(role="assistant").count() >= 2  # the words are in different chunks
    first = search(alice, query="marmalade zanzibar", mode="text").json()["results"][0]
    assert first["sequence_start"] == 1
    assert "Marmalade" in first["text"] or "Zanzibar" in first["text"]  # a chunk that says a word
    monkeypatch.setattr("retrieval.search.sql.TEXT_PER_MESSAGE", False)
    first = search(alice, query="marmalade zanzibar", mode="text").json()["results"][0]
    assert first["text"] == "Marmalade, zanzibar and a shelf."
    # Siblings are looked up only for a message of several chunks (message_chunks): counted as
    # one chunk each, the long answer's chunks are scored alone again.
    monkeypatch.setattr("retrieval.search.sql.TEXT_PER_MESSAGE", True)
    Chunk.objects.update(message_chunks=1)
    first = search(alice, query="marmalade zanzibar", mode="text").json()["results"][0]
    assert first["text"] == "Marmalade, zanzibar and a shelf."


def test_a_chunk_beyond_the_message_chunks_read_still_counts_its_own_words(
    alice,
    index,
    monkeypatch,  # type: ignore[no-untyped-def]
    settings,
) -> None:
    """Whole-message scoring reads at most MESSAGE_CHUNKS chunks of a message; a chunk beyond them
    still scores on the words it says itself (not only on the first chunks' words)."""
    from retrieval.search import textquery

    monkeypatch.setattr(textquery, "MESSAGE_CHUNKS", 1)
    # no discounted match through any weight to hide it
    monkeypatch.setattr(weights, "TEXT_CONTEXT_WEIGHT", 0.0)
    filler = "It is what it is, and that is all there is to it. " * 14
    index(
        alice,
        "s",
        {"role": "assistant", "content": f"Marmalade. {filler}{filler}Zanzibar."},
        {"role": "user", "content": "Nothing about islands here, only jam."},
    )
    first = search(alice, query="zanzibar", mode="text").json()["results"][0]
    assert "Zanzibar" in first["text"]
    # its own word, scored in full (not the 0.001 tie-break alone)
    assert first["scores"]["text"] > 0.1
