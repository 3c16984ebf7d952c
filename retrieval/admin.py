"""Operator views of chunks and documents: filter, inspect, re-embed, pin importance."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

import retrieval.models
from memoryhub.admin.base import ScopeNamed, counted, titled
from memoryhub.admin.paginator import EstimatedCountPaginator
from retrieval.admin_helpers import AccessColumns, OwnerColumn, source_link
from retrieval.embedding import queue_for_embedding
from retrieval.memory_indexing import delete_searchable
from retrieval.models import Chunk, Document


class EmbeddedFilter(admin.SimpleListFilter):
    title = "embedding"
    parameter_name = "embedded"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [
            ("yes", "embedded"),
            ("no", "pending"),
            ("error", "failed"),
            ("aside", "set aside (failed too often)"),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Chunk]) -> QuerySet[Chunk]:
        if self.value() == "yes":
            return queryset.filter(embedding__isnull=False)
        if self.value() == "no":
            return queryset.filter(embedding__isnull=True)
        if self.value() == "error":
            return queryset.filter(embedding__isnull=True).exclude(embedding_error="")
        if self.value() == "aside":
            return queryset.filter(
                embedding__isnull=True, embedding_attempts__gte=retrieval.models.EMBED_MAX_ATTEMPTS
            )
        return queryset


@admin.register(Chunk)
class ChunkAdmin(AccessColumns, OwnerColumn, ScopeNamed):
    # Tier and a message's place are filters and on the chunk's page, so the list fits a 1280 px
    # screen.
    list_display = [
        "id",
        "kind",
        "short_text",
        "owner",
        "tenant",
        "session",
        "importance",
        "access_count",
        "embedding_model",
        "created_at",
    ]
    list_filter = [
        "kind",
        ("tier", titled("scope")),
        "lifetime",
        EmbeddedFilter,
        "tenant",
        ("created_at", admin.DateFieldListFilter),
    ]
    list_select_related = ["tenant", "session"]
    search_fields = ["text", "source_id", "=content_hash", "user_id"]
    autocomplete_fields = ["session", "workspace", "channel"]
    readonly_fields = [
        "source",
        "content_hash",
        "embedding_model",
        "embedding_error",
        "embedding_attempts",
        "indexed_at",
        "access_count",
        "accessed_at",
        "sentence_vectors",
    ]
    exclude = ["embedding", "search_vector"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Chunk]:
        return super().get_queryset(request).with_access()

    paginator = EstimatedCountPaginator
    show_full_result_count = False
    actions = ["reembed", "pin", "unpin"]

    @admin.display(description="source")
    def source(self, obj: Chunk) -> str:
        target = source_link(obj)
        return format_html('<a href="{}">{}</a>', *target) if target else (obj.source_id or "—")

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # Memories → "Forget" deletes (archived, restorable)
        return actions

    def has_delete_permission(self, request: HttpRequest, obj: Chunk | None = None) -> bool:
        return False

    @admin.display(description="text")
    def short_text(self, obj: Chunk) -> str:
        return obj.text[:80] + ("…" if len(obj.text) > 80 else "")

    @admin.action(description="Re-embed selected chunks, set-aside ones too (in the background)")
    def reembed(self, request: HttpRequest, queryset: QuerySet[Chunk]) -> None:
        ids = list(queryset.values_list("pk", flat=True)[:10_000])
        queue_for_embedding(ids)
        self.message_user(request, f"Queued {counted(len(ids), 'chunk')} for embedding.")

    @admin.action(description="Pin: importance 1.0")
    def pin(self, request: HttpRequest, queryset: QuerySet[Chunk]) -> None:
        self.message_user(request, f"Pinned {counted(queryset.update(importance=1.0), 'chunk')}.")

    @admin.action(description="Unpin: importance 0.5")
    def unpin(self, request: HttpRequest, queryset: QuerySet[Chunk]) -> None:
        self.message_user(request, f"Unpinned {counted(queryset.update(importance=0.5), 'chunk')}.")


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = [
        "source_uri",
        "tenant",
        "workspace",
        "session",
        "user_id",
        "chunk_count",
        "updated_at",
    ]
    list_filter = ["tenant", ("updated_at", admin.DateFieldListFilter)]
    list_select_related = ["tenant", "workspace", "session"]
    search_fields = ["source_uri", "=content_hash", "=user_id"]
    autocomplete_fields = ["workspace", "session"]
    readonly_fields = ["content_hash", "chunk_count", "created_at", "updated_at"]

    # A document's chunks are found by its source id, not by a foreign key: delete them with it.
    def delete_model(self, request: HttpRequest, obj: Document) -> None:
        with transaction.atomic():
            delete_searchable(kind="document", tenant_id=obj.tenant_id, source_id=obj.source_id)
            super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        with transaction.atomic():
            for document in queryset:
                delete_searchable(
                    kind="document", tenant_id=document.tenant_id, source_id=document.source_id
                )
            super().delete_queryset(request, queryset)
