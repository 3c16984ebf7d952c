"""The operator admin for chunks and documents renders and its actions work."""

from __future__ import annotations

from retrieval.admin import ChunkAdmin
from retrieval.lifecycle.admin import MemoryAdmin
from retrieval.models import EMBED_MAX_ATTEMPTS, Chunk


def test_chunk_admin_lists_filters_and_reembeds(
    staff_client, alice, index, django_capture_on_commit_callbacks
) -> None:
    index(alice, "s", {"role": "user", "content": "first"}, {"role": "user", "content": "second"})
    for params in ({}, {"embedded": "no"}, {"embedded": "error"}, {"q": "first"}):
        assert staff_client.get("/admin/retrieval/chunk/", params).status_code == 200
    chunk = Chunk.objects.get(text="first")
    assert staff_client.get(f"/admin/retrieval/chunk/{chunk.pk}/change/").status_code == 200
    Chunk.objects.update(embedding_model="old")
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(
            "/admin/retrieval/chunk/", {"action": "reembed", "_selected_action": [chunk.pk]}
        )
    assert response.status_code == 302
    chunk.refresh_from_db()
    assert chunk.embedding_model == "hash-v1" and chunk.embedding is not None


def test_chunk_and_memory_admin_show_and_sort_by_access_counts(staff_client, alice, index) -> None:
    """The counts live in ChunkAccess rows (migration 0013): the chunk and memory pages show them
    and sort by them; a chunk never returned shows 0 uses."""
    from retrieval.models import ChunkAccess

    index(
        alice,
        "s",
        {"role": "user", "content": "often found"},
        {"role": "user", "content": "never found"},
    )
    often, never = Chunk.objects.get(text="often found"), Chunk.objects.get(text="never found")
    ChunkAccess.objects.create(chunk=often, access_count=7)
    # The column's place in each list (1-based, as the admin's ?o= names it).
    for base, column in (
        ("/admin/retrieval/chunk/", ChunkAdmin.list_display.index("access_count") + 1),
        ("/admin/lifecycle/memory/", MemoryAdmin.list_display.index("access_count") + 1),
    ):
        for order, expected in ((f"-{column}", [7, 0]), (str(column), [0, 7])):
            page = staff_client.get(base, {"o": order})
            assert page.status_code == 200
            assert [r.access_count for r in page.context["cl"].result_list] == expected
        for chunk, uses in ((often, 7), (never, 0)):
            change = staff_client.get(f"{base}{chunk.pk}/change/")
            assert change.status_code == 200
            html = change.content.decode()
            assert "access count" in html.lower() and f">{uses}<" in html.replace(" ", "").replace(
                "\n", ""
            )


def test_document_admin_lists(staff_client, alice) -> None:
    alice.post("/api/v1/documents/", {"source_uri": "u", "text": "doc"}, format="json")
    assert staff_client.get("/admin/retrieval/document/").status_code == 200


def test_a_set_aside_chunk_is_listed_with_its_error_and_retried(
    staff_client, alice, settings
) -> None:  # type: ignore[no-untyped-def]
    from retrieval.embedding import EmbedLane
    from tests.base import post_events

    settings.MEMORYHUB_TASKS_EAGER = False
    post_events(
        alice, "s", {"role": "user", "content": "fine"}, {"role": "user", "content": "stuck"}
    )
    Chunk.objects.filter(text="stuck").update(
        embedding_attempts=EMBED_MAX_ATTEMPTS, embedding_error="ValueError: the model choked"
    )
    listed = staff_client.get("/admin/retrieval/chunk/", {"embedded": "aside"})
    assert listed.status_code == 200 and list(listed.context["cl"].result_list) == [
        Chunk.objects.get(text="stuck")
    ]
    lane = EmbedLane()
    assert lane.step().done == 1 and not lane.step().found_work  # the lane leaves it alone
    stuck = Chunk.objects.get(text="stuck")
    staff_client.post(
        "/admin/retrieval/chunk/", {"action": "reembed", "_selected_action": [stuck.pk]}
    )
    stuck.refresh_from_db()
    assert stuck.embedding_attempts == 0 and stuck.embedding_error == ""  # back in the queue
    assert lane.step().done == 1


def test_a_chunks_and_a_memorys_change_forms_name_the_tier_scope(
    staff_client, alice, index
) -> None:  # type: ignore[no-untyped-def]
    """The API calls it `scope`; an operator's form says so too, editable (chunk) or read-only
    (memory)."""
    index(alice, "s", {"role": "user", "content": "first"})
    chunk = Chunk.objects.get(text="first")
    for url in (
        f"/admin/retrieval/chunk/{chunk.pk}/change/",
        f"/admin/lifecycle/memory/{chunk.pk}/change/",
    ):
        page = staff_client.get(url)
        assert page.status_code == 200
        labels = page.content.decode()
        assert ">Tier" not in labels and ">Scope" in labels, url
        assert "conversation" in labels  # the value is still shown
