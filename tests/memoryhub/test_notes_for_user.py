"""GET /notes/?for_user=: the notes one end user may read (theirs and the shared ones), confined on
the server, so a client acting for that user with a tenant-wide key never receives another's."""

from __future__ import annotations

from tests.base import error_code, make_client, make_key


def put(client, note_id: str, user: str) -> None:  # type: ignore[no-untyped-def]
    response = client.put(
        f"/api/v1/notes/{note_id}/", {"content": f"{note_id} text", "user_id": user}, format="json"
    )
    assert response.status_code in (200, 201), response.content


def test_for_user_lists_their_notes_and_the_shared_ones(alice, cast) -> None:
    put(alice, "ann-1", "ann")
    put(alice, "bob-1", "bob")
    put(alice, "team-1", "")
    listed = alice.get("/api/v1/notes/", {"for_user": "ann"}).json()["results"]
    assert sorted(n["note_id"] for n in listed) == ["ann-1", "team-1"]
    assert [
        n["note_id"] for n in alice.get("/api/v1/notes/", {"user_id": "ann"}).json()["results"]
    ] == ["ann-1"]
    # A key limited to bob asking for ann's reads gets only what it may read itself: the shared
    # note.
    bob = make_client(make_key(cast.alice_tenant, user="bob"))
    assert [
        n["note_id"] for n in bob.get("/api/v1/notes/", {"for_user": "ann"}).json()["results"]
    ] == ["team-1"]
    assert error_code(alice.get("/api/v1/notes/", {"for_user": "x" * 201})) == "invalid_parameter"
