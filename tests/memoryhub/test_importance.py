"""Importance by type (docs/memory-model.md#importance) when the client gives none: correction 0.9,
preference 0.8, fact 0.6, task 0.5, otherwise 0.5; a given importance always wins."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("category", "expected"),
    [
        ("correction", 0.9),
        ("preference", 0.8),
        ("fact", 0.6),
        ("task", 0.5),
        ("general", 0.5),
        ("Preference", 0.8),
    ],
)
def test_a_fact_without_importance_gets_its_categorys(alice, category, expected) -> None:
    body = alice.post(
        "/api/v1/facts/", {"content": "x", "category": category}, format="json"
    ).json()
    assert body["importance"] == expected


def test_a_given_importance_wins_and_an_upsert_without_one_keeps_it(alice) -> None:
    first = alice.post(
        "/api/v1/facts/",
        {"content": "tea", "category": "preference", "key": "drink", "importance": 0.2},
        format="json",
    ).json()
    assert first["importance"] == 0.2
    again = alice.post(
        "/api/v1/facts/",
        {"content": "coffee", "category": "preference", "key": "drink"},
        format="json",
    ).json()
    assert (
        again["id"] == first["id"] and again["content"] == "coffee" and again["importance"] == 0.2
    )


def test_a_note_takes_the_importance_of_its_tagged_type(alice) -> None:
    assert (
        alice.post(
            "/api/v1/notes/",
            {"content": "no, it is Tuesday", "tags": ["correction"]},
            format="json",
        ).json()["importance"]
        == 0.9
    )
    assert (
        alice.post(
            "/api/v1/notes/", {"content": "buy milk", "tags": ["task", "home"]}, format="json"
        ).json()["importance"]
        == 0.5
    )
    assert (
        alice.post("/api/v1/notes/", {"content": "plain"}, format="json").json()["importance"]
        == 0.5
    )
    assert (
        alice.post(
            "/api/v1/notes/",
            {"content": "given", "tags": ["correction"], "importance": 0.1},
            format="json",
        ).json()["importance"]
        == 0.1
    )
