"""A fact by the client's own id through both clients: the ?external_id= filter, get, update,
delete."""

from __future__ import annotations

from typing import Any


def test_a_fact_by_its_client_id(hub: Any, keys: dict[str, str]) -> None:
    alice = hub(keys["alice"])
    fact = alice.upsert_fact(
        "Prefers aisle seats.", category="travel", key="seat", external_id="pref-seat"
    )
    alice.upsert_fact("Likes jazz.", category="taste", key="music", external_id="music")
    assert [f["id"] for f in alice.list_facts(external_id="pref-seat")] == [fact["id"]]
    assert alice.get_fact_by_external_id("pref-seat")["id"] == fact["id"]
    changed = alice.update_fact_by_external_id("pref-seat", content="Prefers window seats.")
    assert changed["id"] == fact["id"] and changed["content"] == "Prefers window seats."
    assert alice.delete_fact_by_external_id("pref-seat")["deleted"] is True
    assert list(alice.list_facts(external_id="pref-seat")) == []
    assert [f["key"] for f in alice.list_facts()] == ["music"]
