"""Admin for notes, facts, scratchpads and summaries. Imported by memoryhub.admin."""

from __future__ import annotations
