from django.apps import AppConfig


class SchedulingConfig(AppConfig):
    name = "scheduling"
    verbose_name = "Scheduling"

    def ready(self) -> None:
        from memoryhub import background
        from memoryhub.signals import cluster_starting
        from scheduling.dispatcher import DispatchLane
        from scheduling.tasks import sync_on_cluster_start

        cluster_starting.connect(sync_on_cluster_start, dispatch_uid="scheduling.sync_cluster_schedules")
        background.register_lane("dispatch", DispatchLane)
