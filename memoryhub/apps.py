from django.apps import AppConfig


class MemoryhubConfig(AppConfig):
    name = "memoryhub"
    verbose_name = "Memory"

    def ready(self) -> None:
        from memoryhub import receivers

        receivers.connect()
