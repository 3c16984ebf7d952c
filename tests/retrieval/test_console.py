"""The operator console's retrieval pages (test client): the memory explorer with the real search,
pin / forget from it, the context preview, the consolidation preview and per-memory reviews."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pytest

from memoryhub.models import Fact, Note, Session
from memoryhub.plumbing import counters
from retrieval.lifecycle.models import ArchivedMemory, ConsolidationReport, PendingDeletion
from retrieval.models import Chunk
from tests.base import Cast, remember

EXPLORER = "/admin/console/explorer/"


@pytest.fixture
def memories(cast: Cast, index: Any) -> dict[str, Any]:
    """Alice's tenant: dana's conversation and fact, eli's fact, a shared note."""
    index(
        cast.alice,
        "dana-chat",
        {"role": "user", "content": "I joined a support group for new parents."},
        {"role": "assistant", "content": "That sounds like a good place to share."},
    )
    session = Session.objects.get(external_id="dana-chat")
    Session.objects.filter(pk=session.pk).update(user_id="dana")
    Chunk.objects.filter(session=session).update(user_id="dana")
    where = {"tenant": cast.alice_tenant, "workspace_id": session.workspace_id}
    fact = remember(
        Fact.objects.create(
            **where,
            user_id="dana",
            category="family",
            key="kids",
            content="Dana has two daughters",
            tags=["family"],
            source="extractor",
        )
    )
    other = remember(
        Fact.objects.create(**where, user_id="eli", content="Eli keeps bees on the roof")
    )
    note = remember(
        Note.objects.create(**where, content="The office closes on public holidays", source="agent")
    )
    return {"session": session, "fact": fact, "other": other, "note": note}


def explore(staff_client: Any, cast: Cast, **params: Any) -> Any:
    response = staff_client.get(EXPLORER, {"tenant": cast.alice_tenant.pk, **params})
    assert response.status_code == 200, response.content[:500]
    return response


def test_tenant_then_end_users_with_what_they_own(staff_client, cast, memories) -> None:
    assert b"alice" in staff_client.get(EXPLORER).content
    users = {u["user_id"]: u for u in explore(staff_client, cast).context["users"]}
    assert set(users) == {"", "dana", "eli"}  # "" is shared
    assert (
        users["dana"]["sessions"] == 1
        and users["dana"]["facts"] == 1
        and users["eli"]["facts"] == 1
    )
    assert users[""]["notes"] == 1
    assert [u["user_id"] for u in explore(staff_client, cast, find="dan").context["users"]] == [
        "dana"
    ]


def test_a_user_page_lists_only_what_they_own(staff_client, cast, memories) -> None:
    lists = dict(explore(staff_client, cast, user="dana").context["lists"])
    assert [r.text for r in lists["Facts"]] == ["Dana has two daughters"]
    assert [r.extra.split(" · ")[0] for r in lists["Sessions (conversations)"]] == ["dana-chat"]
    assert lists["Notes"] == []
    shared = dict(explore(staff_client, cast, user="").context["lists"])
    assert [r.text for r in shared["Notes"]] == ["The office closes on public holidays"]
    only_facts = explore(
        staff_client, cast, user="dana", kinds="fact", tags="family", source="extractor"
    )
    assert [title for title, _ in only_facts.context["lists"]] == ["Facts"]
    assert len(dict(only_facts.context["lists"])["Facts"]) == 1
    none = explore(staff_client, cast, user="dana", kinds="fact", source="agent")
    assert dict(none.context["lists"])["Facts"] == []


def test_the_header_still_names_the_operator_on_an_end_users_pages(
    staff_client, cast, memories
) -> None:
    # The end user once took the template's "user", which the admin's header reads as the operator:
    # it said "Welcome, ." and dropped "Change password".
    pages = [
        explore(staff_client, cast, user="dana", q="support group"),
        staff_client.get(
            "/admin/console/context/",
            {"tenant": cast.alice_tenant.pk, "user_id": "dana", "query": "support group"},
        ),
    ]
    for page in pages:
        html = page.content.decode()
        assert "<strong>op</strong>" in html and "Change password" in html
    assert "end user dana" in pages[1].content.decode()
    explorer = pages[0].content.decode()
    assert (
        "A search for dana sees" in explorer
        and "user_id=dana&amp;query=support%20group" in explorer
    )


def test_search_runs_the_real_search_with_the_users_ownership_rule(
    staff_client, cast, memories
) -> None:
    results = explore(staff_client, cast, user="dana", q="support group").context["results"]
    texts = [r.chunk.text for r in results]
    assert texts[0] == "I joined a support group for new parents."
    top = results[0]
    assert top.vector is not None and top.text and "group" in top.words and "support" in top.words
    assert any(reason.startswith("meaning:") for reason in top.reasons)
    assert any("“support”" in reason for reason in top.reasons)
    assert any(reason.startswith("recency: written") for reason in top.reasons)
    assert top.link and "transcript" in top.link[0]
    # Why it ranked is the search's explain data, as POST /search/ returns it with "explain": true.
    rest = cast.alice.post(
        "/api/v1/search/",
        {"query": "support group", "user_id": "dana", "top_k": 20, "explain": True},
        format="json",
    ).json()["results"]
    assert [r.explain for r in results] == [r["explain"] for r in rest][: len(results)]
    assert top.explain["rank"] == 1 and any(
        reason.startswith("score: 0.70 × meaning") for reason in top.reasons
    )
    assert top.reasons[-1] == f"final: rank 1, score {top.score:.4f}"
    # Eli's fact is never in dana's view; shared memories are.
    assert "Eli keeps bees on the roof" not in [
        r.chunk.text
        for r in explore(staff_client, cast, user="dana", q="bees roof").context["results"]
    ]
    eli = [
        r.chunk.text
        for r in explore(staff_client, cast, user="eli", q="bees roof").context["results"]
    ]
    assert eli[0] == "Eli keeps bees on the roof"
    assert "The office closes on public holidays" in [
        r.chunk.text
        for r in explore(staff_client, cast, user="dana", q="office holidays").context["results"]
    ]


def test_search_filters_and_no_reinforcement(staff_client, cast, memories) -> None:
    facts_only = explore(
        staff_client, cast, user="dana", q="daughters support group", kinds="fact"
    ).context["results"]
    assert [r.chunk.kind for r in facts_only] == ["fact"]
    assert (
        explore(staff_client, cast, user="dana", q="support group", tiers="account").context[
            "results"
        ]
        == []
    )
    before = list(Chunk.objects.with_access().order_by("pk").values_list("access_count", flat=True))
    explore(staff_client, cast, user="dana", q="support group", profile="memory")
    assert (
        list(Chunk.objects.with_access().order_by("pk").values_list("access_count", flat=True))
        == before
    )
    bad = explore(staff_client, cast, user="dana", q="x", since="2026-05-02", until="2026-05-01")
    assert bad.context["form"].errors["until"]


def test_bob_never_sees_alice_through_the_explorer(staff_client, cast, memories) -> None:
    response = staff_client.get(
        EXPLORER, {"tenant": cast.bob_tenant.pk, "user": "dana", "q": "support group"}
    )
    assert response.context["results"] == []
    assert all(rows == [] for _, rows in response.context["lists"])


def test_pin_and_unpin_from_the_explorer(staff_client, cast, memories) -> None:
    fact = memories["fact"]
    chunk_ids = ",".join(
        str(pk)
        for pk in Chunk.objects.filter(kind="fact", source_id=str(fact.pk)).values_list(
            "pk", flat=True
        )
    )
    back = f"{EXPLORER}?tenant={cast.alice_tenant.pk}&user=dana"
    response = staff_client.post(
        "/admin/console/explorer/pin/",
        {"tenant": cast.alice_tenant.pk, "chunks": chunk_ids, "op": "pin", "next": back},
    )
    assert response.status_code == 302 and response["Location"] == back
    fact.refresh_from_db()
    assert fact.pinned and fact.importance == 1.0
    # Pinning re-derives the fact's search entries: the page shows their new ids.
    chunk_ids = ",".join(
        str(pk)
        for pk in Chunk.objects.filter(kind="fact", source_id=str(fact.pk)).values_list(
            "pk", flat=True
        )
    )
    staff_client.post(
        "/admin/console/explorer/pin/",
        {"tenant": cast.alice_tenant.pk, "chunks": chunk_ids, "op": "unpin"},
    )
    fact.refresh_from_db()
    assert not fact.pinned and fact.importance == 0.5
    # Another tenant's memory named by id is not touched.
    bob_says = staff_client.post(
        "/admin/console/explorer/pin/", {"tenant": cast.bob_tenant.pk, "chunks": chunk_ids}
    )
    assert bob_says.status_code == 302
    fact.refresh_from_db()
    assert not fact.pinned
    assert staff_client.get("/admin/console/explorer/pin/").status_code == 405


def test_forget_asks_first_lists_the_text_then_archives(staff_client, cast, memories) -> None:
    fact = memories["fact"]
    ids = ",".join(
        str(pk)
        for pk in Chunk.objects.filter(kind="fact", source_id=str(fact.pk)).values_list(
            "pk", flat=True
        )
    )
    page = staff_client.get(
        "/admin/console/explorer/forget/", {"tenant": cast.alice_tenant.pk, "chunks": ids}
    )
    assert page.status_code == 200 and b"Dana has two daughters" in page.content
    assert Fact.objects.filter(pk=fact.pk).exists()  # nothing happens on the confirmation page
    done = staff_client.post(
        "/admin/console/explorer/forget/",
        {"tenant": cast.alice_tenant.pk, "chunks": ids, "confirm": "yes"},
    )
    assert done.status_code == 302
    assert not Fact.objects.filter(pk=fact.pk).exists()
    archived = ArchivedMemory.objects.get(reason="forget")
    assert archived.text == "Dana has two daughters" and archived.kind == "fact"
    assert (
        b"Nothing found"
        in explore(staff_client, cast, user="dana", q="daughters", kinds="fact").content
    )
    assert (
        staff_client.post(
            "/admin/console/explorer/forget/", {"tenant": "", "chunks": ids}
        ).status_code
        == 400
    )


def test_editing_at_the_source_returns_to_the_explorer_and_search_follows(
    staff_client, cast, memories
) -> None:
    fact = memories["fact"]
    back = f"{EXPLORER}?tenant={cast.alice_tenant.pk}&user=dana&q=daughters"
    url = f"/admin/memoryhub/fact/{fact.pk}/change/?{urlencode({'next': back})}"
    form = staff_client.get(url).context["adminform"].form
    data = {k: v for k, v in form.initial.items() if v is not None and k in form.fields}
    data.update(
        content="Dana has three sons",
        tags="family",
        tenant=cast.alice_tenant.pk,
        workspace=fact.workspace_id,
        importance="0.5",
    )
    data = {k: ",".join(v) if isinstance(v, list) else v for k, v in data.items()}
    response = staff_client.post(url, data)
    assert response.status_code == 302 and response["Location"] == back
    found = [
        r.chunk.text
        for r in explore(staff_client, cast, user="dana", q="sons", kinds="fact").context["results"]
    ]
    assert found == ["Dana has three sons"]


def test_an_importance_out_of_range_is_said_in_words(staff_client, cast, memories) -> None:
    fact = memories["fact"]
    form = staff_client.get(f"/admin/memoryhub/fact/{fact.pk}/change/").context["adminform"].form
    data = {k: v for k, v in form.initial.items() if v is not None and k in form.fields}
    data.update(importance="1.5", tenant=cast.alice_tenant.pk, workspace=fact.workspace_id)
    data = {k: ",".join(v) if isinstance(v, list) else v for k, v in data.items()}
    response = staff_client.post(f"/admin/memoryhub/fact/{fact.pk}/change/", data)
    assert response.status_code == 200
    text = response.content.decode()
    assert "Importance is between 0 and 1" in text and "Constraint" not in text


def test_looking_in_the_console_is_not_a_use_even_when_counts_are_written_later(
    staff_client, cast, memories, settings, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """In production access counts are written in batches by a thread, after the request: rolling
    the page's transaction back did not stop them. The console's searches do not count at all."""
    from retrieval.search.sql import accesses

    # as deployed: written later, not in the request
    monkeypatch.setattr(counters, "FLUSH_SECONDS", 3600)
    accesses.flush()
    before = list(Chunk.objects.with_access().order_by("pk").values_list("access_count", flat=True))
    assert explore(staff_client, cast, user="dana", q="support group").context["results"]
    page = staff_client.get(
        "/admin/console/context/",
        {
            "tenant": cast.alice_tenant.pk,
            "session": "dana-chat",
            "query": "support group",
            "budget": 500,
        },
    )
    assert page.context["assembled"].items
    accesses.flush()
    assert (
        list(Chunk.objects.with_access().order_by("pk").values_list("access_count", flat=True))
        == before
    )
    cast.alice.post("/api/v1/search/", {"query": "support group", "user_id": "dana"}, format="json")
    accesses.flush()  # an agent's search does count: the check above can fail
    assert (
        list(Chunk.objects.with_access().order_by("pk").values_list("access_count", flat=True))
        != before
    )


def test_context_preview_is_what_the_api_returns(staff_client, cast, memories) -> None:
    params = {
        "tenant": cast.alice_tenant.pk,
        "session": "dana-chat",
        "query": "support group",
        "budget": 500,
    }
    page = staff_client.get("/admin/console/context/", params)
    assert page.status_code == 200
    api = cast.alice.post(
        "/api/v1/context/",
        {"session": "dana-chat", "query": "support group", "budget": 500},
        format="json",
    ).json()
    assembled = page.context["assembled"]
    assert assembled.markdown == api["markdown"] and assembled.tokens == api["tokens"]
    assert [i.text for i in assembled.items] == [i["text"] for i in api["items"]]
    assert b"Markdown the agent gets" in page.content and b"support group" in page.content
    missing = staff_client.get("/admin/console/context/", {**params, "session": "nope"})
    assert missing.status_code == 200 and b"does not exist" in missing.content


def test_consolidation_preview_changes_nothing_then_runs(
    staff_client, cast, memories, settings, monkeypatch
) -> None:
    settings.MEMORYHUB_CONSOLIDATE_DELETE_KINDS = ("fact",)
    # everything short-term is "stale"
    monkeypatch.setattr("retrieval.lifecycle.steps.PRUNE_RELEVANCE", 2.0)
    Fact.objects.update(lifetime="short_term")
    for f in Fact.objects.all():
        remember(f)
    before = set(Chunk.objects.values_list("pk", flat=True))
    page = staff_client.get("/admin/console/consolidation/", {"tenant": cast.alice_tenant.pk})
    assert page.status_code == 200 and b"Dana has two daughters" in page.content
    assert (
        set(Chunk.objects.values_list("pk", flat=True)) == before
        and not ConsolidationReport.objects.exists()
    )
    done = staff_client.post(
        "/admin/console/consolidation/", {"tenant": cast.alice_tenant.pk, "run": "yes"}
    )
    report = ConsolidationReport.objects.get()
    assert done.status_code == 302 and str(report.pk) in done["Location"]
    # The tenant's first destructive run is held for review: per memory, in text.
    pending = PendingDeletion.objects.get()
    review = staff_client.get(f"/admin/lifecycle/pendingdeletion/{pending.pk}/change/")
    assert b"Dana has two daughters" in review.content and b"Approve" in review.content
    table = staff_client.get(
        f"/admin/lifecycle/consolidationreport/{report.pk}/change/"
    ).content.decode()
    assert "Dana has two daughters" in table and "<table" in table


def test_a_review_is_decided_memory_by_memory(staff_client, cast, memories) -> None:
    facts = [memories["fact"], memories["other"]]
    ids = [Chunk.objects.get(kind="fact", source_id=str(f.pk)).pk for f in facts]
    report = ConsolidationReport.objects.create(tenant=cast.alice_tenant)
    pending = PendingDeletion.objects.create(
        tenant=cast.alice_tenant, report=report, step="prune", chunk_ids=ids
    )
    url = f"/admin/lifecycle/pendingdeletion/{pending.pk}/change/"
    staff_client.post(url, {"reject": ids[0]})
    pending.refresh_from_db()
    assert pending.status == "pending" and pending.chunk_ids == [ids[1]]
    assert Fact.objects.filter(pk=facts[0].pk).exists()
    staff_client.post(url, {"approve": ids[1]})
    pending.refresh_from_db()
    assert pending.status == "approved" and pending.decided_by == "op" and pending.chunk_ids == []
    assert (
        not Fact.objects.filter(pk=facts[1].pk).exists()
        and Fact.objects.filter(pk=facts[0].pk).exists()
    )
    assert pending.outcome["kept_ids"] == [ids[0]] and pending.outcome["approved_ids"] == [ids[1]]
    again = staff_client.post(url, {"approve": ids[0]}, follow=True)
    assert b"already approved" in again.content


def test_a_merge_review_shows_survivor_and_merged_side_by_side(
    staff_client, cast, memories
) -> None:
    survivor = Chunk.objects.get(kind="fact", source_id=str(memories["fact"].pk))
    absorbed = Chunk.objects.get(kind="fact", source_id=str(memories["other"].pk))
    report = ConsolidationReport.objects.create(tenant=cast.alice_tenant)
    pending = PendingDeletion.objects.create(
        tenant=cast.alice_tenant,
        report=report,
        step="merge",
        chunk_ids=[absorbed.pk],
        payload={"survivor": survivor.pk},
    )
    page = staff_client.get(
        f"/admin/lifecycle/pendingdeletion/{pending.pk}/change/"
    ).content.decode()
    assert (
        "Survivor (kept)" in page and "Dana has two daughters" in page and "Eli keeps bees" in page
    )
    listing = staff_client.get("/admin/lifecycle/pendingdeletion/").content.decode()
    assert "Eli keeps bees on the roof" in listing and "survivor" not in listing
    staff_client.post(f"/admin/lifecycle/pendingdeletion/{pending.pk}/change/", {"all": "approve"})
    survivor.refresh_from_db()
    assert [p["chunk_id"] for p in survivor.metadata["merged_from"]] == [absorbed.pk]
