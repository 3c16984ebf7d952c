"""Operator views of the memory lifecycle: memories by tier with bulk actions. Consolidation's
reports, reviews and archive are retrieval.lifecycle.consolidation_admin's (registered by its
import here)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html

from memoryhub.admin.base import ScopeNamed, titled
from memoryhub.admin.paginator import EstimatedCountPaginator
from retrieval import decay
from retrieval.admin_helpers import (
    AccessColumns,
    OwnerColumn,
    api_id,
    confirm_page,
    confirmed,
    source_link,
)
from retrieval.embedding import queue_for_embedding
from retrieval.lifecycle import memories
from retrieval.lifecycle.consolidation_admin import MAX_BULK
from retrieval.lifecycle.models import ArchivedMemory, Memory
from retrieval.models import Chunk


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
class MemoryAdmin(AccessColumns, OwnerColumn, ScopeNamed):
    """Chunks as memories: tier, lifetime, current relevance; pin, re-embed, merge, forget."""

    # The id the API uses (a fact's, a note's, a message's place in its conversation), which also
    # says the kind, not the chunk's; tier, lifetime and pinned are filters and counted above the
    # list, so the list fits a 1280 px screen.
    list_display = [
        "api_id",
        "short_text",
        "owner",
        "tenant",
        "importance",
        "access_count",
        "relevance_now",
        "created_at",
    ]
    list_display_links = ["api_id"]
    list_filter = [
        ("tier", titled("scope")),
        "lifetime",
        "kind",
        PinnedFilter,
        "tenant",
        ("created_at", admin.DateFieldListFilter),
    ]
    list_select_related = ["tenant", "session"]
    search_fields = ["text", "source_id", "user_id", "=content_hash"]
    exclude = ["embedding", "search_vector", "embedding_error", "embedding_attempts"]
    excluded_from_form = [*exclude, "tier"]  # shown read-only as `scope`, the API's name for it
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    actions = ["pin", "unpin", "reembed", "merge_duplicates", "forget"]

    def get_readonly_fields(self, request: HttpRequest, obj: Memory | None = None) -> list[str]:
        # A memory's chunk is derived from its source (the event log, a note, a fact, a summary, a
        # document) and re-derived when that changes: it is read here and edited at the source.
        fields = [
            "scope" if f.name == "tier" else f.name
            for f in Chunk._meta.concrete_fields
            if f.name not in self.exclude
        ]
        return ["source_link", *fields, "access_count", "accessed_at", "merged_from"]

    def get_exclude(self, request: HttpRequest, obj: Memory | None = None) -> list[str]:
        return self.excluded_from_form

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
        return (
            super()
            .get_queryset(request)
            .with_access()
            .annotate(relevance=decay.relevance_expression(table=Chunk._meta.db_table))
        )

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
        return (
            format_html("<pre>{}</pre>", json.dumps(merged, indent=2, ensure_ascii=False))
            if merged
            else "—"
        )

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        response = super().changelist_view(request, extra_context)
        context = getattr(response, "context_data", None)
        if context and "cl" in context:
            qs = context["cl"].queryset.model.objects.filter(
                pk__in=context["cl"].queryset.values("pk")
            )
            rows = (
                qs.values("tier")
                .order_by("tier")
                .annotate(
                    total=Count("id"),
                    long=Count("id", filter=Q(lifetime="long_term")),
                    pinned=Count("id", filter=Q(metadata__pinned=True)),
                )
            )
            context["tier_counts"] = [{**r, "short": r["total"] - r["long"]} for r in rows]
        return response

    def _ids(self, queryset: QuerySet[Memory]) -> list[int]:
        return list(queryset.order_by("pk").values_list("pk", flat=True)[:MAX_BULK])

    @admin.action(description="Pin: importance 1, long-term, never pruned or merged")
    def pin(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        self.message_user(request, f"Pinned {memories.pin_memories(self._ids(queryset))} memories.")

    @admin.action(description="Unpin: restore the importance and lifetime they had")
    def unpin(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        self.message_user(
            request, f"Unpinned {memories.unpin_memories(self._ids(queryset))} memories."
        )

    @admin.action(description="Re-embed (in the background)")
    def reembed(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        ids = self._ids(queryset)
        queue_for_embedding(ids)
        self.message_user(request, f"Queued {len(ids)} memories for re-embedding.")

    @admin.action(description="Merge selected duplicates into the most important one…")
    def merge_duplicates(
        self, request: HttpRequest, queryset: QuerySet[Memory]
    ) -> HttpResponse | None:
        rows = list(queryset.order_by("-importance", "pk")[:MAX_BULK])
        if len(rows) < 2 or len({c.tenant_id for c in rows}) != 1:
            self.message_user(
                request, "Select at least two memories of one tenant to merge.", messages.ERROR
            )
            return None
        survivor, others = rows[0], rows[1:]
        if not confirmed(request):
            return confirm_page(
                request,
                self,
                queryset,
                action="merge_duplicates",
                danger=False,
                intro=(
                    "Each memory on the right is folded into the survivor on the left (the most"
                    " important one): it keeps the higher importance, the summed uses and the"
                    " provenance; the others are deleted (archived, restorable). Tenant:"
                    f" {survivor.tenant.name}."
                ),
                headers=["Survivor (kept)", "Merged into it"],
                rows=[[survivor.text, other.text] for other in others],
                button=f"Merge {len(others)} into the survivor",
            )
        merged = memories.apply_merge(
            tenant_id=survivor.tenant_id,
            survivor_id=survivor.pk,
            absorbed_ids=[o.pk for o in others],
        )
        self.message_user(
            request, f"Merged {merged} memories into “{survivor.text[:80]}” (provenance kept)."
        )
        return None

    @admin.action(description="Forget: delete the selected memories (archived, restorable)…")
    def forget(self, request: HttpRequest, queryset: QuerySet[Memory]) -> HttpResponse | None:
        rows = list(queryset.order_by("pk").select_related("tenant", "session")[:MAX_BULK])
        if not confirmed(request):
            return confirm_page(
                request,
                self,
                queryset,
                action="forget",
                intro=(
                    "These memories will be forgotten: a note, fact or summary goes whole (with all"
                    " its search entries); a message's entry goes from search (the message stays in"
                    " its transcript). All are archived first and can be restored from Archived"
                    " memories."
                ),
                headers=["Memory", "Kind", "Tenant", "Owner", "Session"],
                rows=[
                    [
                        c.text,
                        c.kind,
                        c.tenant.name,
                        c.user_id or "shared",
                        c.session.external_id if c.session_id else "—",
                    ]
                    for c in rows
                ],
                button=f"Yes, forget {len(rows)} memories",
            )
        by_tenant: dict[int, list[int]] = {}
        for chunk in rows:
            by_tenant.setdefault(chunk.tenant_id, []).append(chunk.pk)
        deleted = sum(
            memories.delete_memories(
                tenant_id=t, chunk_ids=ids, reason=ArchivedMemory.Reason.FORGET
            )
            for t, ids in by_tenant.items()
        )
        self.message_user(
            request,
            f"Forgot {deleted} memories (notes, facts and summaries with all their chunks); "
            "restore them from Archived memories.",
        )
        return None
