"""A real browser (Debian Chromium driven by Playwright) logs into the admin and browses the data.

Skipped where Chromium or Playwright is missing (CI may lack them). Never downloads a browser.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = Path(os.environ.get("MEMORYHUB_TEST_CHROMIUM", "/usr/bin/chromium"))
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM}"),
    pytest.mark.django_db(transaction=True),
]

PASSWORD = "browser-test-password"


@pytest.fixture
def staff_and_data(settings, django_user_model) -> None:  # type: ignore[no-untyped-def]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    from tests.base import make_client, make_key, make_tenant, post_events

    django_user_model.objects.create_superuser(username="operator", email="", password=PASSWORD)
    client = make_client(make_key(make_tenant("alice")))
    post_events(
        client,
        "browser-chat",
        {"role": "user", "content": "Where is the lighthouse?"},
        {"role": "assistant", "content": "On the northern cape."},
    )


def test_operator_logs_in_and_browses_sessions_and_events(live_server, staff_and_data) -> None:
    # All database work happens before Playwright starts: its sync API runs an event loop in
    # this thread, where Django refuses ORM calls.
    with sync_api.sync_playwright() as playwright:
        browser = _browser(playwright)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.add_init_script(NOTE_WIDTH)
            page.goto(f"{live_server.url}/admin/login/?next=/admin/")
            page.fill("#id_username", "operator")
            page.fill("#id_password", PASSWORD)
            page.click("input[type=submit]")
            page.wait_for_url(f"{live_server.url}/admin/")
            assert "Site administration" in page.content()

            page.goto(f"{live_server.url}/admin/memoryhub/session/")
            assert page.locator("#result_list").is_visible()
            assert page.locator("#result_list").get_by_text("browser-chat").count() == 1

            page.click("#result_list a:has-text('browser-chat')")
            page.wait_for_selector("text=read 2 messages")
            page.click("text=read 2 messages")
            page.wait_for_selector("#mh-transcript")
            messages = page.locator("#mh-transcript .mh-message")
            assert messages.count() == 2
            assert "Where is the lighthouse?" in messages.nth(0).inner_text()  # oldest first
            assert "On the northern cape." in messages.nth(1).inner_text()

            page.goto(f"{live_server.url}/admin/memoryhub/event/?q=lighthouse")
            assert page.locator("#result_list tbody tr").count() == 1
        finally:
            browser.close()


# --- the console starts from people -------------------------------------------------

LONG_TEXT = (
    "Sam planted a walnut tree beside the old lighthouse keeper's cottage on the northern cape, "
    "and every summer he measures how much it has grown since his grandfather's time"
)


@pytest.fixture
def people(settings, django_user_model) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """alice's tenant: sam (a conversation with a long message, a fact), dana; bob's tenant: another
    sam. A consolidation review waiting in alice's tenant."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    from memoryhub.models import Fact, Session
    from retrieval.lifecycle.models import ConsolidationReport, PendingDeletion
    from retrieval.models import Chunk
    from tests.base import make_client, make_key, make_tenant, post_events, remember

    django_user_model.objects.create_superuser(username="operator", email="", password=PASSWORD)
    alice, bob = make_tenant("alice"), make_tenant("bob")
    for tenant, session, user, text in (
        (alice, "sam-chat", "sam", LONG_TEXT),
        (alice, "dana-chat", "dana", "Dana asks about the ferry times"),
        (bob, "bob-sam-chat", "sam", "Bob's sam talks about bicycles"),
    ):
        assert (
            post_events(
                make_client(make_key(tenant)),
                session,
                {"role": "user", "content": text},
                {"role": "assistant", "content": "Noted, thank you for telling me all of that."},
            ).status_code
            == 201
        )
        s = Session.objects.get(tenant=tenant, external_id=session)
        Session.objects.filter(pk=s.pk).update(user_id=user)
        Chunk.objects.filter(session=s).update(user_id=user)
    sam_session = Session.objects.get(tenant=alice, external_id="sam-chat")
    remember(
        Fact.objects.create(
            tenant=alice,
            workspace_id=sam_session.workspace_id,
            user_id="sam",
            category="garden",
            key="tree",
            content="Sam's walnut tree is twelve years old",
        )
    )
    report = ConsolidationReport.objects.create(tenant=alice)
    PendingDeletion.objects.create(
        tenant=alice,
        report=report,
        step="prune",
        chunk_ids=list(
            Chunk.objects.filter(session__external_id="dana-chat").values_list("pk", flat=True)
        ),
    )
    return {"alice": alice.pk, "bob": bob.pk}


def _logged_in(browser, live_server, width: int = 1280, height: int = 800):  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport={"width": width, "height": height})
    page.add_init_script(NOTE_WIDTH)
    page.goto(f"{live_server.url}/admin/login/?next=/admin/")
    page.fill("#id_username", "operator")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"{live_server.url}/admin/")
    return page


# Every page a browser test opens fits the window: at each load the page notes, in its tab's
# storage, where it is wider than the window (a sideways scroll bar); the browser's close() asserts
# that no page noted one, and measures the page each tab shows last (charts drawn after the load).
NOTE_WIDTH = """(() => { const note = () => { const wide = document.scrollingElement.scrollWidth;
  if (wide > window.innerWidth) { const seen = JSON.parse(sessionStorage.getItem('mh-too-wide') || '[]');
    seen.push(location.pathname + location.search + ': ' + wide + ' px in ' + window.innerWidth);
    sessionStorage.setItem('mh-too-wide', JSON.stringify(seen)); } };
  window.addEventListener('load', () => setTimeout(note, 0)); })();"""  # noqa: E501
MEASURE_WIDTH = """() => { const seen = JSON.parse(sessionStorage.getItem('mh-too-wide') || '[]');
  const wide = document.scrollingElement.scrollWidth;
  return wide > window.innerWidth ? seen.concat([location.pathname + location.search + ': ' + wide + ' px in '
                                                 + window.innerWidth]) : seen; }"""  # noqa: E501


def _browser(playwright):  # type: ignore[no-untyped-def]
    import sys

    browser = playwright.chromium.launch(
        executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox", "--disable-gpu"]
    )
    close = browser.close

    def close_checking_widths() -> None:
        failing = sys.exc_info()[0] is not None  # a test that failed already keeps its own error
        too_wide = (
            []
            if failing
            else sorted(
                {
                    line
                    for context in browser.contexts
                    for page in context.pages
                    if page.url.startswith("http")
                    for line in page.evaluate(MEASURE_WIDTH)
                }
            )
        )
        close()
        assert too_wide == [], too_wide

    browser.close = close_checking_widths
    return browser


def test_from_the_users_page_to_a_users_memories_in_the_explorer(live_server, people) -> None:
    with sync_api.sync_playwright() as playwright:
        browser = _browser(playwright)
        try:
            page = _logged_in(browser, live_server)
            page.click("#mh-end-users-link")
            page.wait_for_selector("#result_list")
            # Both tenants' sam are listed (two people), and dana.
            assert page.locator("#result_list tbody tr").count() == 3
            page.fill("#searchbar", "sam")
            page.press("#searchbar", "Enter")
            page.wait_for_url("**q=sam**")
            rows = page.locator("#result_list tbody tr")
            assert rows.count() == 2
            assert sorted(
                rows.nth(i).locator("td.field-tenant").inner_text() for i in range(2)
            ) == ["alice", "bob"]
            alice_row = page.locator(
                "#result_list tbody tr", has=page.locator("td.field-tenant", has_text="alice")
            )
            assert alice_row.locator("td.field-sessions").inner_text() == "1"
            assert alice_row.locator("td.field-facts").inner_text() == "1"
            alice_row.locator("a.mh-user").click()
            page.wait_for_url(f"**/admin/console/explorer/?tenant={people['alice']}&user=sam")
            assert "end user “sam”" in page.locator("h1").inner_text()
            facts = page.locator("table.mh-owned[data-kind=fact]")
            assert "Sam's walnut tree is twelve years old" in facts.inner_text()
            assert "Bob's sam" not in page.content()  # the other tenant's sam is someone else

            # A search in the explorer shows each result's owner in a column of its own.
            page.fill("#id_q", "walnut tree")
            page.click("#mh-explorer-search input[type=submit]")
            page.wait_for_selector("#mh-results")
            headers = [
                h.strip().lower() for h in page.locator("#mh-results thead th").all_inner_texts()
            ]
            assert "owner" in headers
            owners = page.locator("#mh-results td.mh-owner").all_inner_texts()
            assert owners and set(owners) <= {"sam", "shared"} and "sam" in owners
        finally:
            browser.close()


def test_owner_columns_in_the_memories_list_and_the_context_preview(live_server, people) -> None:
    with sync_api.sync_playwright() as playwright:
        browser = _browser(playwright)
        try:
            page = _logged_in(browser, live_server)
            page.goto(f"{live_server.url}/admin/lifecycle/memory/?q=walnut")
            header = page.locator("#result_list thead th.column-owner")
            assert header.is_visible() and header.inner_text().strip().lower() == "owner"
            owners = page.locator("#result_list td.field-owner").all_inner_texts()
            assert owners and set(owners) == {"sam"}

            page.goto(
                f"{live_server.url}/admin/console/context/?tenant={people['alice']}&user_id=sam&query=walnut"
            )
            page.wait_for_selector("#mh-context-items")
            assert "owner" in [
                h.strip().lower()
                for h in page.locator("#mh-context-items thead th").all_inner_texts()
            ]
            cells = page.locator("#mh-context-items td.mh-owner")
            assert cells.count() >= 1 and set(cells.all_inner_texts()) <= {"sam", "shared"}
            assert "sam" in cells.all_inner_texts()
        finally:
            browser.close()


def test_the_admin_index_shows_the_reviews_waiting_and_leads_to_them(live_server, people) -> None:
    with sync_api.sync_playwright() as playwright:
        browser = _browser(playwright)
        try:
            page = _logged_in(browser, live_server)
            badge = page.locator("#mh-review-badge")
            assert badge.is_visible()
            assert badge.locator(".mh-count").inner_text() == "1"
            assert (
                "consolidation review waiting" in badge.inner_text()
                and "alice: 1" in badge.inner_text()
            )
            badge.locator("a").click()
            page.wait_for_url("**/admin/lifecycle/pendingdeletion/?status__exact=pending")
            assert page.locator("#result_list tbody tr").count() == 1
        finally:
            browser.close()


# Lines a cell's text is laid out on: the distinct tops of its text's line boxes.
LINES = """(cell) => {
  const range = document.createRange();
  range.selectNodeContents(cell);
  const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
  return {lines: tops.size, words: cell.innerText.trim().split(/\\s+/).length,
          width: cell.getBoundingClientRect().width};
}"""


def test_the_memories_list_is_readable_at_1280_px(live_server, people) -> None:
    with sync_api.sync_playwright() as playwright:
        browser = _browser(playwright)
        try:
            page = _logged_in(browser, live_server, width=1280, height=800)
            page.goto(f"{live_server.url}/admin/lifecycle/memory/")
            cells = page.locator("#result_list td.field-short_text")
            assert cells.count() >= 5
            measured = [cells.nth(i).evaluate(LINES) for i in range(cells.count())]
            longest = max(measured, key=lambda m: m["words"])
            assert longest["words"] >= 14  # the long message, cut at 80 characters
            for m in measured:
                # Several words on a line (at one word a line, lines == words), and a readable
                # width.
                assert m["lines"] <= max(1, m["words"] // 3), measured
                assert m["width"] >= 200, measured
        finally:
            browser.close()
