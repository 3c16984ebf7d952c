"""Operations on memories (retrieval's chunks) that consolidation, reviews and the admin share:
delete a memory whole, fold duplicates into one, pin and unpin."""

from __future__ import annotations

from typing import Any

from django.db import models, transaction

from memoryhub.models import Fact, Note, SummaryNode, iso
from retrieval.models import Chunk

# A chunk of a note, fact or summary is one piece of that memory: deleting the memory means
# deleting its row (which the API lists) and all its chunks, never leaving half of it.
SOURCE_MODELS: dict[str, tuple[type[models.Model], str]] = {
    "note": (Note, "note_id"), "fact": (Fact, "pk"), "summary": (SummaryNode, "pk"),
}


def delete_memories(*, tenant_id: int, chunk_ids: list[int], keep: tuple[str, str] | None = None) -> int:
    """Delete these memories; for notes, facts and summaries, their rows and every chunk of them
    (except the source `keep` = (kind, source id): a merge survivor's own memory)."""
    sources: dict[str, set[str]] = {}
    for kind, source_id in Chunk.objects.filter(tenant_id=tenant_id, pk__in=chunk_ids,
                                                kind__in=SOURCE_MODELS).values_list("kind", "source_id"):
        if (kind, source_id) != keep:
            sources.setdefault(kind, set()).add(source_id)
    deleted, _ = Chunk.objects.filter(tenant_id=tenant_id, pk__in=chunk_ids).delete()
    for kind, source_ids in sources.items():
        model, field_name = SOURCE_MODELS[kind]
        values = [int(v) for v in source_ids if v.isdigit()] if field_name == "pk" else list(source_ids)
        model._default_manager.filter(tenant_id=tenant_id, **{f"{field_name}__in": values}).delete()
        more, _ = Chunk.objects.filter(tenant_id=tenant_id, kind=kind, source_id__in=source_ids).delete()
        deleted += more
    return deleted


def _provenance(chunk: Chunk) -> dict[str, Any]:
    return {
        "chunk_id": chunk.pk, "kind": chunk.kind, "source_id": chunk.source_id,
        "session": chunk.session.external_id if chunk.session_id else None,
        "sequence_start": chunk.sequence_start, "sequence_end": chunk.sequence_end,
        "created_at": iso(chunk.created_at), "importance": chunk.importance,
        "access_count": chunk.access_count, "text": chunk.text[:200],
    }


@transaction.atomic
def apply_merge(*, tenant_id: int, survivor_id: int, absorbed_ids: list[int]) -> int:
    """Fold `absorbed_ids` into `survivor_id`: higher importance, summed access counts, provenance
    kept in metadata["merged_from"]; the absorbed memories are deleted. Returns how many were."""
    rows = {c.pk: c for c in Chunk.objects.select_for_update(of=("self",)).select_related("session")
            .filter(tenant_id=tenant_id, pk__in=[survivor_id, *absorbed_ids])}
    survivor = rows.get(survivor_id)
    others = [rows[i] for i in sorted(set(absorbed_ids)) if i in rows and i != survivor_id]
    if survivor is None or not others:
        return 0
    provenance = list(survivor.metadata.get("merged_from", []))
    for other in others:
        provenance.append(_provenance(other))
        provenance.extend(other.metadata.get("merged_from", []))
        survivor.importance = max(survivor.importance, other.importance)
        survivor.access_count += other.access_count
        if other.accessed_at and (survivor.accessed_at is None or other.accessed_at > survivor.accessed_at):
            survivor.accessed_at = other.accessed_at
        if other.session_id == survivor.session_id and other.sequence_start is not None:
            survivor.sequence_start = min(survivor.sequence_start or other.sequence_start, other.sequence_start)
            survivor.sequence_end = max(survivor.sequence_end or 0, other.sequence_end or 0)
    survivor.metadata = {**survivor.metadata, "merged_from": provenance}
    survivor.save(update_fields=["importance", "access_count", "accessed_at", "sequence_start",
                                 "sequence_end", "metadata"])
    return delete_memories(tenant_id=tenant_id, chunk_ids=[o.pk for o in others],
                           keep=(survivor.kind, survivor.source_id))


def pin_memories(chunk_ids: list[int]) -> int:
    """Pin: importance 1, long-term, never pruned, merged or capped; the old values are kept."""
    count = 0
    for chunk in Chunk.objects.filter(pk__in=chunk_ids):
        if chunk.metadata.get("pinned") is True:
            continue
        chunk.metadata = {**chunk.metadata, "pinned": True,
                          "pinned_from": {"importance": chunk.importance, "lifetime": chunk.lifetime}}
        chunk.importance, chunk.lifetime = 1.0, "long_term"
        chunk.save(update_fields=["metadata", "importance", "lifetime"])
        count += 1
    return count


def unpin_memories(chunk_ids: list[int]) -> int:
    count = 0
    for chunk in Chunk.objects.filter(pk__in=chunk_ids):
        if chunk.metadata.get("pinned") is not True:
            continue
        before = chunk.metadata.get("pinned_from") or {}
        chunk.metadata = {k: v for k, v in chunk.metadata.items() if k not in ("pinned", "pinned_from")}
        chunk.importance = float(before.get("importance", chunk.importance))
        chunk.lifetime = before.get("lifetime", chunk.lifetime)
        chunk.save(update_fields=["metadata", "importance", "lifetime"])
        count += 1
    return count
