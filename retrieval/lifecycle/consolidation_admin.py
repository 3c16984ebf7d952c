"""Operator views of what consolidation leaves: its reports, the deletions waiting for review
(approve / reject), the archived memories (restorable) and the compressed conversations. Registered
when retrieval.lifecycle.admin imports this module."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from memoryhub.admin.base import counted
from memoryhub.admin.paginator import EstimatedCountPaginator
from retrieval.admin_helpers import confirm_page, confirmed, count_rows, transcript_url
from retrieval.lifecycle import archive, review, review_page
from retrieval.lifecycle.models import (
    ArchivedMemory,
    CompressedConversation,
    ConsolidationReport,
    PendingDeletion,
)
from retrieval.models import Chunk

# the most rows one bulk action of the lifecycle admin takes (these pages' and the memories')
MAX_BULK = 10_000


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    if not rows:
        return "—"
    head = format_html_join("", "<th>{}</th>", ((h,) for h in headers))
    body = format_html_join(
        "",
        "<tr>{}</tr>",
        ((format_html_join("", "<td>{}</td>", ((c,) for c in row)),) for row in rows),
    )
    return format_html(
        '<table class="mh-table"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>', head, body
    )


@admin.register(ConsolidationReport)
class ConsolidationReportAdmin(admin.ModelAdmin):
    """Each run's counts, per tenant, and every deletion in words; a new run starts from a
    preview."""

    list_display = [
        "id",
        "started_at",
        "tenant",
        "duration_ms",
        "promoted",
        "pruned",
        "merged",
        "capped",
        "compressed",
        "held",
        "pending_reviews",
    ]
    list_filter = ["tenant", ("started_at", admin.DateFieldListFilter)]
    list_select_related = ["tenant"]
    fields = [
        "tenant",
        "started_at",
        "finished_at",
        "duration_ms",
        "counts_table",
        "per_tenant_table",
        "deletions_table",
        "reviews",
        "error",
    ]
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[ConsolidationReport]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                pending_count=Count(
                    "pending", filter=Q(pending__status=PendingDeletion.Status.PENDING)
                )
            )
        )

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
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
        return _table(
            ["step", "memories"], [[label, value] for _, label, value in count_rows(obj.counts)]
        )

    @admin.display(description="per tenant")
    def per_tenant_table(self, obj: ConsolidationReport) -> str:
        per = obj.counts.get("per_tenant") or {}
        steps = ["promoted", "pruned", "merged", "capped", "compressed", "held_for_review"]
        return _table(
            ["tenant", *[s.replace("_", " ") for s in steps]],
            [[name, *[c.get(s, 0) for s in steps]] for name, c in sorted(per.items())],
        )

    @admin.display(description="deletions")
    def deletions_table(self, obj: ConsolidationReport) -> str:
        return _table(
            ["step", "memory", "kind", "owner", "session", "merged into"],
            [
                [
                    d.get("step"),
                    d.get("text"),
                    d.get("kind"),
                    d.get("user_id") or "shared",
                    d.get("session") or "—",
                    (d.get("merged_into") or {}).get("text", "—"),
                ]
                for d in obj.deletions or []
            ],
        )

    @admin.display(description="reviews")
    def reviews(self, obj: ConsolidationReport) -> str:
        rows = [
            (
                reverse("admin:lifecycle_pendingdeletion_change", args=[p.pk]),
                p.get_step_display(),
                len(review_page.all_ids(p)),
                p.status,
            )
            for p in obj.pending.order_by("pk")
        ]
        links = format_html_join(mark_safe("<br>"), '<a href="{}">{} of {} memories</a> ({})', rows)
        reason = (obj.counts.get("review") or {}).get("reason")
        if not links:
            return "—"
        return format_html("<p>Held because: {}.</p>{}", reason, links) if reason else links


@admin.register(PendingDeletion)
class PendingDeletionAdmin(admin.ModelAdmin):
    """Deletions held for review: each opens as a review page (every memory in text, a merge's
    survivor beside it, Approve / Reject per memory or for all)."""

    list_display = [
        "id",
        "tenant",
        "step",
        "what",
        "memory_count",
        "status",
        "created_at",
        "decided_at",
        "decided_by",
    ]
    list_filter = ["status", "step", "tenant"]
    list_select_related = ["tenant", "report"]
    actions = ["approve", "reject"]

    def get_urls(self) -> list[URLPattern]:
        own = [
            path(
                "<path:object_id>/change/",
                self.admin_site.admin_view(review_page.review_view),
                name="lifecycle_pendingdeletion_change",
            )
        ]
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
        first = (
            Chunk.objects.filter(tenant_id=obj.tenant_id, pk__in=obj.chunk_ids[:1])
            .values_list("text", flat=True)
            .first()
        )
        label = f"“{first[:90]}”" if first else "(gone)"
        return label + (f" and {len(obj.chunk_ids) - 1} more" if len(obj.chunk_ids) > 1 else "")

    def _decide(
        self, request: HttpRequest, queryset: QuerySet[PendingDeletion], approve: bool
    ) -> HttpResponse | None:
        if not confirmed(request):
            texts = dict(
                Chunk.objects.filter(
                    pk__in=[i for p in queryset for i in p.chunk_ids[:200]]
                ).values_list("pk", "text")
            )
            rows = [
                [p.tenant.name, p.get_step_display(), texts.get(int(i), "(gone)")]
                for p in queryset.select_related("tenant")
                for i in p.chunk_ids[:200]
            ]
            verb = "deleted (archived, restorable)" if approve else "kept"
            return confirm_page(
                request,
                self,
                queryset,
                action="approve" if approve else "reject",
                danger=approve,
                intro=f"These memories will be {verb}.",
                headers=["Tenant", "Step", "Memory"],
                rows=rows,
                button=("Approve" if approve else "Reject")
                + f" {counted(queryset.count(), 'review')}",
            )
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
        self.message_user(
            request,
            f"{verb} {counted(done, 'review')}."
            + (f" {refused} were already decided." if refused else ""),
        )
        return None

    @admin.action(description="Approve: carry out the deletions…")
    def approve(
        self, request: HttpRequest, queryset: QuerySet[PendingDeletion]
    ) -> HttpResponse | None:
        return self._decide(request, queryset, approve=True)

    @admin.action(description="Reject: keep the memories…")
    def reject(
        self, request: HttpRequest, queryset: QuerySet[PendingDeletion]
    ) -> HttpResponse | None:
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

    list_display = [
        "archived_at",
        "reason",
        "kind",
        "short_text",
        "merged_into",
        "user_id",
        "tenant",
        "restored_at",
    ]
    list_filter = ["reason", "kind", "tenant", ("archived_at", admin.DateFieldListFilter)]
    list_select_related = ["tenant"]
    search_fields = ["text", "survivor_text", "user_id", "source_id"]
    fields = [
        "tenant",
        "reason",
        "kind",
        "text",
        "survivor_text",
        "user_id",
        "session_link",
        "sequence_start",
        "sequence_end",
        "row_table",
        "archived_at",
        "restored_at",
    ]
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
        return format_html(
            '<a href="{}">{}</a>',
            transcript_url(obj.session_id, obj.sequence_start),
            obj.session.external_id if obj.session else obj.session_id,
        )

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
        self.message_user(
            request,
            f"Restored {counts['restored']}; {counts['conflicts']} conflicted with "
            f"memories stored since; {counts['gone']} had lost their conversation.",
            level,
        )
