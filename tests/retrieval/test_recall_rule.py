"""One recall rule for search, context, browse and MCP: the scope ladder (a tiered memory applies
where it was made), sharing (a user's read never includes a conversation nobody owns) and critical
memories (importance >= 0.85 or pinned: in every context, marked; ordinary salience only when
relevant)."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import ApiKey
from retrieval.mcp_server import tools
from tests.base import make_client, make_key

TIERS = ("conversation", "channel", "workspace", "account")


def _ok(response: Any) -> dict[str, Any]:
    assert response.status_code in (200, 201), response.content
    return response.json()


def _search(client: Any, **body: Any) -> list[str]:
    return [
        r["text"]
        for r in _ok(client.post("/api/v1/search/", {"top_k": 50, **body}, format="json"))[
            "results"
        ]
    ]


def _context(client: Any, **body: Any) -> dict[str, Any]:
    return _ok(client.post("/api/v1/context/", body, format="json"))


def _browse(client: Any, **params: Any) -> list[str]:
    return [r["content"] for r in _ok(client.get("/api/v1/browse/", params))["results"]]


@pytest.fixture
def committed(django_capture_on_commit_callbacks):  # type: ignore[no-untyped-def]
    """Run what a write enqueues on commit (indexing, eager in tests)."""

    def write(client: Any, path: str, body: dict[str, Any]) -> dict[str, Any]:
        with django_capture_on_commit_callbacks(execute=True):
            return _ok(client.post(path, body, format="json"))

    return write


# --- the platypus case: context crossed scopes that search respected ---------------------------


def test_context_and_search_keep_tiered_memories_where_they_were_made(
    alice, index, committed
) -> None:
    _ok(alice.post("/api/v1/sessions/", {"id": "ctx-1", "channel": "other"}, format="json"))
    _ok(alice.post("/api/v1/sessions/", {"id": "c-gen", "channel": "general"}, format="json"))
    index(alice, "ctx-1", {"role": "user", "content": "hello there"})
    index(alice, "c-gen", {"role": "user", "content": "the platypus lays eggs"})
    committed(
        alice,
        "/api/v1/facts/",
        {"content": "Platypus fact conversation tier", "session": "c-gen", "scope": "conversation"},
    )
    committed(
        alice,
        "/api/v1/facts/",
        {"content": "Platypus fact channel tier", "channel": "travel", "scope": "channel"},
    )
    body = {"session": "ctx-1", "query": "tell me about the platypus"}
    searched = _search(alice, **body)
    ctx = _context(alice, **body)
    listed = [i["text"] for i in ctx["items"]]
    for text in ("Platypus fact conversation tier", "Platypus fact channel tier"):
        assert text not in searched and text not in listed and text not in ctx["markdown"], text
    # The other conversation's message is in the session's whole memory (both are the tenant's);
    # a scope of the conversation alone leaves it out.
    assert "the platypus lays eggs" in searched and "the platypus lays eggs" in listed
    assert "the platypus lays eggs" not in _search(alice, **body, scope="conversation")
    # They agree: the context's related memories are search's results, in search's order.
    related = [i["text"] for i in ctx["items"] if i["source"] == "relevant"]
    assert related == [t for t in searched if t in related]
    assert set(related) <= set(searched)
    # Where they were made, they apply.
    assert "Platypus fact conversation tier" in _search(alice, session="c-gen", query="platypus")
    assert "Platypus fact conversation tier" in [
        i["text"] for i in _context(alice, session="c-gen", query="platypus")["items"]
    ]


def test_context_and_search_take_the_same_default_scope(alice, index) -> None:
    """Without `scope`, a session's search and context read the same range: its owner's whole
    memory (here the tenant's unowned conversations) and what applies to it; a scope narrows both
    alike."""
    _ok(alice.post("/api/v1/sessions/", {"id": "s-here", "channel": "pets"}, format="json"))
    _ok(alice.post("/api/v1/sessions/", {"id": "s-sibling", "channel": "pets"}, format="json"))
    _ok(alice.post("/api/v1/sessions/", {"id": "s-far", "channel": "cars"}, format="json"))
    index(
        alice,
        "s-here",
        {"role": "user", "content": "a gecko on the wall"},
        *[{"role": "user", "content": f"small talk {i}"} for i in range(10)],
    )
    index(alice, "s-sibling", {"role": "user", "content": "the gecko sheds its skin"})
    index(alice, "s-far", {"role": "user", "content": "the gecko mascot of an insurer"})
    for scope, expected in (
        (
            None,
            {"a gecko on the wall", "the gecko sheds its skin", "the gecko mascot of an insurer"},
        ),
        ("conversation", {"a gecko on the wall"}),
        ("channel", {"a gecko on the wall", "the gecko sheds its skin"}),
    ):
        body = {"session": "s-here", "query": "gecko", **({"scope": scope} if scope else {})}
        searched = [t for t in _search(alice, **body) if "gecko" in t]
        assert set(searched) == expected, scope
        ctx = _context(alice, **body)
        assert [i["text"] for i in ctx["items"] if i["source"] == "relevant"] == searched, scope


# --- the trip-1 case: a conversation nobody owns is the tenant's, not every user's --------------


def test_an_unowned_conversation_is_in_no_users_reads(alice, cast, index) -> None:
    index(alice, "trip-1", {"role": "user", "content": "Noted: Lisbon, 3 May, aisle seat."})
    for user in ("ann", "bob"):
        _ok(alice.post("/api/v1/sessions/", {"id": f"{user}-chat", "user_id": user}, format="json"))
        index(
            alice,
            f"{user}-chat",
            {"role": "user", "content": f"{user} wants a window seat to Lisbon"},
        )
    _ok(alice.post("/api/v1/notes/", {"content": "Lisbon trams stop at midnight"}, format="json"))
    lisbon = "Noted: Lisbon, 3 May, aisle seat."
    for user in ("ann", "bob"):
        own = make_client(make_key(cast.alice_tenant, user=user))
        reads = {
            "search": _search(alice, user_id=user, query="Lisbon seat"),
            "search, own session, account": _search(
                alice, session=f"{user}-chat", query="Lisbon seat", scope="account"
            ),
            "context": [
                i["text"] for i in _context(alice, user_id=user, query="Lisbon seat")["items"]
            ],
            "recall, own session": [
                i["text"]
                for i in _context(
                    alice, session=f"{user}-chat", query="Lisbon seat", scope="account"
                )["items"]
            ],
            "browse": _browse(alice, user_id=user),
            "user key search": _search(own, query="Lisbon seat"),
            "user key context": [i["text"] for i in _context(own, query="Lisbon seat")["items"]],
            "user key browse": _browse(own),
            "mcp search": [
                r["text"]
                for r in tools.run_search(_key(cast, user), {"query": "Lisbon seat"})["results"]
            ],
            "mcp context": [
                i["text"]
                for i in tools.run_context(_key(cast, user), {"query": "Lisbon seat"})["items"]
            ],
        }
        # Naming the conversation does not open it: to a user-limited key it is not there.
        for path in ("/api/v1/context/", "/api/v1/search/"):
            named = own.post(path, {"session": "trip-1", "query": "Lisbon seat"}, format="json")
            assert (named.status_code, named.json()["error"]["code"]) == (
                404,
                "session_not_found",
            ), path
        for surface, texts in reads.items():
            assert lisbon not in texts, (user, surface)
            if "browse" not in surface:  # shared knowledge is in every user's reads
                assert "Lisbon trams stop at midnight" in texts, (user, surface)
            assert f"{user} wants a window seat to Lisbon" in texts, (user, surface)
            other = "bob" if user == "ann" else "ann"
            assert not any(t.startswith(other) for t in texts), (user, surface)
    # A tenant-wide read sees it; so does a read anchored to the conversation itself.
    assert lisbon in _search(alice, query="Lisbon seat")
    assert lisbon in [i["text"] for i in _context(alice, query="Lisbon seat")["items"]]
    assert lisbon in _browse(alice)
    assert lisbon in _search(alice, session="trip-1", query="Lisbon seat")


def _key(cast: Any, user: str = "") -> ApiKey:
    return ApiKey.create_key(tenant=cast.alice_tenant, user_id=user).api_key


# --- critical memories always, ordinary salience when relevant ----------------------------------


def test_a_critical_memory_is_in_every_context_and_ordinary_salience_only_when_relevant(
    alice, index
) -> None:
    _ok(alice.post("/api/v1/sessions/", {"id": "kitchen", "user_id": "ann"}, format="json"))
    index(
        alice,
        "kitchen",
        {
            "role": "user",
            "content": "IMPORTANT: I am severely allergic to peanuts.",
            "importance": 0.95,
        },
        {"role": "user", "content": "My passport number ends in 4471.", "importance": 0.75},
        *[{"role": "user", "content": f"small talk {i}"} for i in range(12)],
    )
    allergy = "IMPORTANT: I am severely allergic to peanuts."
    for body in ({"session": "kitchen"}, {"user_id": "ann"}, {}):
        ctx = _context(alice, query="What should I cook for dinner tonight?", **body)
        critical = [i for i in ctx["items"] if i["source"] == "critical"]
        assert [i["text"] for i in critical] == [allergy], body
        assert ctx["items"][0]["source"] == "critical"
        assert "### Critical" in ctx["markdown"] and allergy in ctx["markdown"]
        # an ordinary salient memory (0.75) is not injected for an irrelevant query.
        assert "My passport number ends in 4471." not in [i["text"] for i in ctx["items"]], body
        # Within the reserved part of the budget.
        assert sum(i["tokens"] for i in critical) <= ctx["budget"] * 0.15
    about = _context(alice, user_id="ann", query="passport number")["items"]
    assert ("salient", "My passport number ends in 4471.") in {
        (i["source"], i["text"]) for i in about
    } or ("relevant", "My passport number ends in 4471.") in {
        (i["source"], i["text"]) for i in about
    }
    # Another user's critical memory is never in ann's context; hers, said in another channel's
    # conversation, is in every conversation of hers by default, and out of a narrower scope.
    assert allergy not in _context(alice, user_id="bob", query="dinner")["markdown"]
    _ok(
        alice.post(
            "/api/v1/sessions/",
            {"id": "elsewhere", "user_id": "ann", "channel": "work"},
            format="json",
        )
    )
    assert allergy in _context(alice, session="elsewhere", query="dinner")["markdown"]
    assert (
        allergy
        not in _context(alice, session="elsewhere", query="dinner", scope="channel")["markdown"]
    )


def test_an_irrelevant_query_injects_nothing_ordinary(alice, index) -> None:
    """Beside the critical rule: nothing ordinary is injected when nothing is relevant."""
    index(
        alice,
        "old",
        {"role": "user", "content": "My passport number ends in 4471.", "importance": 0.8},
    )
    irrelevant = _context(alice, query="tell me a joke about penguins")
    assert irrelevant["items"] == [] and irrelevant["markdown"] == ""


def test_a_pinned_memory_is_critical(alice, committed, django_capture_on_commit_callbacks) -> None:
    from retrieval.lifecycle.memories import pin_memories
    from retrieval.models import Chunk

    note = committed(
        alice, "/api/v1/notes/", {"content": "The office door code is 9137", "importance": 0.3}
    )
    assert _context(alice, query="tell me a joke about penguins")["items"] == []
    with django_capture_on_commit_callbacks(execute=True):
        pin_memories(
            list(
                Chunk.objects.filter(kind="note", source_id=note["note_id"]).values_list(
                    "pk", flat=True
                )
            )
        )
    ctx = _context(alice, query="tell me a joke about penguins")
    assert [(i["source"], i["text"]) for i in ctx["items"]] == [
        ("critical", "The office door code is 9137")
    ]


# --- the generated scope matrix -----------------------------------------------------------------

# Where each user's requests are made, relative to the conversation ("home") where the memories were
# made: the same conversation, a sibling in its channel, another channel, another workspace. Both
# users use the same channel and workspace names, keys and texts (but for their name).
PLACES = {
    "same conversation": ("home", "kitchen", None),
    "sibling conversation": ("sib", "kitchen", None),
    "another channel": ("far", "garden", None),
    "another workspace": ("away", "kitchen", "annex"),
}
APPLIES = {
    "conversation": {"same conversation"},
    "channel": {"same conversation", "sibling conversation"},
    "workspace": {"same conversation", "sibling conversation", "another channel"},
    "account": set(PLACES),
}


@pytest.fixture
def ladder(alice, cast, index, committed) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    for user in ("ann", "bob"):
        for name, channel, workspace in PLACES.values():
            body = {"id": f"{user}-{name}", "user_id": user, "channel": channel}
            if workspace:
                body["workspace"] = workspace
            _ok(alice.post("/api/v1/sessions/", body, format="json"))
        index(
            alice,
            f"{user}-home",
            {"role": "user", "content": f"zebra message said at home by {user}"},
        )
        for tier in TIERS:
            for kind in ("facts", "notes"):
                body = {
                    "content": f"zebra {tier} {kind[:-1]} of {user}",
                    "session": f"{user}-home",
                    "scope": tier,
                    "user_id": user,
                }
                if kind == "facts":
                    body |= {"category": "zebra", "key": tier}
                committed(alice, f"/api/v1/{kind}/", body)
    return {"client": alice, "key": ApiKey.objects.filter(tenant=cast.alice_tenant).first()}


def _surfaces(ladder: dict[str, Any], session: str) -> dict[str, list[str]]:
    client, key = ladder["client"], ladder["key"]
    query = "zebra"
    return {
        "search": _search(client, session=session, query=query),
        "context": [i["text"] for i in _context(client, session=session, query=query)["items"]],
        "browse": _browse(client, session=session),
        "mcp search": [
            r["text"]
            for r in tools.run_search(key, {"query": query, "session": session, "top_k": 50})[
                "results"
            ]
        ],
        "mcp context": [
            i["text"] for i in tools.run_context(key, {"query": query, "session": session})["items"]
        ],
        "mcp browse": [
            r["content"] for r in tools.run_browse(key, {"session": session})["results"]
        ],
    }


def test_the_scope_ladder_matrix(ladder) -> None:
    wrong: list[str] = []
    for user in ("ann", "bob"):
        other = "bob" if user == "ann" else "ann"
        for place, (name, _, _) in PLACES.items():
            for surface, texts in _surfaces(ladder, f"{user}-{name}").items():
                if any(t.endswith((f"of {other}", f"by {other}")) for t in texts):
                    wrong.append(f"{user} at {place} via {surface}: sees {other}'s {texts}")
                for tier in TIERS:
                    for kind in ("fact", "note"):
                        text = f"zebra {tier} {kind} of {user}"
                        expected = place in APPLIES[tier] and "browse" not in surface
                        if (text in texts) != expected:
                            wrong.append(
                                f"{user} at {place} via {surface}: {text!r}"
                                f" {'missing' if expected else 'listed'}"
                            )
                # The home conversation's message: in every conversation of its user by default (her
                # whole memory); browse of a session lists that session's messages only.
                said = f"zebra message said at home by {user}"
                listed = place == "same conversation" or "browse" not in surface
                if (said in texts) != listed:
                    wrong.append(
                        f"{user} at {place} via {surface}: the home message "
                        f"{'missing' if listed else 'listed'}"
                    )
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("scope", ["workspace", "account"])
def test_widening_adds_messages_never_another_places_tiered_memories(ladder, scope: str) -> None:
    client = ladder["client"]
    for user in ("ann", "bob"):
        sibling = _search(client, session=f"{user}-sib", query="zebra", scope="channel")
        assert f"zebra message said at home by {user}" in sibling
        assert (
            f"zebra conversation fact of {user}" not in sibling
            and f"zebra channel fact of {user}" in sibling
        )
        texts = _search(client, session=f"{user}-far", query="zebra", scope=scope)
        assert f"zebra message said at home by {user}" in texts
        assert not [
            t for t in texts if "of" in t and t.split()[1] in ("conversation", "channel")
        ], texts
        assert (
            f"zebra workspace fact of {user}" in texts and f"zebra account fact of {user}" in texts
        )
        away = _search(client, session=f"{user}-away", query="zebra", scope=scope)
        assert (f"zebra message said at home by {user}" in away) == (scope == "account")
        assert f"zebra workspace fact of {user}" not in away
