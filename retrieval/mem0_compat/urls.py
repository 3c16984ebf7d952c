"""mem0's routes at the server's root, where mem0's MemoryClient looks for them."""

from django.urls import path

from retrieval.mem0_compat import views

urlpatterns = [
    path("v1/ping/", views.PingView.as_view(), name="mem0-ping"),
    path("v3/memories/add/", views.AddView.as_view(), name="mem0-add"),
    path("v3/memories/search/", views.SearchView.as_view(), name="mem0-search"),
    path("v3/memories/", views.ListView.as_view(), name="mem0-list"),
    path("v1/memories/", views.DeleteAllView.as_view(), name="mem0-delete-all"),
    path("v1/memories/<str:memory_id>/", views.MemoryView.as_view(), name="mem0-memory"),
    path("v1/memories/<str:memory_id>/history/", views.HistoryView.as_view(), name="mem0-history"),
    path("v1/entities/", views.EntitiesView.as_view(), name="mem0-entities"),
]
