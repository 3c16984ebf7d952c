from django.urls import path

from scheduling import views

urlpatterns = [
    path("schedules/", views.ScheduleListView.as_view(), name="schedule-list"),
    path(
        "schedules/<str:schedule_id>/", views.ScheduleDetailView.as_view(), name="schedule-detail"
    ),
    path(
        "schedules/<str:schedule_id>/pause/",
        views.SchedulePauseView.as_view(),
        name="schedule-pause",
    ),
    path(
        "schedules/<str:schedule_id>/resume/",
        views.ScheduleResumeView.as_view(),
        name="schedule-resume",
    ),
    path(
        "schedules/<str:schedule_id>/run/", views.ScheduleRunNowView.as_view(), name="schedule-run"
    ),
    path(
        "schedules/<str:schedule_id>/runs/", views.ScheduleRunsView.as_view(), name="schedule-runs"
    ),
    path("runs/<str:run_id>/", views.RunDetailView.as_view(), name="run-detail"),
    path("webhooks/", views.WebhookListView.as_view(), name="webhook-list"),
    path("webhooks/<str:webhook_id>/", views.WebhookDetailView.as_view(), name="webhook-detail"),
]
