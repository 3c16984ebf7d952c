"""The write matrix's world (tests/memoryhub/test_write_matrix.py,
tests/mcp_server/test_write_matrix.py): ann's, bob's and shared rows of every kind, colliding on
names, and a snapshot of every row a write may touch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memoryhub.models import Event, Fact, Note, RollingSummary, ScratchpadItem, Session
from retrieval.models import Chunk, Document
from scheduling.models import Schedule

API = "/api/v1"
TARGETS = ("own", "other", "shared", "missing")
SESSIONS = {"own": "trip-2", "other": "trip-1", "shared": "trip-0", "missing": "trip-9"}
NOTES = {"own": "note-2", "other": "note-1", "shared": "note-0", "missing": "note-9"}
OWNERS = {"own": "bob", "other": "ann", "shared": ""}


@dataclass
class World:
    admin: Any
    bob_key: Any
    ids: dict[str, dict[str, Any]]  # kind -> target -> id (facts, documents, schedules)


def build_world(admin: Any) -> dict[str, dict[str, Any]]:
    """ann's, bob's and shared rows of every kind, colliding on names; returns the ids by kind and
    target (facts, documents, schedules) for the ones the API numbers."""
    ids: dict[str, dict[str, Any]] = {"fact": {}, "document": {}, "schedule": {}}
    for target, user in OWNERS.items():
        sid = SESSIONS[target]
        ok(admin.post(f"{API}/sessions/", {"id": sid, "user_id": user}, format="json"))
        ok(
            admin.post(
                f"{API}/sessions/{sid}/events/",
                {"role": "user", "content": f"{user or 'all'}: my home is here"},
                format="json",
            )
        )
        ok(
            admin.put(
                f"{API}/sessions/{sid}/scratchpad/",
                {"items": {"city": user or "all"}},
                format="json",
            )
        )
        ok(
            admin.put(
                f"{API}/sessions/{sid}/summary/", {"text": f"{user or 'all'} talked"}, format="json"
            )
        )
        ok(
            admin.post(
                f"{API}/notes/",
                {"note_id": NOTES[target], "content": f"{user or 'all'} note", "user_id": user},
                format="json",
            )
        )
        fact = ok(
            admin.post(
                f"{API}/facts/",
                {
                    "category": "profile",
                    "key": "home_city",
                    "user_id": user,
                    "content": f"{user or 'all'} lives in town",
                },
                format="json",
            )
        )
        ids["fact"][target] = fact["id"]
        doc = ok(
            admin.post(
                f"{API}/documents/",
                {"source_uri": "kb://home", "text": f"{user or 'all'} home doc", "user_id": user},
                format="json",
            )
        )
        ids["document"][target] = doc["id"]
        schedule = ok(
            admin.post(
                f"{API}/schedules/",
                {
                    "name": "daily-digest",
                    "action": "prune_runs",
                    "user_id": user,
                    "cadence": {"type": "interval", "value": "1h"},
                },
                format="json",
            )
        )
        ids["schedule"][target] = schedule["id"]
    # Ids nobody holds, of the same shape.
    ids["fact"]["missing"] = int(max(ids["fact"].values(), key=int)) + 1000
    ids["document"]["missing"] = max(ids["document"].values()) + 1000
    ids["schedule"]["missing"] = "00000000-0000-4000-8000-000000000000"
    return ids


def ok(response: Any) -> Any:
    assert response.status_code in (200, 201), response.content
    return response.json()


def snapshot() -> set[tuple[Any, ...]]:
    """Every row a write may touch, as (table, owner, …what it holds)."""
    rows: set[tuple[Any, ...]] = set()
    for s in Session.objects.all():
        rows.add(
            ("session", s.user_id, s.external_id, s.title, s.status, s.event_count, s.last_sequence)
        )
    for e in Event.objects.select_related("session"):
        rows.add(("event", e.session.user_id, e.session.external_id, e.sequence, e.content))
    for n in Note.objects.select_related("session"):
        rows.add(
            ("note", n.user_id, n.note_id, n.content, n.session.external_id if n.session else None)
        )
    for f in Fact.objects.all():
        rows.add(("fact", f.user_id, f.pk, f.category, f.key, f.content))
    for d in Document.objects.all():
        rows.add(("document", d.user_id, d.pk, d.source_uri, d.content_hash))
    for i in ScratchpadItem.objects.select_related("scratchpad__session"):
        rows.add(
            (
                "scratchpad",
                i.scratchpad.session.user_id,
                i.scratchpad.session.external_id,
                i.key,
                str(i.value),
            )
        )
    for r in RollingSummary.objects.select_related("session"):
        rows.add(("summary", r.session.user_id, r.session.external_id, r.text, r.epoch))
    for sc in Schedule.objects.all():
        rows.add(("schedule", sc.user_id, str(sc.pk), sc.name, sc.goal, sc.status))
    for c in Chunk.objects.all():
        rows.add(("chunk", c.user_id, c.kind, c.source_id, c.text))
    return rows
