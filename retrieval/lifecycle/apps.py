from django.apps import AppConfig


class LifecycleConfig(AppConfig):
    name = "retrieval.lifecycle"
    label = "lifecycle"
    verbose_name = "Memory lifecycle"

    def ready(self) -> None:
        from memoryhub.signals import workspace_forgotten
        from retrieval.lifecycle.archive import on_workspace_forgotten

        workspace_forgotten.connect(on_workspace_forgotten, dispatch_uid="lifecycle.workspace_archive")
