"""Consolidation (SPEC S8; seeds 001 and 004): score, promote, prune, merge, cap, compress.

Memories are retrieval's chunks: every kind (event, note, fact, summary, document) has them,
with tier, lifetime, importance, access count and embedding. Relevance is computed in SQL by
memoryhub.lifecycle.decay, so every step is a query over the tenant's rows, not a Python loop.

* score: relevance of every short-term memory (lifetime other than long_term).
* promote: short-term → long_term when relevance > 0.7 and access count > 3.
* prune: short-term memories below 0.01 — never for a tenant with an immutable transcript.
* merge: near-duplicates (cosine > 0.95) of one kind in one scope; the survivor keeps the higher
  importance, the summed access counts and the others' provenance (metadata["merged_from"]).
* cap: at most 10,000 memories per scope, lowest relevance deleted first.
* compress: conversations idle for a while get their summary tree closed (memoryhub.summaries.
  build_tree(final=True): leaves over every event, branches, a root — searchable as "summary").
  The event log stays: the summaries are what context assembly and search can use instead.

Deletions touch only the kinds in MEMORYHUB_CONSOLIDATE_DELETE_KINDS (default: events' chunks;
the event log itself is never touched) and never a pinned memory. For tenants with
`review_deletions` they are held as PendingDeletion rows until an operator approves them.

A dry run performs the very same steps inside a transaction that is rolled back (and calls no
summariser), so it reports exactly the counts a real run would and changes nothing. A real run
stores a ConsolidationReport.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, models, transaction
from django.utils import timezone

from accounts.models import Tenant
from memoryhub.lifecycle import decay
from memoryhub.lifecycle.models import CompressedConversation, ConsolidationReport, PendingDeletion
from memoryhub.models import Fact, Note, Session, SummaryNode, iso
from retrieval.models import Chunk

logger = logging.getLogger(__name__)

STEPS = ("score", "promote", "prune", "merge", "cap", "compress")
# progress(done, total, label): called after each step of each tenant.
Progress = Callable[[int, int, str], None]

PINNED = "(c.metadata @> '{\"pinned\": true}'::jsonb)"
SHORT_TERM = "c.lifetime <> 'long_term'"


def scope_sql(alias: str) -> str:
    """The scope a memory is capped and de-duplicated in: its session, channel, workspace or account."""
    a = alias
    return (f"(CASE {a}.tier WHEN 'conversation' THEN 's' || COALESCE({a}.session_id, 0) "
            f"WHEN 'channel' THEN 'c' || COALESCE({a}.channel_id, 0) "
            f"WHEN 'workspace' THEN 'w' || COALESCE({a}.workspace_id, 0) ELSE 'a' END)")


@dataclass
class TenantRun:
    tenant: Tenant
    now: datetime
    dry_run: bool
    report: ConsolidationReport | None
    counts: Counter[str] = field(default_factory=lambda: Counter(dict.fromkeys(
        ("scored", "promoted", "pruned", "merged", "merge_groups", "capped", "compressed", "held_for_review"), 0)))
    ids: dict[str, list[Any]] = field(default_factory=dict)
    gone: set[int] = field(default_factory=set)  # deleted or held for review in this run

    def note(self, step: str, ids: list[Any]) -> None:
        self.ids.setdefault(step, []).extend(ids)

    @property
    def reviewed(self) -> bool:
        return self.tenant.review_deletions

    def delete_kinds(self) -> list[str]:
        return list(settings.MEMORYHUB_CONSOLIDATE_DELETE_KINDS)

    def relevance(self) -> tuple[str, list[object]]:
        return decay.relevance_sql("c", now=self.now)


def _fetch(sql: str, params: list[object]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


# --- steps -----------------------------------------------------------------------------------


def score(run: TenantRun) -> None:
    rel, params = run.relevance()
    rows = _fetch(
        f"""SELECT count(*),
                   count(*) FILTER (WHERE r < %s), count(*) FILTER (WHERE r >= %s AND r <= %s),
                   count(*) FILTER (WHERE r > %s)
            FROM (SELECT {rel} AS r FROM retrieval_chunk c WHERE c.tenant_id = %s AND {SHORT_TERM}) s""",
        [_prune_at(), _prune_at(), _promote_at(), _promote_at(), *params, run.tenant.pk],
    )
    total, low, middle, high = rows[0]
    run.counts.update(scored=total, relevance_below_prune=low, relevance_between=middle,
                      relevance_above_promote=high)


def _prune_at() -> float:
    return float(settings.MEMORYHUB_PRUNE_RELEVANCE)


def _promote_at() -> float:
    return float(settings.MEMORYHUB_PROMOTE_RELEVANCE)


def promote(run: TenantRun) -> None:
    rel, params = run.relevance()
    rows = _fetch(
        f"""UPDATE retrieval_chunk c SET lifetime = 'long_term'
            WHERE c.tenant_id = %s AND {SHORT_TERM} AND c.access_count > %s AND {rel} > %s
            RETURNING c.id""",
        [run.tenant.pk, settings.MEMORYHUB_PROMOTE_MIN_ACCESSES, *params, _promote_at()],
    )
    ids = sorted(r[0] for r in rows)
    run.counts["promoted"] += len(ids)
    run.note("promoted", ids)
    # A fact keeps its own lifetime (the facts API shows it): promote the fact with its chunk.
    fact_ids = [int(s) for s in Chunk.objects.filter(pk__in=ids, kind="fact").values_list("source_id", flat=True)
                if s.isdigit()]
    if fact_ids:
        Fact.objects.filter(tenant=run.tenant, pk__in=fact_ids).exclude(lifetime="long_term").update(lifetime="long_term")


def prune(run: TenantRun) -> None:
    rel, params = run.relevance()
    rows = _fetch(
        f"""SELECT c.id FROM retrieval_chunk c
            WHERE c.tenant_id = %s AND {SHORT_TERM} AND c.kind = ANY(%s) AND NOT {PINNED} AND {rel} < %s
            ORDER BY c.id""",
        [run.tenant.pk, run.delete_kinds(), *params, _prune_at()],
    )
    ids = [r[0] for r in rows]
    if run.tenant.immutable_transcript:
        # An immutable transcript keeps everything derived from it too (seed 002): nothing pruned.
        run.counts["prune_skipped_immutable"] += len(ids)
        return
    run.counts["pruned"] += len(ids)
    run.note("pruned", ids)
    _delete_or_hold(run, PendingDeletion.Step.PRUNE, ids)


def _delete_or_hold(run: TenantRun, step: str, ids: list[int], payload: dict[str, Any] | None = None) -> None:
    if not ids:
        return
    run.gone.update(ids)
    if run.reviewed:
        run.counts["held_for_review"] += len(ids)
        if run.report is not None:
            PendingDeletion.objects.create(tenant=run.tenant, report=run.report, step=step, chunk_ids=ids,
                                           payload=payload or {})
        return
    if step == PendingDeletion.Step.MERGE and payload:
        apply_merge(tenant_id=run.tenant.pk, survivor_id=payload["survivor"], absorbed_ids=ids)
    else:
        delete_memories(tenant_id=run.tenant.pk, chunk_ids=ids)


# A chunk of a note, fact or summary is one piece of that memory: deleting the memory means
# deleting its row (which the API lists) and all its chunks, never leaving half of it.
SOURCE_MODELS: dict[str, tuple[type[models.Model], str]] = {
    "note": (Note, "note_id"), "fact": (Fact, "pk"), "summary": (SummaryNode, "pk"),
}


def delete_memories(*, tenant_id: int, chunk_ids: list[int], keep: tuple[str, str] | None = None) -> int:
    """Delete these memories; for notes, facts and summaries, their rows and every chunk of them
    (except the source `keep` = (kind, source id): a merge survivor's own memory)."""
    sources: dict[str, set[str]] = {}
    for kind, source_id in Chunk.objects.filter(tenant_id=tenant_id, pk__in=chunk_ids,
                                                kind__in=SOURCE_MODELS).values_list("kind", "source_id"):
        if (kind, source_id) != keep:
            sources.setdefault(kind, set()).add(source_id)
    deleted, _ = Chunk.objects.filter(tenant_id=tenant_id, pk__in=chunk_ids).delete()
    for kind, source_ids in sources.items():
        model, field_name = SOURCE_MODELS[kind]
        values = [int(v) for v in source_ids if v.isdigit()] if field_name == "pk" else list(source_ids)
        model._default_manager.filter(tenant_id=tenant_id, **{f"{field_name}__in": values}).delete()
        more, _ = Chunk.objects.filter(tenant_id=tenant_id, kind=kind, source_id__in=source_ids).delete()
        deleted += more
    return deleted


def _mergeable(a: str) -> str:
    """Condition on alias `a`: an embedded, unpinned memory of the tenant, of a deletable kind, not
    already gone in this run (parameters: tenant id, kinds, excluded ids)."""
    return (f"{a}.tenant_id = %s AND {a}.kind = ANY(%s) AND {a}.embedding IS NOT NULL "
            f"AND NOT ({a}.metadata @> '{{\"pinned\": true}}'::jsonb) AND NOT ({a}.id = ANY(%s))")


def find_duplicates(tenant_id: int, kinds: list[str], exclude: set[int]) -> list[tuple[int, int, float]]:
    """Pairs (a, b, cosine distance), a < b, of near-duplicates in one scope, kind and model.

    Small scopes (a session, a channel: the usual case) are compared exactly by a self-join;
    a scope with more than MEMORYHUB_MERGE_EXACT_MAX memories would cost n² distances (45 s for
    5,900 on these machines), so there each memory asks the HNSW index for its nearest
    neighbours instead (approximate, linear).
    """
    base = [tenant_id, kinds, sorted(exclude)]
    sizes = _fetch(f"SELECT {scope_sql('a')}, count(*) FROM retrieval_chunk a WHERE {_mergeable('a')} "
                   f"GROUP BY 1", base)
    big = sorted(scope for scope, count in sizes if count > settings.MEMORYHUB_MERGE_EXACT_MAX)
    limit = 1.0 - float(settings.MEMORYHUB_MERGE_COSINE)
    same = (f"b.tenant_id = a.tenant_id AND b.kind = a.kind AND b.tier = a.tier "
            f"AND b.embedding_model = a.embedding_model AND {scope_sql('b')} = {scope_sql('a')}")
    rows = _fetch(
        f"""SELECT a.id, b.id, (a.embedding <=> b.embedding) AS d
            FROM retrieval_chunk a JOIN retrieval_chunk b ON {same} AND b.id > a.id
            WHERE {_mergeable('a')} AND {_mergeable('b')}
              AND NOT ({scope_sql('a')} = ANY(%s)) AND (a.embedding <=> b.embedding) < %s""",
        [*base, *base, big, limit],
    )
    pairs = {(a, b): float(d) for a, b, d in rows}
    if big:
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            cursor.execute(f"SET LOCAL hnsw.ef_search = {max(40, 2 * settings.MEMORYHUB_MERGE_NEIGHBOURS)}")
            # Without this the planner (row estimates of freshly written chunks are tiny) sorts
            # the whole scope once per memory instead of walking the HNSW graph: 3 ms → 0.1 ms.
            cursor.execute("SET LOCAL enable_sort = off")
        near = _fetch(
            f"""SELECT a.id, n.id, n.d FROM retrieval_chunk a CROSS JOIN LATERAL (
                    SELECT b.id, (b.embedding <=> a.embedding) AS d FROM retrieval_chunk b
                    WHERE {same} AND b.id <> a.id AND {_mergeable('b')}
                    ORDER BY b.embedding <=> a.embedding LIMIT %s) n
                WHERE {_mergeable('a')} AND {scope_sql('a')} = ANY(%s) AND n.d < %s""",
            [*base, settings.MEMORYHUB_MERGE_NEIGHBOURS, *base, big, limit],
        )
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_sort = on")
        for a, b, d in near:
            pairs.setdefault((min(a, b), max(a, b)), float(d))
    return [(a, b, d) for (a, b), d in sorted(pairs.items(), key=lambda item: (item[1], item[0]))]


def plan_merges(pairs: list[tuple[int, int, float]], importance: dict[int, float]) -> dict[int, list[int]]:
    """Greedy, closest pairs first: {survivor: [absorbed, …]}. A survivor absorbs only memories it
    is itself a near-duplicate of; the one with the higher importance (then the older) survives."""
    groups: dict[int, list[int]] = {}
    absorbed: set[int] = set()
    for a, b, _ in pairs:
        if a in absorbed or b in absorbed:
            continue
        if a in groups and b in groups:
            continue
        if a in groups or b in groups:
            survivor, other = (a, b) if a in groups else (b, a)
        else:
            survivor, other = sorted((a, b), key=lambda i: (-importance[i], i))
        groups.setdefault(survivor, []).append(other)
        absorbed.add(other)
    return groups


def merge(run: TenantRun) -> None:
    pairs = find_duplicates(run.tenant.pk, run.delete_kinds(), run.gone)
    if not pairs:
        return
    involved = {i for a, b, _ in pairs for i in (a, b)}
    importance = dict(Chunk.objects.filter(pk__in=involved).values_list("id", "importance"))
    groups = plan_merges(pairs, importance)
    for survivor, others in sorted(groups.items()):
        run.counts["merge_groups"] += 1
        run.counts["merged"] += len(others)
        run.note("merged", [[survivor, *sorted(others)]])
        _delete_or_hold(run, PendingDeletion.Step.MERGE, sorted(others), {"survivor": survivor})


def _provenance(chunk: Chunk) -> dict[str, Any]:
    return {
        "chunk_id": chunk.pk, "kind": chunk.kind, "source_id": chunk.source_id,
        "session": chunk.session.external_id if chunk.session_id else None,
        "sequence_start": chunk.sequence_start, "sequence_end": chunk.sequence_end,
        "created_at": iso(chunk.created_at), "importance": chunk.importance,
        "access_count": chunk.access_count, "text": chunk.text[:200],
    }


@transaction.atomic
def apply_merge(*, tenant_id: int, survivor_id: int, absorbed_ids: list[int]) -> int:
    """Fold `absorbed_ids` into `survivor_id`: higher importance, summed access counts, provenance
    kept in metadata["merged_from"]; the absorbed memories are deleted. Returns how many were."""
    rows = {c.pk: c for c in Chunk.objects.select_for_update(of=("self",)).select_related("session")
            .filter(tenant_id=tenant_id, pk__in=[survivor_id, *absorbed_ids])}
    survivor = rows.get(survivor_id)
    others = [rows[i] for i in sorted(set(absorbed_ids)) if i in rows and i != survivor_id]
    if survivor is None or not others:
        return 0
    provenance = list(survivor.metadata.get("merged_from", []))
    for other in others:
        provenance.append(_provenance(other))
        provenance.extend(other.metadata.get("merged_from", []))
        survivor.importance = max(survivor.importance, other.importance)
        survivor.access_count += other.access_count
        if other.accessed_at and (survivor.accessed_at is None or other.accessed_at > survivor.accessed_at):
            survivor.accessed_at = other.accessed_at
        if other.session_id == survivor.session_id and other.sequence_start is not None:
            survivor.sequence_start = min(survivor.sequence_start or other.sequence_start, other.sequence_start)
            survivor.sequence_end = max(survivor.sequence_end or 0, other.sequence_end or 0)
    survivor.metadata = {**survivor.metadata, "merged_from": provenance}
    survivor.save(update_fields=["importance", "access_count", "accessed_at", "sequence_start",
                                 "sequence_end", "metadata"])
    return delete_memories(tenant_id=tenant_id, chunk_ids=[o.pk for o in others],
                           keep=(survivor.kind, survivor.source_id))


def cap(run: TenantRun) -> None:
    rel, params = run.relevance()
    rows = _fetch(
        f"""SELECT id FROM (
                SELECT c.id, c.kind, {PINNED} AS pinned,
                       row_number() OVER (PARTITION BY {scope_sql('c')}
                                          ORDER BY {PINNED} DESC, {rel} DESC, c.id DESC) AS rn
                FROM retrieval_chunk c WHERE c.tenant_id = %s AND NOT (c.id = ANY(%s))
            ) ranked
            WHERE rn > %s AND kind = ANY(%s) AND NOT pinned ORDER BY id""",
        [*params, run.tenant.pk, sorted(run.gone), settings.MEMORYHUB_CAP_PER_SCOPE, run.delete_kinds()],
    )
    ids = [r[0] for r in rows]
    run.counts["capped"] += len(ids)
    run.note("capped", ids)
    _delete_or_hold(run, PendingDeletion.Step.CAP, ids)


# --- compress --------------------------------------------------------------------------------


def summariser() -> Callable[[Session], int] | None:
    """Task B's summary tree builder, when it is installed: closes an idle session's tree
    (leaves over every event, branches, a root) and returns the number of nodes it made."""
    try:
        from memoryhub.summaries import build_tree
    except ImportError:
        return None
    return lambda session: build_tree(session, final=True)


def compress_candidates(run: TenantRun) -> list[Session]:
    idle_since = run.now - timedelta(hours=settings.MEMORYHUB_COMPRESS_AFTER_HOURS)
    done = dict(CompressedConversation.objects.filter(tenant=run.tenant).values_list("session_id", "upper_sequence"))
    # Idle: nothing appended or changed for MEMORYHUB_COMPRESS_AFTER_HOURS, whatever the status.
    sessions = Session.objects.filter(tenant=run.tenant, updated_at__lt=idle_since, event_count__gt=0).order_by("id")
    return [s for s in sessions if done.get(s.pk, 0) < s.last_sequence]


def compress(run: TenantRun) -> None:
    candidates = compress_candidates(run)
    run.counts["compress_candidates"] += len(candidates)
    func = summariser()
    if func is None:
        run.counts["compress_unavailable"] += len(candidates)
        return
    if run.dry_run:  # no summariser call: it may be a paid model, and it would be thrown away
        run.counts["compressed"] += len(candidates)
        if candidates:
            run.note("compressed", [s.external_id for s in candidates])
        return
    for session in candidates:
        try:
            with transaction.atomic():
                func(session)
                top = SummaryNode.objects.filter(session=session).order_by("-depth", "-sequence_end").first()
                CompressedConversation.objects.update_or_create(
                    session=session, defaults={"tenant": run.tenant, "upper_sequence": session.last_sequence,
                                               "summary_ref": f"summary node {top.pk}" if top else "",
                                               "compressed_at": run.now})
        except Exception as exc:  # one failing summary must not stop the others
            logger.warning("compressing session %s failed: %s", session.pk, exc)
            run.counts["compress_failed"] += 1
            continue
        run.counts["compressed"] += 1
        run.note("compressed", [session.external_id])


STEP_FUNCTIONS: dict[str, Callable[[TenantRun], None]] = {
    "score": score, "promote": promote, "prune": prune, "merge": merge, "cap": cap, "compress": compress,
}


# --- the job ---------------------------------------------------------------------------------


def run_consolidation(*, tenant_id: int | None = None, dry_run: bool = False, progress: Progress | None = None,
                      now: datetime | None = None) -> dict[str, Any]:
    """Consolidate one tenant (or all). Returns {"dry_run", "report_id", "counts", "tenants", "ids",
    "duration_ms"}; a real run also stores it as a ConsolidationReport."""
    now = now or timezone.now()
    started = time.monotonic()
    tenants = list(Tenant.objects.order_by("id") if tenant_id is None else Tenant.objects.filter(pk=tenant_id))
    if tenant_id is not None and not tenants:
        raise ValueError(f"tenant {tenant_id} does not exist")
    report = None if dry_run else ConsolidationReport.objects.create(tenant_id=tenant_id, started_at=now)
    totals: Counter[str] = Counter()
    ids: dict[str, list[Any]] = {}
    per_tenant: dict[str, dict[str, int]] = {}
    total_steps, done = len(tenants) * len(STEPS), 0
    try:
        for tenant in tenants:
            run = TenantRun(tenant=tenant, now=now, dry_run=dry_run, report=report)
            with transaction.atomic():
                with connection.cursor() as cursor:  # one consolidation of a tenant at a time
                    cursor.execute("SELECT 1 FROM accounts_tenant WHERE id = %s FOR UPDATE", [tenant.pk])
                for step in STEPS:
                    STEP_FUNCTIONS[step](run)
                    done += 1
                    if progress is not None:
                        progress(done, total_steps, f"{tenant.name}: {step}")
                if dry_run:
                    transaction.set_rollback(True)
            totals.update(run.counts)
            per_tenant[tenant.name] = dict(sorted(run.counts.items()))
            for step, values in run.ids.items():
                ids.setdefault(step, []).extend(values)
    except Exception as exc:
        if report is not None:  # the tenants done so far stay done; say where it stopped
            report.error = f"{exc.__class__.__name__}: {exc}"[:2000]
            report.counts = {**dict(sorted(totals.items())), "per_tenant": per_tenant}
            report.finished_at = timezone.now()
            report.save(update_fields=["error", "counts", "finished_at"])
        raise
    totals["tenants"] = len(tenants)
    limit = settings.MEMORYHUB_REPORT_MAX_IDS
    result: dict[str, Any] = {
        "dry_run": dry_run,
        "report_id": report.pk if report else None,
        "counts": dict(sorted(totals.items())),
        "tenants": per_tenant,
        "ids": {step: values[:limit] for step, values in ids.items()},
        "duration_ms": round((time.monotonic() - started) * 1000),
    }
    if report is not None:
        report.finished_at = timezone.now()
        report.duration_ms = result["duration_ms"]
        report.counts = {**result["counts"], "per_tenant": per_tenant}
        report.ids = result["ids"]
        report.save(update_fields=["finished_at", "duration_ms", "counts", "ids"])
    return result


# --- review ----------------------------------------------------------------------------------


class ReviewError(Exception):
    pass


@transaction.atomic
def approve_pending(pending_id: int, *, by: str = "") -> dict[str, Any]:
    """Carry out a held deletion (what still exists of it)."""
    pending = PendingDeletion.objects.select_for_update().select_related("tenant").get(pk=pending_id)
    if pending.status != PendingDeletion.Status.PENDING:
        raise ReviewError(f"review {pending.pk} is already {pending.status}")
    if pending.step == PendingDeletion.Step.PRUNE and pending.tenant.immutable_transcript:
        outcome: dict[str, Any] = {"deleted": 0, "skipped": "immutable_transcript"}
    elif pending.step == PendingDeletion.Step.MERGE:
        outcome = {"deleted": apply_merge(tenant_id=pending.tenant_id, survivor_id=pending.payload["survivor"],
                                          absorbed_ids=list(pending.chunk_ids))}
    else:
        outcome = {"deleted": delete_memories(tenant_id=pending.tenant_id, chunk_ids=list(pending.chunk_ids))}
    _decide(pending, PendingDeletion.Status.APPROVED, by, outcome)
    return outcome


@transaction.atomic
def reject_pending(pending_id: int, *, by: str = "") -> None:
    pending = PendingDeletion.objects.select_for_update().get(pk=pending_id)
    if pending.status != PendingDeletion.Status.PENDING:
        raise ReviewError(f"review {pending.pk} is already {pending.status}")
    _decide(pending, PendingDeletion.Status.REJECTED, by, {})


def _decide(pending: PendingDeletion, status: str, by: str, outcome: dict[str, Any]) -> None:
    pending.status = status
    pending.decided_at = timezone.now()
    pending.decided_by = by
    pending.outcome = outcome
    pending.save(update_fields=["status", "decided_at", "decided_by", "outcome"])


# --- pinning (admin bulk actions) --------------------------------------------------------------


def pin_memories(chunk_ids: list[int]) -> int:
    """Pin: importance 1, long-term, never pruned, merged or capped; the old values are kept."""
    count = 0
    for chunk in Chunk.objects.filter(pk__in=chunk_ids):
        if chunk.metadata.get("pinned") is True:
            continue
        chunk.metadata = {**chunk.metadata, "pinned": True,
                          "pinned_from": {"importance": chunk.importance, "lifetime": chunk.lifetime}}
        chunk.importance, chunk.lifetime = 1.0, "long_term"
        chunk.save(update_fields=["metadata", "importance", "lifetime"])
        count += 1
    return count


def unpin_memories(chunk_ids: list[int]) -> int:
    count = 0
    for chunk in Chunk.objects.filter(pk__in=chunk_ids):
        if chunk.metadata.get("pinned") is not True:
            continue
        before = chunk.metadata.get("pinned_from") or {}
        chunk.metadata = {k: v for k, v in chunk.metadata.items() if k not in ("pinned", "pinned_from")}
        chunk.importance = float(before.get("importance", chunk.importance))
        chunk.lifetime = before.get("lifetime", chunk.lifetime)
        chunk.save(update_fields=["metadata", "importance", "lifetime"])
        count += 1
    return count

