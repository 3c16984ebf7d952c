from typing import Any

from django.apps import AppConfig


def know_parameters(**kwargs: Any) -> None:
    """The query parameters each operation declares are read off the OpenAPI document, made once
    per process (about 2 s): in a web worker before its first request, not during it."""
    from memoryhub.api.parameters import warm_up

    warm_up()


class MemoryhubConfig(AppConfig):
    name = "memoryhub"
    verbose_name = "Memory"

    def ready(self) -> None:
        from accounts.signals import key_used
        from memoryhub import receivers, signals, tasks
        from memoryhub.api.middleware import note_key_use
        from memoryhub.plumbing import background
        from memoryhub.session_work import SummariseLane

        receivers.connect()
        # A key's last use is written in batches by the API layer (the domain's receivers may not
        # import it).
        key_used.connect(note_key_use, dispatch_uid="memoryhub.key_use")
        tasks.connect_worker_signals()
        background.register_lane("summarise", SummariseLane)
        signals.web_worker_starting.connect(
            know_parameters, dispatch_uid="memoryhub.know_parameters"
        )
