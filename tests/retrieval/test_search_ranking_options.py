"""POST /search/'s optional ranking: the memory profile (reinforcement, the lifecycle's decayed
relevance), coverage of conversations, feedback, and the access counts every search records."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from memoryhub.plumbing import counters
from memoryhub.searchable import Searchable
from memoryhub.signals import memory_saved
from retrieval.models import Chunk, ChunkAccess
from retrieval.search import weights
from tests.base import search_texts
from tests.retrieval.conftest import search


def test_memory_profile_reinforces_returned_results(alice, index) -> None:
    index(alice, "s1", {"role": "user", "content": "grape juice", "importance": 0.9})
    index(alice, "s2", {"role": "user", "content": "grape jelly", "importance": 0.1})
    results = search(alice, query="grape", profile="memory").json()["results"]
    assert results[0]["text"] == "grape juice"  # importance breaks the tie
    assert set(Chunk.objects.with_access().values_list("access_count", flat=True)) == {1}
    search(alice, query="grape", profile="memory", top_k=1)
    assert Chunk.objects.with_access().get(text="grape juice").access_count == 2
    assert Chunk.objects.with_access().get(text="grape jelly").accessed_at is not None
    # every profile counts (docs/ranking.md#reinforcement); the memory profile ranks with it
    search(alice, query="grape")
    assert Chunk.objects.with_access().get(text="grape juice").access_count == 3


def _three_sessions(index, alice) -> None:  # type: ignore[no-untyped-def]
    index(
        alice,
        "many",
        {"role": "user", "content": "heron nest by the lake"},
        {"role": "user", "content": "a heron again"},
        {"role": "user", "content": "heron heron chicks"},
    )
    index(alice, "lone", {"role": "user", "content": "one heron flew past"})


def test_memory_profile_ranks_by_the_lifecycles_decayed_relevance(alice, cast) -> None:
    from datetime import timedelta

    from retrieval.decay import relevance_at

    month_ago = timezone.now() - timedelta(days=30)
    for source_id, tier in (("f-conv", "conversation"), ("f-acct", "account")):
        memory_saved.send(
            sender=None,
            kind="fact",
            searchable=Searchable(
                kind="fact",
                source_id=source_id,
                tenant_id=cast.alice_tenant.pk,
                text=f"quince {tier} memory",
                created_at=month_ago,
                tier=tier,
                importance=0.8,
            ),
        )
    plain = search(alice, query="quince").json()["results"]
    # equal on both signals: only decay can separate them
    assert plain[0]["scores"] == plain[1]["scores"]
    ChunkAccess.objects.all().delete()  # that search was a use of both: undo it
    results = search(alice, query="quince", profile="memory").json()["results"]
    # A month old: the account tier (0.999/h) keeps ~0.49 of its relevance, a conversation (0.99/h)
    # ~0.
    assert [r["text"] for r in results] == ["quince account memory", "quince conversation memory"]
    chunks = {c.tier: c for c in Chunk.objects.all()}
    expected = {tier: relevance_at(0.8, tier, None, month_ago, 0) for tier in chunks}
    gap = results[0]["score"] - results[1]["score"]
    # SQL agrees with Python. Neither is embedded yet: the relevance term weighs 0.4 of the 0.7
    # that the parts they have (text, relevance) weigh (fusion.pending_weights).
    assert abs(gap - 0.4 / 0.7 * (expected["account"] - expected["conversation"])) < 1e-3
    # Those were accesses: both were returned, so both count one use now and decay from now on.
    assert {c.access_count for c in Chunk.objects.with_access()} == {1}
    assert all(c.accessed_at > month_ago for c in Chunk.objects.with_access())
    # A memory used recently decays from its last use, not from when it was written.
    ChunkAccess.objects.filter(chunk__tier="account").update(accessed_at=month_ago)
    results = search(alice, query="quince", profile="memory").json()["results"]
    assert results[0]["text"] == "quince conversation memory"


def test_coverage_gives_the_last_places_to_conversations_not_yet_listed(
    alice, index, settings, monkeypatch
) -> None:
    _three_sessions(index, alice)
    monkeypatch.setattr("retrieval.search.weights.COVERAGE", 1.0)
    plain = [r["session"] for r in search(alice, query="heron", top_k=2).json()["results"]]
    assert plain == ["many", "many"]
    # the default: round(0.6 * 2) = 1 place by rank
    monkeypatch.setattr("retrieval.search.weights.COVERAGE", 0.6)
    # any result of an unlisted conversation moves up
    monkeypatch.setattr(weights, "COVERAGE_FLOOR", 0.0)
    covered = search(alice, query="heron", top_k=2).json()["results"]
    assert [r["session"] for r in covered] == ["many", "lone"]
    # The default floor: "lone" scores under 0.8 of the second "many" result, so it keeps its rank.
    monkeypatch.setattr(weights, "COVERAGE_FLOOR", 0.8)
    scores = {r["session"]: r["score"] for r in reversed(covered)}
    floored = [r["session"] for r in search(alice, query="heron", top_k=2).json()["results"]]
    assert scores["lone"] < 0.8 * min(
        r["score"] for r in search(alice, query="heron", top_k=2).json()["results"]
    )
    assert floored == ["many", "many"]
    # Text mode is a plain ranking: coverage (like MMR) is a hybrid re-ranking.
    text = search(alice, query="heron", top_k=2, mode="text").json()["results"]
    assert [r["session"] for r in text] == ["many", "many"]


def test_coverage_prefers_the_conversation_whose_messages_say_more_of_the_query(
    alice, index, settings, monkeypatch
) -> None:
    monkeypatch.setattr(weights, "COVERAGE_FLOOR", 0.0)
    # of two places, the second by coverage
    monkeypatch.setattr("retrieval.search.weights.COVERAGE", 0.5)
    index(alice, "head", {"role": "user", "content": "heron lagoon at dawn"})
    # "single" has three matches of one query word; "spread" one match of each word, apart.
    index(
        alice,
        "single",
        *({"role": "user", "content": f"heron {w}"} for w in ("nest", "chicks", "feathers")),
    )
    index(
        alice,
        "spread",
        {"role": "user", "content": "lagoon walk today"},
        {"role": "user", "content": "a heron there too"},
    )

    def second(weight: float) -> dict[str, Any]:
        monkeypatch.setattr(weights, "COVERAGE_WORDS", weight)
        results = search(alice, query="heron lagoon", top_k=2, explain=True).json()["results"]
        assert results[0]["session"] == "head"
        return results[1]

    assert second(0.0)["session"] == "single"  # by the scores' evidence alone
    words = second(1.0)
    assert words["session"] == "spread"  # it says both words, in two messages
    steps = {step["step"]: step for step in words["explain"]["steps"]}
    assert steps["coverage"]["rank_after"] == 2
    assert "the query words its messages say" in steps["coverage"]["detail"]


def test_the_terms_a_candidate_says_are_its_own_words_or_its_whole_message(
    alice, index, settings, monkeypatch
) -> None:
    from retrieval.search import engine

    pools, terms = [], []
    fetch = engine.fetch_candidates

    def keep(sources: Any, model: str, tq: Any, **kwargs: Any) -> Any:
        terms.append([literal.strip("'") for literal, _ in tq.terms])
        pools.append(fetch(sources, model, tq, **kwargs))
        return pools[-1]

    monkeypatch.setattr(engine, "fetch_candidates", keep)
    # three chunks or more
    long = "heron " + " ".join(["filler words about nothing much"] * 40) + " lagoon"
    index(
        alice,
        "s",
        {"role": "user", "content": "a lagoon in the morning"},
        {"role": "user", "content": "then the kestrel came"},
        {"role": "user", "content": long},
    )
    search(alice, query="heron lagoon kestrel", top_k=10, mode="hybrid")
    said: dict[int, int] = {}
    for pool in pools:
        said.update(pool.said)
    assert sorted(terms[0]) == ["heron", "kestrel", "lagoon"]
    bits = {term: 1 << i for i, term in enumerate(terms[0])}  # bit i: the text query's term i
    by_text = {}
    for chunk in Chunk.objects.filter(kind="event"):
        by_text.setdefault(chunk.sequence_start, []).append(said.get(chunk.pk, 0))
    assert by_text[1] == [bits["lagoon"]]
    # "kestrel" is in the context of the long message's chunks (two messages back), not in their
    # words.
    assert by_text[2] == [bits["kestrel"]]
    # its whole message's
    assert len(by_text[3]) >= 3 and set(by_text[3]) == {bits["heron"] | bits["lagoon"]}


def test_feedback_ranks_with_the_moved_query_but_shows_the_plain_cosine(
    alice, index, settings, monkeypatch
) -> None:
    from retrieval.embedders import get_embedder

    monkeypatch.setattr("retrieval.search.weights.COVERAGE", 1.0)
    monkeypatch.setattr(weights, "FEEDBACK_DOCS", 1)
    # One message per conversation, so no message is embedded with another's words as context.
    for hour, (session, text) in enumerate(
        (
            ("a", "otter otter river"),
            ("b", "otter cafe"),
            ("c", "river stones river mud"),
            ("d", "pizza dough"),
        )
    ):
        # Written an hour apart: "the newer first" must not hang on the clock's resolution.
        index(
            alice,
            session,
            {"role": "user", "content": text, "created_at": f"2026-01-01T{10 + hour:02d}:00:00Z"},
        )
    query = get_embedder().embed(["otter"])[0]
    monkeypatch.setattr(weights, "FEEDBACK", 0.0)
    plain = search(alice, query_embedding=query, top_k=4, mode="hybrid").json()["results"]
    monkeypatch.setattr(weights, "FEEDBACK", 2.0)
    fed = search(alice, query_embedding=query, top_k=4, mode="hybrid").json()["results"]
    # Neither "river…" nor "pizza…" shares a word with the query: equal scores, the newer first.
    assert [r["session"] for r in plain][2:] == ["d", "c"]
    # Moved toward its best result ("otter otter river"), the query now prefers the river message.
    assert [r["session"] for r in fed][2:] == ["c", "d"]
    # The vector score shown is the cosine to the query itself, with or without feedback.
    assert {r["text"]: r["scores"]["vector"] for r in fed} == {
        r["text"]: r["scores"]["vector"] for r in plain
    }


def test_cover_conversations_is_a_reordering_of_the_ranking() -> None:
    from retrieval.search import Candidate, cover_conversations

    def cand(pk: int, session: int | None) -> Candidate:
        return Candidate(pk, session, f"t{pk}", False, 0.0, None, 0.5)

    ranked = [cand(1, 1), cand(2, 1), cand(3, 1), cand(4, None), cand(5, 2), cand(6, 2), cand(7, 3)]
    assert [c.pk for c in cover_conversations(ranked, 5, 1.0)] == [1, 2, 3, 4, 5]
    # Two by rank, then the best of each conversation not yet listed, then by rank again (a
    # memory outside any conversation, 4, is not moved up).
    assert [c.pk for c in cover_conversations(ranked, 5, 0.4)] == [1, 2, 5, 7, 3]
    assert [c.pk for c in cover_conversations(ranked, 6, 0.4)] == [1, 2, 5, 7, 3, 4]
    assert [c.pk for c in cover_conversations(ranked[:3], 5, 0.4)] == [1, 2, 3]


def _every() -> list[Any]:
    from retrieval.search import Candidate

    def cand(pk: int, session: int | None) -> Candidate:
        return Candidate(pk, session, f"t{pk}", False, 0.0, None, 0.5)

    return [cand(1, 1), cand(2, 2), cand(3, 3), cand(4, 1), cand(5, 4), cand(6, 5), cand(7, 1)]


def test_the_relevance_floor_takes_out_what_coverage_chose_over_every_candidate() -> None:
    """Coverage picks among every candidate as with no floor; the floor then removes what is not
    about the query and its places go to admitted candidates by rank (2 is not about the query:
    coverage's other choices stay, and the best admitted candidate left, 4, takes its place)."""
    from retrieval.search import cover_conversations
    from retrieval.search.engine import admitted_first

    every = _every()
    admitted = [c for c in every if c.pk != 2]
    covered = cover_conversations(every, 4, 0.5)
    assert [c.pk for c in covered] == [1, 2, 3, 5]
    assert [c.pk for c in admitted_first(covered, every, admitted, 4)] == [1, 3, 5, 4]
    assert [c.pk for c in admitted_first(covered, every, admitted[:2], 4)] == [1, 3]


def _floor() -> Any:
    from retrieval.search.relevance import Floor

    return Floor(0.0, 0.0, 0.0, {}, {}, [])


def test_the_relevance_floor_leaves_coverage_its_page_when_the_admitted_fill_it() -> None:
    """Six of seven candidates are about the query, more than the four places: the floor has no
    memory to keep out for lack of relevant ones, so coverage's page stands, 2 included, rather
    than 2 giving its place to 4, lower in fusion's order (a conversation searched in its own
    channel lost answers that way), and context injects 2 as search lists it."""
    from retrieval.search import cover_conversations
    from retrieval.search.engine import admitted_first

    every = _every()
    covered = cover_conversations(every, 4, 0.5)
    floor = _floor()
    assert not floor.admits(2, 0.0, 0.0)
    for admitted in ([c for c in every if c.pk != 2], [c for c in every if c.pk in {1, 3, 4, 5}]):
        floored = admitted_first(covered, every, admitted, 4)
        assert [c.pk for c in floor.listed(covered, floored)] == [1, 2, 3, 5]
    assert floor.admits(2, 0.0, 0.0)


def test_the_relevance_floor_lists_only_the_admitted_when_they_are_too_few() -> None:
    """Three admitted for four places: the floor's list, and nothing else counts as admitted."""
    from retrieval.search import cover_conversations
    from retrieval.search.engine import admitted_first

    every = _every()
    covered = cover_conversations(every, 4, 0.5)
    floor = _floor()
    floored = admitted_first(covered, every, [c for c in every if c.pk in {1, 3, 4}], 4)
    assert [c.pk for c in floor.listed(covered, floored)] == [1, 3, 4]
    assert not floor.admits(2, 0.0, 0.0) and not floor.admits(5, 0.0, 0.0)


def test_every_search_counts_an_access_of_what_it_returned(
    alice, index, settings, monkeypatch
) -> None:
    from retrieval.models import Chunk
    from retrieval.search.sql import accesses

    index(alice, "s", {"role": "user", "content": "the red kite nests here"})
    index(alice, "t", {"role": "user", "content": "unrelated"})
    assert search_texts(alice, query="red kite", mode="text") == ["the red kite nests here"]
    kite = Chunk.objects.with_access().get(text="the red kite nests here")
    assert kite.access_count == 1 and kite.accessed_at is not None
    assert Chunk.objects.with_access().get(text="unrelated").access_count == 0
    # Batched: with an interval, searches only add in memory until the batch is written.
    monkeypatch.setattr(counters, "FLUSH_SECONDS", 3600)
    search_texts(alice, query="red kite", mode="text")
    search_texts(alice, query="red kite", mode="text")
    assert Chunk.objects.with_access().get(pk=kite.pk).access_count == 1
    accesses.flush()
    assert Chunk.objects.with_access().get(pk=kite.pk).access_count == 3
