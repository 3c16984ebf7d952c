from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.template.defaultfilters import pluralize

from accounts.models import ApiKey, Channel, Tenant, Workspace


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "slug",
        "workspace_count",
        "immutable_transcript",
        "review_deletions",
        "created_at",
    ]
    list_filter = ["immutable_transcript", "review_deletions"]
    search_fields = ["name", "slug"]
    readonly_fields = ["created_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Tenant]:
        return super().get_queryset(request).annotate(n_workspaces=Count("workspaces"))

    @admin.display(description="Workspaces", ordering="n_workspaces")
    def workspace_count(self, obj: Tenant) -> int:
        return obj.n_workspaces  # type: ignore[attr-defined]


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ["name", "tenant", "created_at"]
    list_filter = ["tenant"]
    list_select_related = ["tenant"]
    search_fields = ["name", "tenant__name"]
    autocomplete_fields = ["tenant"]


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    list_display = ["name", "workspace", "tenant", "is_default", "description", "created_at"]
    list_filter = ["is_default", "tenant"]
    list_select_related = ["tenant", "workspace"]
    search_fields = ["name", "description", "workspace__name", "tenant__name"]
    autocomplete_fields = ["tenant", "workspace"]
    readonly_fields = ["is_default"]
    actions = ["make_default"]

    @admin.action(description="Make the selected channel its workspace's default")
    def make_default(self, request: HttpRequest, queryset: QuerySet[Channel]) -> None:
        chosen = list(queryset)
        if len({c.workspace_id for c in chosen}) != len(chosen):
            self.message_user(
                request,
                "A workspace has one default channel: select one channel per workspace.",
                messages.ERROR,
            )
            return
        for channel in chosen:
            channel.make_default()
        self.message_user(
            request,
            f"{len(chosen)} channel{pluralize(len(chosen))} made"
            f" {'its' if len(chosen) == 1 else 'their'} workspace's default.",
        )


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = [
        "prefix",
        "name",
        "tenant",
        "workspace",
        "scope_list",
        "created_at",
        "last_used_at",
        "is_active",
    ]
    list_filter = ["tenant", ("revoked_at", admin.EmptyFieldListFilter)]
    list_select_related = ["tenant", "workspace"]
    search_fields = ["prefix", "name", "tenant__name"]
    autocomplete_fields = ["tenant", "workspace"]
    readonly_fields = ["prefix", "created_at", "last_used_at"]
    fields = [
        "tenant",
        "workspace",
        "name",
        "scopes",
        "prefix",
        "created_at",
        "last_used_at",
        "revoked_at",
    ]
    actions = ["revoke_keys"]

    @admin.display(description="Scopes")
    def scope_list(self, obj: ApiKey) -> str:
        return ", ".join(obj.scopes)

    @admin.display(boolean=True, description="Active")
    def is_active(self, obj: ApiKey) -> bool:
        return obj.is_active

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        return {"scopes": "read,write"}

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        new = ApiKey.create_key(
            tenant=obj.tenant,
            scopes=obj.scopes or ["read", "write"],
            workspace=obj.workspace,
            name=obj.name,
        )
        obj.pk = new.api_key.pk
        obj.prefix = new.api_key.prefix
        obj.refresh_from_db()
        # The only time the key is ever visible: it is stored hashed.
        messages.warning(
            request, f"New API key (copy it now, it will not be shown again): {new.raw}"
        )

    @admin.action(description="Revoke selected keys")
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        from django.utils import timezone

        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {count} key{pluralize(count)}.")
