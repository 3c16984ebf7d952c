"""How a full-text match reaches a scope's rows, for the text candidates (fulltext.py) and the
typo-tolerant lookup (fuzzy.py): through the full-text index, or, in a small scope, testing each
of the scope's rows, since the index holds a word's chunks of every tenant before the scope
narrows them."""

from __future__ import annotations

from django.conf import settings


def scans_scope(scope_size: int) -> bool:
    """Whether a full-text match over a scope of `scope_size` chunks (the kept statistics; 0:
    unknown) tests the scope's rows instead of reading the full-text index, which holds a word's
    chunks in every tenant's rows before the scope narrows them: under
    MEMORYHUB_TEXT_SCAN_BELOW chunks (a channel, a small tenant)."""
    return 0 < scope_size < settings.MEMORYHUB_TEXT_SCAN_BELOW


def row_tested(match: str) -> str:
    """`match` written so that the full-text index cannot serve it: each row of the scope is tested."""
    return f"({match}) IS TRUE"
