from typing import Any

from django.apps import AppConfig


def warm_up_query_embedder(**kwargs: Any) -> None:
    """A web worker loads its query embedder before it accepts a request (ONNX Runtime where
    prepared: no torch in a web worker), so the first search is as fast as the hundredth."""
    from retrieval.query_embedding import warm_up

    warm_up()


class RetrievalConfig(AppConfig):
    name = "retrieval"
    verbose_name = "Retrieval"

    def ready(self) -> None:
        from memoryhub import signals
        from memoryhub.admin.dashboard import TENANT_COUNTS
        from memoryhub.api.health import DETAIL_READERS
        from memoryhub.plumbing import background
        from memoryhub.transfer import register_extension
        from retrieval import receivers
        from retrieval.embedder_preparation import prepare_embedder_apart
        from retrieval.embedding import EmbedLane
        from retrieval.query_embedding import describe as describe_query_embedder
        from retrieval.sentence_vectors import waiting_per_tenant
        from retrieval.transfer import RetrievalTransfer

        signals.events_appended.connect(
            receivers.on_events_appended, dispatch_uid="retrieval.index_events"
        )
        signals.events_text_changed.connect(
            receivers.on_events_text_changed, dispatch_uid="retrieval.reindex_event_text"
        )
        signals.events_deleted.connect(
            receivers.on_events_deleted, dispatch_uid="retrieval.delete_event_chunks"
        )
        signals.memory_saved.connect(
            receivers.on_memory_saved, dispatch_uid="retrieval.index_memory"
        )
        signals.memory_deleted.connect(
            receivers.on_memory_deleted, dispatch_uid="retrieval.delete_memory"
        )
        signals.session_owner_changed.connect(
            receivers.on_session_owner_changed, dispatch_uid="retrieval.session_owner"
        )
        signals.user_forgotten.connect(
            receivers.on_user_forgotten, dispatch_uid="retrieval.user_forgotten"
        )
        # Documents and chunks travel in the export file (the core never imports retrieval).
        register_extension(RetrievalTransfer)
        background.register_lane("embed", EmbedLane)
        signals.service_starting.connect(
            prepare_embedder_apart, dispatch_uid="retrieval.prepare_embedder"
        )
        # /health/ says what embeds queries (the torch model while the fast one is made, first
        # start).
        DETAIL_READERS["search"] = describe_query_embedder
        # The dashboard's rows count the chunks waiting for their sentence vectors.
        TENANT_COUNTS["sentences_waiting"] = waiting_per_tenant
        signals.web_worker_starting.connect(
            warm_up_query_embedder, dispatch_uid="retrieval.warm_up_query_embedder"
        )
