"""POST /search/ with mode "regex": exact patterns over chunk text, in the same scope and
ownership as every mode, newest first, and bounded: a bad pattern is 400 invalid_regex, a slow one
is cut by statement_timeout and answers regex_timeout, never a 500 or a stuck request."""

from __future__ import annotations

import random
from typing import Any

import pytest
from django.db import connection

from tests.base import error_code, make_client, make_key
from tests.retrieval.conftest import search


def texts(response: Any) -> list[str]:
    assert response.status_code == 200, response.content
    return [r["text"] for r in response.json()["results"]]


@pytest.fixture
def billing(alice, index) -> None:
    index(
        alice,
        "billing",
        {"role": "user", "content": "Invoice INV-1042 went to ops@zetacorp.io on Monday."},
        {"role": "assistant", "content": "Noted: INV-77 is a draft, not sent."},
        {"role": "user", "content": "Resend inv-2001 to OPS@ZETACORP.IO please."},
        {"role": "user", "content": "ops@zetacorpXio is a typo, not an address."},
    )


def test_regex_finds_exact_patterns_newest_first(alice, billing) -> None:
    assert texts(search(alice, query=r"INV-\d{4}", mode="regex")) == [
        "Resend inv-2001 to OPS@ZETACORP.IO please.",
        "Invoice INV-1042 went to ops@zetacorp.io on Monday.",
    ]
    # The escaped dot matches only a dot: the typo with an X in its place is not found.
    assert texts(search(alice, query=r"ops@zetacorp\.io", mode="regex")) == [
        "Resend inv-2001 to OPS@ZETACORP.IO please.",
        "Invoice INV-1042 went to ops@zetacorp.io on Monday.",
    ]
    body = search(alice, query=r"INV-\d{4}", mode="regex").json()
    assert body["mode"] == "regex"
    assert [r["score"] for r in body["results"]] == [1.0, 1.0]


def test_case_sensitive_flag(alice, billing) -> None:
    assert texts(search(alice, query=r"INV-\d{4}", mode="regex", case_sensitive=True)) == [
        "Invoice INV-1042 went to ops@zetacorp.io on Monday."
    ]
    assert texts(search(alice, query=r"OPS@", mode="regex", case_sensitive=True)) == [
        "Resend inv-2001 to OPS@ZETACORP.IO please."
    ]
    # exact mode honours the flag too (LIKE instead of ILIKE).
    assert texts(search(alice, query="inv-2001", mode="exact", case_sensitive=True)) == [
        "Resend inv-2001 to OPS@ZETACORP.IO please."
    ]
    assert texts(search(alice, query="INV-2001", mode="exact", case_sensitive=True)) == []


def test_regex_honours_filters_and_time_range(alice, billing) -> None:
    assert texts(search(alice, query=r"INV-\d+", mode="regex", roles=["assistant"])) == [
        "Noted: INV-77 is a draft, not sent."
    ]
    assert texts(search(alice, query=r"INV-\d+", mode="regex", top_k=1)) == [
        "Resend inv-2001 to OPS@ZETACORP.IO please."
    ]
    assert texts(search(alice, query=r"INV-\d+", mode="regex", since="2999-01-01T00:00:00Z")) == []


def test_regex_is_confined_to_the_tenant_workspace_and_user(alice, bob, index, cast) -> None:
    index(alice, "a", {"role": "user", "content": "alice code ZX-9001"})
    index(bob, "a", {"role": "user", "content": "bob code ZX-9002"})
    assert texts(search(bob, query=r"ZX-\d{4}", mode="regex")) == ["bob code ZX-9002"]
    assert texts(search(bob, query=r"ZX-\d{4}", mode="regex", session="a", scope="account")) == [
        "bob code ZX-9002"
    ]
    alice.post("/api/v1/sessions/", {"id": "in-proj", "workspace": "proj"}, format="json")
    index(alice, "in-proj", {"role": "user", "content": "proj code ZX-9003"})
    limited = make_client(make_key(cast.alice_tenant, ("read",), workspace="proj"))
    assert texts(search(limited, query=r"ZX-\d{4}", mode="regex")) == ["proj code ZX-9003"]
    for sid, user in (("ann-chat", "ann"), ("ben-chat", "ben")):
        alice.post("/api/v1/sessions/", {"id": sid, "user_id": user}, format="json")
        index(alice, sid, {"role": "user", "content": f"{user} code ZX-{len(user)}77{sid[0]}"})
    found = texts(search(alice, query=r"ZX-\d", mode="regex", user_id="ann", top_k=50))
    assert "ann code ZX-377a" in found and not any(t.startswith("ben") for t in found)
    # A conversation nobody owns is the tenant's: in no user's search, in the tenant-wide one.
    assert "alice code ZX-9001" not in found
    assert "alice code ZX-9001" in texts(search(alice, query=r"ZX-\d", mode="regex", top_k=50))
    found = texts(
        search(alice, query=r"ZX-\d", mode="regex", session="ben-chat", scope="account", top_k=50)
    )
    assert "ben code ZX-377b" in found and "ann code ZX-377a" not in found
    ann_key = make_client(make_key(cast.alice_tenant, ("read",), user="ann"))
    assert "ben code ZX-377b" not in texts(search(ann_key, query=r"ZX-\d", mode="regex", top_k=50))


@pytest.mark.parametrize("pattern", ["(unclosed", "a{3,1}", "[z-a]", "*", "x\\"])
def test_a_pattern_that_does_not_compile_is_invalid_regex(alice, billing, pattern: str) -> None:
    response = search(alice, query=pattern, mode="regex")
    assert response.status_code == 400, response.content
    assert error_code(response) == "invalid_regex"


def test_invalid_pattern_is_refused_even_with_nothing_in_scope(alice) -> None:
    # PostgreSQL compiles a pattern when it first meets a row; the search compiles it first.
    response = search(alice, query="(unclosed", mode="regex")
    assert response.status_code == 400 and error_code(response) == "invalid_regex"


def test_pattern_length_and_presence(alice, billing, settings, monkeypatch) -> None:
    monkeypatch.setattr("retrieval.search.request.REGEX_MAX_LENGTH", 8)
    response = search(alice, query="a" * 9, mode="regex")
    assert response.status_code == 400 and error_code(response) == "invalid_regex"
    assert response.json()["error"]["details"]["max_length"] == 8
    assert len(texts(search(alice, query=r"INV-\d+", mode="regex"))) == 3  # 7 characters: accepted
    response = search(alice, query="   ", mode="regex")
    assert response.status_code == 400 and error_code(response) == "query_required"


def _noise(length: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice("abcdefghij ") for _ in range(length)) + " x"


def test_a_pathological_pattern_is_cut_by_the_timeout(alice, index, settings, monkeypatch) -> None:
    """Back-references make PostgreSQL's matcher backtrack: this pattern takes far longer than 10 s
    over a 500-character row (measured); statement_timeout cancels it inside the match."""
    monkeypatch.setattr("retrieval.search.regex.TIMEOUT_MS", 300)
    index(
        alice,
        "logs",
        *[{"role": "tool", "content": _noise(600, seed)} for seed in range(3)],
        {"role": "user", "content": "after the storm"},
    )
    response = search(alice, query=r"(.*)(.*)(.*)\3\2\1x", mode="regex")
    assert response.status_code == 400, response.content
    assert error_code(response) == "regex_timeout"
    assert response.json()["error"]["details"] == {"timeout_ms": 300}
    # The request's transaction and the connection go on: the timeout was local to the scan.
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] != "300ms"
    assert texts(search(alice, query=r"st[o]rm$", mode="regex")) == ["after the storm"]
