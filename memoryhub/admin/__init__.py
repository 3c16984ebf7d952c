"""The operator console: a module per area registers its models; the dashboard and the
import/export page are views of their own (routed in memoryhub.urls)."""

from memoryhub.admin import facts, notes, queue, scratchpad, sessions, summaries, usage

__all__ = ["facts", "notes", "queue", "scratchpad", "sessions", "summaries", "usage"]
