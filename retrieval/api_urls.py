from django.urls import path

from retrieval import documents_api, views
from retrieval.lifecycle.views import ConsolidationView

urlpatterns = [
    path("search/", views.SearchView.as_view(), name="search"),
    path("context/", views.ContextView.as_view(), name="context"),
    path("browse/", views.BrowseView.as_view(), name="browse"),
    path("stats/", views.StatsView.as_view(), name="stats"),
    path("documents/", documents_api.DocumentListView.as_view(), name="documents"),
    path(
        "documents/<int:document_id>/",
        documents_api.DocumentDetailView.as_view(),
        name="document-detail",
    ),
    path("consolidation/", ConsolidationView.as_view(), name="consolidation"),
]
