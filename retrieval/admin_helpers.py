"""What the admin pages of retrieval (the console, memories, reviews) and of scheduling share:
links to where a memory comes from, by name; an action's confirmation page; consolidation counts
in words."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse

from memoryhub.models import Note
from retrieval.models import Chunk


def transcript_url(session_pk: int, sequence: int | None = None) -> str:
    url = reverse("admin:memoryhub_session_transcript", args=[session_pk])
    return f"{url}?{urlencode({'around': sequence})}#m{sequence}" if sequence is not None else url


def source_link(chunk: Chunk, note_pks: dict[str, int] | None = None) -> tuple[str, str] | None:
    """The admin page of what a chunk is derived from, and a label for the link: the note, fact
    or summary (edited there; its chunks are re-derived), the message in its transcript, the
    document. `note_pks` maps note ids to row ids when the caller looked them up in one query."""
    meta = chunk.metadata or {}
    if chunk.kind == "note":
        pk = (note_pks or {}).get(chunk.source_id)
        if pk is None:
            pk = (
                Note.objects.filter(tenant_id=chunk.tenant_id, note_id=chunk.source_id)
                .values_list("pk", flat=True)
                .first()
            )
        return (reverse("admin:memoryhub_note_change", args=[pk]), "the note") if pk else None
    if chunk.kind in ("fact", "summary") and chunk.source_id.isdigit():
        model = "fact" if chunk.kind == "fact" else "summarynode"
        return reverse(
            f"admin:memoryhub_{model}_change", args=[chunk.source_id]
        ), f"the {chunk.kind}"
    if chunk.kind == "event" and chunk.session_id:
        return transcript_url(
            chunk.session_id, chunk.sequence_start
        ), "the message in its transcript"
    if chunk.kind == "document" and meta.get("document_id"):
        return reverse(
            "admin:retrieval_document_change", args=[meta["document_id"]]
        ), "the document"
    if (
        chunk.kind == "document"
        and chunk.source_id.startswith("doc-")
        and chunk.source_id[4:].isdigit()
    ):
        return reverse(
            "admin:retrieval_document_change", args=[chunk.source_id[4:]]
        ), "the document"
    return None


def api_id(chunk: Chunk) -> str:
    """A memory as the API names it: a fact's or summary's id, a note's id, a message's place in its
    conversation (`session #sequence`; the caller selects the session), a document's id; the chunk's
    own id only for what has none of these."""
    source = chunk.source_id
    if chunk.kind in ("fact", "summary") and source.isdigit():
        return f"{chunk.kind} {source}"
    if chunk.kind == "note" and source:
        return source
    if chunk.kind == "event" and chunk.sequence_start is not None:
        end = chunk.sequence_end
        place = f"#{chunk.sequence_start}" + (
            f"–#{end}" if end and end != chunk.sequence_start else ""
        )
        return f"{chunk.session.external_id} {place}" if chunk.session_id else place
    if chunk.kind == "document":
        doc = (chunk.metadata or {}).get("document_id") or (
            source[4:] if source.startswith("doc-") else ""
        )
        if str(doc).isdigit():
            return f"document {doc}"
    return f"chunk {chunk.pk}"


def note_pks(chunks: list[Chunk]) -> dict[str, int]:
    """Row ids of the notes behind these chunks, in one query."""
    ids = {c.source_id for c in chunks if c.kind == "note"}
    if not ids:
        return {}
    tenant_ids = {c.tenant_id for c in chunks}
    return dict(
        Note.objects.filter(tenant_id__in=tenant_ids, note_id__in=ids).values_list("note_id", "pk")
    )


def editable(chunk: Chunk) -> bool:
    """Notes, facts and summaries are edited at their source; messages are never edited."""
    return chunk.kind in ("note", "fact", "summary")


# --- confirmation pages ----------------------------------------------------------------------


def confirmed(request: HttpRequest) -> bool:
    return request.POST.get("confirm") == "yes"


def confirm_page(
    request: HttpRequest,
    model_admin: admin.ModelAdmin,
    queryset: QuerySet[Any],
    *,
    action: str,
    intro: str,
    headers: list[str],
    rows: list[list[Any]],
    button: str,
    danger: bool = True,
) -> HttpResponse:
    opts = model_admin.model._meta
    context = {
        **model_admin.admin_site.each_context(request),
        "title": "Are you sure?",
        "opts": opts,
        "intro": intro,
        "headers": headers,
        "rows": rows,
        "button": button,
        "danger": danger,
        "action": action,
        "selected": list(queryset.values_list("pk", flat=True)),
        "back": reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"),
    }
    return TemplateResponse(request, "admin/lifecycle/confirm_action.html", context)


# --- consolidation counts in words --------------------------------------------------------------

COUNT_LABELS = {
    "scored": "short-term memories scored",
    "promoted": "promoted to long-term",
    "pruned": "pruned (relevance below the floor)",
    "merged": "merged into a near-duplicate",
    "merge_groups": "groups of duplicates",
    "capped": "deleted by the per-scope cap",
    "compressed": "conversations compressed into summaries",
    "held_for_review": "deletions held for review",
    "prune_held": "prunes held for review",
    "merge_held": "merges held for review",
    "cap_held": "cap deletions held for review",
    "relevance_below_prune": "relevance below the prune floor",
    "relevance_between": "relevance in between",
    "relevance_above_promote": "relevance above the promotion mark",
    "prune_skipped_immutable": "kept: the tenant's transcript is immutable",
    "compress_candidates": "idle conversations",
    "tenants": "tenants",
}


def count_rows(counts: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """(key, label, value) per count, the labelled ones first; per-tenant breakdowns left out."""
    plain = {k: v for k, v in counts.items() if not isinstance(v, dict)}
    known = [(k, COUNT_LABELS[k], plain[k]) for k in COUNT_LABELS if k in plain]
    return known + [
        (k, k.replace("_", " "), v) for k, v in sorted(plain.items()) if k not in COUNT_LABELS
    ]


class AccessColumns:
    """A chunk's access count and last access (retrieval.models.ChunkAccess) as admin columns and
    read-only fields, for a list whose queryset is Chunk.objects.with_access()."""

    @admin.display(description="access count", ordering="access_count")
    def access_count(self, obj: Chunk) -> int:
        return getattr(obj, "access_count", 0)

    @admin.display(description="accessed at")
    def accessed_at(self, obj: Chunk) -> Any:
        return getattr(obj, "accessed_at", None) or "—"


class OwnerColumn:
    """Whose memory a chunk is, as a column (the owner wherever memories are listed)."""

    @admin.display(description="owner", ordering="user_id")
    def owner(self, obj: Chunk) -> str:
        return obj.user_id or "shared"
