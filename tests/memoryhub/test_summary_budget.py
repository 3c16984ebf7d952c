"""The summary budget is per session (set on the session or on the summary call; the
server default when absent), and a summary past its share is condensed, not truncated."""

from __future__ import annotations

import re
from typing import Any

import pytest

from memoryhub import condense as condense_module
from memoryhub.condense import condense, merge_lines
from memoryhub.models import RollingSummary, Session, estimate_tokens
from memoryhub.session_work import summarise_due
from memoryhub.summaries import maybe_summarise
from memoryhub.summarisers import SummariserError
from tests.base import error_code, make_client, make_key, new_session, post_events


def talk(client: Any, session: str, n: int = 8, words: int = 20) -> None:
    """n messages of about (words * 2 + 10) / 4 + 4 tokens each: 8 × 19 = 152 tokens by default."""
    events = [
        {"role": "user", "content": f"turn {i} ticket T-{1000 + i} " + "ok " * words}
        for i in range(n)
    ]
    assert post_events(client, session, *events).status_code == 201


def summary_url(session: str) -> str:
    return f"/api/v1/sessions/{session}/summary/"


# --- the field on the session ---------------------------------------------------------------------


def test_summary_budget_is_set_at_creation_and_by_patch(alice) -> None:
    new_session(alice, "s1", summary_budget=500)
    assert alice.get("/api/v1/sessions/s1/").json()["summary_budget"] == 500
    assert Session.objects.get(external_id="s1").summary_budget == 500
    response = alice.patch("/api/v1/sessions/s1/", {"summary_budget": 2000}, format="json")
    assert response.status_code == 200 and response.json()["summary_budget"] == 2000
    response = alice.patch("/api/v1/sessions/s1/", {"summary_budget": None}, format="json")
    assert response.json()["summary_budget"] is None  # back to the server default
    new_session(alice, "s2")
    assert alice.get("/api/v1/sessions/s2/").json()["summary_budget"] is None


@pytest.mark.parametrize("value", [10, 2_000_000, "500", True, 12.5])
def test_a_bad_summary_budget_is_400_and_nothing_changes(alice, value: Any) -> None:
    response = alice.post("/api/v1/sessions/", {"id": "s1", "summary_budget": value}, format="json")
    assert response.status_code == 400 and not Session.objects.exists()
    new_session(alice, "s2", summary_budget=300)
    response = alice.patch("/api/v1/sessions/s2/", {"summary_budget": value}, format="json")
    assert response.status_code == 400 and error_code(response) == "validation_error"
    assert Session.objects.get(external_id="s2").summary_budget == 300


def test_each_session_is_summarised_against_its_own_budget(alice, settings, monkeypatch) -> None:
    # the default: far above the 152 tokens of talk()
    monkeypatch.setattr("memoryhub.summaries.BUDGET", 10_000)
    new_session(alice, "tight", summary_budget=100)
    new_session(alice, "roomy")
    talk(alice, "tight")
    talk(alice, "roomy")
    report = summarise_due()
    assert report["sessions_summarised"] == 1
    assert list(RollingSummary.objects.values_list("session__external_id", flat=True)) == ["tight"]
    tight = Session.objects.get(external_id="tight")
    row = RollingSummary.objects.get(session=tight)
    rest = tight.events.filter(sequence__gt=row.upper_sequence)
    # the target is half of *its* budget
    assert sum(estimate_tokens(e.text) + 4 for e in rest) <= 50


# --- the summary call -----------------------------------------------------------------------------


def test_the_summary_call_takes_a_budget(alice, settings, monkeypatch) -> None:
    monkeypatch.setattr("memoryhub.summaries.BUDGET", 10_000)
    new_session(alice, "s1", summary_budget=5000)
    talk(alice, "s1")
    response = alice.post(summary_url("s1"), {}, format="json")
    assert response.status_code == 200, response.content
    # the session's
    assert response.json()["summarised"] is False and response.json()["budget"] == 5000
    response = alice.post(summary_url("s1"), {"budget": 100}, format="json")
    body = response.json()
    assert body["summarised"] is True and body["budget"] == 100 and body["epoch"] == 1
    assert "T-1000" in body["text"] and body["upper_sequence"] == body["condensed"]
    assert alice.get(summary_url("s1")).json()["epoch"] == 1


@pytest.mark.parametrize(
    "body", [{"budget": 0}, {"budget": "100"}, {"budget": 10**7}, {"size": 100}]
)
def test_a_bad_summary_call_is_400_and_writes_nothing(alice, body: dict[str, Any]) -> None:
    talk(alice, "s1")
    response = alice.post(summary_url("s1"), body, format="json")
    assert response.status_code == 400
    assert error_code(response) in {"validation_error", "unknown_field"}
    assert not RollingSummary.objects.exists()


def test_the_summary_call_is_confined_and_needs_write(alice, bob, cast) -> None:
    talk(alice, "s1")
    assert bob.post(summary_url("s1"), {"budget": 100}, format="json").status_code == 404
    other_workspace = make_client(make_key(cast.alice_tenant, workspace="w2"))
    assert (
        other_workspace.post(summary_url("s1"), {"budget": 100}, format="json").status_code == 404
    )
    reader = make_client(make_key(cast.alice_tenant, scopes=("read",)))
    response = reader.post(summary_url("s1"), {"budget": 100}, format="json")
    assert response.status_code == 403 and error_code(response) == "insufficient_scope"
    assert not RollingSummary.objects.exists()


# --- condensed, not truncated ---------------------------------------------------------------------


def test_a_summary_past_its_share_keeps_its_oldest_turns(alice, settings, monkeypatch) -> None:
    monkeypatch.setattr("memoryhub.summaries.MAX_SHARE", 0.3)
    new_session(alice, "s1", summary_budget=1000)  # the summary may use 300 tokens
    session = Session.objects.get(external_id="s1")
    for _round in range(3):
        talk(alice, "s1", n=25, words=40)  # 25 × 39 tokens: past 80 % of 1000
        assert maybe_summarise(session)["summarised"] is True
        session.refresh_from_db()
    text = RollingSummary.objects.get(session=session).text
    assert estimate_tokens(text) <= 300
    assert "T-1000" in text.splitlines()[0]  # the very first turn is still in the summary
    assert re.search(r"#1(–#\d+)?: turn 0", text)


def test_merge_lines_keeps_the_newest_verbatim_and_fits_the_room() -> None:
    lines = [
        f"- [2025-01-0{1 + i // 10} 10:{i:02d}] user #{i}: order O-{500 + i} shipped to depot {i}"
        for i in range(40)
    ]
    out = merge_lines("\n".join(lines), room=1200)
    assert len(out) <= 1200
    merged = out.splitlines()
    assert merged[-1] == lines[-1] and merged[-2] == lines[-2]  # the newest, as they were
    assert "O-500" in merged[0] and len(merged) < len(lines)  # the oldest, merged, still there
    assert merged[0].startswith("- [2025-01-01 10:00] user #0")


def test_an_llm_summariser_rewrites_the_summary_and_a_failure_falls_back(monkeypatch) -> None:
    class Fake:
        name = "http"
        reply = "- all of it, shorter"

        def summarise(self, turns: list[Any], previous: str = "", **kwargs: Any) -> str:
            if self.reply is None:
                raise SummariserError("down")
            return self.reply

    fake = Fake()
    monkeypatch.setattr(condense_module, "get_summariser", lambda: fake)
    long = "\n".join(f"- user #{i}: item I-{i} " + "x" * 80 for i in range(30))
    assert condense(long, 100) == "- all of it, shorter"
    fake.reply = None
    out = condense(long, 100)
    assert estimate_tokens(out) <= 100 and "I-0" in out
    assert condense("short enough", 100) == "short enough"


_SPAN = re.compile(r"#(\d+)(?:–#(\d+))?")


def traced(text: str) -> set[int]:
    """The message numbers a summary still names, alone ("#7") or in a range ("#2–#9")."""
    out: set[int] = set()
    for match in _SPAN.finditer(text):
        low = int(match.group(1))
        out.update(range(low, int(match.group(2) or low) + 1))
    return out


def test_merge_lines_leaves_a_trace_of_every_message() -> None:
    # at 360 characters the old condenser kept #1 and #22-#25; #2-#21 vanished.
    lines = [
        f"- [2025-05-01 10:{i:02d}] user #{i}: turn {i} ticket T-{1000 + i} " + "ok " * 20
        for i in range(1, 26)
    ]
    out = merge_lines("\n".join(lines), room=360)
    assert len(out) <= 360
    assert traced(out) == set(range(1, 26))
    older = out.splitlines()[0]
    assert (
        older.startswith("- [2025-05-01 10:01] user #1–#")
        and "T-1001" in older
        and "T-1002" in older
    )
    assert out.splitlines()[-1].startswith("- [2025-05-01 10:25] user #25: turn 25 ticket T-1025")


def test_a_rolling_summary_at_budget_300_keeps_a_trace_of_every_condensed_message(
    alice, settings
) -> None:
    new_session(alice, "s1", summary_budget=300)  # the summary may use 90 tokens
    session = Session.objects.get(external_id="s1")
    for _round in range(4):
        talk(alice, "s1", n=8, words=20)
        maybe_summarise(session)
    row = RollingSummary.objects.get(session=session)
    assert row.upper_sequence >= 20 and estimate_tokens(row.text) <= 90
    assert traced(row.text) >= set(range(1, row.upper_sequence + 1))
