"""Consolidation (docs/lifecycle.md): score, promote, prune, merge, cap, compress.

Memories are retrieval's chunks: every kind (event, note, fact, summary, document) has them,
with tier, lifetime, importance, access count and embedding. Relevance is computed in SQL by
retrieval.decay, so every step is a query over the tenant's rows, not a Python loop.

* score: relevance of every short-term memory (lifetime other than long_term).
* promote: short-term → long_term when relevance > 0.7 and access count > 3.
* prune: short-term memories below 0.01 — never for a tenant with an immutable transcript.
* merge: near-duplicates (cosine > 0.95) of one kind in one scope; the survivor keeps the higher
  importance, the summed access counts and the others' provenance (metadata["merged_from"]).
* cap: at most 10,000 memories per scope, lowest relevance deleted first.
* compress: conversations idle for a while get their summary tree closed (memoryhub.summaries.
  build_tree(final=True): leaves over every event, branches, a root — searchable as "summary").
  The event log stays: the summaries are what context assembly and search can use instead.

Deletions touch only the kinds in MEMORYHUB_CONSOLIDATE_DELETE_KINDS (default: notes, facts and
summaries; events' chunks only when an operator lists "event", and the event log itself is never
touched) and never a pinned memory. For tenants with
`review_deletions`, and on a tenant's first destructive run, they are held as PendingDeletion
rows until an operator approves them (and so is, always, the removal of a fact addressed by its key:
a merge never takes one); the report's `review` says so (how many, why, where to
review them) and its counts say what happened: `pruned`, `merged`, `capped` count what was done,
held ones count under `held_for_review` (and `<step>_held`).

A dry run performs the very same steps inside a transaction that is rolled back (and calls no
summariser), so it reports exactly the counts a real run would and changes nothing. A real run
stores a ConsolidationReport.

    consolidation.py  the job: tenants one at a time, each in one transaction, and its report
    steps.py          the six steps of one tenant's run
    duplicates.py     near-duplicate pairs and the merge plan
    memories.py       delete, merge, pin and unpin memories (also used by reviews and the admin)
    review.py         approve or reject a held deletion
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.urls import reverse
from django.utils import timezone

from accounts.models import Tenant
from retrieval.lifecycle.models import ConsolidationReport
from retrieval.lifecycle.steps import TenantRun, cap, compress, merge, promote, prune, score

STEPS = ("score", "promote", "prune", "merge", "cap", "compress")
REPORT_MAX_IDS = 1000  # ids of each step a report keeps (the counts are always complete)
# progress(done, total, label): called after each step of each tenant.
Progress = Callable[[int, int, str], None]

STEP_FUNCTIONS: dict[str, Callable[[TenantRun], None]] = {
    "score": score,
    "promote": promote,
    "prune": prune,
    "merge": merge,
    "cap": cap,
    "compress": compress,
}


class _Totals:
    """What the tenants done so far add up to: counts, counts per tenant, ids per step."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.ids: dict[str, list[Any]] = {}
        self.per_tenant: dict[str, dict[str, int]] = {}
        self.deletions: list[dict[str, Any]] = []
        self.held_reasons: dict[str, str] = {}  # tenant name → why its deletions wait for review
        self.held_tenant_ids: list[int] = []

    def add(self, run: TenantRun) -> None:
        self.counts.update(run.counts)
        if run.counts["held_for_review"]:
            self.held_reasons[run.tenant.name] = run.review_reason
            self.held_tenant_ids.append(run.tenant.pk)
        self.deletions.extend({"tenant": run.tenant.name, **d} for d in run.deletions)
        self.per_tenant[run.tenant.name] = dict(sorted(run.counts.items()))
        for step, values in run.ids.items():
            self.ids.setdefault(step, []).extend(values)


def run_consolidation(
    *,
    tenant_id: int | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Consolidate one tenant (or all). Returns {"dry_run", "report_id", "counts", "tenants", "ids",
    "duration_ms"}; a real run also stores it as a ConsolidationReport."""
    now = now or timezone.now()
    started = time.monotonic()
    tenants = list(
        Tenant.objects.order_by("id") if tenant_id is None else Tenant.objects.filter(pk=tenant_id)
    )
    if tenant_id is not None and not tenants:
        raise ValueError(f"tenant {tenant_id} does not exist")
    report = (
        None if dry_run else ConsolidationReport.objects.create(tenant_id=tenant_id, started_at=now)
    )
    totals = _Totals()
    total_steps = len(tenants) * len(STEPS)
    try:
        for position, tenant in enumerate(tenants):
            run = TenantRun(tenant=tenant, now=now, dry_run=dry_run, report=report)
            _consolidate_tenant(run, progress, done=position * len(STEPS), total_steps=total_steps)
            totals.add(run)
    except Exception as exc:
        if report is not None:  # the tenants done so far stay done; say where it stopped
            report.error = f"{exc.__class__.__name__}: {exc}"[:2000]
            report.counts = {**dict(sorted(totals.counts.items())), "per_tenant": totals.per_tenant}
            report.finished_at = timezone.now()
            report.save(update_fields=["error", "counts", "finished_at"])
        raise
    totals.counts["tenants"] = len(tenants)
    limit = REPORT_MAX_IDS
    result: dict[str, Any] = {
        "dry_run": dry_run,
        "report_id": report.pk if report else None,
        "counts": dict(sorted(totals.counts.items())),
        "tenants": totals.per_tenant,
        "ids": {step: values[:limit] for step, values in totals.ids.items()},
        "deletions": totals.deletions[:limit],
        "review": _review(totals),
        "duration_ms": round((time.monotonic() - started) * 1000),
    }
    if report is not None:
        _finish_report(report, result)
    return result


def _consolidate_tenant(
    run: TenantRun, progress: Progress | None, *, done: int, total_steps: int
) -> None:
    """Every step for one tenant in one transaction (rolled back for a dry run)."""
    with transaction.atomic():
        # One consolidation of a tenant at a time. NO KEY UPDATE, not UPDATE: every insert that
        # references the tenant (an append's events and chunks) takes KEY SHARE on its row, which
        # FOR UPDATE blocks: appends would wait for the whole consolidation.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM accounts_tenant WHERE id = %s FOR NO KEY UPDATE", [run.tenant.pk]
            )
        for step in STEPS:
            STEP_FUNCTIONS[step](run)
            done += 1
            if progress is not None:
                progress(done, total_steps, f"{run.tenant.name}: {step}")
        if run.dry_run:
            transaction.set_rollback(True)


def _review(totals: _Totals) -> dict[str, Any] | None:
    """What waits for an operator, why, and where to decide it (None: nothing held)."""
    held = totals.counts["held_for_review"]
    if not held:
        return None
    reasons = sorted(set(totals.held_reasons.values()))
    where = reverse("admin:lifecycle_pendingdeletion_changelist") + "?status__exact=pending"
    if len(totals.held_tenant_ids) == 1:
        where += f"&tenant__id__exact={totals.held_tenant_ids[0]}"
    return {
        "held_for_review": held,
        "reason": "; ".join(reasons),
        "per_tenant": totals.held_reasons,
        "review_at": where,
        "how": (
            "An operator approves or rejects each held deletion there (admin: Memory lifecycle → "
            "Pending reviews); nothing held is deleted until approved."
        ),
    }


def _finish_report(report: ConsolidationReport, result: dict[str, Any]) -> None:
    report.finished_at = timezone.now()
    report.duration_ms = result["duration_ms"]
    report.counts = {
        **result["counts"],
        "per_tenant": result["tenants"],
        **({"review": result["review"]} if result["review"] else {}),
    }
    report.ids = result["ids"]
    report.deletions = result["deletions"]
    report.save(update_fields=["finished_at", "duration_ms", "counts", "ids", "deletions"])
