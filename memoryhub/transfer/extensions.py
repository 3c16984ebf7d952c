"""How a higher layer adds its own lists to the export file without the core importing it.

Retrieval carries "documents" and "chunks" (the searchable memories with their embeddings): it
registers a TransferExtension in its AppConfig.ready(). Export and import make one instance per run,
so an extension may keep state between its hooks (what it exported or created). Export lists may
be generators: they are written as they are read, in the order below.

Order of an export: records, then every extension's `export_sources` (lists that chunks refer to),
workspaces and sessions, then `export_derived` (lists built from all the rest). The file lists the
sources between sessions and records, the derived lists last.
Order of an import: `start_import`, workspaces and sessions, `import_sources`, records,
`import_derived`; all of it in one transaction. runs.py calls the hooks in that order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from memoryhub.transfer.exporter import Exporter
from memoryhub.transfer.importer import Importer


class TransferExtension:
    """An app's own part of the export file; every hook does nothing unless overridden."""

    def export_sources(self, exporter: Exporter) -> dict[str, Iterable[Any]]:
        return {}

    def export_derived(self, exporter: Exporter) -> dict[str, Iterable[Any]]:
        return {}

    def start_import(self, importer: Importer) -> None:
        return None

    def import_sources(self, importer: Importer, data: dict[str, Any]) -> None:
        return None

    def import_derived(self, importer: Importer, data: dict[str, Any]) -> None:
        return None


_registered: list[Callable[[], TransferExtension]] = []


def register_extension(factory: Callable[[], TransferExtension]) -> None:
    """Add an extension (idempotent: ready() may run more than once in tests)."""
    if factory not in _registered:
        _registered.append(factory)


def extensions() -> list[TransferExtension]:
    """Fresh instances of the registered extensions, for one export or import."""
    return [factory() for factory in _registered]
