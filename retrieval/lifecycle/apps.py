from django.apps import AppConfig


class LifecycleConfig(AppConfig):
    name = "retrieval.lifecycle"
    label = "lifecycle"
    verbose_name = "Memory lifecycle"

    def ready(self) -> None:
        from memoryhub.forget import register_redactor
        from memoryhub.signals import workspace_forgotten
        from retrieval.lifecycle.archive import on_workspace_forgotten
        from retrieval.lifecycle.models import ConsolidationReport

        workspace_forgotten.connect(
            on_workspace_forgotten, dispatch_uid="lifecycle.workspace_archive"
        )
        # A report lists what each deletion removed, in words, with its owner: forget redacts it.
        register_redactor(ConsolidationReport.forget_user_text)
