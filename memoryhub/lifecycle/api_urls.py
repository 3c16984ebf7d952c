"""The /api/v1/ routes of the memory lifecycle: forget-user, export, import."""

from django.urls import path

from memoryhub.lifecycle import views

urlpatterns = [
    path("export/", views.ExportView.as_view(), name="export"),
    path("import/", views.ImportView.as_view(), name="import"),
    path("users/<str:user_id>/", views.ForgetUserView.as_view(), name="forget-user"),
]
