"""The /api/v1/ routes of notes, facts, scratchpads and summaries (S11)."""

from django.urls import path

from memoryhub import memory_views as views

urlpatterns = [
    path("notes/", views.NoteListView.as_view(), name="note-list"),
    path("notes/<str:note_id>/", views.NoteDetailView.as_view(), name="note-detail"),
    path("facts/", views.FactListView.as_view(), name="fact-list"),
    path("facts/<int:fact_id>/", views.FactDetailView.as_view(), name="fact-detail"),
    path("sessions/<str:session_id>/scratchpad/", views.ScratchpadView.as_view(), name="session-scratchpad"),
    path("sessions/<str:session_id>/summary/", views.RollingSummaryView.as_view(), name="session-summary"),
    path("sessions/<str:session_id>/summary/tree/", views.SessionSummaryTreeView.as_view(), name="session-summary-tree"),
    path("summaries/", views.SummaryNodeListView.as_view(), name="summary-list"),
    path("summaries/<int:node_id>/", views.SummaryNodeDetailView.as_view(), name="summary-detail"),
]
