from django.apps import AppConfig


class MemoryhubConfig(AppConfig):
    name = "memoryhub"
    verbose_name = "Memory"

    def ready(self) -> None:
        from memoryhub import background, receivers, tasks
        from memoryhub.session_work import SummariseLane

        receivers.connect()
        tasks.connect_worker_signals()
        background.register_lane("summarise", SummariseLane)
