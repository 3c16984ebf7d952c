"""Export and import of memory as JSON with a schema version
(docs/memory-model.md#export-and-import).

One format for a tenant, a workspace, a session or an end user. It holds no database ids and nothing
global (no tenant name, no ref codes), so that export → import into an empty tenant → export gives
the same document. Rows are listed in id order and referred to by name (workspace, channel, session
id, document URI) or by their position in the file ("key"), never by id.

    format.py         the envelope (format, schema_version, scope), the typed-field checks and
                      the file's JSON text
    exporter.py       Exporter, one export: workspaces, sessions with events and rolling summary,
                      records; rows read from server-side cursors, so memory stays bounded
    importer.py       Importer, one import: the same back, every row placed within the importing
                      key's limits and beside its owner's rows (Importer.check_placed)
    runs.py           export_memory / export_json and import_memory: a run from start to end, the
                      core's lists and the extensions' hooks in the file's order; the document is
                      written as JSON text while it is read; an import is all or nothing in one
                      transaction
    conflicts.py      on_conflict: what an import does with sessions and records the tenant holds
                      already (fail, skip, merge), and the report of what it did
    records.py        rows of other areas (notes, facts, scratchpads, summaries, schedules…),
                      discovered from the installed models and carried under "records"
    record_import.py  creating those rows again, links by position in the file
    extensions.py     how a higher layer adds its own lists: retrieval carries "documents" and
                      "chunks" (retrieval/transfer.py), so the core never imports retrieval

Chunks (the searchable memories, with their embeddings, access counts, tiers and merge
provenance) are carried as they are, so a consolidated memory comes back consolidated; a file
without "chunks" is re-indexed through the pipeline instead, and chunks whose embedding is
missing or of another model are re-embedded after import.
"""

from memoryhub.transfer.conflicts import ON_CONFLICT, ImportReport, check_on_conflict
from memoryhub.transfer.exporter import Exporter, user_not_found
from memoryhub.transfer.extensions import TransferExtension, register_extension
from memoryhub.transfer.format import (
    FORMAT,
    SCHEMA_VERSION,
    SCOPES,
    ExportScope,
    InvalidImport,
    parse_export_file,
)
from memoryhub.transfer.importer import Importer
from memoryhub.transfer.records import record_models
from memoryhub.transfer.runs import export_json, export_memory, import_memory

__all__ = [
    "FORMAT",
    "ON_CONFLICT",
    "SCHEMA_VERSION",
    "SCOPES",
    "ExportScope",
    "Exporter",
    "ImportReport",
    "Importer",
    "InvalidImport",
    "TransferExtension",
    "check_on_conflict",
    "export_json",
    "export_memory",
    "import_memory",
    "parse_export_file",
    "record_models",
    "register_extension",
    "user_not_found",
]
