"""Concurrent appends to one session from several threads, each with its own connection.

transaction=True: every request commits for real, so the session row lock is what keeps
sequences gap-free and unique (a test transaction would serialise everything by itself).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from memoryhub.models import Event, Session
from tests.base import make_client, make_key, make_tenant, post_events

pytestmark = pytest.mark.django_db(transaction=True)

THREADS = 4


def run_threads(work: Callable[[int], list[Any]]) -> list[Any]:
    barrier = threading.Barrier(THREADS)
    results: list[Any] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def target(index: int) -> None:
        try:
            barrier.wait(timeout=30)
            out = work(index)
            with lock:
                results.extend(out)
        except BaseException as exc:  # reported below, in the test's thread
            with lock:
                errors.append(exc)
        finally:
            connection.close()  # this thread's own connection

    threads = [threading.Thread(target=target, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    return results


def test_concurrent_appends_have_no_gaps_and_no_duplicates() -> None:
    raw = make_key(make_tenant("alice"))
    per_thread_requests = 4

    def work(index: int) -> list[Any]:
        client = make_client(raw)
        statuses = []
        for r in range(per_thread_requests):
            if r % 2:
                events = [{"role": "user", "content": f"t{index} r{r} e{e}"} for e in range(5)]
                response = post_events(client, "shared", *events)
            else:
                response = post_events(
                    client, "shared", {"role": "assistant", "content": f"t{index} r{r}"}
                )
            statuses.append(
                (response.status_code, [e["sequence"] for e in response.json()["events"]])
            )
        return statuses

    results = run_threads(work)
    assert all(status == 201 for status, _ in results), results
    expected = THREADS * (per_thread_requests // 2) * (1 + 5)
    acknowledged = sorted(s for _, sequences in results for s in sequences)
    assert acknowledged == list(range(1, expected + 1))
    session = Session.objects.get(external_id="shared")  # created lazily, exactly once
    stored = list(session.events.order_by("sequence").values_list("sequence", flat=True))
    assert stored == list(range(1, expected + 1))
    assert session.last_sequence == expected and session.event_count == expected
    # A bulk request's events stay together: its sequences are consecutive.
    for _, sequences in results:
        assert sequences == list(range(sequences[0], sequences[0] + len(sequences)))


def test_concurrent_retries_of_one_idempotent_event_store_it_once() -> None:
    raw = make_key(make_tenant("alice"))
    post_events(make_client(raw), "s1", {"role": "user", "content": "first"})

    def work(index: int) -> list[Any]:
        client = make_client(raw)
        response = post_events(
            client, "s1", {"role": "user", "content": "charge card", "idempotency_key": "pay-1"}
        )
        return [(response.status_code, response.json()["id"], response.json()["sequence"])]

    results = run_threads(work)
    assert sorted(status for status, _, _ in results) == [200] * (THREADS - 1) + [201]
    assert len({(event_id, seq) for _, event_id, seq in results}) == 1
    assert Event.objects.filter(idempotency_key="pay-1").count() == 1
    assert Session.objects.get(external_id="s1").event_count == 2


def test_concurrent_client_sequences_one_wins_the_others_conflict() -> None:
    raw = make_key(make_tenant("alice"))
    post_events(make_client(raw), "s1", {"role": "user", "content": "first"})

    def work(index: int) -> list[Any]:
        response = post_events(
            make_client(raw), "s1", {"role": "user", "content": f"t{index}", "sequence": 2}
        )
        return [response.status_code]

    assert sorted(run_threads(work)) == [201] + [409] * (THREADS - 1)
    assert list(Event.objects.order_by("sequence").values_list("sequence", flat=True)) == [1, 2]


def test_concurrent_first_appends_create_the_session_once() -> None:
    # Every thread's first request finds no session and creates it lazily: one creation wins,
    # the others must append to it (not answer 409 session_exists).
    raw = make_key(make_tenant("alice"))
    rounds = 10

    def work(index: int) -> list[Any]:
        client = make_client(raw)
        return [
            post_events(client, f"fresh-{r}", {"role": "user", "content": f"t{index}"}).status_code
            for r in range(rounds)
        ]

    assert run_threads(work) == [201] * (THREADS * rounds)
    for r in range(rounds):
        session = Session.objects.get(external_id=f"fresh-{r}")
        assert session.event_count == THREADS
        assert sorted(session.events.values_list("sequence", flat=True)) == list(
            range(1, THREADS + 1)
        )
