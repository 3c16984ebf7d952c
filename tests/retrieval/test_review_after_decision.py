"""A review page after decisions: it still says how many memories the review held,
what was decided for each, and every memory's uses as a number."""

from __future__ import annotations

import re
from typing import Any

import pytest

from memoryhub.models import Fact, Session
from retrieval.lifecycle.models import ConsolidationReport, PendingDeletion
from retrieval.models import Chunk, ChunkAccess
from tests.base import Cast, post_events, remember


@pytest.fixture
def three_facts(cast: Cast) -> list[Chunk]:
    assert post_events(cast.alice, "chat", {"role": "user", "content": "hi"}).status_code in (
        200,
        201,
    )
    session = Session.objects.get(external_id="chat")
    facts = [
        remember(
            Fact.objects.create(
                tenant=cast.alice_tenant,
                workspace_id=session.workspace_id,
                user_id="dana",
                content=text,
            )
        )
        for text in ("Dana likes tea", "Dana likes green tea", "Dana drinks tea daily")
    ]
    chunks = [Chunk.objects.get(kind="fact", source_id=str(f.pk)) for f in facts]
    ChunkAccess.objects.bulk_create(
        [ChunkAccess(chunk=c, access_count=n) for c, n in zip(chunks, (4, 2, 7), strict=True)]
    )
    return chunks


def _page(staff_client: Any, pending: PendingDeletion) -> str:
    response = staff_client.get(f"/admin/lifecycle/pendingdeletion/{pending.pk}/change/")
    assert response.status_code == 200
    return response.content.decode()


def test_a_merge_review_reads_correctly_after_each_decision(
    staff_client, cast, three_facts
) -> None:
    survivor, first, second = three_facts
    report = ConsolidationReport.objects.create(tenant=cast.alice_tenant)
    pending = PendingDeletion.objects.create(
        tenant=cast.alice_tenant,
        report=report,
        step="merge",
        chunk_ids=[first.pk, second.pk],
        payload={"survivor": survivor.pk},
    )
    page = _page(staff_client, pending)
    assert "Merge of 2 memories of alice" in page
    assert re.findall(r'<span class="mh-uses">(\d+) uses?</span>', page) == ["2", "7"]

    url = f"/admin/lifecycle/pendingdeletion/{pending.pk}/change/"
    staff_client.post(url, {"reject": second.pk})
    staff_client.post(url, {"approve": first.pk})
    pending.refresh_from_db()
    assert pending.status == "approved" and pending.chunk_ids == []
    page = _page(staff_client, pending)
    assert "Merge of 2 memories of alice" in page and "of 0 memories" not in page
    decisions = re.findall(r'<td class="mh-decision">([^<]*)</td>', page)
    assert decisions == ["approved", "rejected: kept"]
    assert "merged into the survivor" in page
    # The kept memory still shows its uses as a number; the approved one is folded into the
    # survivor.
    assert re.findall(r'<span class="mh-uses">(\d+) uses?</span>', page) == ["7"]
    # The report's link and the list of reviews count what the review held, not what is left.
    report_page = staff_client.get(
        f"/admin/lifecycle/consolidationreport/{report.pk}/change/"
    ).content.decode()
    assert "Merge of 2 memories</a> (approved)" in report_page
    listing = staff_client.get("/admin/lifecycle/pendingdeletion/").content.decode()
    assert re.search(r'<td class="field-memory_count">2</td>', listing)


def test_approve_all_and_reject_all_read_as_decided(staff_client, cast, three_facts) -> None:
    first, second, third = three_facts
    report = ConsolidationReport.objects.create(tenant=cast.alice_tenant)
    pruned = PendingDeletion.objects.create(
        tenant=cast.alice_tenant, report=report, step="prune", chunk_ids=[first.pk, second.pk]
    )
    kept = PendingDeletion.objects.create(
        tenant=cast.alice_tenant, report=report, step="prune", chunk_ids=[third.pk]
    )
    staff_client.post(f"/admin/lifecycle/pendingdeletion/{pruned.pk}/change/", {"all": "approve"})
    staff_client.post(f"/admin/lifecycle/pendingdeletion/{kept.pk}/change/", {"all": "reject"})
    page = _page(staff_client, pruned)
    assert "Prune of 2 memories of alice" in page
    assert re.findall(r'<td class="mh-decision">([^<]*)</td>', page) == ["approved", "approved"]
    assert page.count("deleted (archived: see Archived memories)") == 2
    page = _page(staff_client, kept)
    assert "Prune of 1 memory of alice" in page
    assert re.findall(r'<td class="mh-decision">([^<]*)</td>', page) == ["rejected: kept"]
    assert re.findall(r'<span class="mh-uses">(\d+) uses?</span>', page) == ["7"]
