"""Retrieval's part of the export file (memoryhub.transfer): documents and chunks.

Chunks are carried as they are (embeddings, access counts, tiers, merge provenance), so a
consolidated memory comes back consolidated. A chunk names its source by the file's own
references: {"document": uri}, {"record": label, "key": n} or {"id": source id}. A file without
"chunks" is re-indexed through the pipeline instead; imported chunks whose embedding is missing or
of another model are re-embedded after the import commits.

With on_conflict skip or merge (memoryhub.transfer.conflicts) a stored document is kept, and the
file's chunks of anything the tenant held before (a stored session, record or document) are left
out: the stored ones stay. The events a merge appends to a stored session are indexed like an
append.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from memoryhub.errors import Conflict
from memoryhub.models import Event, iso
from memoryhub.searchable import KINDS, LIFETIMES, TIERS
from memoryhub.signals import memory_saved
from memoryhub.transfer import Exporter, Importer, InvalidImport, TransferExtension
from memoryhub.transfer.exporter import BATCH
from memoryhub.transfer.format import get_field, get_list, get_time, json_value
from memoryhub.transfer.records import derived_metadata, searchable_of
from retrieval.embedders import DIMENSIONS, get_embedder
from retrieval.embedding import request_embedding
from retrieval.indexing import count_message_chunks, index_session_events
from retrieval.models import Chunk, ChunkAccess, Document
from retrieval.vectors import is_zero, out_of_range, vector_problem


class RetrievalTransfer(TransferExtension):
    def __init__(self) -> None:
        # export: (kind, source id) → ref
        self.document_refs: dict[tuple[str, str], dict[str, Any]] = {}
        self.documents: list[Document] = []  # import: created (or stored) documents, in file order
        self.stored_documents: set[int] = set()  # import: pks of documents the tenant held already
        self.first_new_chunk = 0

    # -- export

    def export_sources(self, exporter: Exporter) -> dict[str, Iterable[Any]]:
        return {"documents": self._document_rows(exporter)}

    def _document_rows(self, exporter: Exporter) -> Iterator[dict[str, Any]]:
        qs = exporter.owned(
            exporter.in_scope(Document.objects.filter(tenant=exporter.tenant), Document), Document
        )
        for position, d in enumerate(
            qs.select_related("workspace", "session").order_by("id").iterator(chunk_size=BATCH)
        ):
            # The URI alone no longer names a document (one per workspace, session and owner): the
            # reference also gives its position in the file.
            self.document_refs[("document", d.source_id)] = {
                "document": d.source_uri,
                "key": position,
            }
            yield {
                "source_uri": d.source_uri,
                "workspace": d.workspace.name if d.workspace else None,
                "session": d.session.external_id if d.session else None,
                "user_id": d.user_id,
                "content_hash": d.content_hash,
                "metadata": d.metadata,
                "chunk_count": d.chunk_count,
                "created_at": iso(d.created_at),
                "updated_at": iso(d.updated_at),
            }

    def export_derived(self, exporter: Exporter) -> dict[str, Iterable[Any]]:
        return {"chunks": self._chunk_rows(exporter)}

    def _chunk_rows(self, exporter: Exporter) -> Iterator[dict[str, Any]]:
        """The chunks, read in batches (written after the records and documents they refer to)."""
        qs = exporter.owned(
            exporter.in_scope(Chunk.objects.filter(tenant=exporter.tenant), Chunk), Chunk
        )
        refs = {**exporter.source_refs, **self.document_refs}
        chunks = (
            qs.select_related("session", "workspace", "channel__workspace")
            .with_access()
            .order_by("id")
        )
        batch: list[Chunk] = []
        for chunk in chunks.iterator(chunk_size=BATCH):
            batch.append(chunk)
            if len(batch) == BATCH:
                yield from _chunk_batch(batch, refs, exporter.derived)
                batch = []
        yield from _chunk_batch(batch, refs, exporter.derived)

    # -- import

    def start_import(self, importer: Importer) -> None:
        # Rows of other areas may index themselves when created: the file's chunks replace them.
        self.first_new_chunk = (
            Chunk.objects.order_by("-id").values_list("id", flat=True).first() or 0
        )

    def import_sources(self, importer: Importer, data: dict[str, Any]) -> None:
        for i, row in enumerate(get_list(data, "documents")):
            path = f"documents[{i}]"
            uri = get_field(row, "source_uri", str, path)
            workspace = get_field(row, "workspace", str, path, nullable=True)
            session = get_field(row, "session", str, path, nullable=True)
            identity = {
                "tenant": importer.tenant,
                "source_uri": uri,
                "workspace": importer.workspace(workspace, path) if workspace else None,
                "session": importer.session(session, f"{path}.session") if session else None,
                "user_id": get_field(row, "user_id", str, path, required=False, default=""),
            }
            importer.check_placed(
                path,
                workspace_id=identity["workspace"].pk if identity["workspace"] else None,
                session=identity["session"],
                user_id=identity["user_id"],
            )
            stored = Document.objects.filter(**identity).order_by("pk").first()
            if stored is not None and importer.on_conflict == "fail":
                raise Conflict(
                    "document_exists",
                    f"Document {uri!r} already exists in this tenant; nothing was "
                    "imported (import with on_conflict=skip or merge to keep it).",
                    {"document": uri},
                )
            if stored is not None:
                self.documents.append(stored)
                self.stored_documents.add(stored.pk)
                importer.skipped["documents"] += 1
                continue
            self.documents.append(
                Document.objects.create(
                    **identity,
                    content_hash=get_field(row, "content_hash", str, path),
                    metadata=get_field(row, "metadata", dict, path),
                    chunk_count=get_field(row, "chunk_count", int, path),
                    created_at=get_time(row, "created_at", path),
                    updated_at=get_time(row, "updated_at", path),
                )
            )
            importer.counts["documents"] += 1

    def import_derived(self, importer: Importer, data: dict[str, Any]) -> None:
        Chunk.objects.filter(tenant=importer.tenant, id__gt=self.first_new_chunk).delete()
        for external_id, appended in importer.appended.items():
            index_session_events(importer.sessions[external_id], appended)  # like an append
        if "chunks" in data:
            request_embedding(self.import_chunks(importer, get_list(data, "chunks")))
            return
        for label in importer.records:
            for obj in importer.created_records(label):
                searchable = searchable_of(obj)
                if searchable is not None:
                    memory_saved.send(sender=type(obj), kind=searchable.kind, instance=obj)
        for session in importer.sessions.values():
            if importer.is_preexisting(session):
                continue
            # In the import's transaction, like an append: imported history is findable by text
            # as soon as the import answers.
            index_session_events(
                session, list(Event.objects.filter(session=session).order_by("sequence"))
            )

    def import_chunks(self, importer: Importer, rows: list[Any]) -> list[int]:
        """Create the file's chunks; returns the ids of those to embed again."""
        current = get_embedder().name
        chunks = [self._chunk(importer, row, f"chunks[{i}]") for i, row in enumerate(rows)]
        kept = [c for c in chunks if c is not None]
        importer.skipped["chunks"] += len(chunks) - len(kept)
        created = Chunk.objects.bulk_create(kept)
        ChunkAccess.objects.bulk_create(
            [
                ChunkAccess(
                    chunk=c,
                    access_count=c.imported_access[0],  # type: ignore[attr-defined]
                    accessed_at=c.imported_access[1],
                )  # type: ignore[attr-defined]
                for c in created
                if any(c.imported_access)
            ]
        )  # type: ignore[attr-defined]
        count_message_chunks([c.pk for c in created if c.kind == "event"])
        importer.counts["chunks"] += len(created)
        return [c.pk for c in created if c.embedding is None or c.embedding_model != current]

    def _chunk(self, importer: Importer, row: Any, path: str) -> Chunk | None:
        """The file's chunk, checked; None when it belongs to something the tenant held already."""
        kind = get_field(row, "kind", str, path)
        if kind not in KINDS:
            raise InvalidImport(f"unknown kind {kind!r}", f"{path}.kind")
        tier = get_field(row, "tier", str, path)
        lifetime = get_field(row, "lifetime", str, path)
        if tier not in TIERS or lifetime not in LIFETIMES:
            raise InvalidImport("unknown tier or lifetime", path)
        session_ref = get_field(row, "session", str, path, nullable=True)
        session = importer.session(session_ref, f"{path}.session") if session_ref else None
        ref = row.get("source")
        source_id, derived = self._source(importer, ref, f"{path}.source")
        by_source = isinstance(ref, dict) and ("record" in ref or "document" in ref)
        if source_id is None or (
            not by_source and session is not None and importer.is_preexisting(session)
        ):
            return None  # the stored row's (the stored session's) chunks stay
        if (
            importer.on_conflict != "fail"
            and not by_source
            and session is None
            and Chunk.objects.filter(
                tenant=importer.tenant,
                kind=kind,
                source_id=source_id,
                session=None,
                content_hash=get_field(row, "content_hash", str, path),
            ).exists()
        ):
            return None  # a chunk of a source outside the file, held already
        workspace = get_field(row, "workspace", str, path, nullable=True)
        channel = row.get("channel")
        metadata = dict(get_field(row, "metadata", dict, path))
        event_sequence = get_field(row, "event", int, path, nullable=True)
        if event_sequence is not None:
            event_id = importer.events.get((session_ref or "", event_sequence))
            if event_id is None:
                raise InvalidImport("the chunk's event is not in the file", f"{path}.event")
            metadata["event_id"] = event_id
        embedding = _embedding(row, path)
        importance = get_field(row, "importance", (int, float), path)
        accessed_at = get_time(row, "accessed_at", path, nullable=True)
        access_count = get_field(row, "access_count", int, path)
        chunk = Chunk(
            tenant=importer.tenant,
            kind=kind,
            source_id=source_id,
            session=session,
            workspace=importer.workspace(workspace, f"{path}.workspace") if workspace else None,
            channel=importer.channel(channel, f"{path}.channel") if channel is not None else None,
            tier=tier,
            lifetime=lifetime,
            user_id=get_field(row, "user_id", str, path),
            role=get_field(row, "role", str, path),
            agent=get_field(row, "agent", str, path),
            tags=[str(t) for t in get_field(row, "tags", list, path)],
            sequence_start=get_field(row, "sequence_start", int, path, nullable=True),
            sequence_end=get_field(row, "sequence_end", int, path, nullable=True),
            text=get_field(row, "text", str, path),
            context=get_field(row, "context", str, path),
            content_hash=get_field(row, "content_hash", str, path),
            metadata={**derived, **metadata},
            importance=float(importance),
            created_at=get_time(row, "created_at", path),
            indexed_at=get_time(row, "indexed_at", path),
            embedding=embedding,
            embedding_model=get_field(row, "embedding_model", str, path)
            if embedding is not None
            else "",
        )
        importer.check_placed(
            path, workspace_id=chunk.workspace_id, session=session, user_id=chunk.user_id, tier=tier
        )
        if by_source:
            self._check_source_owner(importer, ref, chunk, path)
        chunk.imported_access = (access_count, accessed_at)  # type: ignore[attr-defined]  # its ChunkAccess row
        return chunk

    def _check_source_owner(
        self, importer: Importer, ref: dict[str, Any], chunk: Chunk, path: str
    ) -> None:
        """A chunk of a memory of the file is that memory's: same owner, same workspace (a chunk
        claiming another user would put the memory's text into that user's recall)."""
        if "document" in ref:
            document = self._document(ref, path)
            owner, workspace_id = document.user_id, document.workspace_id
        else:
            searchable = searchable_of(importer.records[ref["record"]][ref["key"]])
            assert searchable is not None  # _source checked it
            owner, workspace_id = searchable.user_id, searchable.workspace_id
        if chunk.user_id != owner or (
            workspace_id is not None and chunk.workspace_id != workspace_id
        ):
            raise Conflict(
                "owner_mismatch",
                f"The chunk at {path} names another owner or workspace than its "
                "memory: nothing was imported.",
                {"path": path},
            )

    def _source(self, importer: Importer, ref: Any, path: str) -> tuple[str | None, dict[str, Any]]:
        """The chunk's source id in this tenant, and the metadata indexing derives from it; None
        when the source is a stored row (skip, merge): its stored chunks stay."""
        if ref is None:
            return "", {}
        if not isinstance(ref, dict):
            raise InvalidImport("a chunk's source is an object", path)
        if "document" in ref:
            document = self._document(ref, path)
            return (None if document.pk in self.stored_documents else document.source_id), {}
        if "record" in ref:
            rows = importer.records.get(ref["record"], [])
            key = ref.get("key")
            if not isinstance(key, int) or not 0 <= key < len(rows):
                raise InvalidImport("the chunk's source record is not in the file", path)
            if importer.is_preexisting(rows[key]):
                return None, {}
            searchable = searchable_of(rows[key])
            if searchable is None:
                raise InvalidImport("the chunk's source record is not a searchable memory", path)
            return str(searchable.source_id), derived_metadata(searchable)
        if isinstance(ref.get("id"), str):
            return ref["id"], {}
        raise InvalidImport("unknown source reference", path)

    def _document(self, ref: dict[str, Any], path: str) -> Document:
        """The document a chunk names: by its position in the file, or (files written before
        documents were per workspace) by its URI, which must then be unique in the file."""
        key = ref.get("key")
        if isinstance(key, int) and not isinstance(key, bool):
            if (
                not 0 <= key < len(self.documents)
                or self.documents[key].source_uri != ref["document"]
            ):
                raise InvalidImport("the chunk's document is not in the file", path)
            return self.documents[key]
        matches = [d for d in self.documents if d.source_uri == ref["document"]]
        if len(matches) != 1:
            raise InvalidImport("the chunk's document is not in the file, or not only once", path)
        return matches[0]


def _chunk_batch(
    batch: list[Chunk],
    refs: dict[tuple[str, str], dict[str, Any]],
    derived: dict[tuple[str, str], dict[str, Any]],
) -> Iterator[dict[str, Any]]:
    event_ids = [c.metadata.get("event_id") for c in batch if isinstance(c.metadata, dict)]
    sequences = dict(
        Event.objects.filter(pk__in=[i for i in event_ids if isinstance(i, int)]).values_list(
            "id", "sequence"
        )
    )
    for c in batch:
        yield _chunk_row(c, refs, derived, sequences)


def _embedding(row: Any, path: str) -> list[float] | None:
    embedding = get_field(row, "embedding", list, path, nullable=True)
    if embedding is not None and (
        len(embedding) != DIMENSIONS
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in embedding)
    ):
        raise InvalidImport(f"an embedding is a list of {DIMENSIONS} numbers", f"{path}.embedding")
    if embedding is None:
        return None
    if out_of_range(embedding):
        raise InvalidImport(f"unusable embedding: {vector_problem(embedding)}", f"{path}.embedding")
    if is_zero(embedding):
        # No direction to rank by (it made every vector search of the tenant fail): the chunk
        # is imported without it and embedded again, like a chunk of another model.
        return None
    return embedding


def _chunk_row(
    c: Chunk,
    refs: dict[tuple[str, str], dict[str, Any]],
    derived_by_source: dict[tuple[str, str], dict[str, Any]],
    sequences: dict[int, int],
) -> dict[str, Any]:
    """One chunk as the file holds it: no ids; what indexing derives from its source left out."""
    metadata = dict(c.metadata)
    event_id = metadata.pop("event_id", None)
    derived = derived_by_source.get((c.kind, c.source_id), {})
    metadata = {k: v for k, v in metadata.items() if not (k in derived and derived[k] == v)}
    return {
        "kind": c.kind,
        "source": refs.get((c.kind, c.source_id), {"id": c.source_id} if c.source_id else None),
        "session": c.session.external_id if c.session_id else None,
        "event": sequences.get(event_id) if event_id is not None else None,
        "workspace": c.workspace.name if c.workspace_id else None,
        "channel": [c.channel.workspace.name, c.channel.name] if c.channel_id else None,
        "tier": c.tier,
        "lifetime": c.lifetime,
        "user_id": c.user_id,
        "role": c.role,
        "agent": c.agent,
        "tags": list(c.tags),
        "sequence_start": c.sequence_start,
        "sequence_end": c.sequence_end,
        "text": c.text,
        "context": c.context,
        "content_hash": c.content_hash,
        "metadata": metadata,
        "importance": c.importance,
        "access_count": c.access_count,
        "accessed_at": iso(c.accessed_at) if c.accessed_at else None,
        "created_at": iso(c.created_at),
        "indexed_at": iso(c.indexed_at),
        "embedding": json_value(c.embedding) if c.embedding is not None else None,
        "embedding_model": c.embedding_model,
    }
