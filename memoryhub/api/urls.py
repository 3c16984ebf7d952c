"""The /api/v1/ routes of the core domain: sessions and events, notes, facts, scratchpad,
summaries, a tenant's data as a whole (export, import, forget-user, delete a workspace), and the
caller's own key."""

from django.urls import path

from memoryhub.api import (
    channels,
    data,
    events,
    facts,
    health,
    keys,
    notes,
    restore,
    scratchpad,
    sessions,
    summaries,
    users,
    workspaces,
)

urlpatterns = [
    path("health/", health.HealthView.as_view(), name="health"),
    path("ready/", health.ReadyView.as_view(), name="ready"),
    path("key/", keys.KeyView.as_view(), name="key"),
    path("channels/", channels.ChannelListView.as_view(), name="channel-list"),
    path("channels/<int:channel_id>/", channels.ChannelDetailView.as_view(), name="channel-detail"),
    path("sessions/", sessions.SessionListView.as_view(), name="session-list"),
    path("sessions/<str:session_id>/", sessions.SessionDetailView.as_view(), name="session-detail"),
    path(
        "sessions/<str:session_id>/events/", events.EventListView.as_view(), name="session-events"
    ),
    path(
        "sessions/<str:session_id>/restore/", restore.RestoreView.as_view(), name="session-restore"
    ),
    path("notes/", notes.NoteListView.as_view(), name="note-list"),
    path("notes/<str:note_id>/", notes.NoteDetailView.as_view(), name="note-detail"),
    path("facts/", facts.FactListView.as_view(), name="fact-list"),
    path("facts/<int:fact_id>/", facts.FactDetailView.as_view(), name="fact-detail"),
    path("facts/<int:fact_id>/history/", facts.FactHistoryView.as_view(), name="fact-history"),
    path(
        "facts/by-external-id/<path:external_id>/",
        facts.FactByExternalIdView.as_view(),
        name="fact-by-external-id",
    ),
    path(
        "sessions/<str:session_id>/scratchpad/",
        scratchpad.ScratchpadView.as_view(),
        name="session-scratchpad",
    ),
    path(
        "sessions/<str:session_id>/summary/",
        summaries.RollingSummaryView.as_view(),
        name="session-summary",
    ),
    path(
        "sessions/<str:session_id>/summary/tree/",
        summaries.SessionSummaryTreeView.as_view(),
        name="session-summary-tree",
    ),
    path("summaries/", summaries.SummaryNodeListView.as_view(), name="summary-list"),
    path(
        "summaries/<int:node_id>/", summaries.SummaryNodeDetailView.as_view(), name="summary-detail"
    ),
    path("export/", data.ExportView.as_view(), name="export"),
    path("import/", data.ImportView.as_view(), name="import"),
    path("users/", users.EndUserListView.as_view(), name="user-list"),
    path("users/<str:user_id>/", data.ForgetUserView.as_view(), name="forget-user"),
    path(
        "workspaces/<str:workspace>/",
        workspaces.WorkspaceDetailView.as_view(),
        name="workspace-detail",
    ),
]
