from django.urls import path

from retrieval import views
from retrieval.lifecycle.views import ConsolidationView

urlpatterns = [
    path("search/", views.SearchView.as_view(), name="search"),
    path("context/", views.ContextView.as_view(), name="context"),
    path("browse/", views.BrowseView.as_view(), name="browse"),
    path("stats/", views.StatsView.as_view(), name="stats"),
    path("documents/", views.DocumentView.as_view(), name="documents"),
    path("consolidation/", ConsolidationView.as_view(), name="consolidation"),
]
