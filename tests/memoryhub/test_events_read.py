"""GET /sessions/{id}/events/ (docs/event-log.md#append): reads in order, limit, after, before,
paging, and the recent-window cache (write-through, never stale, per session and tenant)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memoryhub.models import Session
from tests.base import error_code, post_events
from tests.memoryhub.test_events import fill, url

# --- read ------------------------------------------------------------------------------------


def test_read_all_in_order(alice) -> None:
    fill(alice, "s1", 5)
    body = alice.get(url("s1")).json()
    assert [e["content"] for e in body["results"]] == ["m1", "m2", "m3", "m4", "m5"]
    assert body["count"] == 5 and body["last_sequence"] == 5 and body["next"] is None
    assert body["session"] == "s1"


def test_limit_returns_the_recent_n_in_chronological_order(alice) -> None:
    fill(alice, "s1", 10)
    body = alice.get(url("s1"), {"limit": 3}).json()
    assert [e["sequence"] for e in body["results"]] == [8, 9, 10]
    assert body["count"] == 10


def test_limit_larger_than_the_cached_window(alice, settings, monkeypatch) -> None:
    monkeypatch.setattr("memoryhub.recent.WINDOW", 4)
    fill(alice, "s1", 10)
    assert [e["sequence"] for e in alice.get(url("s1"), {"limit": 6}).json()["results"]] == [
        5,
        6,
        7,
        8,
        9,
        10,
    ]
    assert [e["sequence"] for e in alice.get(url("s1"), {"limit": 2}).json()["results"]] == [9, 10]


def test_after_returns_events_since_a_sequence(alice) -> None:
    fill(alice, "s1", 6)
    body = alice.get(url("s1"), {"after": 4}).json()
    assert [e["sequence"] for e in body["results"]] == [5, 6]
    assert alice.get(url("s1"), {"after": 6}).json()["results"] == []


def test_paging_with_next_visits_every_event_once(alice) -> None:
    fill(alice, "s1", 7)
    page = alice.get(url("s1"), {"after": 0, "limit": 3}).json()
    seen = [e["sequence"] for e in page["results"]]
    pages = 1
    while page["next"]:
        page = alice.get(page["next"]).json()
        seen += [e["sequence"] for e in page["results"]]
        pages += 1
    assert seen == list(range(1, 8)) and pages == 3


def test_default_page_size_and_next(alice) -> None:
    fill(alice, "s1", 120)
    first = alice.get(url("s1")).json()
    assert [e["sequence"] for e in first["results"]] == list(range(1, 101))
    assert first["next"]
    second = alice.get(first["next"]).json()
    assert [e["sequence"] for e in second["results"]] == list(range(101, 121))
    assert second["next"] is None


def test_before_reads_backwards(alice) -> None:
    fill(alice, "s1", 10)
    body = alice.get(url("s1"), {"before": 6, "limit": 2}).json()
    assert [e["sequence"] for e in body["results"]] == [4, 5]


@pytest.mark.parametrize(
    "params",
    [{"limit": 0}, {"limit": "x"}, {"limit": 1001}, {"after": -1}, {"after": "y"}, {"before": 0}],
)
def test_bad_read_parameters(alice, params: dict[str, Any]) -> None:
    fill(alice, "s1", 1)
    response = alice.get(url("s1"), params)
    assert response.status_code == 400
    assert error_code(response) == "invalid_parameter"


def test_reading_an_unknown_session_is_404_and_creates_nothing(alice) -> None:
    response = alice.get(url("ghost"))
    assert response.status_code == 404
    assert error_code(response) == "session_not_found"
    assert not Session.objects.exists()


def test_event_list_query_count_is_pinned(alice, django_assert_max_num_queries) -> None:
    fill(alice, "s1", 150)
    alice.get(url("s1"))
    with django_assert_max_num_queries(3):  # key, session, events
        body = alice.get(url("s1"), {"after": 0, "limit": 150}).json()
    assert len(body["results"]) == 150


# --- the recent-window cache -----------------------------------------------------------------


def event_queries(client: Any, path: str, params: dict[str, Any]) -> tuple[Any, list[str]]:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path, params)
    return response, [q["sql"] for q in ctx.captured_queries if "memoryhub_event" in q["sql"]]


def test_second_read_of_the_recent_window_does_not_hit_the_events_table(alice) -> None:
    fill(alice, "s1", 60)
    first, first_sql = event_queries(alice, url("s1"), {"limit": 10})
    assert first_sql, "the first read must load the window"
    second, second_sql = event_queries(alice, url("s1"), {"limit": 5})
    assert second_sql == []
    assert [e["sequence"] for e in second.json()["results"]] == [56, 57, 58, 59, 60]
    assert first.json()["results"][-5:] == second.json()["results"]


def test_append_writes_through_the_cache(alice, django_capture_on_commit_callbacks) -> None:
    fill(alice, "s1", 3)
    alice.get(url("s1"), {"limit": 10})  # warm
    with django_capture_on_commit_callbacks(execute=True):
        post_events(alice, "s1", {"role": "assistant", "content": "fresh"})
    response, sql = event_queries(alice, url("s1"), {"limit": 10})
    assert sql == []
    assert [e["content"] for e in response.json()["results"]] == ["m1", "m2", "m3", "fresh"]


def test_the_window_is_kept_unpickled_in_the_process_and_agrees_with_the_cache(
    alice,
    django_capture_on_commit_callbacks,
    monkeypatch,
) -> None:
    """The windows this process wrote are read back from its own map (no unpickling), hold what
    the shared cache holds, and the map stays bounded."""
    from django.core.cache import cache

    from memoryhub import recent

    fill(alice, "s1", 3)
    alice.get(url("s1"), {"limit": 10})  # warm
    with django_capture_on_commit_callbacks(execute=True):
        post_events(alice, "s1", {"role": "assistant", "content": "fresh"})
    session = Session.objects.get(external_id="s1")
    shared = cache.get(recent._key(session.pk, 4, "0.4"))
    assert [e["content"] for e in shared] == ["m1", "m2", "m3", "fresh"]
    assert recent.get(session.pk, 3, "0.3") is None  # the window it extended is gone from both
    monkeypatch.setattr(cache, "get", lambda *a, **k: pytest.fail("read from the shared cache"))
    assert recent.get(session.pk, 4, "0.4") == shared
    monkeypatch.undo()
    # Another process wrote the entry: this one reads the cache once, then its own map.
    recent.clear_local()
    assert recent.get(session.pk, 4, "0.4") == shared
    monkeypatch.setattr(cache, "get", lambda *a, **k: pytest.fail("read from the shared cache"))
    assert recent.get(session.pk, 4, "0.4") == shared
    monkeypatch.undo()
    for pk in range(recent.LOCAL_ENTRIES + 10):
        recent.put(10_000 + pk, 1, "0.1", [{"sequence": 1}])
    assert len(recent._local) == recent.LOCAL_ENTRIES
    # the oldest left the map, not the cache
    assert recent.get(10_000, 1, "0.1") == [{"sequence": 1}]


def test_cache_is_never_stale_after_an_append(alice) -> None:
    fill(alice, "s1", 3)
    alice.get(url("s1"), {"limit": 10})
    # on_commit hooks do not run inside the test transaction: the cache is not written through,
    # so the read must notice the new last sequence and reload.
    post_events(alice, "s1", {"role": "user", "content": "new"})
    assert [e["content"] for e in alice.get(url("s1"), {"limit": 10}).json()["results"]][
        -1
    ] == "new"


def test_cache_is_per_session_and_per_tenant(alice, bob) -> None:
    fill(alice, "s1", 2)
    fill(bob, "s1", 1)
    alice.get(url("s1"), {"limit": 5})
    assert [e["content"] for e in bob.get(url("s1"), {"limit": 5}).json()["results"]] == ["m1"]
    assert len(alice.get(url("s1"), {"limit": 5}).json()["results"]) == 2


def test_a_read_racing_an_append_never_duplicates_events_in_the_cache(alice) -> None:
    """A read that loaded the session before an append committed, then the append's
    write-through."""
    from memoryhub import recent
    from memoryhub.event_log import recent_events

    fill(alice, "s1", 3)
    stale = Session.objects.get(external_id="s1")  # the reader's snapshot: last_sequence 3
    response = post_events(
        alice, "s1", {"role": "user", "content": "m4"}, {"role": "user", "content": "m5"}
    )
    new = response.json()["events"]
    assert [e["sequence"] for e in recent_events(stale, 10)] == [1, 2, 3]
    # the append's on-commit write-through, arriving late
    recent.extend(stale.pk, 3, 5, "0.5", new, previous_marked="0.3")
    body = alice.get(url("s1"), {"limit": 10}).json()
    assert [e["sequence"] for e in body["results"]] == [1, 2, 3, 4, 5]


def test_write_through_ignores_a_window_that_does_not_end_where_the_append_began(alice) -> None:
    from memoryhub import recent

    fill(alice, "s1", 2)
    session = Session.objects.get(external_id="s1")
    recent.put(session.pk, 2, "0.2", [{"sequence": 1}, {"sequence": 9}])  # inconsistent entry
    recent.extend(session.pk, 2, 3, "0.3", [{"sequence": 3}], previous_marked="0.2")
    assert recent.get(session.pk, 3, "0.3") is None
