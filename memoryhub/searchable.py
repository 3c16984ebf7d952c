"""What a searchable memory tells retrieval about itself (sent with signals.memory_saved).

memoryhub owns notes, facts and summaries; retrieval owns chunks, vectors and full text. A
memory is described by this plain value so that retrieval never needs memoryhub's models.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

KINDS = ("event", "note", "fact", "summary", "document")
TIERS = ("conversation", "channel", "workspace", "account")
LIFETIMES = ("long_term", "short_term", "conversation")
TIER_CHOICES = [(t, t) for t in TIERS]
LIFETIME_CHOICES = [(lt, lt) for lt in LIFETIMES]


@dataclass(frozen=True)
class Searchable:
    kind: str  # one of KINDS (not "event": events are indexed from the event log itself)
    source_id: str  # stable within (tenant, kind): "note-…", the fact's id, the summary's id
    tenant_id: int
    text: str
    created_at: datetime
    workspace_id: int | None = None
    channel_id: int | None = None
    session_id: int | None = None  # Session pk, for memories tied to one conversation
    tier: str = "workspace"  # one of TIERS: how widely the memory applies
    lifetime: str = "long_term"  # one of LIFETIMES
    importance: float = 0.5
    tags: tuple[str, ...] = ()
    user_id: str = ""
    sequence_start: int | None = None
    sequence_end: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    # A versioned memory (a fact, docs/memory-model.md#fact-history): when its current version
    # began. Chunks of an older version are kept, closed at this moment, so that a search `as_of` a
    # past moment finds them.
    version_from: datetime | None = None
