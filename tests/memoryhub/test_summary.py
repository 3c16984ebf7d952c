"""Rolling summary (docs/event-log.md#summaries): GET/PUT with compare-and-swap, the automatic
trigger, restore, summarise_due."""

from __future__ import annotations

import re
import threading

import pytest
from django.db import connection

from memoryhub.models import RollingSummary, Session, SummaryNode, estimate_tokens
from memoryhub.session_work import summarise_due
from memoryhub.summaries import maybe_summarise, write_summary
from tests.base import error_code, make_client, make_key, post_events


def url(session: str) -> str:
    return f"/api/v1/sessions/{session}/summary/"


def seed(client, session: str = "s1", n: int = 3, words: int = 5) -> None:  # type: ignore[no-untyped-def]
    events = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"message {i} " + "word " * words,
        }
        for i in range(n)
    ]
    assert post_events(client, session, *events).status_code == 201


def test_get_before_any_write_is_epoch_zero(alice) -> None:  # type: ignore[no-untyped-def]
    seed(alice)
    body = alice.get(url("s1")).json()
    assert body == {
        "session": "s1",
        "text": "",
        "epoch": 0,
        "upper_sequence": 0,
        "updated_at": None,
    }


def test_put_compare_and_swap(alice) -> None:  # type: ignore[no-untyped-def]
    seed(alice)
    first = alice.put(
        url("s1"), {"text": "v1", "expected_epoch": 0, "upper_sequence": 2}, format="json"
    )
    assert first.status_code == 200, first.json()
    assert first.json()["epoch"] == 1 and first.json()["upper_sequence"] == 2
    stale = alice.put(url("s1"), {"text": "stale", "expected_epoch": 0}, format="json")
    assert stale.status_code == 409 and error_code(stale) == "stale_epoch"
    assert stale.json()["error"]["details"]["epoch"] == 1
    second = alice.put(url("s1"), {"text": "v2", "expected_epoch": 1}, format="json")
    assert second.json()["epoch"] == 2
    assert second.json()["upper_sequence"] == 2  # kept when not given
    row = RollingSummary.objects.get(session__external_id="s1")
    assert (row.text, row.epoch) == ("v2", 2)
    got = alice.get(url("s1")).json()
    assert got["text"] == "v2" and got["epoch"] == 2


def test_stale_first_write_creates_nothing(alice) -> None:  # type: ignore[no-untyped-def]
    seed(alice)
    r = alice.put(url("s1"), {"text": "x", "expected_epoch": 3}, format="json")
    assert r.status_code == 409 and error_code(r) == "stale_epoch"
    assert not RollingSummary.objects.exists()


def test_put_without_expected_epoch_overwrites_and_bumps(alice) -> None:  # type: ignore[no-untyped-def]
    seed(alice)
    assert alice.put(url("s1"), {"text": "a"}, format="json").json()["epoch"] == 1
    assert alice.put(url("s1"), {"text": "b"}, format="json").json()["epoch"] == 2


@pytest.mark.parametrize(
    "body,code",
    [
        ({"text": 5, "expected_epoch": 0}, "validation_error"),
        ({"expected_epoch": 0}, "validation_error"),
        ({"text": "x", "expected_epoch": -1}, "validation_error"),
        ({"text": "x", "expected_epoch": 0, "upper_sequence": 99}, "invalid_upper_sequence"),
        ({"text": "x", "expected_epoch": 0, "surprise": 1}, "unknown_field"),
    ],
)
def test_bad_put_stores_nothing(alice, body, code) -> None:  # type: ignore[no-untyped-def]
    seed(alice)
    r = alice.put(url("s1"), body, format="json")
    assert r.status_code == 400 and error_code(r) == code
    assert not RollingSummary.objects.exists()


@pytest.mark.parametrize("body", [[], 0, "", False])
def test_summarise_now_refuses_a_body_that_is_not_an_object(alice, body) -> None:  # type: ignore[no-untyped-def]
    """A falsy body used to pass as {} (the schema forbids it, the server accepted it)."""
    seed(alice)
    r = alice.post(url("s1"), body, format="json")
    assert r.status_code == 400, r.content
    assert alice.post(url("s1")).status_code == 200  # no body at all: the defaults


def test_unknown_session_and_tenant_isolation(alice, bob) -> None:  # type: ignore[no-untyped-def]
    seed(alice)
    assert error_code(alice.get(url("nope"))) == "session_not_found"
    assert bob.get(url("s1")).status_code == 404
    r = bob.put(url("s1"), {"text": "bob was here", "expected_epoch": 0}, format="json")
    assert r.status_code == 404
    assert not RollingSummary.objects.exists()


def test_workspace_limited_key(cast) -> None:  # type: ignore[no-untyped-def]
    seed(cast.alice)  # default workspace
    limited = make_client(make_key(cast.alice_tenant, workspace="other"))
    assert limited.get(url("s1")).status_code == 404
    assert (
        limited.put(url("s1"), {"text": "x", "expected_epoch": 0}, format="json").status_code == 404
    )
    seed(limited, "s2")
    assert (
        limited.put(url("s2"), {"text": "mine", "expected_epoch": 0}, format="json").status_code
        == 200
    )


def test_read_key_cannot_write(cast) -> None:  # type: ignore[no-untyped-def]
    seed(cast.alice)
    reader = make_client(make_key(cast.alice_tenant, scopes=("read",)))
    assert reader.get(url("s1")).status_code == 200
    r = reader.put(url("s1"), {"text": "x", "expected_epoch": 0}, format="json")
    assert r.status_code == 403 and error_code(r) == "insufficient_scope"


def test_restore_leads_with_the_summary(alice) -> None:  # type: ignore[no-untyped-def]
    seed(alice, n=4)
    alice.put(
        url("s1"),
        {"text": "they agreed on plan B", "expected_epoch": 0, "upper_sequence": 2},
        format="json",
    )
    # all fits
    assert alice.get("/api/v1/sessions/s1/restore/?budget=1000").json()["summary_epoch"] is None
    messages = alice.get("/api/v1/sessions/s1/restore/?budget=45").json()["messages"]  # all: 52
    assert messages[0]["role"] == "system" and "plan B" in messages[0]["content"]
    assert [m["sequence"] for m in messages[1:]] == [3, 4]


# --- the automatic trigger ------------------------------------------------------------------------


def test_trigger_condenses_oldest_down_to_half_budget(
    alice, settings, django_capture_on_commit_callbacks, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("memoryhub.summaries.BUDGET", 200)
    monkeypatch.setattr("memoryhub.summaries.MAX_SHARE", 1.0)
    events = [
        {
            "role": "user",
            "content": f"turn {i} order #A-{1000 + i} costs {i * 7} EUR " + "blah " * 10,
        }
        for i in range(10)
    ]
    with django_capture_on_commit_callbacks(execute=True):
        assert post_events(alice, "s1", *events).status_code == 201
    row = RollingSummary.objects.get(session__external_id="s1")
    session = Session.objects.get(external_id="s1")
    rest = list(session.events.filter(sequence__gt=row.upper_sequence))
    assert sum(estimate_tokens(e.text) + 4 for e in rest) <= 0.5 * 200
    assert 0 < row.upper_sequence < 10 and row.epoch == 1
    lines = row.text.splitlines()
    assert len(lines) == row.upper_sequence  # one line per condensed turn
    assert "user #1" in lines[0] and "A-1000" in lines[0]


def test_summary_past_its_share_is_condensed_keeping_the_newest_lines(
    alice, settings, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("memoryhub.summaries.BUDGET", 200)
    monkeypatch.setattr("memoryhub.summaries.MAX_SHARE", 0.3)
    post_events(
        alice, "s1", *[{"role": "user", "content": f"turn {i} " + "blah " * 30} for i in range(12)]
    )
    assert maybe_summarise(Session.objects.get(external_id="s1"))["summarised"] is True
    row = RollingSummary.objects.get(session__external_id="s1")
    assert estimate_tokens(row.text) <= 60
    # the oldest turn is condensed, not dropped
    assert re.match(r"- \[.*\] user #1(–#\d+)?: turn 0", row.text)


def test_trigger_needs_four_messages_and_eighty_percent(alice, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("memoryhub.summaries.BUDGET", 100)
    # huge, but 3
    post_events(alice, "s1", *[{"role": "user", "content": "x " * 200} for _ in range(3)])
    session = Session.objects.get(external_id="s1")
    assert maybe_summarise(session)["summarised"] is False
    # 6, but small
    post_events(alice, "s2", *[{"role": "user", "content": "short"} for _ in range(6)])
    assert maybe_summarise(Session.objects.get(external_id="s2"))["summarised"] is False
    assert not RollingSummary.objects.exists()
    post_events(alice, "s1", {"role": "user", "content": "fourth"})
    assert maybe_summarise(Session.objects.get(external_id="s1"))["summarised"] is True


def test_trigger_discards_its_work_when_a_writer_got_there_first(
    alice, settings, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("memoryhub.summaries.BUDGET", 100)
    post_events(alice, "s1", *[{"role": "user", "content": "y " * 100} for _ in range(5)])
    session = Session.objects.get(external_id="s1")
    from memoryhub import summaries

    real = summaries.summarise_safely

    def racing(turns, previous="", **kwargs):  # type: ignore[no-untyped-def]
        write_summary(session, text="written by a client meanwhile", expected_epoch=0)
        return real(turns, previous, **kwargs)

    monkeypatch.setattr(summaries, "summarise_safely", racing)
    outcome = maybe_summarise(session)
    assert outcome["summarised"] is False and outcome["stale"] is True
    assert RollingSummary.objects.get(session=session).text == "written by a client meanwhile"


def test_summarise_due_reports_counts_per_tenant(cast, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("memoryhub.summaries.BUDGET", 100)
    monkeypatch.setattr("memoryhub.summaries.LEAF_EVENTS", 4)
    post_events(
        cast.alice,
        "a1",
        *[{"role": "user", "content": f"alpha {i} " + "z " * 60} for i in range(8)],
    )
    post_events(
        cast.bob, "b1", *[{"role": "user", "content": f"beta {i} " + "z " * 60} for i in range(8)]
    )
    report = summarise_due(tenant_id=cast.alice_tenant.pk)
    assert report["sessions_checked"] == 1 and report["sessions_summarised"] == 1
    assert report["tree_nodes_built"] == 2  # two leaves of four events
    assert SummaryNode.objects.filter(tenant=cast.bob_tenant).count() == 0
    assert not RollingSummary.objects.filter(tenant=cast.bob_tenant).exists()
    again = summarise_due(tenant_id=cast.alice_tenant.pk)
    assert again["tree_nodes_built"] == 0 and again["sessions_summarised"] == 0
    everyone = summarise_due()
    assert everyone["sessions_summarised"] == 1 and everyone["tree_nodes_built"] == 2  # bob's now


# --- compare-and-swap under real concurrency ----------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_parallel_writers_one_winner_per_epoch(cast) -> None:  # type: ignore[no-untyped-def]
    seed(cast.alice)
    session = Session.objects.get(external_id="s1")
    writers = 6

    def race(expected: int) -> list[int]:
        barrier = threading.Barrier(writers)
        results: list[int] = []
        lock = threading.Lock()

        def write(n: int) -> None:
            try:
                barrier.wait()
                state = write_summary(
                    session, text=f"writer {n} @ {expected}", expected_epoch=expected
                )
                with lock:
                    results.append(state.epoch if state else -1)
            finally:
                connection.close()

        threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return results

    for expected in (0, 1, 2):
        results = race(expected)
        assert sorted(results) == [-1] * (writers - 1) + [expected + 1], results
    row = RollingSummary.objects.get(session=session)
    assert row.epoch == 3 and row.text.endswith("@ 2")


def test_an_append_leaves_the_trigger_to_the_summarise_lane(
    alice, settings, django_capture_on_commit_callbacks, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    from django_q.models import OrmQ

    from memoryhub.session_work import due_sessions

    settings.MEMORYHUB_TASKS_EAGER = False
    monkeypatch.setattr("memoryhub.summaries.BUDGET", 50)
    with django_capture_on_commit_callbacks(execute=True):
        post_events(
            alice, "s1", *[{"role": "user", "content": f"m{i} " + "w " * 30} for i in range(4)]
        )
    assert not OrmQ.objects.exists()  # no task per append: the table says what is due
    assert not RollingSummary.objects.exists()  # the lane does the work, not the request
    assert list(due_sessions().values_list("external_id", flat=True)) == ["s1"]


def test_a_huge_backlog_is_condensed_a_window_at_a_time_oldest_first(
    alice, settings, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("memoryhub.summaries.BUDGET", 100)
    monkeypatch.setattr("memoryhub.summaries.MAX_EVENTS", 10)
    monkeypatch.setattr("memoryhub.summaries.MAX_SHARE", 1.0)
    post_events(
        alice, "s1", *[{"role": "user", "content": f"turn {i} " + "w " * 20} for i in range(30)]
    )
    session = Session.objects.get(external_id="s1")
    outcome = maybe_summarise(session)
    assert outcome["summarised"] is True and outcome["condensed"] == 10  # the whole first window
    row = RollingSummary.objects.get()
    # nothing skipped: the first message, alone or at the head of a merged line
    assert row.upper_sequence == 10 and re.search(r"#1(–#\d+)?: turn 0", row.text)
    while maybe_summarise(session)["summarised"]:
        pass
    row.refresh_from_db()
    rest = session.events.filter(sequence__gt=row.upper_sequence)
    assert sum(estimate_tokens(e.text) + 4 for e in rest) <= 50  # down to the target, in rounds
    assert row.epoch >= 3


def test_summarise_due_skips_sessions_far_below_the_budget(alice, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("memoryhub.summaries.BUDGET", 1000)
    monkeypatch.setattr("memoryhub.summaries.LEAF_EVENTS", 50)
    post_events(alice, "small", *[{"role": "user", "content": "tiny"} for _ in range(10)])
    post_events(alice, "big", *[{"role": "user", "content": "large " * 100} for _ in range(10)])
    post_events(
        alice,
        "tools",
        *[{"role": "tool", "tool_name": "t", "tool_args": {"blob": "x" * 600}} for _ in range(6)],
    )
    report = summarise_due()
    assert report["sessions_checked"] == 2 and report["sessions_summarised"] == 2  # big and tools
    assert set(RollingSummary.objects.values_list("session__external_id", flat=True)) == {
        "big",
        "tools",
    }
