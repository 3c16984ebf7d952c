"""What consolidation deletes is archived first, readable as text and restorable.

A note, fact or summary is archived whole (its row's fields); an event's chunk by its place in the
log, from which it is rebuilt on restore; a document's chunk by its text.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, models, transaction
from django.db.models import Q
from django.utils import timezone

from memoryhub.models import Fact, Note, SummaryNode
from memoryhub.signals import memory_saved
from retrieval.indexing import rebuild_event_chunks
from retrieval.lifecycle.models import ArchivedMemory
from retrieval.models import Chunk

# kind: (model, id field, text field)
ROW_MODELS: dict[str, tuple[type[models.Model], str, str]] = {
    "note": (Note, "note_id", "content"),
    "fact": (Fact, "pk", "content"),
    "summary": (SummaryNode, "pk", "text"),
}


def _row_fields(instance: models.Model) -> dict[str, Any]:
    fields = {
        f.attname: getattr(instance, f.attname)
        for f in instance._meta.concrete_fields
        if not f.primary_key
    }
    return json.loads(json.dumps(fields, cls=DjangoJSONEncoder))


def _source_rows(tenant_id: int, kind: str, source_ids: set[str]) -> list[models.Model]:
    model, field_name, _ = ROW_MODELS[kind]
    values: list[Any] = (
        [int(v) for v in source_ids if v.isdigit()] if field_name == "pk" else list(source_ids)
    )
    return list(model._default_manager.filter(tenant_id=tenant_id, **{f"{field_name}__in": values}))


def archive(
    *,
    tenant_id: int,
    chunk_ids: list[int],
    sources: dict[str, set[str]],
    reason: str,
    survivor: Chunk | None,
) -> int:
    """Archive the memories about to be deleted: whole rows for `sources`, chunks for the rest."""
    survivor_text = survivor.text if survivor is not None else ""
    rows: list[ArchivedMemory] = []
    for kind, source_ids in sources.items():
        _, _, text_field = ROW_MODELS[kind]
        for instance in _source_rows(tenant_id, kind, source_ids):
            source_id = instance.note_id if kind == "note" else str(instance.pk)
            rows.append(
                ArchivedMemory(
                    tenant_id=tenant_id,
                    reason=reason,
                    kind=kind,
                    source_id=source_id,
                    session_id=getattr(instance, "session_id", None),
                    user_id=getattr(instance, "user_id", ""),
                    text=getattr(instance, text_field),
                    row=_row_fields(instance),
                    survivor_text=survivor_text,
                )
            )
    loose = Chunk.objects.filter(tenant_id=tenant_id, pk__in=chunk_ids).exclude(
        kind__in=list(ROW_MODELS)
    )
    for chunk in loose.only(
        "id", "kind", "source_id", "session_id", "sequence_start", "sequence_end", "user_id", "text"
    ):
        rows.append(
            ArchivedMemory(
                tenant_id=tenant_id,
                reason=reason,
                kind=chunk.kind,
                source_id=chunk.source_id,
                session_id=chunk.session_id,
                sequence_start=chunk.sequence_start,
                sequence_end=chunk.sequence_end,
                user_id=chunk.user_id,
                text=chunk.text,
                chunk_id=chunk.pk,
                survivor_text=survivor_text,
            )
        )
    ArchivedMemory.objects.bulk_create(rows)
    return len(rows)


@transaction.atomic
def restore(archived_ids: list[int]) -> dict[str, int]:
    """Bring archived memories back: notes, facts and summaries as rows (re-indexed), events by
    rebuilding their chunks from the log, documents' chunks from their text. A memory whose place
    is taken again (a fact re-created with the same key) is reported as a conflict and stays
    archived."""
    counts = {"restored": 0, "conflicts": 0, "gone": 0}
    for item in ArchivedMemory.objects.select_for_update().filter(
        pk__in=archived_ids, restored_at__isnull=True
    ):
        outcome = _restore_one(item)
        counts[outcome] += 1
        if outcome == "restored":
            item.restored_at = timezone.now()
            item.save(update_fields=["restored_at"])
    return counts


def _restore_one(item: ArchivedMemory) -> str:
    if item.kind in ROW_MODELS:
        model, _, _ = ROW_MODELS[item.kind]
        fields = {f.attname: f for f in model._meta.concrete_fields}
        # Values come back from JSON: each field parses its own (times); a summary's parent may be
        # gone.
        row = {
            k: fields[k].to_python(v)
            for k, v in item.row.items()
            if k in fields and k != "parent_id"
        }
        try:
            with transaction.atomic():
                instance = model(**row)
                instance.save()
        except IntegrityError:
            return "conflicts"
        memory_saved.send(sender=model, kind=item.kind, instance=instance)
        return "restored"
    if item.kind == "event":
        if item.session_id is None:
            return "gone"
        rebuild_event_chunks(session_id=item.session_id)
        return "restored"
    Chunk.objects.create(
        tenant_id=item.tenant_id,
        kind=item.kind,
        source_id=item.source_id,
        session_id=item.session_id,
        user_id=item.user_id,
        text=item.text,
        content_hash=item.source_id or str(item.pk),
        tier="workspace",
        lifetime="long_term",
    )
    return "restored"


def on_workspace_forgotten(
    sender: Any, workspace: Any, session_ids: list[int], **kwargs: Any
) -> dict[str, int]:
    """A deleted workspace takes its archived memories along: those of its sessions, and notes and
    facts that were in it (their archived row says so). No foreign key would cascade to them."""
    label = ArchivedMemory._meta.label
    deleted, _ = ArchivedMemory.objects.filter(
        Q(session_id__in=session_ids) | Q(row__workspace_id=workspace.pk),
        tenant_id=workspace.tenant_id,
    ).delete()
    return {label: deleted}
