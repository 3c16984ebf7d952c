"""The console's edges, in a real browser (Debian Chromium driven by Playwright): the header leads
somewhere, a fact's History shows its versions, the sidebar is grouped by what an operator works
with, lists fit a 1280 px screen and name memories by the API's ids, and dates read one way.

Skipped where Chromium or Playwright is missing, as tests/memoryhub/test_admin_browser.py is.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.memoryhub.test_admin_browser import (  # noqa: F401 - `people` is a fixture
    CHROMIUM,
    _browser,
    _logged_in,
    people,
    sync_api,
)

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM}"),
    pytest.mark.django_db(transaction=True),
]

# Django's default English formats ("Nov. 29, 2026, 2:34 a.m.", "Nov. 29, 2026"), which the console
# must no longer show beside its own 2026-11-29 02:34.
OTHER_DATES = re.compile(
    r"\b(Jan|Feb|Mar|Apr|May|June|July|Aug|Sept|Oct|Nov|Dec)[a-z]*\.? \d{1,2}, \d{4}|\b[ap]\.m\."
    r"|\b(January|February|March|April|May|June|July|August|September|October|November|December) \d"
    r"|\b\d{1,2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* \d{4}"
)
ONE_DATE = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$")


@pytest.fixture
def console(people: dict[str, int]) -> dict[str, Any]:  # noqa: F811
    """People's data, plus a fact with two versions (made through the API), a note and a schedule
    with a run, so that every operator list has rows."""
    from django.utils import timezone

    from accounts.models import Tenant
    from memoryhub.models import Fact, Note
    from retrieval.lifecycle.models import ArchivedMemory
    from retrieval.models import Chunk
    from scheduling.models import Delivery, Run, Schedule
    from tests.base import make_client, make_key, remember

    alice = Tenant.objects.get(pk=people["alice"])
    client = make_client(make_key(alice))
    response = client.post(
        "/api/v1/facts/",
        {
            "content": "Sam's boat is called Marigold",
            "category": "boats",
            "key": "boat_name",
            "user_id": "sam",
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    fact_id = response.json()["id"]
    assert (
        client.patch(
            f"/api/v1/facts/{fact_id}/",
            {"content": "Sam's boat is called Marigold II"},
            format="json",
        ).status_code
        == 200
    )
    remember(
        Note.objects.create(
            tenant=alice,
            user_id="sam",
            content="Sam prefers the morning ferry",
            tags=["travel"],
            source="agent",
        )
    )
    schedule = Schedule.objects.create(
        tenant=alice,
        name="weekly digest for sam",
        action="agent_goal",
        goal="Summarise Sam's week",
        cadence_type="cron",
        cadence_value="0 9 * * 1",
        user_id="sam",
        timezone="Europe/Lisbon",
        next_run_at=timezone.now(),
    )
    run = Run.objects.create(
        tenant=alice,
        schedule=schedule,
        status="succeeded",
        finished_at=timezone.now(),
        output_summary="Sam's week: the walnut tree, the ferry, the boat",
    )
    Delivery.objects.create(
        tenant=alice,
        run=run,
        url="https://hooks.example.com/sam",
        status="failed",
        attempts=3,
        max_attempts=3,
        last_status_code=502,
        last_error="Bad gateway from the hook",
        next_attempt_at=timezone.now(),
        delivered_at=timezone.now(),
    )
    ArchivedMemory.objects.create(
        tenant=alice,
        reason="prune",
        kind="event",
        user_id="dana",
        text="Dana asked about the ferry times and the timetable for the winter",
    )
    chunk = Chunk.objects.get(kind="fact", source_id=str(fact_id), valid_to__isnull=True)
    assert chunk.pk != fact_id  # the list must show the fact's id, and the two differ here
    return {
        **people,
        "fact": fact_id,
        "fact_chunk": chunk.pk,
        "tree_fact": Fact.objects.get(key="tree").pk,
    }


def test_the_header_leads_to_the_dashboard_and_the_api_reference(live_server, console) -> None:
    with sync_api.sync_playwright() as playwright:
        browser = _browser(playwright)
        try:
            page = _logged_in(browser, live_server)
            header = page.locator("#user-tools")
            assert "View site" not in header.inner_text()  # there is no site: it was a 404
            page.click("#mh-api-reference-link")
            page.wait_for_url("**/api/v1/docs/")
            page.wait_for_selector(".swagger-ui")
            page.go_back()
            page.click("#mh-dashboard-link")
            page.wait_for_url("**/admin/dashboard/")
            assert page.locator("h1").count() >= 1 and "404" not in page.title()
        finally:
            browser.close()


def test_a_facts_history_button_shows_its_versions(live_server, console) -> None:
    with sync_api.sync_playwright() as playwright:
        browser = _browser(playwright)
        try:
            page = _logged_in(browser, live_server)
            page.goto(f"{live_server.url}/admin/memoryhub/fact/{console['fact']}/change/")
            page.click("a.historylink")
            page.wait_for_url(f"**/admin/memoryhub/fact/{console['fact']}/history/")
            assert "doesn’t have a change history" not in page.content()
            rows = page.locator("#fact-versions tr.mh-version")
            assert rows.count() == 2
            assert "Sam's boat is called Marigold" in rows.nth(0).inner_text()  # oldest first
            assert "Sam's boat is called Marigold II" in rows.nth(1).inner_text()
            assert (
                "current" in rows.nth(1).inner_text() and "current" not in rows.nth(0).inner_text()
            )
            # The link to the list of versions lists this fact's, and only them.
            page.click("#fact-versions a")
            page.wait_for_selector("#result_list")
            assert page.locator("#result_list tbody tr").count() == 2
        finally:
            browser.close()


def test_the_sidebar_shows_what_an_operator_works_with_and_internals_apart(
    live_server, console
) -> None:
    with sync_api.sync_playwright() as playwright:
        browser = _browser(playwright)
        try:
            page = _logged_in(browser, live_server)
            page.goto(f"{live_server.url}/admin/lifecycle/memory/")
            sidebar = page.locator("#nav-sidebar")
            assert sidebar.is_visible()
            captions = [c.strip() for c in sidebar.locator("caption").all_inner_texts()]
            assert [c.lower() for c in captions] == [
                "people and their memory",
                "schedules",
                "reviews and consolidation",
                "tenants and access",
                "internals: search index, background work, logs",
            ]
            first = sidebar.locator("div.module").nth(0).locator("tbody th").all_inner_texts()
            assert first[:4] == [
                "People (end users)",
                "Conversations (sessions)",
                "Messages (events)",
                "Memories",
            ]
            internals = sidebar.locator("div.module").nth(4).locator("tbody th").all_inner_texts()
            assert (
                "Chunks" in internals
                and "Fact versions" in internals
                and "Memories" not in internals
            )
            # Every group's caption leads to its first list.
            sidebar.locator("caption a", has_text="Schedules").click()
            page.wait_for_url("**/admin/scheduling/schedule/")
            page.screenshot(path=str(_shot("sidebar")), full_page=False)
        finally:
            browser.close()


# What the overflow is: the table wider than the box that holds it (its right part cut off behind a
# scroll bar) or the page wider than the window.
OVERFLOW = """() => { const t = document.querySelector('#result_list'), box = document.querySelector('#changelist .results');
  return {rows: t ? t.tBodies[0].rows.length : 0, table: t ? Math.ceil(t.getBoundingClientRect().right) : 0,
          box: box ? box.scrollWidth - box.clientWidth : 0, page: document.documentElement.scrollWidth,
          window: window.innerWidth}; }"""  # noqa: E501


def test_the_consoles_lists_fit_a_1280_px_screen(live_server, console) -> None:
    from django.contrib import admin

    # Every list of the project's own models, the operator's and the internals (Django's,
    # django-q2's and django-axes' lists are theirs).
    urls = [
        f"/admin/{m._meta.app_label}/{m._meta.model_name}/"
        for m in admin.site._registry
        if m._meta.app_label in ("accounts", "memoryhub", "retrieval", "scheduling", "lifecycle")
    ]
    with sync_api.sync_playwright() as playwright:
        browser = _browser(playwright)
        try:
            page = _logged_in(browser, live_server, width=1280, height=800)
            measured = {}
            for url in urls:
                page.goto(live_server.url + url)
                measured[url] = page.evaluate(OVERFLOW)
            page.goto(f"{live_server.url}/admin/lifecycle/memory/")
            page.screenshot(path=str(_shot("memories-1280")), full_page=True)
        finally:
            browser.close()
    with_rows = {url: m for url, m in measured.items() if m["rows"]}
    # The lists with the most columns have rows here, so the check means something.
    for wide in (
        "/admin/lifecycle/memory/",
        "/admin/memoryhub/fact/",
        "/admin/memoryhub/session/",
        "/admin/lifecycle/pendingdeletion/",
        "/admin/scheduling/run/",
        "/admin/scheduling/schedule/",
        "/admin/scheduling/delivery/",
        "/admin/memoryhub/note/",
        "/admin/lifecycle/archivedmemory/",
        "/admin/retrieval/chunk/",
        "/admin/memoryhub/factversion/",
    ):
        assert wide in with_rows, (wide, measured[wide])
    cut = {
        url: m
        for url, m in with_rows.items()
        if m["box"] > 1 or m["page"] > m["window"] or m["table"] > m["window"]
    }
    assert cut == {}


def test_the_memories_list_names_memories_by_the_apis_ids(live_server, console) -> None:
    with sync_api.sync_playwright() as playwright:
        browser = _browser(playwright)
        try:
            page = _logged_in(browser, live_server)
            page.goto(f"{live_server.url}/admin/lifecycle/memory/?kind__exact=fact&q=Marigold")
            ids = page.locator(
                "#result_list td.field-api_id, #result_list th.field-api_id"
            ).all_inner_texts()
            # the id GET /api/v1/facts/{id}/ takes, not the chunk's
            assert ids == [f"fact {console['fact']}"]
            page.locator("#result_list .field-api_id a").click()
            page.wait_for_url(f"**/admin/lifecycle/memory/{console['fact_chunk']}/change/**")

            page.goto(f"{live_server.url}/admin/lifecycle/memory/?kind__exact=event&q=ferry")
            ids = page.locator("#result_list .field-api_id").all_inner_texts()
            assert ids == ["dana-chat #1"]  # a message: its place in its conversation
        finally:
            browser.close()


def test_dates_read_one_way_across_the_console(live_server, console) -> None:
    from memoryhub.models import Session

    session = Session.objects.get(external_id="sam-chat")
    pages = [
        "/admin/lifecycle/memory/",
        "/admin/memoryhub/fact/",
        f"/admin/memoryhub/fact/{console['fact']}/change/",
        f"/admin/memoryhub/fact/{console['fact']}/history/",
        "/admin/memoryhub/factversion/",
        "/admin/memoryhub/session/",
        f"/admin/memoryhub/session/{session.pk}/change/",
        "/admin/memoryhub/event/",
        "/admin/memoryhub/enduser/",
        "/admin/lifecycle/pendingdeletion/",
        "/admin/lifecycle/consolidationreport/",
        "/admin/scheduling/schedule/",
        "/admin/scheduling/run/",
        "/admin/memoryhub/note/",
        f"/admin/console/explorer/?tenant={console['alice']}&user=sam",
        "/admin/dashboard/",
    ]
    with sync_api.sync_playwright() as playwright:
        browser = _browser(playwright)
        try:
            page = _logged_in(browser, live_server)
            found: dict[str, list[str]] = {}
            cells: list[str] = []
            for url in pages:
                page.goto(live_server.url + url)
                text = page.locator("#content").inner_text()
                if OTHER_DATES.search(text):
                    found[url] = OTHER_DATES.findall(text)
                cells += page.locator(
                    "#result_list td.field-updated_at, #result_list td.field-created_at, "
                    "#result_list td.field-started_at"
                ).all_inner_texts()
            page.goto(f"{live_server.url}/admin/memoryhub/fact/{console['fact']}/history/")
            cells += page.locator("#fact-versions tr.mh-version th").all_inner_texts()
            page.goto(f"{live_server.url}/admin/dashboard/")
            # the data came and was shown
            page.wait_for_function("document.body.dataset.dashboardUpdated")
            cells.append(page.locator("#mh-updated").inner_text())
            # The date steps above a list: the year, then the days, written as dates are.
            page.goto(f"{live_server.url}/admin/memoryhub/fact/")
            days = page.locator(".xfull a, .xfull span, nav.toplinks a").all_inner_texts()
            assert any(re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", d.strip()) for d in days), days
        finally:
            browser.close()
    assert found == {}
    assert len(cells) >= 10 and [c for c in cells if not ONE_DATE.match(c.strip())] == []


def _shot(name: str) -> Any:
    """Where a screenshot goes when MEMORYHUB_TEST_SHOTS names a folder (to look at), else a scratch
    file."""
    import os
    import tempfile
    from pathlib import Path

    folder = Path(os.environ.get("MEMORYHUB_TEST_SHOTS") or tempfile.gettempdir())
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"console-{name}.png"
