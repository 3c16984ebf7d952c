"""Root URLs: the home page and favicon, the admin, and the REST API under /api/v1/ (each app adds
its api_urls)."""

from importlib.util import find_spec

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from memoryhub import front
from memoryhub.admin.dashboard import dashboard_data_view, dashboard_view
from memoryhub.admin.transfer import transfer_view
from memoryhub.api import errors

# Each area of the API keeps its own routes; a module that does not exist yet is skipped.
API_URL_MODULES = (
    # health, sessions, events, notes, facts, scratchpad, summaries, export/import
    "memoryhub.api.urls",
    "retrieval.api_urls",  # search, context, browse, stats, documents
    "scheduling.api_urls",  # schedules and runs
)
api_modules = [m for m in API_URL_MODULES if find_spec(m) is not None]

urlpatterns = [
    path("", front.home, name="home"),
    path("favicon.ico", front.favicon, name="favicon"),
    path("admin/dashboard/", admin.site.admin_view(dashboard_view), name="memoryhub-dashboard"),
    path(
        "admin/dashboard/data/",
        admin.site.admin_view(dashboard_data_view),
        name="memoryhub-dashboard-data",
    ),
    # The console's pages that need search and the lifecycle live with them (a higher layer).
    path("admin/console/", include("retrieval.console.urls")),
    path("admin/transfer/", admin.site.admin_view(transfer_view), name="memoryhub-transfer"),
    path("admin/", admin.site.urls),
    path("api/v1/", front.api_index, name="api-index"),
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/v1/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    *[path("api/v1/", include(module)) for module in api_modules],
    # mem0's REST API (its MemoryClient, unchanged, pointed at this server), at the root as mem0 has
    # it.
    path("", include("retrieval.mem0_compat.urls")),
]

handler404 = errors.handle_404
handler500 = errors.handle_500
handler400 = errors.handle_400
