"""The operator console: a module per area registers its models; the dashboard and the
import/export page are views of their own (routed in memoryhub.urls)."""

from memoryhub.admin import (
    background,
    end_users,
    facts,
    notes,
    queue,
    scratchpad,
    sessions,
    summaries,
    tool_sentences,
    usage,
    workspaces,
)

__all__ = [
    "background",
    "end_users",
    "facts",
    "notes",
    "queue",
    "scratchpad",
    "sessions",
    "summaries",
    "tool_sentences",
    "usage",
    "workspaces",
]
