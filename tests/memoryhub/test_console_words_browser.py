"""The console at 1280 px in an operator's words, in a real browser (Debian Chromium driven by
Playwright): the dashboard and the admin index fit, the 24-hour chart labels real times, the runs
list shows its output and names each filter once, a person's sessions are theirs (by user_id, not a
text search), and titles, labels and counts read as an operator says them.

Every page opened here (as in every browser test) is also checked for width by the browser's
close(): no page wider than the window (test_admin_browser.py). Skipped where Chromium or
Playwright is missing, as tests/memoryhub/test_admin_browser.py is.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.memoryhub.test_admin_browser import (  # noqa: F401 - `people` is a fixture
    CHROMIUM,
    _browser,
    _logged_in,
    people,
    sync_api,
)
from tests.memoryhub.test_console_browser import _shot, console  # noqa: F401 - `console` is a fixture

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM}"),
    pytest.mark.django_db(transaction=True),
]

WIDTH = "() => ({page: document.scrollingElement.scrollWidth, window: window.innerWidth})"
# Each console button's box and how many lines its text takes.
BUTTONS = """() => [...document.querySelectorAll('#mh-console-links a.button')].map((a) => {
  const r = a.getBoundingClientRect(), range = document.createRange(); range.selectNodeContents(a);
  return {text: a.innerText, left: r.left, right: r.right, top: r.top, bottom: r.bottom,
          lines: new Set([...range.getClientRects()].map((l) => Math.round(l.top))).size}; })"""


def _fits(page: Any) -> None:
    measured = page.evaluate(WIDTH)
    assert measured["page"] <= measured["window"], (page.url, measured)


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["left"] < b["right"]
        and b["left"] < a["right"]
        and a["top"] < b["bottom"]
        and b["top"] < a["bottom"]
    )


@pytest.fixture
def first_hour(console) -> dict[str, Any]:  # noqa: F811
    """A run whose output is JSON, a one-message conversation, and a conversation of dana's whose
    id names sam (a text search for "sam" finds it; sam's sessions must not)."""
    from accounts.models import Tenant
    from memoryhub.models import Session
    from scheduling.models import Run, Schedule
    from tests.base import make_client, make_key, post_events

    alice = Tenant.objects.get(pk=console["alice"])
    schedule = Schedule.objects.get(name="weekly digest for sam")
    output = json.dumps(
        {"digest": "Sam planted a walnut tree and took the morning ferry", "items": 3},
        sort_keys=True,
    )
    Run.objects.create(
        tenant=alice, schedule=schedule, status="succeeded", output=output, output_summary=output
    )
    client = make_client(make_key(alice))
    assert (
        post_events(
            client, "about-sam", {"role": "user", "content": "Dana asks what Sam planted"}
        ).status_code
        == 201
    )
    Session.objects.filter(tenant=alice, external_id="about-sam").update(user_id="dana")
    return {
        **console,
        "one_message": Session.objects.get(tenant=alice, external_id="about-sam").pk,
        "schedule": schedule.pk,
    }


def test_the_dashboard_fits_and_its_day_chart_labels_real_times(live_server, first_hour) -> None:
    with sync_api.sync_playwright() as playwright:
        browser = _browser(playwright)
        try:
            page = _logged_in(browser, live_server)
            page.goto(f"{live_server.url}/admin/dashboard/")
            page.wait_for_function("document.body.dataset.dashboardUpdated")
            page.screenshot(path=str(_shot("dashboard-1280")), full_page=True)
            _fits(page)
            explore = page.locator("#mh-tenants a", has_text="explore memory").first
            box = explore.bounding_box()
            assert box is not None and box["x"] + box["width"] <= 1280  # in view, not pushed off
            labels = page.evaluate("() => window.MH_PLOTS.backlog.axes[0]._values")
            # not 00:00 at every tick
            assert len(labels) >= 3 and len(set(labels)) == len(labels), labels
            assert "empty steps" not in page.locator("#mh-workers").inner_text().lower()
        finally:
            browser.close()


def test_the_runs_list_reads_its_output_and_names_each_filter_once(live_server, first_hour) -> None:
    with sync_api.sync_playwright() as playwright:
        browser = _browser(playwright)
        try:
            page = _logged_in(browser, live_server)
            page.goto(f"{live_server.url}/admin/scheduling/run/")
            page.screenshot(path=str(_shot("runs-1280")), full_page=True)
            titles = [
                t.strip() for t in page.locator("#changelist-filter summary").all_inner_texts()
            ]
            assert len(titles) >= 4 and len(set(titles)) == len(titles), titles
            assert not any("manual" in t for t in titles), titles
            outputs = page.locator("#result_list td.field-output_in_words").all_inner_texts()
            assert (
                "digest: Sam planted a walnut tree and took the morning ferry; items: 3" in outputs
            ), outputs
            assert not any(o.lstrip().startswith("{") for o in outputs), outputs
            assert page.locator("h1").inner_text() == "Runs"
        finally:
            browser.close()


def test_a_persons_sessions_are_theirs_by_user_id(live_server, first_hour) -> None:
    with sync_api.sync_playwright() as playwright:
        browser = _browser(playwright)
        try:
            page = _logged_in(browser, live_server)
            page.goto(f"{live_server.url}/admin/memoryhub/enduser/")
            assert page.locator("h1").inner_text() == "People (end users)"
            assert "Select" not in page.title()
            row = page.locator(
                "#result_list tbody tr", has=page.locator("a.mh-user", has_text="sam")
            ).filter(has=page.locator("td.field-tenant", has_text="alice"))
            row.locator("a", has_text="sessions").click()
            page.wait_for_url("**user_id=sam**")
            ids = page.locator(
                "#result_list th.field-external_id, #result_list td.field-external_id"
            ).all_inner_texts()
            assert ids == ["sam-chat"], ids  # not dana's about-sam, whose id says "sam"
            # the filter shows whose they are
            assert "sam" in page.locator("#changelist-filter").inner_text()
        finally:
            browser.close()


def test_labels_and_counts_in_an_operators_words(live_server, first_hour) -> None:
    with sync_api.sync_playwright() as playwright:
        browser = _browser(playwright)
        try:
            page = _logged_in(browser, live_server)
            page.goto(f"{live_server.url}/admin/memoryhub/fact/{first_hour['fact']}/change/")
            form = page.locator("#fact_form").inner_text()
            assert "Scope key" not in form and "workspace:" not in form
            assert "Applies to" in form and page.locator(
                "label[for=id_tier]"
            ).inner_text().startswith("Scope")

            page.goto(f"{live_server.url}/admin/memoryhub/note/")
            headers = [
                h.strip().lower() for h in page.locator("#result_list thead th").all_inner_texts()
            ]
            assert "scope" in headers and "tier" not in headers
            assert "tier" not in page.locator("#changelist-filter").inner_text().lower()

            page.goto(f"{live_server.url}/admin/lifecycle/memory/")
            values = page.locator("#result_list td.field-relevance_now").all_inner_texts()
            assert values and all(len(v.split(".")[-1]) == 2 for v in values), values

            page.goto(
                f"{live_server.url}/admin/memoryhub/session/{first_hour['one_message']}/change/"
            )
            assert page.locator("a", has_text="read 1 message").count() == 1
            assert page.locator("a", has_text="read 1 messages").count() == 0

            page.goto(f"{live_server.url}/admin/scheduling/schedule/")
            page.locator(
                f"#result_list input[name=_selected_action][value='{first_hour['schedule']}']"
            ).check()
            page.select_option("select[name=action]", "run_now_action")
            page.click("button[name=index]")
            page.wait_for_selector("text=These schedules will run now")
            buttons = " ".join(
                page.locator("input[type=submit], button").all_inner_texts()
                + [b.get_attribute("value") or "" for b in page.locator("input[type=submit]").all()]
            )
            assert "Run 1 schedule now" in buttons and "schedule(s)" not in buttons, buttons
        finally:
            browser.close()


def test_the_admin_index_lays_out_the_console_links(live_server, first_hour) -> None:
    with sync_api.sync_playwright() as playwright:
        browser = _browser(playwright)
        try:
            page = _logged_in(browser, live_server)
            page.screenshot(path=str(_shot("index-1280")), full_page=True)
            buttons = page.evaluate(BUTTONS)
            assert len(buttons) >= 7
            assert [b["text"] for b in buttons if b["lines"] != 1] == []  # no button's text wraps
            assert [
                (a["text"], b["text"])
                for i, a in enumerate(buttons)
                for b in buttons[i + 1 :]
                if _overlap(a, b)
            ] == []
        finally:
            browser.close()
