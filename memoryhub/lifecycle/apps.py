from django.apps import AppConfig


class LifecycleConfig(AppConfig):
    name = "memoryhub.lifecycle"
    label = "lifecycle"
    verbose_name = "Memory lifecycle"
