"""The summarise lane: what each conversation still needs, read from table state.

No task is queued per append. A session is due when
- its unsummarised messages pass the rolling-summary trigger (docs/event-log.md#summaries),
  estimated in SQL;
- it has a full leaf of events beyond its summary tree, or went idle with events beyond it;
- a fact extractor is configured and it has events past `facts_extracted_to`. A conversation that
  has ended (idle or archived: memoryhub.conversations wakes the lane then) is extracted to its
  last event in one visit, up to ENDED_BATCHES extractor calls, so the
  whole conversation is reviewed when it ends; an active one a batch per visit.
When it works on a session it also has a summariser model describe the session's new tool calls
in a sentence (memoryhub.tool_sentences; not a reason on its own for a session to be due: an
idle session is due anyway once its tree is to be closed).
The lane looks at sessions written since its last pass (Session.updated_at, indexed), and at
all of them every FULL_PASS_SECONDS, 5 minutes (an idle session's tree is closed by the
clock, not by a write). Each session is worked on under an advisory lock, so lanes on several
machines never do one session twice at once, each sub-step within background.STEP_SECONDS. A
failure is recorded (StepFailure); after MAX_ATTEMPTS in a row the
session is set aside, so one pathological conversation cannot stall the lane.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import Exists, F, FloatField, OuterRef, Q, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from memoryhub import summaries as summary_rules
from memoryhub.extractors import ExtractorReplyError, extract_and_store, extractor_configured
from memoryhub.models import (
    Event,
    Fact,
    RollingSummary,
    Session,
    SessionStatus,
    StepFailure,
    SummaryNode,
)
from memoryhub.plumbing import background as lanes
from memoryhub.plumbing.background import StepResult, notify_work, time_budget
from memoryhub.summaries import build_tree, estimated_tokens_sql, maybe_summarise
from memoryhub.tool_sentences import describe_tool_calls

logger = logging.getLogger(__name__)

STEP = "session"
FACTS_STEP = "facts"  # an extractor reply that was no facts (recorded, never set aside)
LOCK_KEY = 4243  # advisory lock namespace: (LOCK_KEY, session pk)
FACT_EVENTS = 50  # events per extractor call
# extractor calls one visit makes for an ended conversation (the rest: next pass)
ENDED_BATCHES = 20
PASS_SESSIONS = 200  # sessions one step looks at
# Failures in a row after which a session is set aside (skipped until retried in the admin): a
# model that is down for a moment is tried again, one that chokes on this session is not forever.
MAX_ATTEMPTS = 3
# the summarise lane looks at every session, not only those written since, this often
FULL_PASS_SECONDS = 300
SLACK = timedelta(seconds=5)  # an append's updated_at is taken a little before it commits


def due_sessions(
    *, tenant_id: int | None = None, updated_since: datetime | None = None, summaries: bool = True
) -> QuerySet[Session]:
    """Sessions with background work left (see the module's docstring), set-aside ones excepted.
    Without `summaries`, only those with facts to extract (what a lane that makes no rolling
    summaries or trees, summaries.AUTO_SUMMARISE off, still does)."""
    sessions = Session.objects.all()
    if tenant_id is not None:
        sessions = sessions.filter(tenant_id=tenant_id)
    if updated_since is not None:
        sessions = sessions.filter(updated_at__gte=updated_since)
    upper = RollingSummary.objects.filter(session=OuterRef("pk")).values("upper_sequence")[:1]
    leaf_end = (
        SummaryNode.objects.filter(session=OuterRef("pk"), level="leaf")
        .order_by("-sequence_end")
        .values("sequence_end")[:1]
    )
    sessions = sessions.annotate(
        summarised_to=Coalesce(Subquery(upper), Value(0)),
        leaves_to=Coalesce(Subquery(leaf_end), Value(0)),
    )
    # The trigger's token estimate in SQL, so that sessions far below their budget are not even
    # loaded; maybe_summarise then decides exactly. Each session's own budget (or the default).
    unsummarised_tokens = (
        Event.objects.filter(session=OuterRef("pk"), sequence__gt=OuterRef("summarised_to"))
        .order_by()
        .values("session")
        .annotate(t=Sum(estimated_tokens_sql()))
        .values("t")[:1]
    )
    trigger_tokens = Coalesce("summary_budget", Value(summary_rules.BUDGET)) * Value(
        summary_rules.TRIGGER, output_field=FloatField()
    )
    sessions = sessions.annotate(
        unsummarised_tokens=Coalesce(Subquery(unsummarised_tokens), Value(0)),
        trigger_tokens=trigger_tokens,
    )
    idle_before = timezone.now() - timedelta(minutes=summary_rules.IDLE_MINUTES)
    due = (
        (
            Q(
                last_sequence__gte=F("summarised_to") + summary_rules.MIN_MESSAGES,
                unsummarised_tokens__gt=F("trigger_tokens"),
            )
            | Q(last_sequence__gte=F("leaves_to") + summary_rules.LEAF_EVENTS)
            | Q(last_sequence__gt=F("leaves_to"), updated_at__lt=idle_before)
        )
        if summaries
        else Q(pk__in=[])
    )
    if extractor_configured():
        due |= Q(last_sequence__gt=F("facts_extracted_to"))
    aside = StepFailure.objects.filter(session=OuterRef("pk"), step=STEP, set_aside=True)
    return sessions.filter(due).exclude(Exists(aside))


# --- one session -------------------------------------------------------------------------------


@contextmanager
def _session_held(session_pk: int) -> Iterator[bool]:
    """The session's advisory lock, the one way a worker holds a session: yields whether this
    worker got it (False: another holds it), and releases it at the end."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [LOCK_KEY, session_pk])
        held = bool(cursor.fetchone()[0])
    try:
        yield held
    finally:
        if held:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [LOCK_KEY, session_pk])


def wait_for_session(session_pk: int) -> None:
    """Hold the session's advisory lock and its summary tree's until the current transaction ends,
    waiting for a worker or a tree build that holds them: a change that removes events must not
    race a summary being written from them. Take them before locking the session's row, which a
    worker writing a summary waits for (the other order deadlocks)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [LOCK_KEY, session_pk])
    summary_rules.lock_session_tree(session_pk)


def work_on_session(
    session_pk: int, *, summaries: bool = True, tree: bool = True
) -> dict[str, Any] | None:
    """Do what one session needs (the rolling summary unless not `summaries`, the tree unless not
    `tree`, facts). None when another worker holds it; {"failed": …} when a step failed
    (recorded). Otherwise what was done."""
    with _session_held(session_pk) as held:
        if not held:
            return None
        session = Session.objects.filter(pk=session_pk).first()
        if session is None:
            return {}
        try:
            outcome = _steps(session, summaries=summaries, tree=tree)
        except Exception as exc:  # any failure of one session is its own, never the lane's
            logger.warning("background work on session %s failed: %s", session_pk, exc)
            _record_failure(session, exc)
            return {"failed": f"{exc.__class__.__name__}: {exc}"}
        StepFailure.objects.filter(session_id=session_pk, step=STEP).delete()
        return outcome


def _steps(session: Session, *, summaries: bool, tree: bool) -> dict[str, Any]:
    budget = lanes.STEP_SECONDS
    idle_before = timezone.now() - timedelta(minutes=summary_rules.IDLE_MINUTES)
    summary: dict[str, Any] = {"summarised": False}
    built = 0
    if summaries:
        with transaction.atomic(), time_budget(budget):
            summary = maybe_summarise(session)
    if tree:
        with transaction.atomic(), time_budget(budget):
            built = build_tree(session, final=session.updated_at < idle_before)
    facts, extracted_from = 0, session.facts_extracted_to
    for _ in range(ENDED_BATCHES if session.status != SessionStatus.ACTIVE else 1):
        cursor = session.facts_extracted_to
        with transaction.atomic(), time_budget(budget):
            facts += extract_due_facts(session)
        # nothing done, or all done
        if session.facts_extracted_to in (cursor, session.last_sequence):
            break
    with transaction.atomic(), time_budget(budget):
        described = describe_tool_calls(session)
    return {
        "summarised": bool(summary["summarised"]),
        "stale": bool(summary.get("stale", False)),
        "tree_nodes_built": built,
        "facts": facts,
        "tool_sentences": described,
        "events_extracted": session.facts_extracted_to - extracted_from,
    }


def extract_due_facts(session: Session) -> int:
    """Run the fact extractor over the session's next events past its cursor (with the window of
    events before them as context); returns facts stored (see `extract_events`)."""
    if not extractor_configured():
        return 0
    events = list(
        session.events.filter(sequence__gt=session.facts_extracted_to)
        .order_by("sequence")
        .values_list("pk", flat=True)[:FACT_EVENTS]
    )
    return len(extract_events(session, events))


def extract_events(session: Session, event_ids: list[int]) -> list[Fact]:
    """The one way events are extracted and the cursor moved (the lane, mem0's `add(infer=True)`).

    Runs the fact extractor over these events of the session (consecutive; the window of events
    before them as context) and returns the facts stored. A model that cannot be reached raises
    (the lane records it and tries again later). A reply that is no facts at all is logged and
    recorded as a FACTS_STEP failure, and the cursor goes on: the same model would give the same
    reply again, and the session's summaries must not be set aside for it. The cursor
    (`facts_extracted_to`) moves past the events only when nothing before them is left
    unextracted (it never moves back), and then the events are marked consolidated
    (docs/lifecycle.md#compress: each message says when it was consolidated)."""
    if not extractor_configured():
        return []
    sequences = list(
        session.events.filter(pk__in=event_ids).order_by("sequence").values_list("pk", "sequence")
    )
    if not sequences:
        return []
    first, last = sequences[0][1], sequences[-1][1]
    try:
        stored = extract_and_store(session, [pk for pk, _ in sequences], strict=True)
    except ExtractorReplyError as exc:
        logger.warning(
            "fact extractor's reply for session %s events %s-%s unusable: %s",
            session.pk,
            first,
            last,
            exc,
        )
        _record_failure(session, exc, step=FACTS_STEP)
        stored = []
    else:
        StepFailure.objects.filter(session=session, step=FACTS_STEP).delete()
    moved = Session.objects.filter(
        pk=session.pk, facts_extracted_to__gte=first - 1, facts_extracted_to__lt=last
    ).update(facts_extracted_to=last)
    if moved:
        session.facts_extracted_to = last
        session.mark_consolidated(last)
    else:  # events before them wait for the lane, or another worker moved the cursor
        session.refresh_from_db(fields=["facts_extracted_to"])
    return stored


def _record_failure(session: Session, exc: Exception, *, step: str = STEP) -> None:
    with transaction.atomic():
        failure, _ = StepFailure.objects.select_for_update().get_or_create(
            session=session, step=step, defaults={"tenant_id": session.tenant_id}
        )
        failure.attempts += 1
        failure.error = f"{exc.__class__.__name__}: {exc}"[:4000]
        failure.failed_at = timezone.now()
        # Only the session step is ever set aside; a FACTS_STEP row is a record for the operator.
        failure.set_aside = step == STEP and failure.attempts >= MAX_ATTEMPTS
        failure.save()


def retry_set_aside(failure_ids: list[int]) -> int:
    """Give set-aside sessions another chance (the admin's action): they are due again."""
    with transaction.atomic():
        deleted, _ = StepFailure.objects.filter(pk__in=failure_ids).delete()
        notify_work()
    return deleted


# --- every due session, and the lane -----------------------------------------------------------


def summarise_due(*, tenant_id: int | None = None) -> dict[str, Any]:
    """Work on every due session now (the `summarise` schedule action and cadence call this)."""
    report = {
        "sessions_checked": 0,
        "sessions_summarised": 0,
        "stale_summaries": 0,
        "sessions_with_new_nodes": 0,
        "tree_nodes_built": 0,
        "facts_extracted": 0,
        "sessions_failed": 0,
        "sessions_busy": 0,
    }
    for pk in (
        due_sessions(tenant_id=tenant_id)
        .order_by("pk")
        .values_list("pk", flat=True)
        .iterator(chunk_size=500)
    ):
        report["sessions_checked"] += 1
        _count(report, work_on_session(pk))
    return report


def _count(report: dict[str, Any], outcome: dict[str, Any] | None) -> None:
    if outcome is None:
        report["sessions_busy"] += 1
    elif "failed" in outcome:
        report["sessions_failed"] += 1
    elif outcome:
        report["sessions_summarised"] += int(outcome["summarised"])
        report["stale_summaries"] += int(outcome["stale"])
        report["tree_nodes_built"] += outcome["tree_nodes_built"]
        report["sessions_with_new_nodes"] += int(outcome["tree_nodes_built"] > 0)
        report["facts_extracted"] += outcome["facts"]


class SummariseLane:
    """Rolling summaries, summary trees and fact extraction for sessions that are due."""

    name = "summarise"
    listens = True

    def __init__(self) -> None:
        self.idle_seconds = lanes.WORK_IDLE_SECONDS
        self._since: datetime | None = None  # None: the next pass looks at every session
        self._window: datetime | None = None  # the sessions the last pass looked at: written since
        self._full_at = 0.0  # monotonic time of the last full pass
        self._last_step = 0.0

    def step(self) -> StepResult:
        # During an ingest every append wakes the lane: one pass a second is plenty.
        wait = self._last_step + 1.0 - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self._last_step = time.monotonic()
        if time.monotonic() - self._full_at >= FULL_PASS_SECONDS:
            self._since, self._full_at = None, time.monotonic()
        started, self._window = timezone.now(), self._since
        rows = list(
            due_sessions(updated_since=self._since)
            .order_by("updated_at", "pk")
            .values_list("pk", "updated_at")[:PASS_SESSIONS]
        )
        result = StepResult()
        auto = summary_rules.AUTO_SUMMARISE
        for pk, _ in rows:
            outcome = work_on_session(pk, summaries=auto, tree=auto)
            if outcome and "failed" in outcome:
                result.failed += 1
            elif outcome and (
                outcome["summarised"]
                or outcome["tree_nodes_built"]
                or outcome["facts"]
                # a reply of no facts moved the cursor
                or outcome["events_extracted"]
            ):
                result.done += 1
        # A full page may have more behind it: go on from its last row; otherwise from this pass.
        self._since = rows[-1][1] if len(rows) == PASS_SESSIONS else started - SLACK
        return result

    def has_work(self, before: datetime | None = None) -> bool:
        """Whether a session the last step should have worked on waits
        (memoryhub.plumbing.background asks after an empty step): due by `due_sessions` for what
        this lane does (facts only while summaries.AUTO_SUMMARISE is off), written before `before`
        and within the pass the step made (a due session written before an incremental pass is the
        next full pass's work, not this one's), and not held by another worker."""
        sessions = due_sessions(updated_since=self._window, summaries=summary_rules.AUTO_SUMMARISE)
        if before is not None:
            sessions = sessions.filter(updated_at__lt=before)
        pks = sessions.order_by("updated_at", "pk").values_list("pk", flat=True)[:PASS_SESSIONS]
        return any(not _held_elsewhere(pk) for pk in pks)


def _held_elsewhere(session_pk: int) -> bool:
    """Whether another worker holds the session (work_on_session's advisory lock)."""
    with _session_held(session_pk) as held:
        return not held
