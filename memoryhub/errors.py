"""Errors the domain raises: a machine-readable code, a message, details. No HTTP here.

The API layer (memoryhub.api.errors) maps each kind to its status code in one place; commands and
the admin show the code and message as they are.
"""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    """A request the domain refuses; `code` is the machine-readable reason."""

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}


class Invalid(DomainError):
    """The input cannot be used as given."""


class Forbidden(DomainError):
    """The key may not do this (another workspace, a wider scope than it holds)."""


class NotFound(DomainError):
    """What the request names does not exist (or is not visible to the key)."""


class Conflict(DomainError):
    """The request contradicts what is stored (exists already, archived, stale)."""


class TooLarge(DomainError):
    """The input exceeds a limit."""
