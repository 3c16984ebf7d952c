"""One export or one import from start to end: the core's lists and every registered extension's
hooks, in the order the file has them (extensions.py). Exporter and Importer (exporter.py,
importer.py) hold one run's state and are what an extension works with; this module drives them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from django.db import DatabaseError, IntegrityError, connection, transaction

from accounts.models import Tenant, Workspace
from memoryhub.errors import Conflict
from memoryhub.transfer.conflicts import ImportReport
from memoryhub.transfer.exporter import Exporter
from memoryhub.transfer.extensions import extensions
from memoryhub.transfer.format import (
    FORMAT,
    SCHEMA_VERSION,
    ExportScope,
    InvalidImport,
    check_header,
    get_list,
    json_text,
)
from memoryhub.transfer.importer import Importer
from memoryhub.transfer.record_import import import_records

FLUSH = 1 << 16  # characters of JSON text handed on at a time


def export_memory(*, tenant: Tenant, scope: ExportScope, user_id: str = "") -> dict[str, Any]:
    """The scope's memory as one object; with `user_id`, only what that user may see (theirs and
    shared). Holds the whole document in memory: the API streams `export_json` instead."""
    return json.loads("".join(export_json(Exporter(tenant, scope, user_id=user_id))))


def export_json(exporter: Exporter) -> Iterator[str]:
    """The export document as JSON text, in pieces of about FLUSH characters, written as the rows
    are read, from one snapshot of the database (a REPEATABLE READ transaction of its own when
    none is open)."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost:  # inside a caller's transaction (a test's), that one's snapshot stands
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        buffer: list[str] = []
        size = 0
        for piece in _document(exporter):
            buffer.append(piece)
            size += len(piece)
            if size >= FLUSH:
                yield "".join(buffer)
                buffer, size = [], 0
        if buffer:
            yield "".join(buffer)


def _array(rows: Iterable[Any]) -> Iterator[str]:
    yield "["
    for i, row in enumerate(rows):
        yield ("," if i else "") + json_text(row)
    yield "]"


def _document(exporter: Exporter) -> Iterator[str]:
    """The members in the file's order: head, workspaces, sessions, sources (documents), records,
    derived lists (chunks). Records are planned first: chunks and children refer to them by
    position."""
    parts = extensions()
    exporter.plan_records()
    yield '{"format":' + json_text(FORMAT)
    yield f',"schema_version":{json_text(SCHEMA_VERSION)},"scope":{json_text(exporter.scope.as_dict())}'  # noqa: E501
    yield f',"workspaces":{json_text(exporter.workspaces())},"sessions":'
    yield from exporter.session_json()
    for part in parts:
        for name, rows in part.export_sources(exporter).items():
            yield f",{json_text(name)}:"
            yield from _array(rows)
    yield ',"records":{'
    for i, (label, rows) in enumerate(exporter.iter_records()):
        yield ("," if i else "") + f"{json_text(label)}:"
        yield from _array(rows)
    yield "}"
    for part in parts:
        for name, rows in part.export_derived(exporter).items():
            yield f",{json_text(name)}:"
            yield from _array(rows)
    yield "}"


@transaction.atomic
def import_memory(
    *,
    tenant: Tenant,
    data: Any,
    limit_workspace: Workspace | None = None,
    on_conflict: str = "fail",
    limit_user: str = "",
) -> ImportReport:
    """Import an export into `tenant`: everything or nothing. Returns what was imported, skipped
    and merged (counts per kind of row). The limits are the importing key's."""
    # a bad option: 400 before reading the file
    importer = Importer(tenant, limit_workspace, on_conflict, limit_user)
    check_header(data)
    parts = extensions()
    for part in parts:
        part.start_import(importer)
    try:
        importer.import_workspaces(get_list(data, "workspaces"))
        importer.import_sessions(get_list(data, "sessions"))
        for part in parts:
            part.import_sources(importer, data)
        import_records(importer, data.get("records", {}))
        for part in parts:
            part.import_derived(importer, data)
    except IntegrityError as exc:
        raise _refusal(exc) from None
    except DatabaseError as exc:  # a value the column cannot hold (too long, out of range…)
        primary = (
            getattr(getattr(exc.__cause__, "diag", None), "message_primary", None) or "out of range"
        )
        raise InvalidImport(f"a value does not fit: {primary}") from None
    return importer.report()


# Constraints a file breaks by itself, whatever the tenant holds (a file's history of a stored row
# is never imported): what is wrong with the file, in words.
FILE_FAULTS = {
    "factversion_one_current": (
        "a fact in it has more than one current version (versions with no "
        "valid_to); a fact has at most one"
    ),
}


def _refusal(exc: IntegrityError) -> Conflict | InvalidImport:
    """What is wrong, in words: PostgreSQL's own message names constraints and internal ids. A
    fault of the file itself is a 400 invalid_import; a row the tenant holds a 409
    import_conflict."""
    diag = getattr(exc.__cause__, "diag", None)
    fault = FILE_FAULTS.get(getattr(diag, "constraint_name", None) or "")
    if fault:
        return InvalidImport(f"The file is inconsistent: {fault}.")
    table = getattr(diag, "table_name", None) or ""
    what = table.split("_", 1)[-1].replace("_", " ") if table else "record"
    unique = getattr(exc.__cause__, "sqlstate", None) == "23505"
    problem = "already exists in this tenant" if unique else "does not fit the stored data"
    return Conflict(
        "import_conflict",
        f"The file conflicts with stored data: a {what} in it {problem}.",
        {"record": what},
    )
