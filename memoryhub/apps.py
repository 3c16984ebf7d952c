from django.apps import AppConfig


class MemoryhubConfig(AppConfig):
    name = "memoryhub"
    verbose_name = "Memory"

    def ready(self) -> None:
        from memoryhub import receivers, signals, tasks
        from memoryhub.api.parameters import warm_up as know_parameters
        from memoryhub.plumbing import background
        from memoryhub.session_work import SummariseLane

        receivers.connect()
        tasks.connect_worker_signals()
        background.register_lane("summarise", SummariseLane)
        # The query parameters each operation declares are read off the OpenAPI document, made once
        # per process (about 2 s): in a web worker before its first request, not during it.
        signals.web_worker_starting.connect(lambda **_: know_parameters(), weak=False,
                                            dispatch_uid="memoryhub.know_parameters")
