"""Management commands: backfill_embeddings, reindex_tool_calls, stats."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from retrieval import embedders
from retrieval.chunking import content_hash
from retrieval.models import Chunk
from tests.retrieval.conftest import search
from tests.retrieval.test_indexing import FailingEmbedder


def run(*args: str) -> tuple[dict[str, Any], str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return json.loads(out.getvalue()), err.getvalue()


@pytest.fixture
def unembedded(alice, bob, index, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Three alice chunks and one bob chunk, stored while the embedder was down."""
    monkeypatch.setitem(embedders._instances, "hash", FailingEmbedder())
    index(alice, "s1", *[{"role": "user", "content": f"alice message {i}"} for i in range(3)])
    index(bob, "s1", {"role": "user", "content": "bob message"})
    monkeypatch.delitem(embedders._instances, "hash")
    assert Chunk.objects.filter(embedding__isnull=True).count() == 4


def test_backfill_dry_run_counts_and_changes_nothing(unembedded) -> None:
    report, _ = run("backfill_embeddings", "--dry-run")
    assert report["dry_run"] is True
    assert report["tenants"]["alice"] == {"pending": 3} and report["tenants"]["bob"] == {
        "pending": 1
    }
    assert Chunk.objects.filter(embedding__isnull=True).count() == 4


def test_backfill_embeds_one_tenant_with_a_progress_bar(unembedded, cast) -> None:
    report, err = run("backfill_embeddings", "--tenant", "alice")
    assert report["tenants"] == {
        "alice": {"pending": 3, "embedded": 3, "failed": 0, "remaining": 0}
    }
    assert "3/3" in err  # tqdm writes its bar to stderr
    assert not Chunk.objects.filter(tenant=cast.alice_tenant, embedding__isnull=True).exists()
    assert Chunk.objects.get(tenant=cast.bob_tenant).embedding is None  # bob untouched


def test_backfill_limit_and_failures_are_reported(unembedded, monkeypatch) -> None:
    monkeypatch.setitem(embedders._instances, "hash", FailingEmbedder())
    report, _ = run("backfill_embeddings", "--tenant", "alice", "--limit", "2", "--no-progress")
    assert report["tenants"]["alice"] == {"pending": 3, "embedded": 0, "failed": 2, "remaining": 3}
    attempts = sorted(
        Chunk.objects.filter(tenant__name="alice").values_list("embedding_attempts", flat=True)
    )
    assert attempts == [1, 2, 2]  # each tried once more, the failure recorded


def test_unknown_tenant_is_an_error(db) -> None:  # type: ignore[no-untyped-def]
    for command in ("backfill_embeddings", "reindex_tool_calls", "stats"):
        with pytest.raises(CommandError, match="No tenant named"):
            call_command(command, "--tenant", "nobody", stdout=StringIO(), stderr=StringIO())


def _make_stale(session: str) -> None:
    """Turn a tool call's chunk back into what an older extraction stored (no arguments)."""
    chunk = Chunk.objects.get(session__external_id=session, sequence_start=1)
    Chunk.objects.filter(pk=chunk.pk).update(
        text="Called weather", context="", content_hash=content_hash("Called weather")
    )


def test_reindex_tool_calls_replaces_stale_text(
    alice,
    bob,
    index,
    cast,  # type: ignore[no-untyped-def]
    django_capture_on_commit_callbacks,
) -> None:
    call = {"role": "tool", "content": "", "tool_name": "weather", "tool_args": {"city": "Lisbon"}}
    index(alice, "a", call, {"role": "user", "content": "thanks"})
    index(alice, "fresh", {**call, "tool_args": {"city": "Oslo"}})
    index(bob, "b", call)
    _make_stale("a")
    Chunk.objects.filter(tenant=cast.bob_tenant).update(text="Called weather", content_hash="old")
    assert search(alice, query="Lisbon", mode="text").json()["results"] == []

    report, _ = run("reindex_tool_calls", "--tenant", "alice", "--dry-run")
    assert report["tenants"]["alice"] == {
        "events": 2,
        "stale": 1,
        "chunks_deleted": 1,
        "chunks_created": 0,
    }
    assert Chunk.objects.filter(text="Called weather", tenant=cast.alice_tenant).count() == 1

    with django_capture_on_commit_callbacks(execute=True):
        report, err = run("reindex_tool_calls", "--tenant", "alice")
    assert report["tenants"]["alice"] == {
        "events": 2,
        "stale": 1,
        "chunks_deleted": 1,
        "chunks_created": 1,
    }
    assert "2/2" in err
    found = search(alice, query="Lisbon", mode="text").json()["results"]
    # The reply "thanks" matches too, through its conversation context (at a discount).
    assert [r["text"] for r in found] == ['Called weather with {"city": "Lisbon"}', "thanks"]
    assert found[0]["sequence_start"] == 1
    assert Chunk.objects.get(pk=found[0]["chunk_id"]).embedding is not None  # embedded on commit
    # "thanks" kept, not duplicated
    assert Chunk.objects.filter(session__external_id="a").count() == 2
    assert Chunk.objects.get(tenant=cast.bob_tenant).text == "Called weather"  # bob untouched

    report, _ = run("reindex_tool_calls", "--tenant", "alice")
    assert report["tenants"]["alice"]["stale"] == 0  # idempotent


def test_reindex_tool_calls_restores_missing_chunks(alice, index) -> None:
    index(
        alice,
        "a",
        {"role": "assistant", "content": "", "tool_name": "search", "tool_args": {"q": "otters"}},
    )
    Chunk.objects.all().delete()
    report, _ = run("reindex_tool_calls", "--no-progress")
    assert report["tenants"]["alice"]["chunks_created"] == 1
    assert Chunk.objects.get().text == 'Called search with {"q": "otters"}'


def test_stats_prints_each_tenants_stats(alice, bob, index) -> None:
    index(alice, "s1", {"role": "user", "content": "one"}, {"role": "user", "content": "two"})
    index(bob, "s1", {"role": "user", "content": "three"})
    report, _ = run("stats")
    assert report["alice"]["chunks"]["total"] == 2 and report["bob"]["chunks"]["total"] == 1
    assert report["alice"]["events"] == 2 and report["alice"]["chunks"]["embedding_coverage"] == 1.0
    api = alice.get("/api/v1/stats/").json()
    # The same figures as GET /stats/, and the cluster's queue (every tenant's) for the operator.
    assert report["alice"]["queue"] == {**api["queue"], "queued_tasks": 0, "failed_tasks": 0}
    assert {k: v for k, v in report["alice"].items() if k not in ("queue", "most_used")} == {
        k: v for k, v in api.items() if k != "queue"
    }
    # nothing was searched yet (tests/retrieval/test_use_counts.py)
    assert report["alice"]["most_used"] == []
    only, _ = run("stats", "--tenant", "bob")
    assert set(only) == {"bob"}
