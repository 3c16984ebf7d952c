"""Rolling summaries and the summary tree (docs/event-log.md#summaries).

Rolling summary: one per session (memoryhub.models.RollingSummary). Every write is a
compare-and-swap on its epoch done by ONE SQL statement, so a stale writer changes nothing.
The automatic trigger condenses the oldest unsummarised messages when they use more than
TRIGGER of the budget (and are at least MIN_MESSAGES),
down to TARGET.

Summary tree: leaves over contiguous runs of events, branches over leaves, a root over the
branches; every node is searchable (kind "summary") and expands to its children and events.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.postgres.aggregates import ArrayAgg
from django.db import connection, transaction
from django.db.models import Count, Max, Min, Sum, TextField, Value
from django.db.models.functions import Cast, Coalesce, Length
from django.utils import timezone

from memoryhub.condense import condense
from memoryhub.models import Event, RollingSummary, Session, SummaryNode, estimate_tokens
from memoryhub.signals import memory_deleted, memory_saved
from memoryhub.summarisers import Turn, level_budget, summarise_safely, summariser_model

logger = logging.getLogger(__name__)

# --- Rolling summary (docs/event-log.md#summaries) ---
# Summarise when at least MIN_MESSAGES messages are not yet in the summary and they use more than
# TRIGGER of the budget (tokens: a session's summary_budget, or the summary call's budget, else
# BUDGET), condensing the oldest of them until the rest fits in TARGET of it.
MIN_MESSAGES = 4
BUDGET = 4000
TRIGGER = 0.80
TARGET = 0.50
# The rolling summary itself never grows beyond this share of the budget: past it, it is condensed
# (re-summarised, older lines merged; memoryhub/condense.py), never cut.
MAX_SHARE = 0.30
# At most this many of the newest unsummarised events are read by one summarisation.
MAX_EVENTS = 2000
# Check the trigger (and grow the summary tree) in the background after every append.
AUTO_SUMMARISE = True
# --- Summary tree (docs/event-log.md#summaries) ---
# A leaf covers LEAF_EVENTS events, a branch BRANCH_CHILDREN nodes below it; a session with no new
# event for IDLE_MINUTES gets its unfinished leaf and branches closed.
LEAF_EVENTS = 8
BRANCH_CHILDREN = 4
IDLE_MINUTES = 30


# --- rolling summary ---------------------------------------------------------------------------


@dataclass
class SummaryState:
    text: str
    epoch: int
    upper_sequence: int
    updated_at: Any


def current_summary(session: Session) -> SummaryState:
    row = RollingSummary.objects.filter(session=session).first()
    if row is None:
        return SummaryState(text="", epoch=0, upper_sequence=0, updated_at=None)
    return SummaryState(
        text=row.text, epoch=row.epoch, upper_sequence=row.upper_sequence, updated_at=row.updated_at
    )


_TABLE = RollingSummary._meta.db_table

# Conditional write: the UPDATE matches only the expected epoch; the INSERT runs only when the
# writer expects "no summary yet" (epoch 0) and the row does not exist. Under READ COMMITTED a
# concurrent writer that lost waits for the winner's row lock, re-checks `epoch = expected`,
# matches nothing and returns no row; two first writers race on the unique session_id and the
# loser's ON CONFLICT DO NOTHING returns no row either.
_CAS_SQL = f"""
WITH upd AS (
    UPDATE {_TABLE} SET text = %(text)s, epoch = epoch + 1,
        upper_sequence = COALESCE(%(upper)s, upper_sequence), updated_at = %(now)s
    WHERE session_id = %(session)s AND epoch = %(expected)s
    RETURNING epoch, upper_sequence, updated_at
), ins AS (
    INSERT INTO {_TABLE} (session_id, tenant_id, text, epoch, upper_sequence, updated_at)
    SELECT %(session)s, %(tenant)s, %(text)s, 1, COALESCE(%(upper)s, 0), %(now)s
    WHERE %(expected)s = 0 AND NOT EXISTS (SELECT 1 FROM upd)
    ON CONFLICT (session_id) DO NOTHING
    RETURNING epoch, upper_sequence, updated_at
)
SELECT epoch, upper_sequence, updated_at FROM upd UNION ALL SELECT epoch, upper_sequence, updated_at FROM ins
"""  # noqa: E501

# Unconditional write (no expected epoch given): still one statement, still bumps the epoch.
_WRITE_SQL = f"""
INSERT INTO {_TABLE} (session_id, tenant_id, text, epoch, upper_sequence, updated_at)
VALUES (%(session)s, %(tenant)s, %(text)s, 1, COALESCE(%(upper)s, 0), %(now)s)
ON CONFLICT (session_id) DO UPDATE SET text = EXCLUDED.text, epoch = {_TABLE}.epoch + 1,
    upper_sequence = COALESCE(%(upper)s, {_TABLE}.upper_sequence), updated_at = EXCLUDED.updated_at
RETURNING epoch, upper_sequence, updated_at
"""


def write_summary(
    session: Session, *, text: str, expected_epoch: int | None, upper_sequence: int | None = None
) -> SummaryState | None:
    """Write the rolling summary; None when `expected_epoch` is stale (nothing was changed)."""
    params = {
        "text": text,
        "upper": upper_sequence,
        "now": timezone.now(),
        "session": session.pk,
        "tenant": session.tenant_id,
        "expected": expected_epoch,
    }
    with connection.cursor() as cursor:
        cursor.execute(_CAS_SQL if expected_epoch is not None else _WRITE_SQL, params)
        row = cursor.fetchone()
    if row is None:
        return None
    return SummaryState(text=text, epoch=row[0], upper_sequence=row[1], updated_at=row[2])


def event_cost(event: Event) -> int:
    return estimate_tokens(event.text) + 4  # same per-message overhead as restore


def summary_budget(session: Session, budget: int | None = None) -> int:
    """The budget a summarisation uses: the call's, else the session's, else the server default."""
    return budget or session.summary_budget or BUDGET


def estimated_tokens_sql() -> Any:
    """The trigger's token estimate of one event in SQL (≈4 characters a token, +4 a message, tool
    arguments and calls counted as text): close to event_cost without loading the events."""

    def length(field: str) -> Any:
        return Coalesce(Length(Cast(field, TextField())), Value(0))

    return (Length("content") + length("tool_args") + length("tool_calls") + 3) / 4 + 4


def _unsummarised(session: Session, upper: int) -> tuple[list[Event], list[int], int]:
    """The oldest unsummarised events (at most MAX_EVENTS), their costs, and the
    cost of every unsummarised event. A huge backlog (an import) is condensed a window at a time,
    oldest first: nothing is skipped, and later rounds take the next window."""
    limit = MAX_EVENTS
    events = list(session.events.filter(sequence__gt=upper).order_by("sequence")[: limit + 1])
    beyond = 0
    if len(events) > limit:
        events = events[:limit]
        beyond = (
            session.events.filter(sequence__gt=events[-1].sequence)
            .order_by()
            .aggregate(t=Sum(estimated_tokens_sql()))["t"]
            or 0
        )
    costs = [event_cost(e) for e in events]
    return events, costs, sum(costs) + int(beyond)


def maybe_summarise(session: Session, *, budget: int | None = None) -> dict[str, Any]:
    """Apply the rolling-summary trigger to one session. Returns what happened (for logs and
    reports)."""
    budget = summary_budget(session, budget)
    state = current_summary(session)
    events, costs, total = _unsummarised(session, state.upper_sequence)
    if len(events) < MIN_MESSAGES or total <= TRIGGER * budget:
        return {"summarised": False, "messages": len(events), "tokens": total, "budget": budget}
    target = TARGET * budget
    condensed: list[Event] = []
    remaining = total
    for event, cost in zip(events, costs, strict=True):
        if remaining <= target:
            break
        condensed.append(event)
        remaining -= cost
    header = conversation_header(session, 1, condensed[-1].sequence)
    text, used = summarise_safely(
        [Turn.from_event(e, agent=session.agent) for e in condensed],
        previous=state.text,
        header=header,
    )
    # Past its share the summary is condensed (re-summarised, older lines merged), never cut.
    text = condense(text, int(MAX_SHARE * budget), header=header)
    written = write_summary(
        session, text=text, expected_epoch=state.epoch, upper_sequence=condensed[-1].sequence
    )
    if written is None:
        logger.info(
            "rolling summary of session %s: stale epoch %s, discarded", session.pk, state.epoch
        )
        return {
            "summarised": False,
            "stale": True,
            "messages": len(events),
            "tokens": total,
            "budget": budget,
        }
    return {
        "summarised": True,
        "condensed": len(condensed),
        "epoch": written.epoch,
        "upper_sequence": written.upper_sequence,
        "remaining_tokens": remaining,
        "summariser": used,
        "budget": budget,
    }


# --- the conversation header of a model's prompt (docs/event-log.md#summaries) --------------------


def conversation_header(session: Session, start: int, end: int) -> str:
    """What a summary is about: the session, its channel, who took part and when, for messages
    `start` to `end`. Only a model's prompt reads it: "" (and no query) for the extractive one."""
    if settings.MEMORYHUB_SUMMARISER != "http":
        return ""
    stats = session.events.filter(sequence__gte=start, sequence__lte=end).aggregate(
        first=Min("created_at"),
        last=Max("created_at"),
        count=Count("pk"),
        low=Min("sequence"),
        high=Max("sequence"),
        roles=ArrayAgg("role", distinct=True, default=[]),
        tools=ArrayAgg("tool_name", distinct=True, default=[]),
    )
    title = f', title "{session.title}"' if session.title else ""
    lines = [
        f'Conversation: session "{session.external_id}" (ref {session.ref_code}){title}',
        f'Workspace "{session.workspace.name}", channel "{session.channel.name}"',
    ]
    people = []
    for role in sorted(stats["roles"]):
        who = {"user": session.user_id, "assistant": session.agent}.get(role, "")
        people.append(f'{role} "{who}"' if who else role)
    tools = sorted(t for t in stats["tools"] if t)
    if tools:
        people.append(f"tools used: {', '.join(tools)}")
    lines.append(f"Participants: {', '.join(people) or 'none'}")
    if stats["count"]:
        lines.append(
            f"Time span: {stats['first']:%Y-%m-%dT%H:%MZ} to {stats['last']:%Y-%m-%dT%H:%MZ}, "
            f"messages #{stats['low']} to #{stats['high']} ({stats['count']} messages)"
        )
    return "\n".join(lines)


# --- summary tree ------------------------------------------------------------------------------


def lock_session_tree(session_pk: int) -> None:
    """Serialise tree builders of one session without blocking its appends."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [4242, session_pk])


@dataclass(frozen=True)
class Span:
    """What a node covers: events `start` to `end`, written from `earliest` to `latest`."""

    start: int
    end: int
    count: int  # events (leaf) or child nodes
    earliest: datetime | None
    latest: datetime | None

    @classmethod
    def of_events(cls, events: list[Event]) -> Span:
        return cls(
            events[0].sequence,
            events[-1].sequence,
            len(events),
            min(e.created_at for e in events),
            max(e.created_at for e in events),
        )

    @classmethod
    def of_nodes(cls, nodes: list[SummaryNode]) -> Span:
        times = [t for n in nodes for t in (n.earliest_at, n.latest_at) if t is not None]
        return cls(
            nodes[0].sequence_start,
            nodes[-1].sequence_end,
            len(nodes),
            min(times, default=None),
            max(times, default=None),
        )


def _new_node(
    session: Session, level: str, depth: int, text: str, span: Span, summariser: str
) -> SummaryNode:
    """A node with its span in sequences and in time, and the summariser and model that wrote it
    (earliest_at, latest_at and model)."""
    node = SummaryNode.objects.create(
        tenant_id=session.tenant_id,
        workspace_id=session.workspace_id,
        channel_id=session.channel_id,
        session=session,
        user_id=session.user_id,
        level=level,
        depth=depth,
        text=text,
        sequence_start=span.start,
        sequence_end=span.end,
        source_count=span.count,
        token_count=estimate_tokens(text),
        summariser=summariser,
        model=summariser_model(summariser),
        earliest_at=span.earliest,
        latest_at=span.latest,
    )
    memory_saved.send(sender=SummaryNode, kind="summary", instance=node)
    return node


def delete_node(node: SummaryNode) -> None:
    memory_deleted.send(
        sender=SummaryNode, kind="summary", tenant_id=node.tenant_id, source_id=str(node.pk)
    )
    node.delete()


_BULLET = re.compile(r"^-\s*(?:\[[^\]]*\]\s*)?")


def _node_turn(node: SummaryNode) -> Turn:
    """A child node as one turn of its parent: its lines joined, without bullets and timestamps
    (the parent line carries the span), so the clip keeps as many of its words as it can."""
    text = " | ".join(
        _BULLET.sub("", line).strip() for line in node.text.splitlines() if line.strip()
    )
    return Turn(
        speaker=node.level,
        text=text,
        sequence=node.sequence_start,
        sequence_end=node.sequence_end,
        created_at=node.earliest_at or node.created_at,
    )


def _summarise_level(session: Session, turns: list[Turn], level: str) -> tuple[str, str]:
    """A node's text at `level` over `turns`, within the level's token budget (condensed past it,
    never cut), and the name of the summariser that wrote it."""
    first, last = turns[0].sequence or 0, turns[-1].sequence_end or turns[-1].sequence or 0
    header = conversation_header(session, first, last)
    text, used = summarise_safely(turns, level=level, header=header)
    return condense(text, level_budget(level) or estimate_tokens(text), header=header), used


@transaction.atomic
def build_tree(session: Session, *, final: bool = False) -> int:
    """Grow the session's tree: new leaves over full runs of events, branches over full groups
    of leaves, and a root over the branches once there are two. With `final` (an idle session)
    the unfinished run and group are closed too. Returns the number of nodes created."""
    lock_session_tree(session.pk)
    leaf_size = LEAF_EVENTS
    fan = BRANCH_CHILDREN
    created = 0
    covered = session.summary_nodes.filter(level="leaf").aggregate(m=Max("sequence_end"))["m"] or 0
    events = list(session.events.filter(sequence__gt=covered).order_by("sequence"))
    for index in range(0, len(events), leaf_size):
        group = events[index : index + leaf_size]
        if len(group) < leaf_size and not final:
            break
        text, used = _summarise_level(
            session, [Turn.from_event(e, agent=session.agent) for e in group], "leaf"
        )
        if not text.strip():
            continue
        _new_node(session, "leaf", 0, text, Span.of_events(group), used)
        created += 1
    orphans = list(
        session.summary_nodes.filter(level="leaf", parent__isnull=True).order_by("sequence_start")
    )
    has_branches = session.summary_nodes.filter(level="branch").exists()
    new_branch = False
    for index in range(0, len(orphans), fan):
        group = orphans[index : index + fan]
        if len(group) < fan and not (final and (has_branches or len(orphans) > 1)):
            break
        text, used = _summarise_level(session, [_node_turn(n) for n in group], "branch")
        branch = _new_node(session, "branch", 1, text, Span.of_nodes(group), used)
        SummaryNode.objects.filter(pk__in=[n.pk for n in group]).update(parent=branch)
        created += 1
        has_branches = new_branch = True
    branches = list(session.summary_nodes.filter(level="branch").order_by("sequence_start"))
    root = session.summary_nodes.filter(level="root").first()
    if len(branches) >= 2 and (new_branch or root is None):
        if root is not None:
            delete_node(root)
        text, used = _summarise_level(session, [_node_turn(n) for n in branches], "root")
        root = _new_node(session, "root", 2, text, Span.of_nodes(branches), used)
        SummaryNode.objects.filter(pk__in=[n.pk for n in branches]).update(parent=root)
        created += 1
    return created


# --- reading the tree --------------------------------------------------------------------------


def source_events(node: SummaryNode, *, limit: int) -> list[Event]:
    return list(
        Event.objects.filter(
            session_id=node.session_id,
            sequence__gte=node.sequence_start,
            sequence__lte=node.sequence_end,
        ).order_by("sequence")[:limit]
    )


# --- what a context block shows of a conversation's summaries ---------------------------------

# At most this many summary-tree nodes in a context block, besides the rolling summary.
CONTEXT_NODES = 3


def context_nodes(
    session: Session, *, summarised_to: int, shown_from: int | None
) -> list[SummaryNode]:
    """The newest summary-tree nodes of `session` that cover messages neither the rolling summary
    (up to `summarised_to`) nor the recent window (from `shown_from` on; None: it shows none)
    shows, none overlapping another (the finer, newer node wins), at most CONTEXT_NODES, oldest
    first."""
    nodes = session.summary_nodes.filter(sequence_end__gt=summarised_to).exclude(text="")
    if shown_from is not None:
        nodes = nodes.filter(sequence_start__lt=shown_from)
    picked: list[SummaryNode] = []
    for node in nodes.order_by("-sequence_end", "depth", "-pk"):
        if any(
            node.sequence_start <= p.sequence_end and p.sequence_start <= node.sequence_end
            for p in picked
        ):
            continue
        picked.append(node)
        if len(picked) == CONTEXT_NODES:
            break
    return sorted(picked, key=lambda n: n.sequence_start)
