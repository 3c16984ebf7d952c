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
    post_events(client, "browser-chat", {"role": "user", "content": "Where is the lighthouse?"},
                {"role": "assistant", "content": "On the northern cape."})


def test_operator_logs_in_and_browses_sessions_and_events(live_server, staff_and_data) -> None:
    # All database work happens before Playwright starts: its sync API runs an event loop in
    # this thread, where Django refuses ORM calls.
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page()
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
