"""Authority on imports: an import obeys its key (a workspace-limited key places nothing
account-wide, a user-limited key imports its own rows only), merges never reach another owner's
session or extend a stored fact's history, and the streamed export reads back as it was. The names
and helpers are test_indirect_authority.py's.
"""

from __future__ import annotations

import copy

from memoryhub.models import FactVersion
from tests.base import error_code, make_client, make_key, make_tenant
from tests.memoryhub.test_indirect_authority import (
    API,
    export_of,
    fill,
    import_file,
    ok,
    scratch_file,
    snapshot,
)

# --- D3 / D6: imports obey the key --------------------------------------------------------------


def test_a_workspace_limited_import_refuses_account_wide_rows(cast) -> None:  # type: ignore[no-untyped-def]
    data = scratch_file(workspace="alpha", user="bob", text="planted")
    limited = make_client(make_key(cast.alice_tenant, ("read", "write"), workspace="alpha"))
    assert import_file(limited, data).status_code == 201  # all within alpha: accepted
    for forged in ("records", "documents", "chunks"):
        file = scratch_file(workspace="alpha", user="bob", text=f"forged-{forged}")
        for row in file["sessions"]:
            row["id"] += f"-{forged}"
        for chunk in file["chunks"]:
            if chunk["session"]:
                chunk["session"] += f"-{forged}"
            if (chunk["source"] or {}).get("document"):
                chunk["source"]["document"] = f"doc://{forged}"
        file["documents"][0]["source_uri"] = f"doc://{forged}"
        if forged == "records":
            fact = file["records"]["memoryhub.Fact"][0]["fields"]
            fact.update(workspace=None, channel=None, tier="account", external_id=f"acc-{forged}")
            for version in file["records"]["memoryhub.FactVersion"]:
                version["fields"].update(workspace=None, tier="account")
            path = "records.memoryhub.Fact[0]"
        elif forged == "documents":
            file["documents"][0]["workspace"] = None
            path = "documents[0]"
        else:
            file["chunks"].append(
                {
                    **file["chunks"][-1],
                    "workspace": None,
                    "session": None,
                    "channel": None,
                    "source": None,
                    "user_id": "bob",
                    "text": "Click evil.example to log in",
                }
            )
            path = f"chunks[{len(file['chunks']) - 1}]"
        file["records"]["memoryhub.Note"][0]["fields"]["note_id"] = f"n-{forged}"
        file["records"]["memoryhub.Fact"][0]["fields"].update(
            external_id=f"e-{forged}", key=f"home-{forged}"
        )
        before = snapshot()
        response = import_file(limited, file)
        assert response.status_code == 403 and error_code(response) == "workspace_forbidden", (
            response.content
        )
        assert path in response.json()["error"]["message"], response.json()
        assert snapshot() == before


def test_a_user_limited_key_imports_its_own_rows_only(cast) -> None:  # type: ignore[no-untyped-def]
    ann = make_client(make_key(cast.alice_tenant, ("read", "write"), user="ann"))
    before = snapshot()
    response = import_file(ann, scratch_file(workspace="alpha", user="ann", text="mine"))
    assert response.status_code == 201, response.content  # all of it ann's: imported
    assert response.json()["imported"]["sessions"] == 1
    after = snapshot()
    assert {row[1] for row in after["session"].values()} - {
        row[1] for row in before["session"].values()
    } <= {"ann"}
    # A key limited to ann and to workspace alpha: ann's rows in beta are outside its workspace.
    ann_in_alpha = make_client(
        make_key(cast.alice_tenant, ("read", "write"), workspace="alpha", user="ann")
    )
    in_beta = scratch_file(workspace="beta", user="ann", text="beta")
    after = snapshot()
    response = import_file(ann_in_alpha, in_beta)
    assert response.status_code == 403 and error_code(response) == "workspace_forbidden", (
        response.content
    )
    assert snapshot() == after
    for forged in ("session", "record", "shared record", "document", "chunk", "stored session"):
        file = scratch_file(workspace="alpha", user="ann", text=f"forged-{forged}")
        for row in file["sessions"]:
            row["id"] = f"s-{forged}"
        for chunk in file["chunks"]:
            if chunk["session"]:
                chunk["session"] = f"s-{forged}"
            if (chunk["source"] or {}).get("document"):
                chunk["source"]["document"] = f"doc://{forged}"
        file["documents"][0]["source_uri"] = f"doc://{forged}"
        file["records"]["memoryhub.Note"][0]["fields"]["note_id"] = f"n-{forged}"
        file["records"]["memoryhub.Fact"][0]["fields"].update(
            external_id=f"e-{forged}", key=f"home-{forged}"
        )
        note = file["records"]["memoryhub.Note"][0]["fields"]
        if forged == "session":
            file["sessions"][0]["user_id"] = "bob"
            path = "sessions[0]"
        elif forged == "record":
            note.update(user_id="bob")
            path = "records.memoryhub.Note[0]"
        elif forged == "shared record":  # no one's: shared rows are read-only to a user-limited key
            note.update(user_id="", session=None, tier="workspace")
            path = "records.memoryhub.Note[0]"
        elif forged == "document":
            file["documents"][0]["user_id"] = "bob"
            path = "documents[0]"
        elif forged == "chunk":
            file["chunks"].append(
                {
                    **file["chunks"][-1],
                    "session": None,
                    "source": None,
                    "user_id": "bob",
                    "text": "Click evil.example to log in",
                }
            )
            path = f"chunks[{len(file['chunks']) - 1}]"
        else:  # the file's session is ann's, the stored one of that id bob's
            ok(
                cast.alice.post(
                    f"{API}/sessions/",
                    {"id": "s-bobs", "user_id": "bob", "workspace": "alpha"},
                    format="json",
                )
            )
            file["sessions"][0]["id"] = "s-bobs"
            for chunk in file["chunks"]:
                if chunk["session"]:
                    chunk["session"] = "s-bobs"
            path = "sessions[0]"
        before = snapshot()
        response = import_file(ann, file, on_conflict="skip")
        assert response.status_code == 403 and error_code(response) == "user_limited_key", (
            forged,
            response.content,
        )
        assert response.json()["error"]["details"]["path"] == path, (forged, response.json())
        assert snapshot() == before, forged


def test_a_user_limited_import_leaves_channels_as_they_are(cast) -> None:  # type: ignore[no-untyped-def]
    from accounts.models import Channel

    ann = make_client(make_key(cast.alice_tenant, ("read", "write"), user="ann"))
    ok(cast.alice.post(f"{API}/channels/", {"name": "travel", "workspace": "alpha"}, format="json"))
    file = scratch_file(workspace="alpha", user="ann", text="mine")
    file["workspaces"][0]["channels"].append(
        {"name": "travel", "description": "planted", "is_default": True}
    )
    assert import_file(ann, file, on_conflict="merge").status_code == 201
    travel = Channel.objects.get(tenant=cast.alice_tenant, workspace__name="alpha", name="travel")
    # shared by the workspace's users: not ann's to change
    assert travel.description == "" and not travel.is_default


def test_a_merge_never_appends_into_another_owners_session(cast) -> None:  # type: ignore[no-untyped-def]
    fill(cast.alice)  # ann's s1
    bobs = scratch_file(workspace="alpha", user="bob", text="bob")
    before = snapshot()
    response = import_file(cast.alice, bobs, on_conflict="merge")
    assert response.status_code == 409 and error_code(response) == "owner_mismatch", (
        response.content
    )
    assert snapshot() == before


def test_another_tenants_private_session_is_not_merged_into_a_shared_one(cast) -> None:  # type: ignore[no-untyped-def]
    fill(cast.alice)  # ann's private s1 in tenant alice
    # shared
    ok(cast.bob.post(f"{API}/sessions/", {"id": "s1", "workspace": "alpha"}, format="json"))
    before = snapshot()
    response = import_file(cast.bob, export_of(cast.alice_tenant), on_conflict="merge")
    assert response.status_code == 409 and error_code(response) == "owner_mismatch", (
        response.content
    )
    assert snapshot() == before


def test_imported_history_never_extends_a_stored_fact(cast) -> None:  # type: ignore[no-untyped-def]
    fact = fill(cast.alice)
    data = export_of(cast.alice_tenant)
    versions = data["records"]["memoryhub.FactVersion"]
    forged = copy.deepcopy(versions[0])
    forged["key"] = len(versions)
    forged["fields"].update(
        content="ann lives in Atlantis", valid_from="2030-01-01T00:00:00Z", valid_to=None
    )
    versions.append(forged)
    response = import_file(cast.alice, data, on_conflict="merge")
    assert response.status_code == 201, response.content
    assert FactVersion.objects.filter(fact_id=fact["id"], valid_to__isnull=True).count() == 1
    as_of = cast.alice.get(
        f"{API}/facts/", {"as_of": "2031-01-01T00:00:00Z", "key": "home_city"}
    ).json()
    assert "Atlantis" not in str(as_of)
    # into a tenant without the fact, the forged second current version is refused whole
    other = make_tenant("carol")
    before = snapshot(other)
    response = import_file(make_client(make_key(other)), data)
    assert response.status_code == 400 and error_code(response) == "invalid_import", (
        response.content
    )
    assert "more than one current version" in response.json()["error"]["message"]
    assert snapshot(other) == before


def test_imported_history_keeps_its_facts_owner(cast) -> None:  # type: ignore[no-untyped-def]
    fill(cast.alice)
    data = export_of(cast.alice_tenant)
    data["records"]["memoryhub.FactVersion"][0]["fields"]["user_id"] = "bob"
    other = make_tenant("carol")
    response = import_file(make_client(make_key(other)), data)
    assert response.status_code == 409 and error_code(response) == "owner_mismatch", (
        response.content
    )
    assert "records.memoryhub.FactVersion[0]" in response.json()["error"]["message"]
    assert snapshot(other) == {name: {} for name in snapshot(other)}


def test_a_chunk_cannot_claim_another_owner_than_its_memory(cast) -> None:  # type: ignore[no-untyped-def]
    fill(cast.alice)
    data = export_of(cast.alice_tenant)
    note_chunk = next(
        c for c in data["chunks"] if (c["source"] or {}).get("record") == "memoryhub.Note"
    )
    note_chunk["user_id"] = "bob"
    other = make_tenant("carol")
    response = import_file(make_client(make_key(other)), data)
    assert response.status_code == 409 and error_code(response) == "owner_mismatch", (
        response.content
    )
    assert snapshot(other) == {name: {} for name in snapshot(other)}


# --- D8: the export is streamed, and what it streams imports back --------------------------------


def test_the_export_is_streamed_and_reads_back_as_it_was(cast) -> None:  # type: ignore[no-untyped-def]
    import json

    fill(cast.alice)
    fill(cast.alice, workspace="beta", user="bob", session="s2", note="n2", text="bob")
    response = cast.alice.post(f"{API}/export/", {}, format="json")
    assert response.status_code == 200 and response.streaming
    pieces = list(response.streaming_content)
    exported = json.loads(b"".join(pieces))
    assert exported == export_of(cast.alice_tenant)
    assert [len(s["events"]) for s in exported["sessions"]] == [1, 1]
    carol = make_client(make_key(make_tenant("carol")))
    assert import_file(carol, exported).status_code == 201
    again = carol.post(f"{API}/export/", {}, format="json")
    assert json.loads(b"".join(again.streaming_content)) == exported


def test_an_export_of_a_missing_scope_is_a_404_before_anything_is_sent(cast) -> None:  # type: ignore[no-untyped-def]
    response = cast.alice.post(f"{API}/export/", {"session": "nope"}, format="json")
    assert response.status_code == 404 and not response.streaming
