"""Notes, facts, scratchpads and the summary tree (S5, S6). Imported by memoryhub.models."""

from __future__ import annotations
