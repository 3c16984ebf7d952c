from django.apps import AppConfig


class SchedulingConfig(AppConfig):
    name = "scheduling"
    verbose_name = "Scheduling"

    def ready(self) -> None:
        from memoryhub.forget import register_redactor
        from memoryhub.plumbing import background
        from memoryhub.signals import cluster_starting
        from memoryhub.transfer import register_extension
        from scheduling.dispatcher import DispatchLane
        from scheduling.models import Run
        from scheduling.tasks import sync_on_cluster_start
        from scheduling.transfer import SchedulingTransfer

        cluster_starting.connect(
            sync_on_cluster_start, dispatch_uid="scheduling.sync_cluster_schedules"
        )
        register_extension(SchedulingTransfer)
        background.register_lane("dispatch", DispatchLane)
        # A consolidation run's output names what it deleted, with each owner: forget redacts it.
        register_redactor(Run.forget_user_text)
