"""POST /search/: modes, fusion, filters, scope widening, bounds, tenant isolation, query counts."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from accounts.models import Workspace
from memoryhub.plumbing import counters
from memoryhub.searchable import Searchable
from memoryhub.signals import memory_saved
from retrieval.models import Chunk, ChunkAccess
from retrieval.search import hybrid_search, weights
from tests.base import error_code, make_client, make_key, search_texts
from tests.retrieval.conftest import search


def texts(response: Any) -> list[str]:
    assert response.status_code == 200, response.content
    return [r["text"] for r in response.json()["results"]]


@pytest.fixture
def garden(alice, index) -> None:
    index(alice, "garden", {"role": "user", "content": "I planted tomatoes and basil in the garden."},
          {"role": "assistant", "content": "Tomatoes need plenty of sun and water."},
          {"role": "user", "content": "My sister Ana visits every Sunday.", "metadata": {"tags": ["family"]}})
    index(alice, "work", {"role": "user", "content": "The quarterly report is due on Friday."})
    index(alice, "tools", {"role": "tool", "content": "", "tool_name": "calendar",
                           "tool_args": {"event": "report deadline"}})


def test_result_shape(alice, garden) -> None:
    response = search(alice, query="tomatoes garden")
    assert response.status_code == 200
    first = response.json()["results"][0]
    assert {"chunk_id", "text", "score", "session", "sequence_start", "sequence_end", "kind", "metadata",
            "created_at"} <= set(first)
    assert first["session"] == "garden" and first["kind"] == "event"
    assert first["text"] == "I planted tomatoes and basil in the garden."
    assert first["metadata"]["event_id"]


@pytest.mark.parametrize("mode", ["text", "vector", "hybrid"])
def test_each_mode_finds_the_matching_event(alice, garden, mode: str) -> None:
    assert texts(search(alice, query="quarterly report", mode=mode))[0] == "The quarterly report is due on Friday."


def test_text_mode_returns_only_matching_chunks_ranked_by_rarity(alice, garden) -> None:
    found = texts(search(alice, query="tomatoes basil", mode="text"))
    # "basil" is rarer than "tomatoes": the chunk with both comes first, the other after it; the
    # reply that follows a tomato message matches through its context only, at a discount, last.
    assert found == ["I planted tomatoes and basil in the garden.", "Tomatoes need plenty of sun and water.",
                     "My sister Ana visits every Sunday."]


def test_context_only_matches_can_be_switched_off(alice, garden, settings, monkeypatch) -> None:
    monkeypatch.setattr(weights, "TEXT_CONTEXT_WEIGHT", 0.0)
    found = texts(search(alice, query="tomatoes basil", mode="text"))
    assert found == ["I planted tomatoes and basil in the garden.", "Tomatoes need plenty of sun and water."]


def test_text_mode_matches_natural_language_questions_word_by_word(alice, garden) -> None:
    assert texts(search(alice, query="When does my sister come over?", mode="text")) == [
        "My sister Ana visits every Sunday."]


@pytest.mark.parametrize("query", ['"unclosed', "a & | ! (", "))) OR -", "'; DROP TABLE x; --", ":*", "\\"])
def test_query_text_that_is_not_tsquery_syntax_never_errors(alice, garden, query: str) -> None:
    for mode in ("text", "hybrid", "exact"):
        assert search(alice, query=query, mode=mode).status_code == 200


def test_websearch_phrases_and_exclusions_are_honoured(alice, garden) -> None:
    assert texts(search(alice, query="tomatoes -basil", mode="text")) == ["Tomatoes need plenty of sun and water."]
    assert texts(search(alice, query='"plenty of sun"', mode="text")) == ["Tomatoes need plenty of sun and water."]


def test_exact_mode_finds_substrings(alice, garden) -> None:
    assert texts(search(alice, query="report dead", mode="exact")) == [
        'Called calendar with {"event": "report deadline"}']
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
    body = {"query": "okapi", "query_embedding": get_embedder().embed(["zebra"])[0], "mode": "hybrid"}
    assert texts(search(alice, **body, vector_weight=0.0, text_weight=1.0))[0] == "okapi forest"
    assert texts(search(alice, **body, vector_weight=1.0, text_weight=0.0))[0] == "zebra stripes"


def test_rrf_fusion_scores_by_rank(alice, garden) -> None:
    results = search(alice, query="tomatoes sun", fusion="rrf").json()["results"]
    assert results[0]["text"] == "Tomatoes need plenty of sun and water."
    assert results[0]["score"] == pytest.approx(2 / 61, abs=1e-6)  # first in both lists


def test_ties_are_broken_by_recency(alice, index) -> None:
    index(alice, "s", {"role": "user", "content": "apple pie", "created_at": "2024-01-01T00:00:00Z"})
    index(alice, "s", {"role": "user", "content": "apple tart", "created_at": "2024-06-01T00:00:00Z"})
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
    index(alice, "s", *[{"role": "user", "content": f"note number {i} about llamas"} for i in range(15)])
    assert len(texts(search(alice, query="llamas", top_k=3))) == 3
    assert len(texts(search(alice, query="llamas"))) == 10
    for bad in (0, 101, -1, "many"):
        response = search(alice, query="llamas", top_k=bad)
        assert response.status_code == 400
        fields = response.json()["error"]["details"]["fields"]
        assert fields["top_k"][0]["code"] in {"min_value", "max_value", "invalid"}, fields


@pytest.mark.parametrize("embedding,code", [
    ([0.1] * 383, "min_length"), ([0.1] * 385, "max_length"), (["x", *[0.1] * 383], "invalid"),
    ([], "min_length"),
])
def test_query_embedding_of_the_wrong_dimension_is_a_400(alice, garden, embedding: list[Any], code: str) -> None:
    response = search(alice, query_embedding=embedding)
    assert response.status_code == 400
    assert error_code(response) == "validation_error"
    fields = response.json()["error"]["details"]["fields"]
    assert [f[0]["code"] for name, f in fields.items() if name.startswith("query_embedding")] == [code], fields


@pytest.mark.parametrize("body,code", [
    ({}, "query_required"),
    ({"query": "   "}, "query_required"),
    ({"query": "x", "mode": "psychic"}, "invalid_choice"),
    ({"query": "x", "fusion": "max"}, "invalid_choice"),
    ({"query": "x", "bogus": 1}, "unknown_field"),
    ({"query_embedding": [0.1, 0.2]}, "invalid"),
    ({"query": "x", "vector_weight": 2}, "invalid"),
    ({"query": "x", "since": "2024-02-01T00:00:00Z", "until": "2024-01-01T00:00:00Z"}, "invalid_time_range"),
    ({"query": "x", "roles": ["robot"]}, "invalid"),
    ({"query": "x", "scope": "conversation"}, "invalid_scope"),
])
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
    found = texts(search(alice, query="tomatoes report sister", session="work"))
    assert found and all("report" in t for t in found)


def test_role_filter(alice, garden) -> None:
    found = texts(search(alice, query="tomatoes", roles=["assistant"]))
    assert found == ["Tomatoes need plenty of sun and water."]


def test_tags_must_all_be_present(alice, index) -> None:
    index(alice, "s", {"role": "user", "content": "alpha memo", "metadata": {"tags": ["a", "b"]}},
          {"role": "user", "content": "alpha note", "metadata": {"tags": ["a"]}})
    assert texts(search(alice, query="alpha", tags=["a", "B"])) == ["alpha memo"]
    assert set(texts(search(alice, query="alpha", tags=["a"]))) == {"alpha memo", "alpha note"}
    assert texts(search(alice, query="alpha", tags=["c"])) == []


def test_time_range_filter(alice, index) -> None:
    index(alice, "s", {"role": "user", "content": "old bicycle", "created_at": "2023-01-01T00:00:00Z"},
          {"role": "user", "content": "new bicycle", "created_at": "2024-06-01T00:00:00Z"})
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
    memory_saved.send(sender=None, kind="note", searchable=Searchable(
        kind="note", source_id="note-9", tenant_id=cast.alice_tenant.pk, text="tomatoes are fruit",
        created_at=timezone.now(), tier="account"))
    assert texts(search(alice, query="tomatoes", kinds=["note"])) == ["tomatoes are fruit"]


def test_every_result_says_its_kind(alice, index, cast) -> None:
    t = cast.alice_tenant.pk
    for kind in ("note", "fact", "summary"):
        memory_saved.send(sender=None, kind=kind, searchable=Searchable(
            kind=kind, source_id=f"{kind}-1", tenant_id=t, text=f"lychee {kind}", created_at=timezone.now(),
            tier="account"))
    assert alice.post("/api/v1/documents/", {"source_uri": "file:///l.txt", "text": "lychee document"},
                      format="json").status_code == 201
    index(alice, "s", {"role": "user", "content": "lychee event"})
    found = {r["text"]: r["kind"] for r in search(alice, query="lychee", top_k=20).json()["results"]}
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


# --- scope widening ------------------------------------------------------------------------------


def _memory(tenant_id: int, source_id: str, text: str, tier: str, **placement: Any) -> None:
    memory_saved.send(sender=None, kind="fact", searchable=Searchable(
        kind="fact", source_id=source_id, tenant_id=tenant_id, text=text, created_at=timezone.now(),
        tier=tier, **placement))


def test_scope_widening_adds_wider_tiers_only(alice, index, cast) -> None:
    alice.post("/api/v1/sessions/", {"id": "s1", "channel": "pets"}, format="json")
    alice.post("/api/v1/sessions/", {"id": "s2", "channel": "pets"}, format="json")
    alice.post("/api/v1/sessions/", {"id": "s3", "channel": "cars"}, format="json")
    index(alice, "s1", {"role": "user", "content": "kiwi in session one"})
    index(alice, "s2", {"role": "user", "content": "kiwi in session two"})
    index(alice, "s3", {"role": "user", "content": "kiwi in another channel"})
    s1 = alice.get("/api/v1/sessions/s1/").json()
    ws = Workspace.objects.get(tenant=cast.alice_tenant, name=s1["workspace"])
    pets = ws.channels.get(name="pets")
    cars = ws.channels.get(name="cars")
    t = cast.alice_tenant.pk
    _memory(t, "f1", "kiwi fact for account", "account")
    _memory(t, "f2", "kiwi fact for workspace", "workspace", workspace_id=ws.pk)
    _memory(t, "f3", "kiwi fact for pets", "channel", workspace_id=ws.pk, channel_id=pets.pk)
    _memory(t, "f4", "kiwi fact for cars", "channel", workspace_id=ws.pk, channel_id=cars.pk)
    conversation = set(texts(search(alice, query="kiwi", session="s1", top_k=20)))
    assert conversation == {"kiwi in session one", "kiwi fact for account", "kiwi fact for workspace",
                            "kiwi fact for pets"}
    channel = set(texts(search(alice, query="kiwi", session="s1", scope="channel", top_k=20)))
    assert channel == conversation | {"kiwi in session two"}
    # Widening adds other conversations' messages, never another channel's tiered memories.
    workspace = set(texts(search(alice, query="kiwi", session="s1", scope="workspace", top_k=20)))
    assert workspace == channel | {"kiwi in another channel"}
    # Without a session, a workspace's search reads every tier in it.
    assert "kiwi fact for cars" in texts(search(alice, query="kiwi", workspace=ws.name, top_k=20))


def test_a_result_names_its_session_channel_and_workspace_or_none(alice, index, cast) -> None:
    """The names a result shows come with its row (sql.load_rows): a message names its session,
    channel and workspace; a channel's memory its channel and workspace; an account's none."""
    alice.post("/api/v1/sessions/", {"id": "s1", "channel": "pets"}, format="json")
    index(alice, "s1", {"role": "user", "content": "quince in the session"})
    ws = Workspace.objects.get(tenant=cast.alice_tenant, name=alice.get("/api/v1/sessions/s1/").json()["workspace"])
    t = cast.alice_tenant.pk
    _memory(t, "f1", "quince fact for the account", "account")
    _memory(t, "f2", "quince fact for pets", "channel", workspace_id=ws.pk, channel_id=ws.channels.get(name="pets").pk)
    response = search(alice, query="quince", scope="account", top_k=10)
    assert response.status_code == 200, response.content
    named = {r["text"]: (r["session"], r["channel"], r["workspace"]) for r in response.json()["results"]}
    assert named == {"quince in the session": ("s1", "pets", ws.name),
                     "quince fact for pets": (None, "pets", ws.name),
                     "quince fact for the account": (None, None, None)}


# --- tenant isolation ----------------------------------------------------------------------------


@pytest.mark.parametrize("body", [
    {"mode": "text"}, {"mode": "vector"}, {"mode": "hybrid"}, {"mode": "hybrid", "fusion": "rrf"},
    {"mode": "exact"}, {"profile": "memory"}, {"scope": "account"},
])
def test_bob_never_sees_alices_chunks(alice, bob, index, cast, body: dict[str, Any]) -> None:
    index(alice, "shared-name", {"role": "user", "content": "alice secret pineapple"})
    _memory(cast.alice_tenant.pk, "fa", "alice account pineapple", "account")
    index(bob, "shared-name", {"role": "user", "content": "bob pineapple"})
    assert texts(search(bob, query="pineapple", **body)) == ["bob pineapple"]
    assert texts(search(bob, query="pineapple", session="shared-name", **body)) == ["bob pineapple"]
    assert texts(search(bob, query="pineapple", session="shared-name", scope="workspace", **{
        k: v for k, v in body.items() if k != "scope"})) == ["bob pineapple"]


def test_bob_cannot_name_alices_session_or_channel(alice, bob, index) -> None:
    alice.post("/api/v1/sessions/", {"id": "alice-only", "channel": "alice-channel"}, format="json")
    index(alice, "alice-only", {"role": "user", "content": "pineapple"})
    assert error_code(search(bob, query="pineapple", session="alice-only")) == "session_not_found"
    assert error_code(search(bob, query="pineapple", channel="alice-channel")) == "channel_not_found"


def test_workspace_limited_key_sees_only_its_workspace(alice, index, cast) -> None:
    alice.post("/api/v1/sessions/", {"id": "in-proj", "workspace": "proj"}, format="json")
    index(alice, "in-proj", {"role": "user", "content": "mango in proj"})
    index(alice, "elsewhere", {"role": "user", "content": "mango elsewhere"})
    _memory(cast.alice_tenant.pk, "fm", "mango account fact", "account")
    limited = make_client(make_key(cast.alice_tenant, ("read",), workspace="proj"))
    for body in ({}, {"scope": "account"}, {"mode": "vector"}, {"mode": "exact"}):
        assert texts(search(limited, query="mango", **body)) == ["mango in proj"]


def test_hybrid_search_function_is_confined_to_its_tenant(alice, bob, index, cast) -> None:
    index(alice, "s", {"role": "user", "content": "papaya"})
    assert hybrid_search(tenant_id=cast.bob_tenant.pk, query="papaya") == []
    assert [h.chunk.text for h in hybrid_search(tenant_id=cast.alice_tenant.pk, query="papaya")] == ["papaya"]


# --- memory profile ------------------------------------------------------------------------------


def test_memory_profile_reinforces_returned_results(alice, index) -> None:
    index(alice, "s1", {"role": "user", "content": "grape juice", "importance": 0.9})
    index(alice, "s2", {"role": "user", "content": "grape jelly", "importance": 0.1})
    results = search(alice, query="grape", profile="memory").json()["results"]
    assert results[0]["text"] == "grape juice"  # importance breaks the tie
    assert set(Chunk.objects.with_access().values_list("access_count", flat=True)) == {1}
    search(alice, query="grape", profile="memory", top_k=1)
    assert Chunk.objects.with_access().get(text="grape juice").access_count == 2
    assert Chunk.objects.with_access().get(text="grape jelly").accessed_at is not None
    search(alice, query="grape")  # every profile counts (seed 002); the memory profile ranks with it
    assert Chunk.objects.with_access().get(text="grape juice").access_count == 3


# --- query counts --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["text", "vector", "hybrid", "exact"])
def test_search_query_count_does_not_grow_with_results(alice, index, mode: str,
                                                       django_assert_max_num_queries) -> None:
    index(alice, "s", *[{"role": "user", "content": f"walrus fact {i}"} for i in range(30)])
    # (+1: the access counts, which tests write at once and a server in batches.)
    with django_assert_max_num_queries(13):
        assert len(texts(search(alice, query="walrus", mode=mode, top_k=25))) == 25


@pytest.mark.parametrize(("mode", "statements", "alongside"),
                         [("text", 3, True), ("hybrid", 4, True), ("hybrid", 3, False), ("vector", 2, True),
                          ("exact", 2, True)])
def test_a_search_is_three_statements_at_most(alice, index, cast, settings, mode: str, statements: int,
                                              alongside: bool, django_assert_num_queries, monkeypatch) -> None:
    """Issue 19: the term statistics (text and hybrid), one statement for the candidates, their
    scores and vectors (feedback, MMR and dedup run on those in Python), one for the hits' rows.
    Hybrid search splits the candidates in two while the query is being embedded (text side
    first, vector side once the vector is in), unless weights.EMBED_ALONGSIDE is off.
    (+1: the access counts, which tests write at once and a server in batches, off the request.)"""
    monkeypatch.setattr(weights, "EMBED_ALONGSIDE", alongside)
    index(alice, "s", *[{"role": "user", "content": f"walrus fact {i}"} for i in range(30)])
    with django_assert_num_queries(statements + 1):
        hits = hybrid_search(tenant_id=cast.alice_tenant.pk, query="walrus", mode=mode, top_k=25)
    assert len(hits) == 25 and hits[0].chunk.session.external_id == "s"
    # The rows are the chunks' own values (created_at to the microsecond, in UTC), without a model instance.
    stored = {c.pk: c for c in Chunk.objects.filter(pk__in=[h.chunk.pk for h in hits])}
    for hit in hits:
        chunk = stored[hit.chunk.pk]
        assert (hit.chunk.text, hit.chunk.created_at, hit.chunk.metadata, hit.chunk.tags) == (
            chunk.text, chunk.created_at, chunk.metadata, chunk.tags)
        assert hit.chunk.created_at.utcoffset().total_seconds() == 0


def test_hybrid_search_fetches_text_candidates_while_the_query_is_embedded(alice, garden, cast, settings,
                                                                           monkeypatch) -> None:
    """The query vector is computed in a thread while the text side's candidate statement runs:
    here the embedder waits for that statement to have run (it would wait in vain, and say so, if
    the two ran one after the other), and the results are those of the serial path."""
    import threading

    from django.db import connection

    from retrieval import query_embedding

    text_fetched = threading.Event()
    waited: list[bool] = []
    real = query_embedding.embed_query

    def embed_after_the_text_statement(text: str) -> list[float]:
        waited.append(text_fetched.wait(timeout=5))
        return real(text)

    def watch(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        result = execute(sql, params, many, context)
        if "ANY(ARRAY(" in sql and "halfvec_send" in sql:  # a candidate statement
            text_fetched.set()
        return result

    def run() -> list[tuple[str, float]]:
        hits = hybrid_search(tenant_id=cast.alice_tenant.pk, query="tomatoes sun", mode="hybrid")
        return [(h.chunk.text, round(h.score, 9)) for h in hits]

    monkeypatch.setattr(query_embedding, "embed_query", embed_after_the_text_statement)
    with connection.execute_wrapper(watch):
        alongside = run()
    assert waited == [True]
    monkeypatch.setattr(weights, "EMBED_ALONGSIDE", False)
    monkeypatch.setattr(query_embedding, "embed_query", real)
    assert run() == alongside and alongside[0][0] == "Tomatoes need plenty of sun and water."


@pytest.mark.parametrize("mode", ["text", "hybrid"])
def test_a_small_scope_tests_its_own_rows_instead_of_the_full_text_index(alice, garden, cast, settings, mode: str,
                                                                         django_assert_num_queries, monkeypatch) -> None:
    """The full-text index finds a word's chunks in every tenant's rows before the scope narrows
    them; a scope under sql.TEXT_SCAN_BELOW chunks tests its own rows instead (the match
    written `IS TRUE`, which the index cannot serve). Same results either way."""
    def run(threshold: int) -> tuple[list[tuple[str, float]], str]:
        monkeypatch.setattr("retrieval.search.sql.TEXT_SCAN_BELOW", threshold)
        with django_assert_num_queries(5 if mode == "hybrid" else 4) as captured:
            hits = hybrid_search(tenant_id=cast.alice_tenant.pk, query="tomatoes garden", mode=mode)
        candidates = next(q["sql"] for q in captured.captured_queries if "ANY(ARRAY(" in q["sql"])
        return [(h.chunk.text, round(h.score, 9)) for h in hits], candidates

    scanned, scan_sql = run(5_000)  # the tenant holds 5 chunks
    indexed, index_sql = run(5)
    assert ") IS TRUE" in scan_sql and ") IS TRUE" not in index_sql
    assert scanned == indexed and scanned[0][0] == "I planted tomatoes and basil in the garden."


def test_hybrid_search_under_load_embeds_first_in_one_candidate_statement(alice, garden, cast,
                                                                           django_assert_num_queries) -> None:
    """With another search running in the process the cores are busy: no thread, no split (the
    term statistics, one candidate statement, the rows; +1: the access counts)."""
    from retrieval.search.engine import in_flight

    def run() -> list[tuple[str, float]]:
        hits = hybrid_search(tenant_id=cast.alice_tenant.pk, query="tomatoes sun", mode="hybrid")
        return [(h.chunk.text, round(h.score, 9)) for h in hits]

    with django_assert_num_queries(5):
        alone = run()
    with in_flight, django_assert_num_queries(4):  # another search, running meanwhile
        busy = run()
    assert busy == alone and in_flight.count == 0


def test_ef_search_grows_with_the_chunk_table(alice, garden, cast, settings, monkeypatch,
                                             django_assert_num_queries) -> None:
    """HNSW finds a smaller share of the true nearest neighbours as its graph grows: ef_search is
    raised to one per weights.HNSW_ROWS_PER_EF rows of the chunk table (pgvector's ceiling 1000),
    whose estimate the term statistics read along (no statement of its own)."""
    from django.db import connection

    from retrieval import termstats
    from retrieval.search.sql import ef_search

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE retrieval_chunk")
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = 'retrieval_chunk'::regclass")
        estimate = int(cursor.fetchone()[0])
    with django_assert_num_queries(4):  # statistics (with the estimate), candidates, rows, access counts
        hybrid_search(tenant_id=cast.alice_tenant.pk, query="tomatoes", mode="text")
    assert termstats.table_rows() == max(estimate, 0) and ef_search() == 100
    for rows, expected in ((300_000, 300), (5_000_000, 1000), (50_000, 100)):
        monkeypatch.setattr(termstats, "_table_rows", rows)
        assert ef_search() == expected
    monkeypatch.setattr(weights, "HNSW_ROWS_PER_EF", 0)
    monkeypatch.setattr(termstats, "_table_rows", 5_000_000)
    assert ef_search() == 100
    monkeypatch.setattr(weights, "HNSW_ROWS_PER_EF", 1_000)
    with django_assert_num_queries(6) as captured:  # SET LOCAL in a savepoint (the test's transaction)
        assert hybrid_search(tenant_id=cast.alice_tenant.pk, query="tomatoes", mode="vector")
    assert any(q["sql"].startswith("SET LOCAL hnsw.ef_search = 1000") for q in captured.captured_queries)


def test_hnsw_settings_come_with_the_connection_or_per_query(alice, index, cast, settings,
                                                             django_assert_num_queries) -> None:
    """Every connection starts with search's ef_search and iterative scans (no SET per search); a
    different ef_search (set at run time) is SET LOCAL around the candidate statement."""
    from django.db import connection

    index(alice, "s", {"role": "user", "content": "walrus"})
    with connection.cursor() as cursor:
        cursor.execute("SHOW hnsw.iterative_scan")
        assert cursor.fetchone()[0] == "relaxed_order"
    # (+1 each: the access counts, which tests write at once and a server in batches.)
    with django_assert_num_queries(3) as captured:
        assert hybrid_search(tenant_id=cast.alice_tenant.pk, query="walrus", mode="vector")
    settings.HNSW_EF_SEARCH = 17
    with django_assert_num_queries(6) as captured:  # in a savepoint here: the test's transaction
        assert hybrid_search(tenant_id=cast.alice_tenant.pk, query="walrus", mode="vector")
    statements = [q["sql"] for q in captured.captured_queries]
    assert statements[1].startswith("SET LOCAL hnsw.ef_search = 17") and "halfvec" in statements[2]


@pytest.mark.django_db(transaction=True)
def test_a_raised_ef_search_is_set_once_for_the_connection(cast, settings) -> None:
    """Outside a transaction an ef_search other than the startup one (a table over 100k chunks) is
    SET for the connection's life: one statement on its first search, none after (it was a
    transaction and a SET LOCAL each search). Inside a transaction it stays SET LOCAL, which a
    rollback undoes and the connection's own value outlives; a new connection sets it again."""
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    from tests.base import post_events

    post_events(cast.alice, "s", {"role": "user", "content": "walrus"})
    tenant = cast.alice_tenant.pk

    def sets(ef: int) -> list[str]:
        settings.HNSW_EF_SEARCH = ef
        with CaptureQueriesContext(connection) as captured:
            assert hybrid_search(tenant_id=tenant, query="walrus", mode="vector")
        return [q["sql"] for q in captured.captured_queries if q["sql"].startswith("SET")]

    def shown() -> str:
        with connection.cursor() as cursor:
            cursor.execute("SHOW hnsw.ef_search")
            return cursor.fetchone()[0]

    try:
        assert sets(100) == [] and shown() == "100"  # the startup value
        assert sets(170) == ["SET hnsw.ef_search = 170"] and shown() == "170"
        assert sets(170) == [] and shown() == "170"
        assert sets(100) == ["SET hnsw.ef_search = 100"] and sets(100) == [] and shown() == "100"
        assert sets(170) == ["SET hnsw.ef_search = 170"]
        with transaction.atomic():
            in_transaction = sets(230)
        assert in_transaction == ["SET LOCAL hnsw.ef_search = 230; SET LOCAL hnsw.iterative_scan = relaxed_order"]
        assert shown() == "170" and sets(170) == []
        connection.close()
        assert sets(170) == ["SET hnsw.ef_search = 170"] and shown() == "170"
    finally:
        connection.close()  # the next test's connection starts from the startup options


# --- optional ranking settings -------------------------------------------------------------------


def _three_sessions(index, alice) -> None:  # type: ignore[no-untyped-def]
    index(alice, "many", {"role": "user", "content": "heron nest by the lake"},
          {"role": "user", "content": "a heron again"}, {"role": "user", "content": "heron heron chicks"})
    index(alice, "lone", {"role": "user", "content": "one heron flew past"})


def test_memory_profile_ranks_by_the_lifecycles_decayed_relevance(alice, cast) -> None:
    from datetime import timedelta

    from retrieval.decay import relevance_at

    month_ago = timezone.now() - timedelta(days=30)
    for source_id, tier in (("f-conv", "conversation"), ("f-acct", "account")):
        memory_saved.send(sender=None, kind="fact", searchable=Searchable(
            kind="fact", source_id=source_id, tenant_id=cast.alice_tenant.pk, text=f"quince {tier} memory",
            created_at=month_ago, tier=tier, importance=0.8))
    plain = search(alice, query="quince").json()["results"]
    assert plain[0]["scores"] == plain[1]["scores"]  # equal on both signals: only decay can separate them
    ChunkAccess.objects.all().delete()  # that search was a use of both: undo it
    results = search(alice, query="quince", profile="memory").json()["results"]
    # A month old: the account tier (0.999/h) keeps ~0.49 of its relevance, a conversation (0.99/h) ~0.
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


def test_coverage_gives_the_last_places_to_conversations_not_yet_listed(alice, index, settings, monkeypatch) -> None:
    _three_sessions(index, alice)
    monkeypatch.setattr("retrieval.search.weights.COVERAGE", 1.0)
    plain = [r["session"] for r in search(alice, query="heron", top_k=2).json()["results"]]
    assert plain == ["many", "many"]
    monkeypatch.setattr("retrieval.search.weights.COVERAGE", 0.6)  # the default: round(0.6 * 2) = 1 place by rank
    monkeypatch.setattr(weights, "COVERAGE_FLOOR", 0.0)  # any result of an unlisted conversation moves up
    covered = search(alice, query="heron", top_k=2).json()["results"]
    assert [r["session"] for r in covered] == ["many", "lone"]
    # The default floor: "lone" scores under 0.8 of the second "many" result, so it keeps its rank.
    monkeypatch.setattr(weights, "COVERAGE_FLOOR", 0.8)
    scores = {r["session"]: r["score"] for r in reversed(covered)}
    floored = [r["session"] for r in search(alice, query="heron", top_k=2).json()["results"]]
    assert scores["lone"] < 0.8 * min(r["score"] for r in search(alice, query="heron", top_k=2).json()["results"])
    assert floored == ["many", "many"]
    # Text mode is a plain ranking: coverage (like MMR) is a hybrid re-ranking.
    text = search(alice, query="heron", top_k=2, mode="text").json()["results"]
    assert [r["session"] for r in text] == ["many", "many"]


def test_coverage_prefers_the_conversation_whose_messages_say_more_of_the_query(alice, index, settings, monkeypatch) -> None:
    monkeypatch.setattr(weights, "COVERAGE_FLOOR", 0.0)
    monkeypatch.setattr("retrieval.search.weights.COVERAGE", 0.5)  # of two places, the second by coverage
    index(alice, "head", {"role": "user", "content": "heron lagoon at dawn"})
    # "single" has three matches of one query word; "spread" one match of each word, apart.
    index(alice, "single", *({"role": "user", "content": f"heron {w}"} for w in ("nest", "chicks", "feathers")))
    index(alice, "spread", {"role": "user", "content": "lagoon walk today"},
          {"role": "user", "content": "a heron there too"})

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


def test_the_terms_a_candidate_says_are_its_own_words_or_its_whole_message(alice, index, settings,
                                                                            monkeypatch) -> None:
    from retrieval.search import engine

    pools, terms = [], []
    fetch = engine.fetch_candidates

    def keep(sources: Any, model: str, tq: Any, **kwargs: Any) -> Any:
        terms.append([literal.strip("'") for literal, _ in tq.terms])
        pools.append(fetch(sources, model, tq, **kwargs))
        return pools[-1]

    monkeypatch.setattr(engine, "fetch_candidates", keep)
    long = "heron " + " ".join(["filler words about nothing much"] * 40) + " lagoon"  # three chunks or more
    index(alice, "s", {"role": "user", "content": "a lagoon in the morning"},
          {"role": "user", "content": "then the kestrel came"}, {"role": "user", "content": long})
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
    # "kestrel" is in the context of the long message's chunks (two messages back), not in their words.
    assert by_text[2] == [bits["kestrel"]]
    assert len(by_text[3]) >= 3 and set(by_text[3]) == {bits["heron"] | bits["lagoon"]}  # its whole message's


def test_feedback_ranks_with_the_moved_query_but_shows_the_plain_cosine(alice, index, settings, monkeypatch) -> None:
    from retrieval.embedders import get_embedder

    monkeypatch.setattr("retrieval.search.weights.COVERAGE", 1.0)
    monkeypatch.setattr(weights, "FEEDBACK_DOCS", 1)
    # One message per conversation, so no message is embedded with another's words as context.
    for hour, (session, text) in enumerate((("a", "otter otter river"), ("b", "otter cafe"),
                                            ("c", "river stones river mud"), ("d", "pizza dough"))):
        # Written an hour apart: "the newer first" must not hang on the clock's resolution.
        index(alice, session, {"role": "user", "content": text, "created_at": f"2026-01-01T{10 + hour:02d}:00:00Z"})
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
    assert {r["text"]: r["scores"]["vector"] for r in fed} == {r["text"]: r["scores"]["vector"] for r in plain}


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


def test_full_text_finds_the_parts_of_paths_emails_and_urls(alice, index) -> None:
    index(alice, "ops", {"role": "user", "content": "Moved the secret to kv/oldpathzeta yesterday."},
          {"role": "user", "content": "Write to ops@zetacorp.io about https://x.io/deploy and my_build_flag."})
    for query, expected in (("oldpathzeta", "kv/oldpathzeta"), ("zetacorp", "ops@zetacorp.io"),
                            ("deploy", "https://x.io/deploy"), ("build flag", "my_build_flag"),
                            ("kv/oldpathzeta", "kv/oldpathzeta"), ("ops@zetacorp.io", "ops@zetacorp.io")):
        texts = search_texts(alice, query=query, mode="text")
        assert any(expected in t for t in texts), (query, texts)


def test_every_search_counts_an_access_of_what_it_returned(alice, index, settings, monkeypatch) -> None:
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


@pytest.mark.parametrize("mode", ["hybrid", "text", "vector"])
def test_a_long_message_takes_one_place_at_its_best_chunk(alice, index, settings, mode, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    topics = ["radiators", "thermostat", "chimney", "gutters", "insulation", "fuse box", "water heater", "roof tiles"]
    long_answer = " ".join(f"Before winter, bleed boiler pump valve {i} and then check the {topic} in room {i}: "
                           f"{' '.join(f'{topic[:3]}{i}x{j}' for j in range(8))}."
                           for i, topic in enumerate(topics * 2))
    index(alice, "s", {"role": "assistant", "content": long_answer},
          {"role": "user", "content": "The boiler pump valve was bled last winter by Tom."})
    assert Chunk.objects.filter(role="assistant").count() >= 3  # the answer is several chunks
    body = search(alice, query="boiler pump valve bled winter", mode=mode, top_k=5).json()
    sequences = [r["sequence_start"] for r in body["results"]]
    assert sorted(sequences) == [1, 2]  # each message once
    monkeypatch.setattr(weights, "ONE_PER_MESSAGE", False)
    every = search(alice, query="boiler pump valve bled winter", mode=mode, top_k=5).json()["results"]
    assert [r["sequence_start"] for r in every].count(1) >= 2


def test_full_text_scores_a_long_message_as_a_whole(alice, index, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The two words are said in different chunks of one long answer: scored as the whole message
    it says both in fewer words than the short message that also says both, and comes first;
    scored chunk by chunk, each of its chunks says one word, and the short message comes first."""
    filler = "It is what it is, and that is all there is to it. " * 14  # stop words only: no length
    long_answer = f"Marmalade. {filler}{filler}Zanzibar."
    index(alice, "s", {"role": "assistant", "content": long_answer},
          {"role": "user", "content": "Marmalade, zanzibar and a shelf."})
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


def test_a_chunk_beyond_the_message_chunks_read_still_counts_its_own_words(alice, index, monkeypatch,  # type: ignore[no-untyped-def]
                                                                           settings) -> None:
    """Whole-message scoring reads at most MESSAGE_CHUNKS chunks of a message; a chunk beyond them
    still scores on the words it says itself (not only on the first chunks' words)."""
    from retrieval.search import fulltext

    monkeypatch.setattr(fulltext, "MESSAGE_CHUNKS", 1)
    monkeypatch.setattr(weights, "TEXT_CONTEXT_WEIGHT", 0.0)  # no discounted match through any weight to hide it
    filler = "It is what it is, and that is all there is to it. " * 14
    index(alice, "s", {"role": "assistant", "content": f"Marmalade. {filler}{filler}Zanzibar."},
          {"role": "user", "content": "Nothing about islands here, only jam."})
    first = search(alice, query="zanzibar", mode="text").json()["results"][0]
    assert "Zanzibar" in first["text"]
    assert first["scores"]["text"] > 0.1  # its own word, scored in full (not the 0.001 tie-break alone)
