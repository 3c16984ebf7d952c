"""The steps of one tenant's consolidation run: score, promote, prune, merge, cap, compress.

Each is SQL over the tenant's chunks inside the run's transaction (consolidation.py holds the job).
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q

from accounts.models import Tenant
from memoryhub.models import Event, Fact, Session, SummaryNode
from memoryhub.summaries import build_tree
from retrieval import decay
from retrieval.lifecycle.duplicates import find_duplicates, plan_merges
from retrieval.lifecycle.memories import apply_merge, delete_memories
from retrieval.lifecycle.models import CompressedConversation, ConsolidationReport, PendingDeletion
from retrieval.lifecycle.sql import PINNED, SHORT_TERM, fetch, scope_sql
from retrieval.models import Chunk

logger = logging.getLogger(__name__)

# Promote a short-term memory to long-term when its relevance (retrieval.decay) is above this and
# it was returned by search more than PROMOTE_MIN_ACCESSES times.
PROMOTE_RELEVANCE = 0.7
PROMOTE_MIN_ACCESSES = 3
# Prune memories whose relevance fell below this (never when the tenant's transcript is immutable).
PRUNE_RELEVANCE = 0.01
# Keep at most this many memories per scope (tenant, workspace, channel, session, tier); the
# lowest relevance goes first.
CAP_PER_SCOPE = 10_000
# Compress conversations idle (no new event) for this many hours into summaries.
COMPRESS_AFTER_HOURS = 72
# Until an operator has decided one review of a tenant (approved or rejected), every deletion
# consolidation wants to make there is held for review: the first destructive run is previewed.
FIRST_REVIEW = True


@dataclass
class TenantRun:
    tenant: Tenant
    now: datetime
    dry_run: bool
    report: ConsolidationReport | None
    counts: Counter[str] = field(
        default_factory=lambda: Counter(
            dict.fromkeys(
                (
                    "scored",
                    "promoted",
                    "pruned",
                    "merged",
                    "merge_groups",
                    "capped",
                    "compressed",
                    "held_for_review",
                ),
                0,
            )
        )
    )
    ids: dict[str, list[Any]] = field(default_factory=dict)
    gone: set[int] = field(default_factory=set)  # deleted or held for review in this run
    # What each deletion removes, in words: {"step", "kind", "id" (the memory's own id: note id,
    # fact id, event id, summary or document id), "chunk_id", "text", "user_id", "session",
    # "held", and for a merge "merged_into"} (the report shows these, not ids alone).
    deletions: list[dict[str, Any]] = field(default_factory=list)
    _reviewed: bool | None = None
    _review_reason: str = ""
    _held_keyed: bool = False  # a deletion was held because it would remove a keyed fact

    def note(self, step: str, ids: list[Any]) -> None:
        self.ids.setdefault(step, []).extend(ids)

    @property
    def reviewed(self) -> bool:
        """Deletions are held for review when the tenant asks for it, and on its first destructive
        run: until an operator has decided one review, nothing is deleted unseen."""
        if self._reviewed is None:
            first = (
                FIRST_REVIEW
                and not PendingDeletion.objects.filter(tenant=self.tenant)
                .exclude(status=PendingDeletion.Status.PENDING)
                .exists()
            )
            self._reviewed = bool(self.tenant.review_deletions or first)
            self._review_reason = (
                REVIEW_EVERY if self.tenant.review_deletions else REVIEW_FIRST if first else ""
            )
        return self._reviewed

    @property
    def review_reason(self) -> str:
        if self.reviewed:
            return self._review_reason
        return REVIEW_KEYED if self._held_keyed else ""

    def holds(self, ids: list[int]) -> bool:
        """Whether deleting these memories waits for review: when every deletion of the tenant does
        (reviewed), and always when one of them is a fact addressed by its key, whatever an operator
        decided before: a client that reads a fact by its key would find it gone unseen."""
        if self.reviewed:
            return True
        if _keyed_facts(ids):
            self._held_keyed = True
            return True
        return False

    def describe(
        self, step: str, ids: list[int], survivor: int | None = None, *, held: bool
    ) -> None:
        rows = Chunk.objects.filter(
            pk__in=[*ids, *([survivor] if survivor else [])]
        ).select_related("session")
        by_id = {c.pk: c for c in rows}
        own = _own_ids(list(by_id.values()))
        for pk in ids:
            chunk = by_id.get(pk)
            if chunk is None:
                continue
            entry = {
                "step": step,
                "kind": chunk.kind,
                "id": own.get(pk),
                "chunk_id": pk,
                "text": chunk.text[:300],
                "user_id": chunk.user_id,
                "session": chunk.session.external_id if chunk.session_id else None,
                "held": held,
            }
            if survivor is not None and survivor in by_id:
                entry["merged_into"] = {
                    "kind": by_id[survivor].kind,
                    "id": own.get(survivor),
                    "chunk_id": survivor,
                    "text": by_id[survivor].text[:300],
                }
            self.deletions.append(entry)

    def delete_kinds(self) -> list[str]:
        return list(settings.MEMORYHUB_CONSOLIDATE_DELETE_KINDS)

    def relevance(self) -> tuple[str, list[object]]:
        return decay.relevance_sql("c", now=self.now)


REVIEW_FIRST = "first destructive run of this tenant waits for an operator's review"
REVIEW_EVERY = "this tenant has every deletion reviewed by an operator (review_deletions)"
REVIEW_KEYED = "a fact addressed by its key is removed only after an operator's review"


def _keyed_facts(ids: list[int]) -> set[int]:
    """The facts with a key among these memories."""
    if not ids:
        return set()
    facts = Chunk.objects.filter(pk__in=ids, kind="fact", metadata__has_key="key").exclude(
        metadata__key=""
    )
    return set(facts.values_list("id", flat=True))


def _own_ids(chunks: list[Chunk]) -> dict[int, Any]:
    """The id each chunk's memory is known by: a note's note id, a fact's id, a message's event
    id, a summary's or document's source id (one query for the events)."""
    own: dict[int, Any] = {}
    places = {
        (c.session_id, c.sequence_start): c.pk for c in chunks if c.kind == "event" and c.session_id
    }
    if places:
        wanted = Q()
        for session_id, sequence in places:
            wanted |= Q(session_id=session_id, sequence=sequence)
        for pk, session_id, sequence in Event.objects.filter(wanted).values_list(
            "pk", "session_id", "sequence"
        ):
            own[places[(session_id, sequence)]] = pk
    for chunk in chunks:
        if chunk.kind == "fact" and chunk.source_id.isdigit():
            own[chunk.pk] = int(chunk.source_id)
        elif chunk.kind != "event":
            own[chunk.pk] = chunk.source_id or None
    return own


def score(run: TenantRun) -> None:
    rel, params = run.relevance()
    rows = fetch(
        f"""SELECT count(*),
                   count(*) FILTER (WHERE r < %s), count(*) FILTER (WHERE r >= %s AND r <= %s),
                   count(*) FILTER (WHERE r > %s)
            FROM (SELECT {rel} AS r FROM retrieval_chunk c WHERE c.tenant_id = %s AND {SHORT_TERM}) s""",  # noqa: E501
        [_prune_at(), _prune_at(), _promote_at(), _promote_at(), *params, run.tenant.pk],
    )
    total, low, middle, high = rows[0]
    run.counts.update(
        scored=total,
        relevance_below_prune=low,
        relevance_between=middle,
        relevance_above_promote=high,
    )


def _prune_at() -> float:
    return PRUNE_RELEVANCE


def _promote_at() -> float:
    return PROMOTE_RELEVANCE


def promote(run: TenantRun) -> None:
    rel, params = run.relevance()
    rows = fetch(
        f"""UPDATE retrieval_chunk c SET lifetime = 'long_term'
            WHERE c.tenant_id = %s AND {SHORT_TERM} AND {rel} > %s
              AND c.id IN (SELECT chunk_id FROM retrieval_chunkaccess WHERE access_count > %s)
            RETURNING c.id""",
        [run.tenant.pk, *params, _promote_at(), PROMOTE_MIN_ACCESSES],
    )
    ids = sorted(r[0] for r in rows)
    run.counts["promoted"] += len(ids)
    run.note("promoted", ids)
    # A fact keeps its own lifetime (the facts API shows it): promote the fact with its chunk.
    fact_ids = [
        int(s)
        for s in Chunk.objects.filter(pk__in=ids, kind="fact").values_list("source_id", flat=True)
        if s.isdigit()
    ]
    if fact_ids:
        Fact.objects.filter(tenant=run.tenant, pk__in=fact_ids).exclude(
            lifetime="long_term"
        ).update(lifetime="long_term")


def prune(run: TenantRun) -> None:
    rel, params = run.relevance()
    rows = fetch(
        f"""SELECT c.id FROM retrieval_chunk c
            WHERE c.tenant_id = %s AND {SHORT_TERM} AND c.kind = ANY(%s) AND NOT {PINNED} AND {rel} < %s
            ORDER BY c.id""",  # noqa: E501
        [run.tenant.pk, run.delete_kinds(), *params, _prune_at()],
    )
    ids = [r[0] for r in rows]
    if run.tenant.immutable_transcript:
        # An immutable transcript keeps everything derived from it too: nothing pruned.
        run.counts["prune_skipped_immutable"] += len(ids)
        return
    done = _delete_or_hold_apart(run, PendingDeletion.Step.PRUNE, ids)
    if done:
        run.counts["pruned"] += len(done)
        run.note("pruned", done)


def _delete_or_hold_apart(run: TenantRun, step: str, ids: list[int]) -> list[int]:
    """_delete_or_hold for the keyed facts among `ids` and for the rest apart (the keyed ones are
    always held: TenantRun.holds); the ids deleted."""
    # held together anyway when every deletion is
    keyed = set() if run.reviewed else _keyed_facts(ids)
    done: list[int] = []
    for part in (sorted(keyed), [i for i in ids if i not in keyed]):
        if _delete_or_hold(run, step, part):
            done += part
    return done


def _delete_or_hold(
    run: TenantRun, step: str, ids: list[int], payload: dict[str, Any] | None = None
) -> bool:
    """Delete (or merge) now, or hold for review; True when it was done. The counts say what
    happened: a held deletion counts under held_for_review (and its step's `<step>_held`) only."""
    if not ids:
        return False
    run.gone.update(ids)
    held = run.holds(ids)
    run.describe(step, ids, (payload or {}).get("survivor"), held=held)
    if held:
        run.counts["held_for_review"] += len(ids)
        run.counts[f"{step}_held"] += len(ids)
        run.note("held_for_review", ids)
        if run.report is not None:
            PendingDeletion.objects.create(
                tenant=run.tenant,
                report=run.report,
                step=step,
                chunk_ids=ids,
                payload=payload or {},
            )
        return False
    if step == PendingDeletion.Step.MERGE and payload:
        apply_merge(tenant_id=run.tenant.pk, survivor_id=payload["survivor"], absorbed_ids=ids)
    else:
        delete_memories(tenant_id=run.tenant.pk, chunk_ids=ids, reason=step)
    return True


def merge(run: TenantRun) -> None:
    pairs = find_duplicates(run.tenant.pk, run.delete_kinds(), run.gone)
    if not pairs:
        return
    involved = {i for a, b, _ in pairs for i in (a, b)}
    importance = dict(Chunk.objects.filter(pk__in=involved).values_list("id", "importance"))
    groups = plan_merges(pairs, importance)
    for survivor, others in sorted(groups.items()):
        if _delete_or_hold(run, PendingDeletion.Step.MERGE, sorted(others), {"survivor": survivor}):
            run.counts["merge_groups"] += 1
            run.counts["merged"] += len(others)
            run.note("merged", [[survivor, *sorted(others)]])


def cap(run: TenantRun) -> None:
    rel, params = run.relevance()
    rows = fetch(
        f"""SELECT id FROM (
                SELECT c.id, c.kind, {PINNED} AS pinned,
                       row_number() OVER (PARTITION BY {scope_sql("c")}
                                          ORDER BY {PINNED} DESC, {rel} DESC, c.id DESC) AS rn
                FROM retrieval_chunk c WHERE c.tenant_id = %s AND c.valid_to IS NULL AND NOT (c.id = ANY(%s))
            ) ranked
            WHERE rn > %s AND kind = ANY(%s) AND NOT pinned ORDER BY id""",  # noqa: E501
        [*params, run.tenant.pk, sorted(run.gone), CAP_PER_SCOPE, run.delete_kinds()],
    )
    ids = [r[0] for r in rows]
    done = _delete_or_hold_apart(run, PendingDeletion.Step.CAP, ids)
    if done:
        run.counts["capped"] += len(done)
        run.note("capped", done)


# --- compress --------------------------------------------------------------------------------


def compress_candidates(run: TenantRun) -> list[Session]:
    idle_since = run.now - timedelta(hours=COMPRESS_AFTER_HOURS)
    done = dict(
        CompressedConversation.objects.filter(tenant=run.tenant).values_list(
            "session_id", "upper_sequence"
        )
    )
    # Idle: nothing appended or changed for COMPRESS_AFTER_HOURS, whatever the status.
    sessions = Session.objects.filter(
        tenant=run.tenant, updated_at__lt=idle_since, event_count__gt=0
    ).order_by("id")
    return [s for s in sessions if done.get(s.pk, 0) < s.last_sequence]


def compress(run: TenantRun) -> None:
    candidates = compress_candidates(run)
    run.counts["compress_candidates"] += len(candidates)
    if run.dry_run:  # no summariser call: it may be a paid model, and it would be thrown away
        run.counts["compressed"] += len(candidates)
        if candidates:
            run.note("compressed", [s.external_id for s in candidates])
        return
    for session in candidates:
        try:
            with transaction.atomic():
                # closes the tree: leaves over every event, branches, a root
                build_tree(session, final=True)
                top = (
                    SummaryNode.objects.filter(session=session)
                    .order_by("-depth", "-sequence_end")
                    .first()
                )
                CompressedConversation.objects.update_or_create(
                    session=session,
                    defaults={
                        "tenant": run.tenant,
                        "upper_sequence": session.last_sequence,
                        "summary_ref": f"summary node {top.pk}" if top else "",
                        "compressed_at": run.now,
                    },
                )
                # Its messages are consolidated: the summary tree covers them.
                session.mark_consolidated(session.last_sequence)
        except Exception as exc:  # one failing summary must not stop the others
            logger.warning("compressing session %s failed: %s", session.pk, exc)
            run.counts["compress_failed"] += 1
            continue
        run.counts["compressed"] += 1
        run.note("compressed", [session.external_id])
