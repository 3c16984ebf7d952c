"""POST /context/: recency + salience + relevance in a token budget, JSON and Markdown."""

from __future__ import annotations

from tests.base import error_code


def context(client, **body):  # type: ignore[no-untyped-def]
    return client.post("/api/v1/context/", body, format="json")


def test_context_combines_recent_salient_and_relevant(alice, index) -> None:
    index(
        alice,
        "old",
        {"role": "user", "content": "My passport number ends in 4471.", "importance": 0.9},
        {"role": "user", "content": "I am allergic to peanuts."},
    )
    index(alice, "now", *[{"role": "user", "content": f"small talk {i}"} for i in range(12)])
    response = context(
        alice, session="now", query="what am I allergic to, and my passport", scope="channel"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    sources = {(i["source"], i["text"]) for i in body["items"]}
    assert ("relevant", "I am allergic to peanuts.") in sources
    assert "My passport number ends in 4471." in {text for _, text in sources}
    recent = [i["text"] for i in body["items"] if i["source"] == "recent"]
    assert len(recent) == 10 and "small talk 11" in recent and "small talk 1" not in recent
    assert body["markdown"].startswith("## Relevant Memory")
    assert "(user, said " in body["markdown"] and "I am allergic to peanuts." in body["markdown"]
    assert body["tokens"] <= body["budget"] == 4000


def test_context_injects_important_memories_only_when_relevant(alice, index) -> None:
    """Nothing ordinary is injected for an irrelevant query; an important memory below
    the critical line (0.85) is, when the query is about it or there is no query."""
    index(
        alice,
        "old",
        {"role": "user", "content": "My passport number ends in 4471.", "importance": 0.8},
    )
    irrelevant = context(alice, query="tell me a joke about penguins").json()
    assert irrelevant["items"] == [] and irrelevant["markdown"] == ""
    about = context(alice, query="passport number").json()["items"]
    assert [i["text"] for i in about] == ["My passport number ends in 4471."]
    assert [i["source"] for i in context(alice).json()["items"]] == ["salient"]


def test_context_lists_search_results_in_search_order(alice, index) -> None:
    """S12: the context's relevant items are search's top results for the same request, same
    order."""
    index(
        alice,
        "s1",
        *[
            {"role": "user", "content": f"table T{i} was migrated in PR {100 + i}"}
            for i in range(8)
        ],
        {"role": "assistant", "content": "PR 105 migrated table T5 to the new schema"},
    )
    body = {"query": "which PR migrated table T5?", "scope": "account"}
    searched = [
        r["text"] for r in alice.post("/api/v1/search/", body, format="json").json()["results"]
    ]
    items = context(alice, **body).json()["items"]
    assert [i["text"] for i in items if i["source"] == "relevant"] == searched
    assert items[0]["text"] == searched[0]


def test_context_does_not_repeat_recent_messages(alice, index) -> None:
    index(alice, "now", {"role": "user", "content": "the wifi password is hunter2"})
    items = context(alice, session="now", query="wifi password").json()["items"]
    assert [i["source"] for i in items if "hunter2" in i["text"]] == ["recent"]


def test_context_respects_the_budget(alice, index) -> None:
    index(
        alice,
        "now",
        *[{"role": "user", "content": f"message {i} " + "words " * 40} for i in range(10)],
    )
    body = context(alice, session="now", query="message", budget=100).json()
    assert 0 < body["tokens"] <= 100
    assert len(body["items"]) < 10


def test_context_without_query_gives_recent_and_salient(alice, index) -> None:
    index(alice, "now", {"role": "user", "content": "hello"})
    body = context(alice, session="now").json()
    assert [i["text"] for i in body["items"]] == ["hello"]


def test_context_bad_input(alice, index) -> None:
    index(alice, "now", {"role": "user", "content": "hello"})
    assert error_code(context(alice, query="x", kinds=["bogus"])) == "validation_error"
    assert error_code(context(alice, session="now", budget=10)) == "validation_error"
    assert error_code(context(alice, session="now", extra=1)) == "unknown_field"
    assert error_code(context(alice, session="missing", query="x")) == "session_not_found"


def test_context_never_crosses_tenants(alice, bob, index) -> None:
    index(alice, "s", {"role": "user", "content": "alice loves kumquats", "importance": 0.95})
    index(bob, "s", {"role": "user", "content": "bob hello"})
    body = context(bob, session="s", query="kumquats").json()
    assert "kumquats" not in str(body)
    assert error_code(context(bob, session="nope-alice", query="x")) == "session_not_found"
