"""Operator journeys through the console in a real browser (Debian Chromium driven by Playwright):
find a user's memory by meaning, fix a wrong fact and see search change, preview context, approve
a merge, reject a prune, confirm a forget, read a transcript, watch the dashboard move.

Skipped only where no Chromium exists (`.ci/run` installs it). Never downloads a browser. All
database work happens before Playwright starts: its sync API runs an event loop in this thread,
where Django refuses ORM calls; afterwards the pages themselves are checked.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memoryhub.models import Fact, Session
from retrieval.lifecycle.models import ConsolidationReport, PendingDeletion
from retrieval.models import Chunk
from tests.base import make_client, make_key, make_tenant, post_events, remember
from tests.memoryhub.test_admin_browser import NOTE_WIDTH, _browser

CHROMIUM = Path(os.environ.get("MEMORYHUB_TEST_CHROMIUM", "/usr/bin/chromium"))
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

pytestmark = [
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    ),
    pytest.mark.django_db(transaction=True),
]

PASSWORD = "browser-test-password"
TIMEOUT_MS = 20_000


@pytest.fixture
def world(settings, django_user_model, monkeypatch) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # every dashboard refresh takes a sample
    monkeypatch.setattr("memoryhub.metrics.SAMPLE_EVERY_SECONDS", 0)
    django_user_model.objects.create_superuser(username="operator", email="", password=PASSWORD)
    tenant = make_tenant("acme")
    key = make_key(tenant)
    client = make_client(key)
    post_events(
        client,
        "dana-chat",
        {
            "role": "user",
            "content": "I joined a support group for new parents last week.",
            "metadata": {"speaker": "Dana"},
        },
        {"role": "assistant", "content": "That sounds like a good place to share."},
        {
            "role": "assistant",
            "content": "",
            "tool_name": "find_groups",
            "tool_args": {"near": "Lyon"},
        },
        {"role": "user", "content": "My car needs new tyres before winter."},
        {"role": "user", "content": "We are repainting the kitchen blue."},
    )
    session = Session.objects.get(external_id="dana-chat")
    Session.objects.filter(pk=session.pk).update(user_id="dana", agent="helper-bot")
    Chunk.objects.filter(session=session).update(user_id="dana")
    where = {"tenant": tenant, "workspace_id": session.workspace_id}
    fact = remember(
        Fact.objects.create(
            **where, user_id="dana", category="family", key="kids", content="Dana has two daughters"
        )
    )
    return {"tenant": tenant, "key": key, "session": session, "fact": fact, "where": where}


@pytest.fixture
def page(live_server: Any, world: dict[str, Any]) -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        browser = _browser(playwright)  # its close() asserts that no page was wider than the window
        try:
            tab = browser.new_page(viewport={"width": 1280, "height": 1000})
            tab.add_init_script(NOTE_WIDTH)
            tab.set_default_timeout(TIMEOUT_MS)
            tab.goto(f"{live_server.url}/admin/login/?next=/admin/")
            tab.fill("#id_username", "operator")
            tab.fill("#id_password", PASSWORD)
            tab.click("input[type=submit]")
            tab.wait_for_url(f"{live_server.url}/admin/")
            tab.base = live_server.url
            yield tab
        finally:
            browser.close()


def open_user(page: Any, tenant: str, user: str) -> None:
    page.goto(f"{page.base}/admin/")
    page.click("#mh-console-links a:has-text('Memory explorer')")
    page.click(f"#mh-tenant-list a:has-text('{tenant}')")
    page.click(f"#mh-users a:has-text('{user}')")


def search(page: Any, query: str) -> list[str]:
    page.fill("#id_q", query)
    page.click("#mh-explorer-search input[type=submit]")
    page.wait_for_selector("#mh-results")
    return [t.strip() for t in page.locator("#mh-results .mh-result .mh-text").all_inner_texts()]


@pytest.mark.minilm
def test_find_a_users_memory_by_meaning(settings, django_user_model, live_server) -> None:  # type: ignore[no-untyped-def]
    settings.MEMORYHUB_EMBEDDER = "minilm"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    django_user_model.objects.create_superuser(username="operator", email="", password=PASSWORD)
    tenant = make_tenant("acme")
    client = make_client(make_key(tenant, user="dana"))
    post_events(
        client,
        "dana-chat",
        {"role": "user", "content": "I joined a support group for new parents."},
        {"role": "user", "content": "My car needs new tyres before winter."},
        {"role": "user", "content": "We are repainting the kitchen blue."},
    )
    with sync_api.sync_playwright() as playwright:
        browser = _browser(playwright)
        try:
            tab = browser.new_page(viewport={"width": 1280, "height": 800})
            tab.add_init_script(NOTE_WIDTH)
            tab.set_default_timeout(60_000)
            tab.goto(f"{live_server.url}/admin/login/?next=/admin/")
            tab.fill("#id_username", "operator")
            tab.fill("#id_password", PASSWORD)
            tab.click("input[type=submit]")
            tab.base = live_server.url
            open_user(tab, "acme", "dana")
            # No word in common with the memory: found by meaning.
            found = search(tab, "meeting other mums and dads who help each other")
            assert found[0] == "I joined a support group for new parents."
            assert "meaning:" in tab.locator("#mh-results .mh-result").first.inner_text()
        finally:
            browser.close()


def test_fix_a_wrong_fact_and_see_search_change(page, world) -> None:
    open_user(page, "acme", "dana")
    assert search(page, "daughters")[0] == "Dana has two daughters"
    page.click("#mh-results .mh-result >> text=edit the fact")
    page.fill("#id_content", "Dana has three sons")
    page.fill("#id_importance", "1.5")
    page.click("input[name=_save]")
    # Said in words, nothing saved. Waited for, not read at once: content() taken while the
    # error page is still arriving holds only its <head>.
    page.wait_for_selector(".errorlist >> text=Importance is between 0 and 1")
    page.fill("#id_importance", "0.6")
    page.click("input[name=_save]")
    page.wait_for_selector("#mh-results")  # back on the explorer, same search
    assert "Dana has two daughters" not in page.locator("#mh-results").inner_text()
    assert search(page, "sons")[0] == "Dana has three sons"


def test_preview_context(page, world) -> None:
    page.goto(f"{page.base}/admin/console/context/")
    page.select_option("#id_tenant", label="acme")
    page.fill("#id_session", "dana-chat")
    page.fill("#id_query", "support group")
    page.click("#mh-context-form input[type=submit]")
    page.wait_for_selector("#mh-context-items")
    markdown = page.locator("#mh-context-markdown").inner_text()
    assert markdown.startswith("## Relevant Memory") and "support group for new parents" in markdown
    assert int(page.locator("#mh-context-tokens").inner_text()) > 0


def _pending(
    world: dict[str, Any], step: str, ids: list[int], payload: dict[str, Any] | None = None
) -> None:
    report = ConsolidationReport.objects.create(tenant=world["tenant"])
    PendingDeletion.objects.create(
        tenant=world["tenant"], report=report, step=step, chunk_ids=ids, payload=payload or {}
    )


@pytest.fixture
def chunks(world: dict[str, Any]) -> dict[str, int]:
    return {c.text: c.pk for c in Chunk.objects.filter(session=world["session"])}


@pytest.fixture
def merge_review(world: dict[str, Any], chunks: dict[str, int]) -> None:
    _pending(
        world,
        "merge",
        [chunks["That sounds like a good place to share."]],
        {"survivor": chunks["I joined a support group for new parents last week."]},
    )


@pytest.fixture
def prune_review(world: dict[str, Any], chunks: dict[str, int]) -> tuple[int, int]:
    keep, other = (
        chunks["My car needs new tyres before winter."],
        chunks["We are repainting the kitchen blue."],
    )
    _pending(world, "prune", [keep, other])
    return keep, other


def test_review_and_approve_a_merge(merge_review, page) -> None:
    page.goto(f"{page.base}/admin/")
    page.click("text=Pending reviews")
    page.click("#result_list tbody tr a >> nth=0")
    row = page.locator(".mh-review-item").first
    cells = row.locator("td").all_inner_texts()
    # side by side
    assert "support group for new parents" in cells[0] and "good place to share" in cells[1]
    row.locator("button:has-text('Approve')").click()
    page.wait_for_selector("text=1 approved")
    assert page.locator("#mh-review-status").inner_text() == "approved"


def test_reject_a_prune(prune_review, page) -> None:
    keep, _ = prune_review
    page.goto(f"{page.base}/admin/lifecycle/pendingdeletion/")
    assert "My car needs new tyres" in page.locator("#result_list").inner_text()  # text, not ids
    page.click("#result_list tbody tr a >> nth=0")
    page.locator(f".mh-review-item[data-chunk='{keep}'] button:has-text('Reject')").click()
    page.wait_for_selector("text=1 kept")
    # Decided, it stays listed with its decision: no buttons left on it.
    decided = page.locator(f".mh-review-item[data-chunk='{keep}']")
    assert decided.locator(".mh-decision").inner_text() == "rejected: kept"
    assert decided.locator("button").count() == 0
    page.click("button:has-text('Reject all')")
    page.wait_for_selector("text=Rejected")
    assert page.locator("#mh-review-status").inner_text() == "rejected"
    open_user(page, "acme", "dana")
    assert "My car needs new tyres before winter." in search(page, "car tyres winter")  # kept


def test_confirm_a_forget(page, world) -> None:
    open_user(page, "acme", "dana")
    facts = page.locator("table.mh-owned[data-kind='fact']")
    facts.locator("a:has-text('Forget')").first.click()
    assert "Dana has two daughters" in page.locator("#mh-going").inner_text()  # what goes, in text
    page.click("input[value^='Yes, forget']")
    page.wait_for_selector("text=They are archived")
    assert (
        "Dana has two daughters"
        not in page.locator("#content-main").inner_text().split("Facts owned")[1]
    )
    page.click("text=restore them from Archived memories")
    assert "Dana has two daughters" in page.locator("#result_list").inner_text()


def test_read_a_transcript(page, world) -> None:
    page.goto(f"{page.base}/admin/memoryhub/session/")
    page.click("#result_list a:has-text('read 5 messages')")
    messages = page.locator("#mh-transcript .mh-message")
    assert messages.count() == 5
    first = messages.nth(0).inner_text()
    assert "#1" in first and "Dana" in first and "support group" in first  # oldest first, by name
    tool = messages.nth(2)
    assert tool.locator("details").get_attribute("open") is None  # folded
    assert not tool.locator("pre").is_visible()
    tool.locator("summary").click()
    assert "Lyon" in tool.locator("pre").inner_text()


def test_dashboard_moves_after_an_ingest(page, world) -> None:
    page.goto(f"{page.base}/admin/dashboard/?refresh=5")
    page.wait_for_selector("#mh-chart-events h3")
    title = page.locator("#mh-chart-events h3")
    before = title.inner_text()
    assert re.search(r"dated that day \(their own created_at\): 5\b", before), before
    response = page.request.post(
        f"{page.base}/api/v1/sessions/new-chat/events/",
        headers={"Authorization": f"Bearer {world['key']}"},
        data={"events": [{"role": "user", "content": f"message {i}"} for i in range(3)]},
    )
    assert response.status == 201
    page.wait_for_function(
        "document.querySelector('#mh-chart-events h3').textContent.includes('their own"
        " created_at): 8')",
        timeout=TIMEOUT_MS,
    )
    # Counted as appended: all 8 arrived today, whether or not the page was open.
    assert re.search(r"arrived \(counted as appended\): 8\b", title.inner_text()), (
        title.inner_text()
    )
    assert page.locator("#mh-chart-backlog canvas").count() == 1  # drawn by the vendored uPlot


@pytest.fixture
def own_export(world: dict[str, Any], tmp_path: Path) -> Path:
    import json

    from memoryhub.transfer import ExportScope, export_memory

    path = tmp_path / "acme.json"
    path.write_text(json.dumps(export_memory(tenant=world["tenant"], scope=ExportScope())))
    return path


def test_re_import_a_tenants_own_export_with_merge(own_export, page) -> None:
    def upload(option: str | None) -> None:
        page.goto(f"{page.base}/admin/transfer/")
        page.select_option("#id_import-tenant", label="acme")
        page.set_input_files("#id_import-file", str(own_export))
        if option:
            page.check(f"input[name='import-on_conflict'][value='{option}']")
        page.click("#mh-import input[type=submit]")

    upload(None)  # the default stops, and says which session and what to do
    error = page.locator("#mh-import .errorlist").inner_text()
    assert "session_exists" in error and "'dana-chat'" in error and "skip or merge" in error
    upload("merge")
    message = page.locator(".messagelist .success").inner_text()
    assert "Imported into acme: nothing;" in message and "merged sessions: dana-chat" in message
    page.goto(f"{page.base}/admin/memoryhub/session/")
    # nothing doubled
    assert page.locator("#result_list a:has-text('read 5 messages')").count() == 1
