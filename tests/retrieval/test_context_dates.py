"""The context block dates each memory by its own time (when it was said, when a fact became
valid, what span a summary covers), never by the day of the request or of the summariser's run."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.utils import timezone

from memoryhub.models import Fact, Session, SummaryNode
from tests.base import remember

SAID = "2023-05-16T10:00:00Z"
TODAY = timezone.now().date().isoformat()


def context(client: Any, **body: Any) -> str:
    response = client.post("/api/v1/context/", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()["markdown"]


def test_messages_facts_and_summaries_show_their_own_dates(alice, index, cast) -> None:
    index(
        alice,
        "house",
        {"role": "user", "content": "The plumber fixed the boiler valve.", "created_at": SAID},
    )
    session = Session.objects.get(tenant=cast.alice_tenant, external_id="house")
    where = {
        "tenant": cast.alice_tenant,
        "workspace_id": session.workspace_id,
        "channel_id": session.channel_id,
    }
    said = datetime(2023, 5, 16, 10, tzinfo=UTC)
    remember(
        SummaryNode.objects.create(
            **where,
            session=session,
            level="leaf",
            text="- user: plumber boiler visit",
            sequence_start=1,
            sequence_end=1,
            earliest_at=said,
            latest_at=said,
        )
    )
    remember(
        Fact.objects.create(
            **where,
            key="boiler",
            content="The boiler was serviced by the plumber",
            valid_from=datetime(2023, 6, 1, tzinfo=UTC),
        )
    )
    block = context(alice, query="plumber boiler", kinds=["event"])
    assert "(user, said 2023-05-16 10:00) The plumber fixed the boiler valve." in block
    block = context(alice, query="plumber boiler", kinds=["summary"])
    assert "(summary 2023-05-16 10:00) - user: plumber boiler visit" in block
    block = context(alice, query="plumber boiler", kinds=["fact"])
    assert "(fact since 2023-06-01 00:00) The boiler was serviced by the plumber" in block
    assert TODAY not in context(alice, query="plumber boiler")


def test_the_migration_dates_summary_chunks_indexed_before_by_what_they_summarise(
    alice, index, cast
) -> None:
    import importlib

    from django.db import connection

    from retrieval.models import Chunk

    index(
        alice,
        "house",
        {"role": "user", "content": "The plumber fixed the boiler valve.", "created_at": SAID},
    )
    session = Session.objects.get(tenant=cast.alice_tenant, external_id="house")
    said = datetime(2023, 5, 16, 10, tzinfo=UTC)
    node = remember(
        SummaryNode.objects.create(
            tenant=cast.alice_tenant,
            workspace_id=session.workspace_id,
            channel_id=session.channel_id,
            session=session,
            level="leaf",
            text="- user: plumber boiler visit",
            sequence_start=1,
            sequence_end=1,
            latest_at=said,
        )
    )
    # as indexed before
    Chunk.objects.filter(kind="summary", source_id=str(node.pk)).update(created_at=timezone.now())
    migration = importlib.import_module("retrieval.migrations.0017_rank_summary_chunk_dates")
    with connection.cursor() as cursor:
        cursor.execute(migration.FORWARD)
    assert Chunk.objects.get(kind="summary", source_id=str(node.pk)).created_at == said
