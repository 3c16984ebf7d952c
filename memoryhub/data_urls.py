"""The /api/v1/ routes over a tenant's data as a whole: forget-user, export, import."""

from django.urls import path

from memoryhub import data_views as views

urlpatterns = [
    path("export/", views.ExportView.as_view(), name="export"),
    path("import/", views.ImportView.as_view(), name="import"),
    path("users/<str:user_id>/", views.ForgetUserView.as_view(), name="forget-user"),
]
