"""Operator views of the memory lifecycle: memories by tier with bulk actions, consolidation
reports, deletions waiting for review (approve / reject)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html

from memoryhub.admin.paginator import EstimatedCountPaginator
from memoryhub.models import Note
from retrieval import decay
from retrieval.embedding import queue_for_embedding
from retrieval.lifecycle import archive, memories, review
from retrieval.lifecycle.models import (
    ArchivedMemory,
    CompressedConversation,
    ConsolidationReport,
    Memory,
    PendingDeletion,
)
from retrieval.models import Chunk

MAX_BULK = 10_000


class PinnedFilter(admin.SimpleListFilter):
    title = "pinned"
    parameter_name = "pinned"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("yes", "pinned"), ("no", "not pinned")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Memory]) -> QuerySet[Memory]:
        if self.value() == "yes":
            return queryset.filter(metadata__pinned=True)
        if self.value() == "no":
            return queryset.exclude(metadata__pinned=True)
        return queryset


def _source_admin_url(chunk: Chunk) -> tuple[str, str] | None:
    """The admin page of what a chunk is derived from, and a label for the link."""
    meta = chunk.metadata or {}
    if chunk.kind == "note":
        note = Note.objects.filter(tenant_id=chunk.tenant_id, note_id=chunk.source_id).only("pk").first()
        return (reverse("admin:memoryhub_note_change", args=[note.pk]), f"note {chunk.source_id}") if note else None
    if chunk.kind in ("fact", "summary") and chunk.source_id.isdigit():
        model = "fact" if chunk.kind == "fact" else "summarynode"
        return reverse(f"admin:memoryhub_{model}_change", args=[chunk.source_id]), f"{chunk.kind} {chunk.source_id}"
    if chunk.kind == "event" and meta.get("event_id"):
        return reverse("admin:memoryhub_event_change", args=[meta["event_id"]]), "the event in the log"
    if chunk.kind == "document" and meta.get("document_id"):
        return reverse("admin:retrieval_document_change", args=[meta["document_id"]]), "the document"
    return None


@admin.register(Memory)
class MemoryAdmin(admin.ModelAdmin):
    """Chunks as memories: tier, lifetime, current relevance; pin, re-embed, merge, forget."""

    list_display = ["id", "kind", "short_text", "tenant", "session", "tier", "lifetime", "importance",
                    "access_count", "relevance_now", "is_pinned", "created_at"]
    list_filter = ["tier", "lifetime", "kind", PinnedFilter, "tenant", ("created_at", admin.DateFieldListFilter)]
    list_select_related = ["tenant", "session"]
    search_fields = ["text", "source_id", "user_id", "=content_hash"]
    raw_id_fields = ["tenant", "session", "workspace", "channel"]
    exclude = ["embedding", "search_vector", "embedding_error", "embedding_attempts"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    actions = ["pin", "unpin", "reembed", "merge_duplicates", "forget"]

    def get_readonly_fields(self, request: HttpRequest, obj: Memory | None = None) -> list[str]:
        # A memory's chunk is derived from its source (the event log, a note, a fact, a summary, a
        # document) and re-derived when that changes: it is read here and edited at the source.
        fields = [f.name for f in Chunk._meta.concrete_fields if f.name not in self.exclude]
        return ["source_link", *fields, "merged_from"]

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # "Forget" is the deletion (archived, restorable)
        return actions

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Memory | None = None) -> bool:
        return False

    @admin.display(description="edit at the source")
    def source_link(self, obj: Memory) -> str:
        target = _source_admin_url(obj)
        return format_html('<a href="{}">{}</a>', target[0], target[1]) if target else "—"

    def get_queryset(self, request: HttpRequest) -> QuerySet[Memory]:
        return super().get_queryset(request).annotate(relevance=decay.relevance_expression(table=Chunk._meta.db_table))

    @admin.display(description="text")
    def short_text(self, obj: Memory) -> str:
        return obj.text[:80] + ("…" if len(obj.text) > 80 else "")

    @admin.display(description="relevance", ordering="relevance")
    def relevance_now(self, obj: Memory) -> str:
        return f"{getattr(obj, 'relevance', 0.0):.4f}"

    @admin.display(description="pinned", boolean=True)
    def is_pinned(self, obj: Memory) -> bool:
        return obj.metadata.get("pinned") is True

    @admin.display(description="merged from")
    def merged_from(self, obj: Memory) -> str:
        merged = obj.metadata.get("merged_from") or []
        return format_html("<pre>{}</pre>", json.dumps(merged, indent=2, ensure_ascii=False)) if merged else "—"

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        response = super().changelist_view(request, extra_context)
        context = getattr(response, "context_data", None)
        if context and "cl" in context:
            qs = context["cl"].queryset.model.objects.filter(pk__in=context["cl"].queryset.values("pk"))
            rows = (qs.values("tier").order_by("tier").annotate(
                total=Count("id"), long=Count("id", filter=Q(lifetime="long_term")),
                pinned=Count("id", filter=Q(metadata__pinned=True))))
            context["tier_counts"] = [{**r, "short": r["total"] - r["long"]} for r in rows]
        return response

    def _ids(self, queryset: QuerySet[Memory]) -> list[int]:
        return list(queryset.order_by("pk").values_list("pk", flat=True)[:MAX_BULK])

    @admin.action(description="Pin: importance 1, long-term, never pruned or merged")
    def pin(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        self.message_user(request, f"Pinned {memories.pin_memories(self._ids(queryset))} memories.")

    @admin.action(description="Unpin: restore the importance and lifetime they had")
    def unpin(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        self.message_user(request, f"Unpinned {memories.unpin_memories(self._ids(queryset))} memories.")

    @admin.action(description="Re-embed (in the background)")
    def reembed(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        ids = self._ids(queryset)
        queue_for_embedding(ids)
        self.message_user(request, f"Queued {len(ids)} memories for re-embedding.")

    @admin.action(description="Merge selected duplicates into the most important one")
    def merge_duplicates(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        rows = list(queryset.order_by("-importance", "pk").values_list("pk", "tenant_id")[:MAX_BULK])
        if len(rows) < 2 or len({tenant for _, tenant in rows}) != 1:
            self.message_user(request, "Select at least two memories of one tenant to merge.", messages.ERROR)
            return
        survivor = rows[0][0]
        merged = memories.apply_merge(tenant_id=rows[0][1], survivor_id=survivor,
                                           absorbed_ids=[pk for pk, _ in rows[1:]])
        self.message_user(request, f"Merged {merged} memories into memory {survivor} (provenance kept).")

    @admin.action(description="Forget: delete the selected memories")
    def forget(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        by_tenant: dict[int, list[int]] = {}
        for pk, tenant_id in queryset.order_by("pk").values_list("pk", "tenant_id")[:MAX_BULK]:
            by_tenant.setdefault(tenant_id, []).append(pk)
        deleted = sum(memories.delete_memories(tenant_id=t, chunk_ids=ids, reason=ArchivedMemory.Reason.FORGET)
                      for t, ids in by_tenant.items())
        self.message_user(request, f"Forgot {deleted} memories (notes, facts and summaries with all their chunks).")


@admin.register(ConsolidationReport)
class ConsolidationReportAdmin(admin.ModelAdmin):
    list_display = ["id", "started_at", "tenant", "duration_ms", "promoted", "pruned", "merged", "capped",
                    "compressed", "held", "pending_reviews"]
    list_filter = ["tenant", ("started_at", admin.DateFieldListFilter)]
    list_select_related = ["tenant"]
    readonly_fields = ["tenant", "started_at", "finished_at", "duration_ms", "counts_pretty", "ids_pretty", "error"]
    exclude = ["counts", "ids"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ConsolidationReport]:
        return super().get_queryset(request).annotate(
            pending_count=Count("pending", filter=Q(pending__status=PendingDeletion.Status.PENDING)))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def _count(self, obj: ConsolidationReport, name: str) -> int:
        return int(obj.counts.get(name, 0))

    @admin.display(description="promoted")
    def promoted(self, obj: ConsolidationReport) -> int:
        return self._count(obj, "promoted")

    @admin.display(description="pruned")
    def pruned(self, obj: ConsolidationReport) -> int:
        return self._count(obj, "pruned")

    @admin.display(description="merged")
    def merged(self, obj: ConsolidationReport) -> int:
        return self._count(obj, "merged")

    @admin.display(description="capped")
    def capped(self, obj: ConsolidationReport) -> int:
        return self._count(obj, "capped")

    @admin.display(description="compressed")
    def compressed(self, obj: ConsolidationReport) -> int:
        return self._count(obj, "compressed")

    @admin.display(description="held for review")
    def held(self, obj: ConsolidationReport) -> int:
        return self._count(obj, "held_for_review")

    @admin.display(description="pending reviews", ordering="pending_count")
    def pending_reviews(self, obj: ConsolidationReport) -> int:
        return getattr(obj, "pending_count", 0)

    @admin.display(description="counts")
    def counts_pretty(self, obj: ConsolidationReport) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.counts, indent=2, sort_keys=True))

    @admin.display(description="ids touched")
    def ids_pretty(self, obj: ConsolidationReport) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.ids, indent=1))


@admin.register(PendingDeletion)
class PendingDeletionAdmin(admin.ModelAdmin):
    list_display = ["id", "tenant", "step", "memory_count", "status", "created_at", "decided_at", "decided_by",
                    "report"]
    list_filter = ["status", "step", "tenant"]
    list_select_related = ["tenant", "report"]
    readonly_fields = ["tenant", "report", "step", "chunk_ids", "payload", "status", "created_at", "decided_at",
                       "decided_by", "outcome", "preview"]
    actions = ["approve", "reject"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.display(description="memories")
    def memory_count(self, obj: PendingDeletion) -> int:
        return len(obj.chunk_ids)

    @admin.display(description="memories it would delete")
    def preview(self, obj: PendingDeletion) -> str:
        texts = Chunk.objects.filter(tenant_id=obj.tenant_id, pk__in=obj.chunk_ids[:50]).values_list("pk", "text")
        return format_html("<pre>{}</pre>", "\n".join(f"{pk}: {text[:120]}" for pk, text in texts))

    def _decide(self, request: HttpRequest, queryset: QuerySet[PendingDeletion], approve: bool) -> None:
        done, refused = 0, 0
        for pending_id in queryset.values_list("pk", flat=True):
            try:
                if approve:
                    review.approve_pending(pending_id, by=request.user.get_username())
                else:
                    review.reject_pending(pending_id, by=request.user.get_username())
                done += 1
            except review.ReviewError:
                refused += 1
        verb = "Approved" if approve else "Rejected"
        self.message_user(request, f"{verb} {done} review(s)." + (f" {refused} were already decided." if refused else ""))

    @admin.action(description="Approve: carry out the deletions")
    def approve(self, request: HttpRequest, queryset: QuerySet[PendingDeletion]) -> None:
        self._decide(request, queryset, approve=True)

    @admin.action(description="Reject: keep the memories")
    def reject(self, request: HttpRequest, queryset: QuerySet[PendingDeletion]) -> None:
        self._decide(request, queryset, approve=False)


@admin.register(CompressedConversation)
class CompressedConversationAdmin(admin.ModelAdmin):
    list_display = ["session", "tenant", "upper_sequence", "summary_ref", "compressed_at"]
    list_select_related = ["session", "tenant"]
    raw_id_fields = ["session", "tenant"]
    list_filter = ["tenant"]


@admin.register(ArchivedMemory)
class ArchivedMemoryAdmin(admin.ModelAdmin):
    """What consolidation (or a forget) deleted, in words; restore brings it back."""

    list_display = ["archived_at", "reason", "kind", "short_text", "merged_into", "user_id", "tenant", "restored_at"]
    list_filter = ["reason", "kind", "tenant", ("archived_at", admin.DateFieldListFilter)]
    list_select_related = ["tenant"]
    search_fields = ["text", "survivor_text", "user_id", "source_id"]
    readonly_fields = [f.name for f in ArchivedMemory._meta.concrete_fields]
    actions = ["restore"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.display(description="text")
    def short_text(self, obj: ArchivedMemory) -> str:
        return obj.text[:100] + ("…" if len(obj.text) > 100 else "")

    @admin.display(description="merged into")
    def merged_into(self, obj: ArchivedMemory) -> str:
        return obj.survivor_text[:80] or "—"

    @admin.action(description="Restore the selected memories")
    def restore(self, request: HttpRequest, queryset: QuerySet[ArchivedMemory]) -> None:
        counts = archive.restore(list(queryset.values_list("pk", flat=True)[:MAX_BULK]))
        level = messages.SUCCESS if not counts["conflicts"] else messages.WARNING
        self.message_user(request, f"Restored {counts['restored']}; {counts['conflicts']} conflicted with "
                                   f"memories stored since; {counts['gone']} had lost their conversation.", level)
