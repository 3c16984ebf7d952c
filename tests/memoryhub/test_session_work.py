"""The summarise lane: sessions due from table state, one worker per session, failures set aside."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.utils import timezone

from memoryhub import session_work
from memoryhub.models import Fact, RollingSummary, Session, StepFailure, SummaryNode, Worker
from memoryhub.plumbing import background
from memoryhub.plumbing.background import Heartbeat
from memoryhub.session_work import SummariseLane, due_sessions, retry_set_aside, work_on_session
from tests.base import post_events

pytestmark = pytest.mark.django_db


@pytest.fixture
def lane_settings(settings, monkeypatch):  # type: ignore[no-untyped-def]
    settings.MEMORYHUB_TASKS_EAGER = False  # nothing inline: the lane does it
    monkeypatch.setattr("memoryhub.summaries.BUDGET", 100)
    monkeypatch.setattr("memoryhub.summaries.MAX_SHARE", 1.0)
    monkeypatch.setattr("memoryhub.summaries.LEAF_EVENTS", 4)
    return settings


def chat(client, session: str, turns: int = 8) -> None:  # type: ignore[no-untyped-def]
    post_events(
        client,
        session,
        *[{"role": "user", "content": f"turn {i} " + "word " * 20} for i in range(turns)],
    )


def due_ids() -> set[str]:
    return set(due_sessions().values_list("external_id", flat=True))


def test_due_sessions_come_from_the_tables(alice, lane_settings) -> None:
    chat(alice, "long")
    post_events(alice, "short", {"role": "user", "content": "hi"})
    assert due_ids() == {"long"}
    assert work_on_session(Session.objects.get(external_id="long").pk) == {
        "summarised": True,
        "stale": False,
        "tree_nodes_built": 2,
        "facts": 0,
        "tool_sentences": 0,
        "events_extracted": 0,
    }
    assert due_ids() == set()  # done: nothing left for the lane
    chat(alice, "long")
    assert due_ids() == {"long"}  # new events make it due again


def test_the_lane_works_on_sessions_written_since_its_last_pass(alice, bob, lane_settings) -> None:
    lane = SummariseLane()
    chat(alice, "a1")
    chat(bob, "b1")
    assert lane.step().done == 2
    assert (
        RollingSummary.objects.count() == 2
        and SummaryNode.objects.filter(level="leaf").count() == 4
    )
    assert not lane.step().found_work
    chat(alice, "a1")
    assert lane.step().done == 1


def test_an_idle_session_gets_its_tree_closed(alice, lane_settings) -> None:
    from datetime import timedelta

    from django.utils import timezone

    chat(alice, "s1", turns=6)  # one full leaf of four, two events left over
    work_on_session(Session.objects.get(external_id="s1").pk)
    assert SummaryNode.objects.filter(level="leaf").count() == 1
    Session.objects.update(updated_at=timezone.now() - timedelta(hours=2))
    assert due_ids() == {"s1"}
    work_on_session(Session.objects.get(external_id="s1").pk)
    assert SummaryNode.objects.filter(level="leaf").count() == 2 and due_ids() == set()


def test_a_failing_session_is_set_aside_and_can_be_retried(
    alice, lane_settings, monkeypatch
) -> None:
    chat(alice, "bad")
    chat(alice, "good")
    monkeypatch.setattr("memoryhub.session_work.MAX_ATTEMPTS", 2)
    real = session_work.maybe_summarise

    def breaks_on_bad(session, **kwargs):  # type: ignore[no-untyped-def]
        if session.external_id == "bad":
            raise ValueError("cannot summarise this one")
        return real(session, **kwargs)

    monkeypatch.setattr(session_work, "maybe_summarise", breaks_on_bad)
    report = session_work.summarise_due()
    # the good one goes on
    assert report["sessions_failed"] == 1 and report["sessions_summarised"] == 1
    failure = StepFailure.objects.get(session__external_id="bad")
    assert failure.attempts == 1 and not failure.set_aside and "cannot summarise" in failure.error
    session_work.summarise_due()
    failure.refresh_from_db()
    assert failure.attempts == 2 and failure.set_aside
    assert due_ids() == set()  # set aside: no lane looks at it again
    monkeypatch.setattr(session_work, "maybe_summarise", real)
    assert retry_set_aside([failure.pk]) == 1
    assert due_ids() == {"bad"}
    assert work_on_session(Session.objects.get(external_id="bad").pk)["summarised"] is True
    assert not StepFailure.objects.exists()  # a success clears the record


def test_a_step_past_its_time_budget_fails_that_session_only(
    alice, lane_settings, monkeypatch
) -> None:
    monkeypatch.setattr("memoryhub.plumbing.background.STEP_SECONDS", 0.0)
    chat(alice, "s1")
    outcome = work_on_session(Session.objects.get(external_id="s1").pk)
    assert "BudgetExceeded" in outcome["failed"]
    assert not RollingSummary.objects.exists()  # its transaction was rolled back


@pytest.mark.django_db(transaction=True)
def test_two_workers_never_work_on_one_session_at_once(cast, lane_settings, monkeypatch) -> None:
    chat(cast.alice, "s1")
    pk = Session.objects.get(external_id="s1").pk
    inside, release = threading.Event(), threading.Event()
    real = session_work.maybe_summarise

    def slow(session, **kwargs):  # type: ignore[no-untyped-def]
        inside.set()
        release.wait(10)
        return real(session, **kwargs)

    monkeypatch.setattr(session_work, "maybe_summarise", slow)
    results: list[object] = []

    def first() -> None:
        try:
            results.append(work_on_session(pk))
        finally:
            connections.close_all()

    thread = threading.Thread(target=first)
    thread.start()
    assert inside.wait(10)
    assert work_on_session(pk) is None  # held by the first worker: skipped, not waited for
    release.set()
    thread.join()
    assert results[0]["summarised"] is True and RollingSummary.objects.get().epoch == 1


def test_facts_are_extracted_from_events_past_the_cursor(alice, lane_settings, monkeypatch) -> None:
    from memoryhub import extractors
    from memoryhub.extractors import ExtractedFact

    lane_settings.MEMORYHUB_FACT_EXTRACTOR = "http"
    seen: list[list[str]] = []
    context: list[list[str]] = []

    class Recording:
        name = "recording"

        def extract(self, turns, earlier=()):  # type: ignore[no-untyped-def]
            seen.append([t.text for t in turns])
            context.append([t.text for t in earlier])
            return [ExtractedFact(content=f"the user said {turns[-1].text}", key=f"k{len(seen)}")]

    monkeypatch.setattr(extractors, "get_extractor", lambda: Recording())
    post_events(alice, "s1", {"role": "user", "content": "I live in Lisbon"})
    assert due_ids() == {"s1"}
    assert work_on_session(Session.objects.get(external_id="s1").pk)["facts"] == 1
    post_events(alice, "s1", {"role": "user", "content": "I moved to Porto"})
    work_on_session(Session.objects.get(external_id="s1").pk)
    assert seen == [["I live in Lisbon"], ["I moved to Porto"]]  # each event once as a new one
    assert context == [[], ["I live in Lisbon"]]  # and once more as context of the next
    assert Session.objects.get().facts_extracted_to == 2 and Fact.objects.count() == 2


# --- an empty step while work waits (memoryhub.plumbing.background._work_waits) ------------------


def empty_step_counted(lane: SummariseLane) -> int:
    """What the lane loop does after an empty step: ask whether work waited; the steps counted."""
    beat = Heartbeat(lane.name)
    # what was written so far waited
    later = timezone.now() + timedelta(seconds=background.WAITED_SECONDS + 1)
    background._work_waits(lane, beat, later)
    return beat.empty_steps


def test_the_normal_path_counts_no_empty_step(alice, lane_settings) -> None:
    lane = SummariseLane()
    chat(alice, "s1")
    assert lane.step().done == 1
    assert not lane.step().found_work and empty_step_counted(lane) == 0
    full = SummariseLane()  # a full pass: every session, not only those written since
    assert not full.step().found_work and empty_step_counted(full) == 0


def test_a_step_that_passes_a_due_session_over_counts_an_empty_step(
    alice, lane_settings, monkeypatch
) -> None:
    chat(alice, "s1")
    # a step that skips it
    monkeypatch.setattr(session_work, "work_on_session", lambda pk, **kwargs: {})
    lane = SummariseLane()
    assert not lane.step().found_work
    assert empty_step_counted(lane) == 1
    assert Worker.objects.get(lane="summarise").empty_steps == 1  # the dashboard's counter


def test_work_the_step_would_not_do_is_no_waiting_work(alice, lane_settings, monkeypatch) -> None:
    later = timezone.now() + timedelta(seconds=60)
    chat(alice, "s1", turns=6)  # one full leaf of four, two events left over
    lane = SummariseLane()
    assert lane.has_work(later)
    # Without auto-summarise the lane makes no summaries or trees: a session due only for them is
    # not its work.
    monkeypatch.setattr("memoryhub.summaries.AUTO_SUMMARISE", False)
    assert not lane.has_work(later)
    monkeypatch.setattr("memoryhub.summaries.AUTO_SUMMARISE", True)
    # Written after `before`: it arrived while the step ran.
    assert not lane.has_work(timezone.now() - timedelta(seconds=60))
    # Held by another worker: its work, not this lane's.
    pk = Session.objects.get().pk
    holding, release = threading.Event(), threading.Event()

    def other_worker() -> None:
        try:
            with connections["default"].cursor() as cursor:
                cursor.execute("SELECT pg_advisory_lock(%s, %s)", [session_work.LOCK_KEY, pk])
                holding.set()
                release.wait(10)
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [session_work.LOCK_KEY, pk])
        finally:
            connections.close_all()

    thread = threading.Thread(target=other_worker)
    thread.start()
    try:
        assert holding.wait(10)
        assert not lane.has_work(later)
    finally:
        release.set()
        thread.join()
    assert lane.has_work(later)
    # Set aside after repeated failures: no lane looks at it.
    failure = StepFailure.objects.create(
        session_id=pk,
        tenant_id=Session.objects.get().tenant_id,
        step=session_work.STEP,
        attempts=3,
        set_aside=True,
    )
    assert not lane.has_work(later)
    failure.delete()
    # Due (an idle tree to close) but written before an incremental pass began: the next full
    # pass's work, not this pass's.
    assert lane.step().done == 1
    Session.objects.update(updated_at=timezone.now() - timedelta(hours=2))
    assert due_ids() == {"s1"}
    assert not lane.step().found_work and not lane.has_work(later)
    assert SummariseLane().has_work(later)  # a full pass would do it
    with connection.cursor() as cursor:  # the check took no lock of its own
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() "
            "AND classid = %s AND objid = %s AND objsubid = 2",
            [session_work.LOCK_KEY, pk],
        )
        assert cursor.fetchone()[0] == 0


def test_a_reply_of_no_facts_is_work_done(alice, lane_settings, monkeypatch) -> None:
    from memoryhub import extractors

    class NoFacts:
        name = "none-found"

        def extract(self, turns, earlier=()):  # type: ignore[no-untyped-def]
            return []

    lane_settings.MEMORYHUB_FACT_EXTRACTOR = "http"
    monkeypatch.setattr("memoryhub.summaries.AUTO_SUMMARISE", False)  # facts only
    monkeypatch.setattr(extractors, "get_extractor", lambda: NoFacts())
    post_events(
        alice,
        "s1",
        *[{"role": "user", "content": f"hello {i}"} for i in range(session_work.FACT_EVENTS + 10)],
    )
    lane = SummariseLane()
    # a batch of an active conversation: the cursor moved, no facts found
    assert lane.step().done == 1
    assert Session.objects.get().facts_extracted_to == session_work.FACT_EVENTS
    assert lane.step().done == 1
    assert not lane.step().found_work and empty_step_counted(lane) == 0
