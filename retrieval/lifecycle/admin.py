"""Operator views of the memory lifecycle: memories by tier with bulk actions, consolidation
reports, deletions waiting for review (approve / reject)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from memoryhub.admin.base import counted, titled
from memoryhub.admin.paginator import EstimatedCountPaginator
from retrieval import decay
from retrieval.admin_helpers import (
    AccessColumns,
    OwnerColumn,
    api_id,
    confirm_page,
    confirmed,
    count_rows,
    source_link,
    transcript_url,
)
from retrieval.embedding import queue_for_embedding
from retrieval.lifecycle import archive, memories, review, review_page
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


@admin.register(Memory)
class MemoryAdmin(AccessColumns, OwnerColumn, admin.ModelAdmin):
    """Chunks as memories: tier, lifetime, current relevance; pin, re-embed, merge, forget."""

    # The id the API uses (a fact's, a note's, a message's place in its conversation), which also
    # says the kind, not the chunk's; tier, lifetime and pinned are filters and counted above the
    # list, so the list fits a 1280 px screen.
    list_display = ["api_id", "short_text", "owner", "tenant", "importance", "access_count", "relevance_now",
                    "created_at"]
    list_display_links = ["api_id"]
    list_filter = [("tier", titled("scope")), "lifetime", "kind", PinnedFilter, "tenant", ("created_at", admin.DateFieldListFilter)]
    list_select_related = ["tenant", "session"]
    search_fields = ["text", "source_id", "user_id", "=content_hash"]
    exclude = ["embedding", "search_vector", "embedding_error", "embedding_attempts"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    actions = ["pin", "unpin", "reembed", "merge_duplicates", "forget"]

    def get_readonly_fields(self, request: HttpRequest, obj: Memory | None = None) -> list[str]:
        # A memory's chunk is derived from its source (the event log, a note, a fact, a summary, a
        # document) and re-derived when that changes: it is read here and edited at the source.
        fields = [f.name for f in Chunk._meta.concrete_fields if f.name not in self.exclude]
        return ["source_link", *fields, "access_count", "accessed_at", "merged_from"]

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
        target = source_link(obj)
        return format_html('<a href="{}">{}</a>', target[0], target[1]) if target else "—"

    def get_queryset(self, request: HttpRequest) -> QuerySet[Memory]:
        return (super().get_queryset(request).with_access()
                .annotate(relevance=decay.relevance_expression(table=Chunk._meta.db_table)))

    @admin.display(description="id", ordering="pk")
    def api_id(self, obj: Memory) -> str:
        return api_id(obj)

    @admin.display(description="text")
    def short_text(self, obj: Memory) -> str:
        return obj.text[:80] + ("…" if len(obj.text) > 80 else "")

    @admin.display(description="kept by use (fades unused)", ordering="relevance")
    def relevance_now(self, obj: Memory) -> str:
        """The decayed relevance consolidation weighs (importance, fading since last use, raised by
        uses), to two places: four said nothing more to an operator."""
        return f"{getattr(obj, 'relevance', 0.0):.2f}"

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

    @admin.action(description="Merge selected duplicates into the most important one…")
    def merge_duplicates(self, request: HttpRequest, queryset: QuerySet[Memory]) -> HttpResponse | None:
        rows = list(queryset.order_by("-importance", "pk")[:MAX_BULK])
        if len(rows) < 2 or len({c.tenant_id for c in rows}) != 1:
            self.message_user(request, "Select at least two memories of one tenant to merge.", messages.ERROR)
            return None
        survivor, others = rows[0], rows[1:]
        if not confirmed(request):
            return confirm_page(
                request, self, queryset, action="merge_duplicates", danger=False,
                intro=f"Each memory on the right is folded into the survivor on the left (the most important "
                      f"one): it keeps the higher importance, the summed uses and the provenance; the others "
                      f"are deleted (archived, restorable). Tenant: {survivor.tenant.name}.",
                headers=["Survivor (kept)", "Merged into it"],
                rows=[[survivor.text, other.text] for other in others],
                button=f"Merge {len(others)} into the survivor")
        merged = memories.apply_merge(tenant_id=survivor.tenant_id, survivor_id=survivor.pk,
                                      absorbed_ids=[o.pk for o in others])
        self.message_user(request, f"Merged {merged} memories into “{survivor.text[:80]}” (provenance kept).")
        return None

    @admin.action(description="Forget: delete the selected memories (archived, restorable)…")
    def forget(self, request: HttpRequest, queryset: QuerySet[Memory]) -> HttpResponse | None:
        rows = list(queryset.order_by("pk").select_related("tenant", "session")[:MAX_BULK])
        if not confirmed(request):
            return confirm_page(
                request, self, queryset, action="forget",
                intro="These memories will be forgotten: a note, fact or summary goes whole (with all its "
                      "search entries); a message's entry goes from search (the message stays in its "
                      "transcript). All are archived first and can be restored from Archived memories.",
                headers=["Memory", "Kind", "Tenant", "Owner", "Session"],
                rows=[[c.text, c.kind, c.tenant.name, c.user_id or "shared",
                       c.session.external_id if c.session_id else "—"] for c in rows],
                button=f"Yes, forget {len(rows)} memories")
        by_tenant: dict[int, list[int]] = {}
        for chunk in rows:
            by_tenant.setdefault(chunk.tenant_id, []).append(chunk.pk)
        deleted = sum(memories.delete_memories(tenant_id=t, chunk_ids=ids, reason=ArchivedMemory.Reason.FORGET)
                      for t, ids in by_tenant.items())
        self.message_user(request, f"Forgot {deleted} memories (notes, facts and summaries with all their chunks); "
                                   "restore them from Archived memories.")
        return None


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    if not rows:
        return "—"
    head = format_html_join("", "<th>{}</th>", ((h,) for h in headers))
    body = format_html_join("", "<tr>{}</tr>", ((format_html_join("", "<td>{}</td>", ((c,) for c in row)),)
                                                 for row in rows))
    return format_html('<table class="mh-table"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>', head, body)


@admin.register(ConsolidationReport)
class ConsolidationReportAdmin(admin.ModelAdmin):
    """Each run's counts, per tenant, and every deletion in words; a new run starts from a preview."""

    list_display = ["id", "started_at", "tenant", "duration_ms", "promoted", "pruned", "merged", "capped",
                    "compressed", "held", "pending_reviews"]
    list_filter = ["tenant", ("started_at", admin.DateFieldListFilter)]
    list_select_related = ["tenant"]
    fields = ["tenant", "started_at", "finished_at", "duration_ms", "counts_table", "per_tenant_table",
              "deletions_table", "reviews", "error"]
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[ConsolidationReport]:
        return super().get_queryset(request).annotate(
            pending_count=Count("pending", filter=Q(pending__status=PendingDeletion.Status.PENDING)))

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        extra = {**(extra_context or {}), "preview_url": reverse("console-consolidation")}
        return super().changelist_view(request, extra)

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
    def counts_table(self, obj: ConsolidationReport) -> str:
        return _table(["step", "memories"], [[label, value] for _, label, value in count_rows(obj.counts)])

    @admin.display(description="per tenant")
    def per_tenant_table(self, obj: ConsolidationReport) -> str:
        per = obj.counts.get("per_tenant") or {}
        steps = ["promoted", "pruned", "merged", "capped", "compressed", "held_for_review"]
        return _table(["tenant", *[s.replace("_", " ") for s in steps]],
                      [[name, *[c.get(s, 0) for s in steps]] for name, c in sorted(per.items())])

    @admin.display(description="deletions")
    def deletions_table(self, obj: ConsolidationReport) -> str:
        return _table(["step", "memory", "kind", "owner", "session", "merged into"],
                      [[d.get("step"), d.get("text"), d.get("kind"), d.get("user_id") or "shared",
                        d.get("session") or "—", (d.get("merged_into") or {}).get("text", "—")]
                       for d in obj.deletions or []])

    @admin.display(description="reviews")
    def reviews(self, obj: ConsolidationReport) -> str:
        rows = [(reverse("admin:lifecycle_pendingdeletion_change", args=[p.pk]), p.get_step_display(),
                 len(review_page.all_ids(p)), p.status) for p in obj.pending.order_by("pk")]
        links = format_html_join(mark_safe("<br>"), '<a href="{}">{} of {} memories</a> ({})', rows)
        reason = (obj.counts.get("review") or {}).get("reason")
        if not links:
            return "—"
        return format_html("<p>Held because: {}.</p>{}", reason, links) if reason else links


@admin.register(PendingDeletion)
class PendingDeletionAdmin(admin.ModelAdmin):
    """Deletions held for review: each opens as a review page (every memory in text, a merge's
    survivor beside it, Approve / Reject per memory or for all)."""

    list_display = ["id", "tenant", "step", "what", "memory_count", "status", "created_at", "decided_at",
                    "decided_by"]
    list_filter = ["status", "step", "tenant"]
    list_select_related = ["tenant", "report"]
    actions = ["approve", "reject"]

    def get_urls(self) -> list[URLPattern]:
        own = [path("<path:object_id>/change/", self.admin_site.admin_view(review_page.review_view),
                    name="lifecycle_pendingdeletion_change")]
        return own + super().get_urls()

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # rejecting is the way to drop a review
        return actions

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="memories")
    def memory_count(self, obj: PendingDeletion) -> int:
        return len(review_page.all_ids(obj))

    @admin.display(description="what")
    def what(self, obj: PendingDeletion) -> str:
        first = Chunk.objects.filter(tenant_id=obj.tenant_id, pk__in=obj.chunk_ids[:1]).values_list("text", flat=True).first()
        label = f"“{first[:90]}”" if first else "(gone)"
        return label + (f" and {len(obj.chunk_ids) - 1} more" if len(obj.chunk_ids) > 1 else "")

    def _decide(self, request: HttpRequest, queryset: QuerySet[PendingDeletion], approve: bool) -> HttpResponse | None:
        if not confirmed(request):
            texts = dict(Chunk.objects.filter(pk__in=[i for p in queryset for i in p.chunk_ids[:200]])
                         .values_list("pk", "text"))
            rows = [[p.tenant.name, p.get_step_display(), texts.get(int(i), "(gone)")]
                    for p in queryset.select_related("tenant") for i in p.chunk_ids[:200]]
            verb = "deleted (archived, restorable)" if approve else "kept"
            return confirm_page(request, self, queryset, action="approve" if approve else "reject",
                                danger=approve, intro=f"These memories will be {verb}.",
                                headers=["Tenant", "Step", "Memory"], rows=rows,
                                button=("Approve" if approve else "Reject") + f" {counted(queryset.count(), 'review')}")
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
        self.message_user(request, f"{verb} {counted(done, 'review')}." + (f" {refused} were already decided." if refused else ""))
        return None

    @admin.action(description="Approve: carry out the deletions…")
    def approve(self, request: HttpRequest, queryset: QuerySet[PendingDeletion]) -> HttpResponse | None:
        return self._decide(request, queryset, approve=True)

    @admin.action(description="Reject: keep the memories…")
    def reject(self, request: HttpRequest, queryset: QuerySet[PendingDeletion]) -> HttpResponse | None:
        return self._decide(request, queryset, approve=False)


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
    fields = ["tenant", "reason", "kind", "text", "survivor_text", "user_id", "session_link", "sequence_start",
              "sequence_end", "row_table", "archived_at", "restored_at"]
    readonly_fields = fields
    actions = ["restore"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.display(description="text")
    def short_text(self, obj: ArchivedMemory) -> str:
        return obj.text[:100] + ("…" if len(obj.text) > 100 else "")

    @admin.display(description="session")
    def session_link(self, obj: ArchivedMemory) -> str:
        if not obj.session_id:
            return "—"
        return format_html('<a href="{}">{}</a>', transcript_url(obj.session_id, obj.sequence_start),
                           obj.session.external_id if obj.session else obj.session_id)

    @admin.display(description="stored fields")
    def row_table(self, obj: ArchivedMemory) -> str:
        return _table(["field", "value"], [[k, v] for k, v in sorted((obj.row or {}).items())])

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # the archive is what makes a forget undoable
        return actions

    @admin.display(description="merged into")
    def merged_into(self, obj: ArchivedMemory) -> str:
        return obj.survivor_text[:80] or "—"

    @admin.action(description="Restore the selected memories")
    def restore(self, request: HttpRequest, queryset: QuerySet[ArchivedMemory]) -> None:
        counts = archive.restore(list(queryset.values_list("pk", flat=True)[:MAX_BULK]))
        level = messages.SUCCESS if not counts["conflicts"] else messages.WARNING
        self.message_user(request, f"Restored {counts['restored']}; {counts['conflicts']} conflicted with "
                                   f"memories stored since; {counts['gone']} had lost their conversation.", level)
