"""The console's pages, included under /admin/console/ by memoryhub.urls (staff only)."""

from django.contrib import admin
from django.urls import path

from retrieval.console import actions, consolidation, context_preview, explorer

urlpatterns = [
    path("explorer/", admin.site.admin_view(explorer.explorer_view), name="console-explorer"),
    path("explorer/pin/", admin.site.admin_view(actions.pin_view), name="console-pin"),
    path("explorer/forget/", admin.site.admin_view(actions.forget_view), name="console-forget"),
    path(
        "context/",
        admin.site.admin_view(context_preview.context_preview_view),
        name="console-context",
    ),
    path(
        "consolidation/",
        admin.site.admin_view(consolidation.consolidation_view),
        name="console-consolidation",
    ),
]
