"""mem0's routes at the server's root, where mem0's MemoryClient looks for them: every route its
MemoryClient and AsyncMemoryClient (mem0ai 2.2) call is served or answers 501 not_served, and any
other path of its API versions the JSON 404 (never a page of HTML)."""

from django.urls import path, re_path

from retrieval.mem0_compat import views

EXPORT = "use POST /api/v1/export/ (MemoryHub's own format)."
PROFILE = (
    "MemoryHub keeps no user profiles; its summaries and facts are read with /api/v1/context/."
)
NOT_SERVED = [
    ("v1/exports/", "create_memory_export", EXPORT),
    ("v1/exports/get/", "get_memory_export", EXPORT),
    ("v1/summary/", "get_summary", "use POST /api/v1/context/ or GET /api/v1/summaries/."),
    ("v2/entities/user/<str:name>/profile/", "get_profile", PROFILE),
    ("v2/profiles/jobs/", "profile jobs", PROFILE),
    ("v2/profiles/jobs/<str:job>/", "profile jobs", PROFILE),
    ("v2/profiles/settings/", "profile settings", PROFILE),
    ("v1/feedback/", "feedback", ""),
]

urlpatterns = [
    path("v1/ping/", views.PingView.as_view(), name="mem0-ping"),
    path("v3/memories/add/", views.AddView.as_view(), name="mem0-add"),
    path("v3/memories/search/", views.SearchView.as_view(), name="mem0-search"),
    path("v3/memories/", views.ListView.as_view(), name="mem0-list"),
    path("v1/memories/", views.DeleteAllView.as_view(), name="mem0-delete-all"),
    path("v1/memories/<str:memory_id>/", views.MemoryView.as_view(), name="mem0-memory"),
    path("v1/memories/<str:memory_id>/history/", views.HistoryView.as_view(), name="mem0-history"),
    path("v1/entities/", views.EntitiesView.as_view(), name="mem0-entities"),
    path("v1/batch/", views.BatchView.as_view(), name="mem0-batch"),
    *[
        path(route, views.NotServedView.as_view(what=what, instead=instead))
        for route, what, instead in NOT_SERVED
    ],
    # After the profile's route: a user id may hold a "/" (mem0's client sends it encoded).
    path(
        "v2/entities/<str:entity_type>/<path:name>/", views.EntityView.as_view(), name="mem0-entity"
    ),
    # Under MemoryHub's own /api/v1/ (only paths that MemoryHub's API does not have reach these).
    re_path(
        r"^api/v1/orgs/",
        views.NotServedView.as_view(
            what="organisations, projects and members",
            instead="a MemoryHub tenant, its workspaces and its keys are managed in the admin.",
        ),
    ),
    re_path(
        r"^api/v1/webhooks/projects/",
        views.NotServedView.as_view(
            what="project webhooks",
            instead="MemoryHub's webhooks are /api/v1/webhooks/ (a Bearer key).",
        ),
    ),
    re_path(r"^v[0-9]+/(?P<path>.*)$", views.not_found),
]
