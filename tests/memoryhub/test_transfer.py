"""POST /api/v1/export/ and /import/, manage.py export_memory / import_memory
(docs/memory-model.md#export-and-import)."""

from __future__ import annotations

import copy
import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from memoryhub.models import Event, Session
from retrieval.models import Chunk
from tests.base import (
    error_code,
    make_client,
    make_key,
    make_tenant,
    search_texts,
)


def export(client: Any, **body: Any) -> dict[str, Any]:
    response = client.post("/api/v1/export/", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def import_(client: Any, data: Any, captured: Any) -> Any:
    raw = data if isinstance(data, (bytes, str)) else json.dumps(data)
    with captured(execute=True):
        return client.post("/api/v1/import/", raw, content_type="application/json")


def test_export_import_export_round_trips_exactly(
    filled, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    first = export(filled.alice)
    assert first["schema_version"] == 1 and first["scope"] == {"type": "tenant"}
    assert [s["id"] for s in first["sessions"]] == ["chat-1", "chat-2"]
    assert first["sessions"][0]["rolling_summary"]["text"] == "Trip to Lisbon."
    assert first["sessions"][0]["events"][1]["tool_args"] == {"to": "LIS"}
    assert any(c["tags"] == ["travel"] for c in first["chunks"])
    assert all(c["embedding"] and len(c["embedding"]) == 384 for c in first["chunks"])
    assert any(c["access_count"] > 0 for c in first["chunks"])
    assert any(c["metadata"].get("pinned") for c in first["chunks"])
    assert [d["source_uri"] for d in first["documents"]] == ["file://notes.txt"]
    records = first["records"]
    assert [r["fields"]["content"] for r in records["memoryhub.Note"]] == ["Note: u1 likes quinces"]
    [fact] = records["memoryhub.Fact"]
    assert fact["fields"]["source_session"] == "chat-1" and fact["fields"]["tags"] == [
        "fruit",
        "food",
    ]
    assert "scope_key" not in fact["fields"]  # derived by the model, holds ids
    nodes = records["memoryhub.SummaryNode"]
    assert [n["fields"]["parent"] for n in nodes] == [{"key": 2}, {"key": 2}, None]
    assert records["memoryhub.ScratchpadItem"][0]["fields"]["scratchpad"] == {"key": 0}
    assert {c["kind"] for c in first["chunks"]} == {"event", "document", "note", "fact", "summary"}
    assert "fact_id" not in json.dumps(first["chunks"])  # ids are rebuilt on import, never exported

    carol = make_client(make_key(make_tenant("carol")))
    response = import_(carol, first, django_capture_on_commit_callbacks)
    assert response.status_code == 201, response.content
    counts = response.json()["imported"]
    assert (
        counts["sessions"] == 2
        and counts["events"] == 3
        and counts["chunks"] == len(first["chunks"])
    )
    assert counts["memoryhub.SummaryNode"] == 3 and counts["memoryhub.Fact"] == 1

    second = export(carol)
    assert second == first
    from memoryhub.models import Fact, SummaryNode

    carol_fact = Fact.objects.get(tenant__name="carol")
    assert carol_fact.scope_key == f"workspace:{carol_fact.workspace_id}"
    assert Chunk.objects.get(tenant__name="carol", kind="fact").metadata["fact_id"] == carol_fact.pk
    branch = SummaryNode.objects.get(tenant__name="carol", level="branch")
    assert SummaryNode.objects.filter(parent=branch).count() == 2
    assert "u1 prefers quinces to pears" in search_texts(carol, "quinces pears")
    # The imported memory is live: searchable, browsable, restorable.
    assert "Book a flight to Lisbon in May" in search_texts(carol, "Lisbon flight")
    assert carol.get("/api/v1/sessions/chat-1/events/").json()["count"] == 2
    # too small for both messages
    restored = carol.get("/api/v1/sessions/chat-1/restore/", {"budget": 20})
    assert restored.status_code == 200 and "Trip to Lisbon." in json.dumps(restored.json())


def test_workspace_and_session_exports_hold_only_their_part(filled) -> None:  # type: ignore[no-untyped-def]
    research = export(filled.alice, workspace="research")
    assert research["scope"] == {"type": "workspace", "workspace": "research"}
    assert [s["id"] for s in research["sessions"]] == ["chat-2"]
    assert [w["name"] for w in research["workspaces"]] == ["research"]
    assert {c["session"] for c in research["chunks"]} == {"chat-2"}
    assert research["documents"] == []
    one = export(filled.alice, session="chat-1")
    assert [s["id"] for s in one["sessions"]] == ["chat-1"]
    # The session's own memories (summary tree, scratchpad and its items), not the workspace's
    # notes.
    assert set(one["records"]) == {
        "memoryhub.SummaryNode",
        "memoryhub.Scratchpad",
        "memoryhub.ScratchpadItem",
    }
    assert {c["session"] for c in one["chunks"]} == {"chat-1"}


def test_import_without_chunks_reindexes_and_missing_embeddings_are_recomputed(
    filled, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    data = export(filled.alice, session="chat-1")
    no_chunks = {k: v for k, v in data.items() if k != "chunks"}
    dave = make_client(make_key(make_tenant("dave")))
    assert import_(dave, no_chunks, django_capture_on_commit_callbacks).status_code == 201
    assert "Book a flight to Lisbon in May" in search_texts(dave, "Lisbon flight", mode="vector")

    stripped = copy.deepcopy(data)
    for chunk in stripped["chunks"]:
        chunk["embedding"], chunk["embedding_model"] = None, ""
    erin_tenant = make_tenant("erin")
    erin = make_client(make_key(erin_tenant))
    assert import_(erin, stripped, django_capture_on_commit_callbacks).status_code == 201
    assert not Chunk.objects.filter(tenant=erin_tenant, embedding__isnull=True).exists()

    # Recomputed embeddings are the same vectors; only the time of indexing is new.
    def without_indexed_at(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in c.items() if k != "indexed_at"} for c in chunks]

    assert without_indexed_at(export(erin, session="chat-1")["chunks"]) == without_indexed_at(
        data["chunks"]
    )


@pytest.mark.parametrize(
    "mutate, status, code",
    [
        (lambda d: b'{"format": "memoryhub-export", "schema_ver', 400, "malformed_json"),
        (lambda d: {**d, "format": "other"}, 400, "invalid_import"),
        (lambda d: {**d, "schema_version": 99}, 400, "unsupported_schema_version"),
        (lambda d: {k: v for k, v in d.items() if k != "sessions"}, 400, "invalid_import"),
        (lambda d: [d], 400, "invalid_import"),
    ],
)
def test_bad_files_are_refused_and_nothing_is_stored(
    filled, django_capture_on_commit_callbacks, mutate, status, code
) -> None:  # type: ignore[no-untyped-def]
    data = export(filled.alice)
    tenant = make_tenant("frank")
    client = make_client(make_key(tenant))
    response = import_(client, mutate(data), django_capture_on_commit_callbacks)
    assert response.status_code == status, response.content
    assert error_code(response) == code
    assert not Session.objects.filter(tenant=tenant).exists()


def test_a_partial_file_imports_nothing(filled, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    data = export(filled.alice)
    del data["sessions"][1]["events"][0]["role"]  # the second session is broken
    tenant = make_tenant("gina")
    response = import_(make_client(make_key(tenant)), data, django_capture_on_commit_callbacks)
    assert response.status_code == 400 and error_code(response) == "invalid_import"
    assert "sessions[1].events[0]" in response.json()["error"]["message"]
    assert not Session.objects.filter(tenant=tenant).exists()
    assert not Event.objects.filter(tenant=tenant).exists()
    assert not Chunk.objects.filter(tenant=tenant).exists()

    data = export(filled.alice)
    data["chunks"][0]["embedding"] = [0.1, 0.2]
    response = import_(make_client(make_key(tenant)), data, django_capture_on_commit_callbacks)
    assert response.status_code == 400 and "embedding" in response.json()["error"]["message"]
    assert not Session.objects.filter(tenant=tenant).exists()


def test_importing_over_existing_sessions_conflicts(
    filled, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    data = export(filled.alice)
    before = Event.objects.filter(tenant=filled.alice_tenant).count()
    response = import_(filled.alice, data, django_capture_on_commit_callbacks)
    assert response.status_code == 409 and error_code(response) == "session_exists"
    assert Event.objects.filter(tenant=filled.alice_tenant).count() == before


def test_export_is_confined_to_the_key(filled) -> None:  # type: ignore[no-untyped-def]
    bob = filled.bob
    assert bob.post("/api/v1/export/", {"session": "chat-1"}, format="json").status_code == 404
    assert bob.post("/api/v1/export/", {"workspace": "research"}, format="json").status_code == 404
    mine = export(bob)
    assert mine["sessions"] == [] and mine["chunks"] == [] and mine["documents"] == []
    limited = make_client(make_key(filled.alice_tenant, workspace="research"))
    response = limited.post("/api/v1/export/", {}, format="json")
    assert response.status_code == 403 and error_code(response) == "workspace_limited_key"
    assert [s["id"] for s in export(limited, workspace="research")["sessions"]] == ["chat-2"]
    response = limited.post("/api/v1/export/", {"workspace": "default"}, format="json")
    assert response.status_code == 403
    response = filled.alice.post("/api/v1/export/", {"bogus": 1}, format="json")
    assert response.status_code == 400 and error_code(response) == "unknown_field"


def test_import_needs_write_scope_and_respects_a_workspace_limit(
    filled, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    data = export(filled.alice)
    tenant = make_tenant("hank")
    reader = make_client(make_key(tenant, scopes=("read",)))
    assert import_(reader, data, django_capture_on_commit_callbacks).status_code == 403
    limited = make_client(make_key(tenant, scopes=("write",), workspace="research"))
    response = import_(limited, data, django_capture_on_commit_callbacks)
    assert response.status_code == 403 and error_code(response) == "workspace_forbidden"
    assert not Session.objects.filter(tenant=tenant).exists()


def test_commands_round_trip(filled, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "alice.json"
    call_command("export_memory", "--tenant", "alice", "--output", str(path), stderr=StringIO())
    out = StringIO()
    call_command("import_memory", str(path), "--tenant", "ivy", stdout=out)
    assert json.loads(out.getvalue())["imported"]["sessions"] == 2
    again = StringIO()
    call_command("export_memory", "--tenant", "ivy", stdout=again)
    assert json.loads(again.getvalue()) == json.loads(path.read_text())
    with pytest.raises(CommandError, match="session_exists"):
        call_command("import_memory", str(path), "--tenant", "ivy", stdout=StringIO())


def test_a_value_the_database_cannot_hold_is_a_400(
    filled, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    data = export(filled.alice)
    data["sessions"][0]["events"][1]["tool_name"] = "x" * 500  # the column holds 200
    tenant = make_tenant("jill")
    response = import_(make_client(make_key(tenant)), data, django_capture_on_commit_callbacks)
    assert response.status_code == 400 and error_code(response) == "invalid_import"
    assert not Session.objects.filter(tenant=tenant).exists()


def test_bob_importing_alices_export_touches_only_bob(
    filled, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    data = export(filled.alice)
    alice_before = export(filled.alice)
    response = import_(filled.bob, data, django_capture_on_commit_callbacks)
    # same session ids, another tenant: no clash
    assert response.status_code == 201, response.content
    assert export(filled.alice) == alice_before
    assert [s["id"] for s in export(filled.bob)["sessions"]] == ["chat-1", "chat-2"]
    assert Session.objects.filter(external_id="chat-1").count() == 2


@pytest.mark.django_db
def test_imported_chunks_know_how_many_chunks_their_message_has(
    django_capture_on_commit_callbacks,
) -> None:
    """A long message's chunks come from the file, not from indexing: they are counted after."""
    from tests.base import post_events

    frank = make_client(make_key(make_tenant("frank")))
    long_text = " ".join(f"Sentence {i} is about item {i}." for i in range(120))
    assert (
        post_events(
            frank, "s", {"role": "user", "content": long_text}, {"role": "user", "content": "short"}
        ).status_code
        == 201
    )
    gina = make_client(make_key(make_tenant("gina")))
    assert import_(gina, export(frank), django_capture_on_commit_callbacks).status_code == 201

    def parts(tenant: str) -> list[tuple[int, int]]:
        return sorted(
            Chunk.objects.filter(tenant__name=tenant, kind="event").values_list(
                "sequence_start", "message_chunks"
            )
        )

    assert (
        parts("gina") == parts("frank")
        and parts("frank")[-1] == (2, 1)
        and parts("frank")[0][1] > 3
    )
