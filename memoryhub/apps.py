from django.apps import AppConfig


class MemoryhubConfig(AppConfig):
    name = "memoryhub"
    verbose_name = "Memory"

    def ready(self) -> None:
        from memoryhub import background, receivers
        from memoryhub.session_work import SummariseLane

        receivers.connect()
        background.register_lane("summarise", SummariseLane)
