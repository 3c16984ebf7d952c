"""Summary tree (docs/event-log.md#summaries): leaves, branches, root; searchable; expandable;
isolated."""

from __future__ import annotations

import re

import pytest

from memoryhub import summarisers
from memoryhub.models import Session, SummaryNode
from memoryhub.summaries import build_tree
from retrieval.models import Chunk
from tests.base import error_code, make_client, make_key, new_session, post_events


@pytest.fixture(autouse=True)
def small_tree(settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("memoryhub.summaries.LEAF_EVENTS", 3)
    monkeypatch.setattr("memoryhub.summaries.BRANCH_CHILDREN", 2)


def talk(client, session: str, n: int, start: int = 0) -> None:  # type: ignore[no-untyped-def]
    events = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"Turn {i}: ticket JIRA-{100 + i} estimated at {i * 3} hours",
        }
        for i in range(start, start + n)
    ]
    assert post_events(client, session, *events).status_code == 201


def tree(session: str) -> list[tuple[str, int, int, int | None]]:
    return [
        (n.level, n.sequence_start, n.sequence_end, n.parent_id)
        for n in SummaryNode.objects.filter(session__external_id=session).order_by(
            "depth", "sequence_start"
        )
    ]


def test_leaves_branches_root(alice) -> None:  # type: ignore[no-untyped-def]
    talk(alice, "s1", 13)
    session = Session.objects.get(external_id="s1")
    # 13 events → 4 full leaves (1-12), 2 branches of 2 leaves, a root over both branches
    assert build_tree(session) == 4 + 2 + 1
    nodes = {(n.level, n.sequence_start): n for n in SummaryNode.objects.all()}
    root = nodes[("root", 1)]
    assert (root.sequence_end, root.source_count, root.parent_id) == (12, 2, None)
    branches = [nodes[("branch", 1)], nodes[("branch", 7)]]
    assert all(b.parent_id == root.pk for b in branches)
    assert [n.parent_id for (level, _), n in sorted(nodes.items()) if level == "leaf"] == [
        branches[0].pk,
        branches[0].pk,
        branches[1].pk,
        branches[1].pk,
    ]
    leaf = nodes[("leaf", 1)]
    assert leaf.source_count == 3 and leaf.text.count("\n") == 2  # one line per turn
    assert "JIRA-100" in leaf.text and "user #1" in leaf.text and "assistant #2" in leaf.text
    # every node is searchable as a summary chunk
    assert Chunk.objects.filter(kind="summary").values("source_id").distinct().count() == 7
    assert build_tree(session) == 0  # nothing new


def test_growth_replaces_root_without_orphans(alice) -> None:  # type: ignore[no-untyped-def]
    talk(alice, "s1", 12)
    session = Session.objects.get(external_id="s1")
    build_tree(session)
    old_root = SummaryNode.objects.get(level="root")
    talk(alice, "s1", 12, start=12)
    assert build_tree(session) == 4 + 2 + 1
    root = SummaryNode.objects.get(level="root")
    assert root.pk != old_root.pk and (
        root.sequence_start,
        root.sequence_end,
        root.source_count,
    ) == (1, 24, 4)
    assert not Chunk.objects.filter(kind="summary", source_id=str(old_root.pk)).exists()
    node_ids = {str(pk) for pk in SummaryNode.objects.values_list("pk", flat=True)}
    assert set(Chunk.objects.filter(kind="summary").values_list("source_id", flat=True)) == node_ids


def test_final_closes_the_unfinished_run(alice) -> None:  # type: ignore[no-untyped-def]
    talk(alice, "s1", 4)
    session = Session.objects.get(external_id="s1")
    assert build_tree(session) == 1
    # the last event as a leaf, a branch over both leaves
    assert build_tree(session, final=True) == 2
    branch = SummaryNode.objects.get(level="branch").pk
    assert tree("s1") == [("leaf", 1, 3, branch), ("leaf", 4, 4, branch), ("branch", 1, 4, None)]


def test_expand_api_children_and_events(alice, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    talk(alice, "s1", 12)
    with django_capture_on_commit_callbacks(execute=True):
        r = alice.post("/api/v1/sessions/s1/summary/tree/")
    assert r.status_code == 202 and r.json()["queued"] is True
    root = SummaryNode.objects.get(level="root")
    body = alice.get(f"/api/v1/summaries/{root.pk}/").json()
    assert body["level"] == "root" and body["session"] == "s1"
    assert [c["level"] for c in body["children"]] == ["branch", "branch"]
    assert [c["sequence_start"] for c in body["children"]] == [1, 7]
    leaf_id = alice.get(f"/api/v1/summaries/{body['children'][0]['id']}/").json()["children"][0][
        "id"
    ]
    leaf = alice.get(f"/api/v1/summaries/{leaf_id}/").json()
    assert leaf["children"] == [] and [e["sequence"] for e in leaf["events"]] == [1, 2, 3]
    assert leaf["events"][0]["content"].startswith("Turn 0") and leaf["events_truncated"] is False
    limited = alice.get(f"/api/v1/summaries/{root.pk}/?events_limit=5").json()
    assert len(limited["events"]) == 5 and limited["events_truncated"] is True
    assert (
        error_code(alice.get(f"/api/v1/summaries/{root.pk}/?events_limit=-1"))
        == "invalid_parameter"
    )
    listing = alice.get("/api/v1/summaries/?session=s1&level=leaf").json()
    assert listing["count"] == 4 and all(n["level"] == "leaf" for n in listing["results"])
    assert error_code(alice.get("/api/v1/summaries/999999/")) == "summary_not_found"


def test_search_hit_expands(alice, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    talk(alice, "s1", 3)
    with django_capture_on_commit_callbacks(execute=True):
        build_tree(Session.objects.get(external_id="s1"))
    r = alice.post(
        "/api/v1/search/",
        {"query": "JIRA-101", "kinds": ["summary"], "mode": "text"},
        format="json",
    )
    assert r.status_code == 200, r.json()
    hit = r.json()["results"][0]
    assert hit["kind"] == "summary"
    expanded = alice.get(f"/api/v1/summaries/{hit['metadata']['summary_id']}/").json()
    assert [e["sequence"] for e in expanded["events"]] == [1, 2, 3]


def test_forgetting_the_session_removes_its_tree(alice) -> None:  # type: ignore[no-untyped-def]
    talk(alice, "s1", 6)
    build_tree(Session.objects.get(external_id="s1"))
    assert SummaryNode.objects.count() == 3
    assert alice.delete("/api/v1/sessions/s1/").status_code == 200
    assert not SummaryNode.objects.exists() and not Chunk.objects.filter(kind="summary").exists()


def test_isolation(cast) -> None:  # type: ignore[no-untyped-def]
    talk(cast.alice, "s1", 3)
    build_tree(Session.objects.get(external_id="s1"))
    leaf = SummaryNode.objects.get()
    assert cast.bob.get(f"/api/v1/summaries/{leaf.pk}/").status_code == 404
    assert cast.bob.get("/api/v1/summaries/").json()["count"] == 0
    assert cast.bob.post("/api/v1/sessions/s1/summary/tree/").status_code == 404
    limited = make_client(make_key(cast.alice_tenant, workspace="lab"))
    assert limited.get(f"/api/v1/summaries/{leaf.pk}/").status_code == 404
    assert limited.get("/api/v1/summaries/").json()["count"] == 0
    r = cast.bob.post("/api/v1/search/", {"query": "JIRA", "mode": "text"}, format="json")
    assert r.json()["results"] == []


def test_branch_lines_condense_children_without_their_bullets(alice) -> None:  # type: ignore[no-untyped-def]
    talk(alice, "s1", 6)
    build_tree(Session.objects.get(external_id="s1"))
    branch = SummaryNode.objects.get(level="branch")
    lines = branch.text.splitlines()
    assert len(lines) == 2  # one line per child leaf
    assert "leaf #1–#3: user #1: Turn 0" in lines[0] and "| assistant #2:" in lines[0]
    assert "JIRA-102" in lines[0] and "JIRA-105" in lines[1]  # identifiers survive the clip


def test_nodes_carry_their_time_span_and_model(alice, settings) -> None:  # type: ignore[no-untyped-def]
    # Every summary dated (earliest_at, latest_at, model on every summary).
    events = [
        {
            "role": "user",
            "content": f"Turn {i}: ticket JIRA-{100 + i}",
            "created_at": f"2025-05-0{1 + i // 3}T10:{i:02d}:00Z",
        }
        for i in range(6)
    ]
    assert post_events(alice, "s1", *events).status_code == 201
    build_tree(Session.objects.get(external_id="s1"))
    first, second = SummaryNode.objects.filter(level="leaf").order_by("sequence_start")
    branch = SummaryNode.objects.get(level="branch")
    leaf = alice.get(f"/api/v1/summaries/{first.pk}/").json()
    assert (leaf["earliest_at"], leaf["latest_at"]) == (
        "2025-05-01T10:00:00Z",
        "2025-05-01T10:02:00Z",
    )
    assert leaf["model"] == "extractive" and leaf["summariser"] == "extractive"
    body = alice.get(f"/api/v1/summaries/{branch.pk}/").json()
    assert (body["earliest_at"], body["latest_at"]) == (
        "2025-05-01T10:00:00Z",
        "2025-05-02T10:05:00Z",
    )
    assert [c["earliest_at"] for c in body["children"]] == [
        "2025-05-01T10:00:00Z",
        "2025-05-02T10:03:00Z",
    ]
    listing = alice.get("/api/v1/summaries/?session=s1&level=leaf").json()["results"]
    assert [n["latest_at"] for n in listing] == ["2025-05-01T10:02:00Z", "2025-05-02T10:05:00Z"]


def test_a_node_names_the_http_summarisers_model(alice, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from memoryhub import summaries

    settings.MEMORYHUB_SUMMARISER_MODEL = "qwen3-30b"
    monkeypatch.setattr(
        summaries, "summarise_safely", lambda turns, previous="", **kw: ("- written", "http")
    )
    talk(alice, "s1", 3)
    build_tree(Session.objects.get(external_id="s1"))
    node = SummaryNode.objects.get()
    assert (node.summariser, node.model) == ("http", "qwen3-30b")
    assert alice.get(f"/api/v1/summaries/{node.pk}/").json()["model"] == "qwen3-30b"


def test_extractive_lines_name_the_sessions_agent(alice) -> None:  # type: ignore[no-untyped-def]
    new_session(alice, "trip", agent="travel-bot")
    post_events(
        alice, "trip", *[{"role": "user", "content": f"Turn {i}: JIRA-{i}"} for i in range(3)]
    )
    build_tree(Session.objects.get(external_id="trip"))
    leaf = SummaryNode.objects.get()
    assert [line.split(": ", 1)[0][-18:] for line in leaf.text.splitlines()] == [
        "travel-bot/user #1",
        "travel-bot/user #2",
        "travel-bot/user #3",
    ]


def test_each_level_keeps_to_its_own_token_budget(alice, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(summarisers, "LEVEL_TOKENS", {"leaf": 40, "branch": 45, "root": 50})
    talk(alice, "s1", 12)
    build_tree(Session.objects.get(external_id="s1"))
    budget = {"leaf": 40, "branch": 45, "root": 50}
    for node in SummaryNode.objects.all():
        assert node.token_count <= budget[node.level], (node.level, node.text)
        # condensed, not cut: the first message still named
        assert f"#{node.sequence_start}" in node.text
    leaf = SummaryNode.objects.filter(level="leaf").first()
    assert re.search(r"#1(–#\d+)?: Turn 0", leaf.text)
