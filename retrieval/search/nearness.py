"""Nearest first: a session's default recall reads its owner's whole memory (every conversation of
theirs, and the notes, facts and documents that apply to the session) and prefers what is nearer
the session: its own conversation, then its channel, then its workspace, then the rest of the
account. A preference, not a wall: a far memory that matches much better still ranks first."""

from __future__ import annotations

from retrieval.search.request import Candidate, SearchRequest
from retrieval.search.sql import CONVERSATION_KINDS

# The share of a conversation row's score given up per step away from the session (this
# conversation 0, its channel 1, its workspace 2, elsewhere 3): the farthest keeps 85 %.
# Measured in bench/README.md ("Recall from a new conversation").
NEAR_STEP = 0.05


def distance(req: SearchRequest, candidate: Candidate) -> int:
    """How far `candidate` is from the request's session: 0 this conversation (and every note,
    fact or document, which apply here by their tier and rank on their own merit), 1 its channel,
    2 its workspace, 3 elsewhere."""
    if candidate.kind not in CONVERSATION_KINDS or candidate.session_id == req.session_id:
        return 0
    if candidate.channel_id == req.session_channel_id:
        return 1
    if candidate.workspace_id == req.session_workspace_id:
        return 2
    return 3


def nearest_first(
    req: SearchRequest, chunks: dict[int, Candidate], order: dict[int, float]
) -> dict[int, float]:
    """The scores with each conversation row's lowered by NEAR_STEP per step away from the session,
    for a request that reads a session's default range (req.nearest_first); else as they are."""
    step = NEAR_STEP
    if not req.nearest_first or step <= 0.0:
        return order
    return {
        pk: score - abs(score) * step * distance(req, chunks[pk]) for pk, score in order.items()
    }
