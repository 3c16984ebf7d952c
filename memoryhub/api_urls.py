"""The /api/v1/ routes of the memoryhub app."""

from django.urls import path

from memoryhub import views

urlpatterns = [
    path("health/", views.HealthView.as_view(), name="health"),
    path("ready/", views.ReadyView.as_view(), name="ready"),
    path("sessions/", views.SessionListView.as_view(), name="session-list"),
    path("sessions/<str:session_id>/", views.SessionDetailView.as_view(), name="session-detail"),
    path("sessions/<str:session_id>/events/", views.EventListView.as_view(), name="session-events"),
    path("sessions/<str:session_id>/restore/", views.RestoreView.as_view(), name="session-restore"),
]
