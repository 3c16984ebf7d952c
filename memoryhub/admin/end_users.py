"""End users in the admin (the console starts from people): per tenant, every user id
that owns something, searched by id, with their sessions, facts and notes, when they were last
active, a link to their memory in the explorer, exporting everything of theirs (the API's user
export, superusers only as every export), and forgetting them (memoryhub.forget, behind a
confirmation page that says what goes)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import quote, unquote
from django.db.models import QuerySet, Sum
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, URLPattern, path, reverse
from django.utils.html import format_html

from memoryhub.admin.base import counted
from memoryhub.admin.transfer import check_may_transfer, export_download
from memoryhub.forget import forget_user
from memoryhub.models import EndUser, Session
from memoryhub.transfer import ExportScope

FORGET_LIMIT = 100  # users one confirmation page forgets


def explorer_url(user: EndUser) -> str:
    """The memory explorer (retrieval's console) on this user's memories; "" without it."""
    try:
        base = reverse("console-explorer")
    except NoReverseMatch:
        return ""
    return f"{base}?{urlencode({'tenant': user.tenant_id, 'user': user.user_id})}"


@admin.register(EndUser)
class EndUserAdmin(admin.ModelAdmin):
    list_display = ["user_link", "tenant", "sessions", "facts", "notes", "last_seen", "row_actions"]
    list_display_links = None
    list_filter = ["tenant"]
    list_select_related = ["tenant"]
    search_fields = ["user_id"]
    actions = ["forget_users"]
    # Each count aggregates the tenant's sessions, facts and notes: not a second time for "of N in
    # all".
    show_full_result_count = False

    def get_urls(self) -> list[URLPattern]:
        own = [
            path(
                "<path:object_id>/forget/",
                self.admin_site.admin_view(self.forget_one_view),
                name="memoryhub_enduser_forget",
            ),
            path(
                "<path:object_id>/export/",
                self.admin_site.admin_view(self.export_one_view),
                name="memoryhub_enduser_export",
            ),
        ]
        return own + super().get_urls()

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # a view: forgetting is the deletion
        return actions

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: EndUser | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: EndUser | None = None) -> bool:
        return False

    def has_forget_permission(self, request: HttpRequest) -> bool:
        """Forgetting deletes memory: for those who may delete sessions (superusers, or granted)."""
        return request.user.has_perm("memoryhub.delete_session")

    @admin.display(description="end user", ordering="user_id")
    def user_link(self, obj: EndUser) -> str:
        url = explorer_url(obj)
        return (
            format_html('<a href="{}" class="mh-user">{}</a>', url, obj.user_id)
            if url
            else obj.user_id
        )

    @admin.display(description="")
    def row_actions(self, obj: EndUser) -> str:
        sessions = (
            reverse("admin:memoryhub_session_changelist")
            + "?"
            + urlencode({"tenant__id__exact": obj.tenant_id, "user_id": obj.user_id})
        )
        export = reverse("admin:memoryhub_enduser_export", args=[quote(obj.pk)])
        forget = reverse("admin:memoryhub_enduser_forget", args=[quote(obj.pk)])
        return format_html(
            '<a href="{}">sessions</a> · <a href="{}" class="mh-export-user">export</a> · '
            '<a href="{}" class="mh-forget-user">forget…</a>',
            sessions,
            export,
            forget,
        )

    def export_one_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The row's "export" link: everything of this user, as POST /export/ {user_id} gives it."""
        check_may_transfer(request)
        user = EndUser.objects.select_related("tenant").filter(pk=unquote(object_id)).first()
        if user is None:
            raise Http404("No such end user.")
        return export_download(user.tenant, ExportScope("user", user=user.user_id))

    # --- forgetting ------------------------------------------------------------------------------

    @admin.action(
        description="Forget the selected users: delete everything of theirs…",
        permissions=["forget"],
    )
    def forget_users(
        self, request: HttpRequest, queryset: QuerySet[EndUser]
    ) -> HttpResponse | None:
        users = list(queryset.select_related("tenant")[: FORGET_LIMIT + 1])
        if len(users) > FORGET_LIMIT:
            self.message_user(
                request, f"Forget at most {FORGET_LIMIT} users at a time.", messages.ERROR
            )
            return None
        if request.POST.get("confirm") != "yes":
            return self._confirm(request, users)
        done = []
        for user in users:
            deleted = forget_user(tenant_id=user.tenant_id, user_id=user.user_id)
            done.append(f"{user.user_id} of {user.tenant.name} ({sum(deleted.values())} rows)")
        self.message_user(
            request,
            f"Forgot {counted(len(done), 'user')}: {', '.join(done)}. This cannot be undone.",
            messages.SUCCESS,
        )
        return None

    def forget_one_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The row's "forget…" link: the same confirmation page for one user (it posts the
        action)."""
        if not self.has_forget_permission(request):
            raise Http404("You may not forget users.")
        user = EndUser.objects.select_related("tenant").filter(pk=unquote(object_id)).first()
        if user is None:
            raise Http404("No such end user.")
        return self._confirm(request, [user])

    def _confirm(self, request: HttpRequest, users: list[EndUser]) -> HttpResponse:
        messages_of = _messages(users)
        context = {
            **self.admin_site.each_context(request),
            "title": "Forget these end users?",
            "opts": self.model._meta,
            "users": [(u, messages_of.get((u.tenant_id, u.user_id), 0)) for u in users],
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "selected": [u.pk for u in users],
            "changelist": reverse("admin:memoryhub_enduser_changelist"),
        }
        return TemplateResponse(request, "admin/memoryhub/enduser/forget_confirm.html", context)


def _messages(users: list[EndUser]) -> dict[tuple[int, str], int]:
    """Messages in each user's sessions (one grouped query)."""
    rows = (
        Session.objects.filter(
            tenant_id__in={u.tenant_id for u in users}, user_id__in={u.user_id for u in users}
        )
        .order_by()
        .values("tenant_id", "user_id")
        .annotate(n=Sum("event_count"))
        .values_list("tenant_id", "user_id", "n")
    )
    return {(t, u): int(n or 0) for t, u, n in rows}
