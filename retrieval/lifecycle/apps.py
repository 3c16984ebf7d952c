from django.apps import AppConfig


class LifecycleConfig(AppConfig):
    name = "retrieval.lifecycle"
    label = "lifecycle"
    verbose_name = "Memory lifecycle"
