"""The three maintenance jobs, defined once: embedding backfill, summarising and consolidation.

The cluster's built-in cadences (`memoryhub:*`, scheduling.tasks) run them for every tenant; a
tenant's own schedules run them for that tenant through the action registry (scheduling.actions).
Each returns the callee's report; consolidation's row ids stay in its stored report.
"""

from __future__ import annotations

from typing import Any

from memoryhub.session_work import summarise_due
from retrieval.embedding import backfill_embeddings
from retrieval.lifecycle.consolidation import run_consolidation


def embed_backfill(*, tenant_id: int | None = None, limit: int | None = None) -> dict[str, Any]:
    """Embed whatever is still without a vector (a failed or lost embedding task, a new model)."""
    return backfill_embeddings(tenant_id=tenant_id, limit=limit)


def summarise(*, tenant_id: int | None = None) -> dict[str, Any]:
    """Roll the summaries of sessions that are due and grow or close their summary trees."""
    return summarise_due(tenant_id=tenant_id)


def consolidate(*, tenant_id: int | None = None, dry_run: bool = False) -> dict[str, Any]:
    """Promote, prune, merge, cap and compress (docs/lifecycle.md). The ids of every row touched can
    be long: the caller gets the counts, the stored ConsolidationReport keeps the ids."""
    report = run_consolidation(tenant_id=tenant_id, dry_run=dry_run)
    return {key: value for key, value in report.items() if key != "ids"}
