"""The core domain's models, one module per area; import them from here."""

from memoryhub.models.background import StepFailure, Worker
from memoryhub.models.end_users import EndUser
from memoryhub.models.facts import Fact, FactVersion
from memoryhub.models.notes import Note, new_note_id
from memoryhub.models.scratchpad import Scratchpad, ScratchpadItem
from memoryhub.models.sessions import (
    SESSION_ID_REGEX,
    STATUS_TRANSITIONS,
    SUMMARY_BUDGET_MAX,
    SUMMARY_BUDGET_MIN,
    Event,
    EventQuerySet,
    Role,
    Session,
    SessionQuerySet,
    SessionStatus,
    ToolCallSentence,
    estimate_tokens,
    iso,
    new_ref_code,
)
from memoryhub.models.summaries import SUMMARY_LEVELS, RollingSummary, SummaryNode
from memoryhub.models.usage import ApiUsage, Arrivals, MetricSample

__all__ = [
    "SESSION_ID_REGEX",
    "STATUS_TRANSITIONS",
    "SUMMARY_BUDGET_MAX",
    "SUMMARY_BUDGET_MIN",
    "SUMMARY_LEVELS",
    "ApiUsage",
    "Arrivals",
    "EndUser",
    "Event",
    "EventQuerySet",
    "Fact",
    "FactVersion",
    "MetricSample",
    "Note",
    "Role",
    "RollingSummary",
    "Scratchpad",
    "ScratchpadItem",
    "Session",
    "SessionQuerySet",
    "SessionStatus",
    "StepFailure",
    "SummaryNode",
    "ToolCallSentence",
    "Worker",
    "estimate_tokens",
    "iso",
    "new_note_id",
    "new_ref_code",
]
