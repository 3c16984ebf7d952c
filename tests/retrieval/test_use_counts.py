"""One number per fact: how often search returned a fact is read from one place, its
chunks' ChunkAccess rows (retrieval migration 0013), by every surface that shows it: the admin's
fact page and list, the memory explorer, the Memories list, the API and `manage.py stats`."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest
from django.core.management import call_command

from memoryhub.models import Fact, Session
from retrieval.models import Chunk, ChunkAccess
from tests.base import Cast, post_events, remember

SEARCHES = 3


@pytest.fixture
def used_fact(cast: Cast) -> Fact:
    """Dana's fact, returned by SEARCHES real searches (each reinforces what it returns)."""
    assert post_events(
        cast.alice, "dana-chat", {"role": "user", "content": "hello"}
    ).status_code in (200, 201)
    session = Session.objects.get(external_id="dana-chat")
    fact = remember(
        Fact.objects.create(
            tenant=cast.alice_tenant,
            workspace_id=session.workspace_id,
            user_id="dana",
            category="garden",
            key="tree",
            content="Dana planted a walnut tree",
        )
    )
    for _ in range(SEARCHES):
        response = cast.alice.post(
            "/api/v1/search/",
            {"query": "walnut tree", "scope": "account", "user_id": "dana", "kinds": ["fact"]},
            format="json",
        )
        assert response.status_code == 200, response.content
        assert [r["text"] for r in response.json()["results"]] == ["Dana planted a walnut tree"]
    return fact


def _admin_fact_page(staff_client: Any, fact: Fact) -> int:
    html = staff_client.get(f"/admin/memoryhub/fact/{fact.pk}/change/").content.decode()
    found = re.search(
        r'field-uses">.*?<label>Access count:</label>\s*<div class="readonly">(\d+)</div>',
        html,
        re.S,
    )
    assert found, html[:3000]
    return int(found.group(1))


def _explorer(staff_client: Any, cast: Cast) -> int:
    html = staff_client.get(
        "/admin/console/explorer/",
        {"tenant": cast.alice_tenant.pk, "user": "dana", "kinds": "fact"},
    ).content.decode()
    found = re.findall(r'<span class="mh-uses">(\d+) uses?</span>', html)
    assert len(found) == 1, html[-3000:]
    return int(found[0])


def _memories_list(staff_client: Any, fact: Fact) -> int:
    chunk = Chunk.objects.get(kind="fact", source_id=str(fact.pk))
    response = staff_client.get("/admin/lifecycle/memory/", {"q": "walnut"})
    rows = {r.pk: r.access_count for r in response.context["cl"].result_list}
    html = response.content.decode()
    cell = re.search(r'<td class="field-access_count">(\d+)</td>', html)
    assert cell and int(cell.group(1)) == rows[chunk.pk]
    return rows[chunk.pk]


def _api(cast: Cast, fact: Fact) -> int:
    response = cast.alice.get(f"/api/v1/facts/{fact.pk}/")
    assert response.status_code == 200, response.content
    return response.json()["access_count"]


def _stats_command(fact: Fact) -> int:
    out = io.StringIO()
    call_command("stats", "--tenant", "alice", stdout=out)
    used = json.loads(out.getvalue())["alice"]["most_used"]
    mine = [m for m in used if m["kind"] == "fact" and m["id"] == str(fact.pk)]
    assert len(mine) == 1 and mine[0]["owner"] == "dana", used
    return mine[0]["uses"]


def _figures(staff_client: Any, cast: Cast, fact: Fact) -> dict[str, int]:
    return {
        "admin fact page": _admin_fact_page(staff_client, fact),
        "explorer": _explorer(staff_client, cast),
        "memories list": _memories_list(staff_client, fact),
        "api": _api(cast, fact),
        "stats command": _stats_command(fact),
    }


def test_every_surface_shows_the_same_access_count_of_a_fact(staff_client, cast, used_fact) -> None:
    figures = _figures(staff_client, cast, used_fact)
    assert figures == dict.fromkeys(figures, SEARCHES)
    # The operator's looks (admin, explorer, stats) are not uses: the count has not moved.
    assert _api(cast, used_fact) == SEARCHES


def test_the_count_survives_an_edit_that_re_derives_the_facts_chunks(
    staff_client, cast, used_fact
) -> None:
    # A PATCH of the tags (and a new version of the content) replaces the fact's chunks: its uses go
    # with it.
    response = cast.alice.patch(
        f"/api/v1/facts/{used_fact.pk}/", {"tags": ["trees"]}, format="json"
    )
    assert response.status_code == 200, response.content
    response = cast.alice.patch(
        f"/api/v1/facts/{used_fact.pk}/",
        {"content": "Dana planted a walnut tree and an oak"},
        format="json",
    )
    assert response.status_code == 200, response.content
    # a new chunk
    assert Chunk.objects.filter(kind="fact", source_id=str(used_fact.pk)).count() == 1
    figures = _figures(staff_client, cast, used_fact)
    assert figures == dict.fromkeys(figures, SEARCHES)
    # The superseded version's chunk keeps its own row (history); the fact's figure is its current
    # chunk's.
    assert (
        sum(
            ChunkAccess.objects.filter(chunk__source_id=str(used_fact.pk)).values_list(
                "access_count", flat=True
            )
        )
        == 2 * SEARCHES
    )


def test_a_fact_never_returned_shows_zero_everywhere(staff_client, cast, used_fact) -> None:
    ChunkAccess.objects.all().delete()
    figures = _figures_without_stats(staff_client, cast, used_fact)
    assert figures == dict.fromkeys(figures, 0)


def _figures_without_stats(staff_client: Any, cast: Cast, fact: Fact) -> dict[str, int]:
    # stats lists only memories used at least once
    return {
        "admin fact page": _admin_fact_page(staff_client, fact),
        "explorer": _explorer(staff_client, cast),
        "memories list": _memories_list(staff_client, fact),
        "api": _api(cast, fact),
    }
