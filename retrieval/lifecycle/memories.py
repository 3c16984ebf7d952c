"""Operations on memories (retrieval's chunks) that consolidation, reviews and the admin share:
delete a memory whole (archived, so it can be restored), fold duplicates into one, pin and unpin."""

from __future__ import annotations

from typing import Any

from django.db import models, transaction

from memoryhub.models import Fact, Note, SummaryNode, iso
from memoryhub.signals import memory_saved
from retrieval.lifecycle.archive import archive
from retrieval.lifecycle.models import ArchivedMemory
from retrieval.models import Chunk, ChunkAccess

# A chunk of a note, fact or summary is one piece of that memory: deleting the memory means
# deleting its row (which the API lists) and all its chunks, never leaving half of it.
SOURCE_MODELS: dict[str, tuple[type[models.Model], str]] = {
    "note": (Note, "note_id"),
    "fact": (Fact, "pk"),
    "summary": (SummaryNode, "pk"),
}


def delete_memories(
    *,
    tenant_id: int,
    chunk_ids: list[int],
    keep: tuple[str, str] | None = None,
    reason: str = ArchivedMemory.Reason.PRUNE,
    survivor: Chunk | None = None,
) -> int:
    """Delete these memories; for notes, facts and summaries, their rows and every chunk of them
    (except the source `keep` = (kind, source id): a merge survivor's own memory). Each deleted
    memory is archived first (`reason`; a merge names its survivor), so it can be restored."""
    sources: dict[str, set[str]] = {}
    for kind, source_id in Chunk.objects.filter(
        tenant_id=tenant_id, pk__in=chunk_ids, kind__in=SOURCE_MODELS
    ).values_list("kind", "source_id"):
        if (kind, source_id) != keep:
            sources.setdefault(kind, set()).add(source_id)
    archive(
        tenant_id=tenant_id, chunk_ids=chunk_ids, sources=sources, reason=reason, survivor=survivor
    )
    deleted, _ = Chunk.objects.filter(tenant_id=tenant_id, pk__in=chunk_ids).delete()
    for kind, source_ids in sources.items():
        model, field_name = SOURCE_MODELS[kind]
        values = (
            [int(v) for v in source_ids if v.isdigit()] if field_name == "pk" else list(source_ids)
        )
        model._default_manager.filter(tenant_id=tenant_id, **{f"{field_name}__in": values}).delete()
        more, _ = Chunk.objects.filter(
            tenant_id=tenant_id, kind=kind, source_id__in=source_ids
        ).delete()
        deleted += more
    return deleted


def _provenance(chunk: Chunk) -> dict[str, Any]:
    return {
        "chunk_id": chunk.pk,
        "kind": chunk.kind,
        "source_id": chunk.source_id,
        "session": chunk.session.external_id if chunk.session_id else None,
        "sequence_start": chunk.sequence_start,
        "sequence_end": chunk.sequence_end,
        "created_at": iso(chunk.created_at),
        "importance": chunk.importance,
        "access_count": getattr(chunk, "access_count", 0),
        "text": chunk.text[:200],
    }


@transaction.atomic
def apply_merge(*, tenant_id: int, survivor_id: int, absorbed_ids: list[int]) -> int:
    """Fold `absorbed_ids` into `survivor_id`: higher importance, summed access counts, provenance
    kept in metadata["merged_from"]; the absorbed memories are deleted. Returns how many were."""
    rows = {
        c.pk: c
        for c in Chunk.objects.select_for_update(of=("self",))
        .select_related("session")
        .with_access()
        .filter(tenant_id=tenant_id, pk__in=[survivor_id, *absorbed_ids])
    }
    survivor = rows.get(survivor_id)
    others = [rows[i] for i in sorted(set(absorbed_ids)) if i in rows and i != survivor_id]
    if survivor is None or not others:
        return 0
    provenance = list(survivor.metadata.get("merged_from", []))
    for other in others:
        provenance.append(_provenance(other))
        provenance.extend(other.metadata.get("merged_from", []))
        survivor.importance = max(survivor.importance, other.importance)
        if other.session_id == survivor.session_id and other.sequence_start is not None:
            survivor.sequence_start = min(
                survivor.sequence_start or other.sequence_start, other.sequence_start
            )
            survivor.sequence_end = max(survivor.sequence_end or 0, other.sequence_end or 0)
    survivor.metadata = {**survivor.metadata, "merged_from": provenance}
    survivor.save(update_fields=["importance", "sequence_start", "sequence_end", "metadata"])
    _sum_accesses(survivor, others)
    return delete_memories(
        tenant_id=tenant_id,
        chunk_ids=[o.pk for o in others],
        keep=(survivor.kind, survivor.source_id),
        reason=ArchivedMemory.Reason.MERGE,
        survivor=survivor,
    )


PINNABLE_SOURCES = ("note", "fact")  # rows that keep their own importance


def _split(chunk_ids: list[int]) -> tuple[list[models.Model], list[Chunk]]:
    """The note and fact rows behind these chunks (pinned on the source), and the other chunks."""
    rows: list[models.Model] = []
    loose: list[Chunk] = []
    seen: set[tuple[str, str]] = set()
    for chunk in Chunk.objects.filter(pk__in=chunk_ids):
        if chunk.kind not in PINNABLE_SOURCES:
            loose.append(chunk)
            continue
        if (chunk.kind, chunk.source_id) in seen:
            continue
        seen.add((chunk.kind, chunk.source_id))
        model, field_name = SOURCE_MODELS[chunk.kind]
        value: Any = (
            int(chunk.source_id)
            if field_name == "pk" and chunk.source_id.isdigit()
            else chunk.source_id
        )
        row = model._default_manager.filter(
            tenant_id=chunk.tenant_id, **{field_name: value}
        ).first()
        if row is not None:
            rows.append(row)
    return rows, loose


def _announce(row: models.Model) -> None:
    kind = "note" if isinstance(row, Note) else "fact"
    memory_saved.send(sender=type(row), kind=kind, instance=row)  # its chunks are re-derived


@transaction.atomic
def pin_memories(chunk_ids: list[int]) -> int:
    """Pin: importance 1, long-term, never pruned, merged or capped; the old values are kept.
    A note or fact is pinned on itself (its chunks follow); other memories on their chunk."""
    rows, loose = _split(chunk_ids)
    count = 0
    for row in rows:
        if row.pinned:
            continue
        row.importance_before_pin, row.importance, row.pinned = row.importance, 1.0, True
        row.save(update_fields=["importance_before_pin", "importance", "pinned"])
        _announce(row)
        count += 1
    for chunk in loose:
        if chunk.metadata.get("pinned") is True:
            continue
        chunk.metadata = {
            **chunk.metadata,
            "pinned": True,
            "pinned_from": {"importance": chunk.importance, "lifetime": chunk.lifetime},
        }
        chunk.importance, chunk.lifetime = 1.0, "long_term"
        chunk.save(update_fields=["metadata", "importance", "lifetime"])
        count += 1
    return count


@transaction.atomic
def unpin_memories(chunk_ids: list[int]) -> int:
    """Unpin: give back the importance (and lifetime) the memory had before it was pinned."""
    rows, loose = _split(chunk_ids)
    count = 0
    for row in rows:
        if not row.pinned:
            continue
        if row.importance_before_pin is not None:
            row.importance = row.importance_before_pin
        row.importance_before_pin, row.pinned = None, False
        row.save(update_fields=["importance_before_pin", "importance", "pinned"])
        _announce(row)
        count += 1
    for chunk in loose:
        if chunk.metadata.get("pinned") is not True:
            continue
        before = chunk.metadata.get("pinned_from") or {}
        chunk.metadata = {
            k: v for k, v in chunk.metadata.items() if k not in ("pinned", "pinned_from")
        }
        chunk.importance = float(before.get("importance", chunk.importance))
        chunk.lifetime = before.get("lifetime", chunk.lifetime)
        chunk.save(update_fields=["metadata", "importance", "lifetime"])
        count += 1
    return count


def _sum_accesses(survivor: Chunk, others: list[Chunk]) -> None:
    """Add the absorbed chunks' accesses to the survivor's access row (their own rows go with
    them): counts summed, the latest access kept; added, not overwritten, so that accesses a web
    worker writes meanwhile stay counted."""
    count = sum(c.access_count for c in others)  # type: ignore[attr-defined]
    times = [c.accessed_at for c in others if c.accessed_at is not None]  # type: ignore[attr-defined]
    if count or times:
        ChunkAccess.add([(survivor.pk, count)], max(times) if times else None)
