"""The export file's envelope and the checks every reader of it uses: header, typed fields, times.

Every check raises InvalidImport with the path of the offending value
("sessions[2].events[0].role"), so a refused file says where it is wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

from django.conf import settings
from django.utils.dateparse import parse_datetime
from django.utils.duration import duration_iso_string
from rest_framework.utils.encoders import JSONEncoder

from memoryhub.errors import Invalid, TooLarge
from memoryhub.models import iso
from memoryhub.plumbing import jsonchecks

SCHEMA_VERSION = 1
FORMAT = "memoryhub-export"
SCOPES = ("tenant", "workspace", "session", "user")


class InvalidImport(Invalid):
    def __init__(self, message: str, path: str = "", code: str = "invalid_import") -> None:
        super().__init__(code, message + (f" (at {path})" if path else ""), details={"path": path})


@dataclass(frozen=True)
class ExportScope:
    kind: str = "tenant"
    workspace: str | None = None
    session: str | None = None
    user: str | None = None  # a user's export: everything of this end user

    def as_dict(self) -> dict[str, str]:
        out = {"type": self.kind}
        if self.workspace:
            out["workspace"] = self.workspace
        if self.session:
            out["session"] = self.session
        if self.user:
            out["user_id"] = self.user
        return out


_encoder = JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def json_text(value: Any) -> str:
    """A value of the file as compact JSON text (the export is written as text while it is read)."""
    return _encoder.encode(value)


def json_value(value: Any) -> Any:
    """A field's value as JSON; the model field parses these strings back on import."""
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, (date, time)):
        return value.isoformat()
    if isinstance(value, timedelta):
        return duration_iso_string(value)
    if isinstance(value, (Decimal, UUID)):
        return str(value)
    if hasattr(value, "to_list"):
        return [float(v) for v in value.to_list()]
    return value


def get_field(
    row: Any,
    name: str,
    types: type | tuple[type, ...],
    path: str,
    *,
    required: bool = True,
    nullable: bool = False,
    default: Any = None,
) -> Any:
    """row[name], checked to be of `types` (a bool is never taken for an int)."""
    if not isinstance(row, dict):
        raise InvalidImport("expected an object", path)
    if name not in row:
        if required:
            raise InvalidImport(f"missing field {name!r}", path)
        return default
    value = row[name]
    if value is None and nullable:
        return None
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise InvalidImport(f"field {name!r} has the wrong type", f"{path}.{name}")
    if not isinstance(value, types):
        raise InvalidImport(f"field {name!r} has the wrong type", f"{path}.{name}")
    return value


def get_time(row: Any, name: str, path: str, *, nullable: bool = False) -> datetime | None:
    """row[name] as an aware datetime (an ISO-8601 string with a zone in the file)."""
    raw = get_field(row, name, str, path, nullable=nullable)
    if raw is None:
        return None
    value = parse_datetime(raw)
    if value is None or value.tzinfo is None:
        raise InvalidImport(f"field {name!r} is not an ISO-8601 time with a zone", f"{path}.{name}")
    return value


def get_list(data: dict[str, Any], name: str) -> list[Any]:
    """A top-level list of the file (absent: empty)."""
    value = data.get(name, [])
    if not isinstance(value, list):
        raise InvalidImport(f"{name!r} must be a list", name)
    return value


def check_header(data: Any) -> None:
    if not isinstance(data, dict):
        raise InvalidImport("the import must be a JSON object")
    if data.get("format") != FORMAT:
        raise InvalidImport(f"not a MemoryHub export (format must be {FORMAT!r})", "format")
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise InvalidImport("schema_version is missing", "schema_version")
    if version != SCHEMA_VERSION:
        raise Invalid(
            "unsupported_schema_version",
            f"schema_version {version} is not supported (this server reads {SCHEMA_VERSION}).",
            details={"supported": [SCHEMA_VERSION]},
        )
    for name in ("workspaces", "sessions"):
        if name not in data:
            raise InvalidImport(f"missing {name!r}: the file is incomplete", name)


def parse_export_file(raw: bytes) -> Any:
    if len(raw) > settings.MEMORYHUB_IMPORT_MAX_BYTES:
        limit = settings.MEMORYHUB_IMPORT_MAX_BYTES
        raise TooLarge(
            "payload_too_large",
            f"The file is larger than the import limit of {limit} bytes "
            "(MEMORYHUB_IMPORT_MAX_BYTES).",
            {"limit": limit},
        )
    try:
        return jsonchecks.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidImport(f"not valid JSON: {exc}", code="malformed_json") from None
