"""The operator console's page timings with the LoCoMo conversations loaded (~5.9k events), in a
throwaway database (figures, not a test); optionally screenshots of each page (Playwright +
Debian Chromium).

    .venv/bin/python -m bench.console [--runs 5] [--screenshots DIR]

Loads every LoCoMo turn through the real pipeline (hash embedder), gives each conversation an end
user (its first speaker), adds facts and notes per user, a pending prune of 300 memories and a
merge, a day of dashboard samples and search counts; then times each page through Django's test
client (median of --runs, server-side time including the queries). The database (bench_console)
is dropped at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any


def seed(conversations: list[dict[str, Any]]) -> dict[str, Any]:
    from django.contrib.auth.models import User
    from django.utils import timezone

    from bench.common import ingest
    from memoryhub.models import ApiUsage, Fact, MetricSample, Note, Session
    from memoryhub.signals import memory_saved
    from retrieval.lifecycle.models import ConsolidationReport, PendingDeletion
    from retrieval.models import Chunk

    ingested = ingest(conversations, "locomo")
    key, turns, seconds = ingested.key, ingested.turn_at, ingested.seconds
    print(f"ingested {len(turns)} turns in {seconds:.1f} s; chunks {Chunk.objects.count()}")
    tenant = key.tenant
    for conv in conversations:
        user = conv["sessions"][0]["turns"][0]["speaker"]
        sessions = Session.objects.filter(
            tenant=tenant, external_id__startswith=f"{conv['conversation_id']}-"
        )
        sessions.update(user_id=user, agent="companion")
        Chunk.objects.filter(session__in=sessions).update(user_id=user)
        first = sessions.order_by("pk").first()
        for i, turn in enumerate(conv["sessions"][0]["turns"][:10]):
            fact = Fact.objects.create(
                tenant=tenant,
                workspace_id=first.workspace_id,
                user_id=user,
                category="profile",
                key=f"{conv['conversation_id']}-{i}",
                content=turn["text"][:300],
                source="extractor",
            )
            memory_saved.send(sender=Fact, kind="fact", instance=fact)
        note = Note.objects.create(
            tenant=tenant,
            workspace_id=first.workspace_id,
            user_id=user,
            content=f"{user} prefers short answers.",
            source="agent",
        )
        memory_saved.send(sender=Note, kind="note", instance=note)
    report = ConsolidationReport.objects.create(tenant=tenant)
    ids = list(
        Chunk.objects.filter(tenant=tenant, kind="event")
        .order_by("pk")
        .values_list("pk", flat=True)[:302]
    )
    prune = PendingDeletion.objects.create(
        tenant=tenant, report=report, step="prune", chunk_ids=ids[:300]
    )
    merge = PendingDeletion.objects.create(
        tenant=tenant,
        report=report,
        step="merge",
        chunk_ids=[ids[301]],
        payload={"survivor": ids[300]},
    )
    now = timezone.now()
    total = Chunk.objects.filter(tenant=tenant).count()
    events = sum(Session.objects.filter(tenant=tenant).values_list("event_count", flat=True))
    MetricSample.objects.bulk_create(
        [  # a day of samples: an import arriving, then embedded
            MetricSample(
                tenant=tenant,
                at=now - timedelta(minutes=10 * i),
                events=max(events - 40 * i, 0),
                chunks=max(total - 40 * i, 0),
                pending_embedding=min(40 * i, 600) if i < 30 else 0,
            )
            for i in range(144, 0, -1)
        ]
    )
    for day in range(30):
        ApiUsage.objects.create(
            tenant=tenant,
            day=timezone.localdate() - timedelta(days=day),
            name="search",
            requests=50 + 7 * day % 40,
            errors=day % 3,
            total_ms=(50 + 7 * day % 40) * (20 + day),
        )
    User.objects.create_superuser("bench", "", "bench-password-123")
    biggest = Session.objects.filter(tenant=tenant).order_by("-event_count").first()
    user = biggest.user_id
    return {
        "tenant": tenant,
        "prune": prune,
        "merge": merge,
        "session": biggest,
        "user": user,
        "report": report,
    }


def pages(w: dict[str, Any]) -> dict[str, str]:
    t, s = w["tenant"].pk, w["session"]
    return {
        "admin index": "/admin/",
        "dashboard": "/admin/dashboard/",
        "dashboard data (refresh)": "/admin/dashboard/data/",
        "dashboard, one tenant": f"/admin/dashboard/?tenant={t}",
        "explorer: end users": f"/admin/console/explorer/?tenant={t}",
        "explorer: a user's memories": f"/admin/console/explorer/?tenant={t}&user={w['user']}",
        "explorer: search": (
            f"/admin/console/explorer/?tenant={t}&user={w['user']}&q=support+group+adoption"
        ),
        "explorer: search, memory profile": (
            f"/admin/console/explorer/?tenant={t}&user={w['user']}&q=painting&profile=memory"
        ),
        "context preview": (
            f"/admin/console/context/?tenant={t}&session={s.external_id}&query=what+did+she+paint"
        ),
        f"transcript ({s.event_count} messages)": f"/admin/memoryhub/session/{s.pk}/transcript/",
        "sessions list": "/admin/memoryhub/session/",
        "events of a session": f"/admin/memoryhub/event/?session__id__exact={s.pk}",
        "memories list": "/admin/lifecycle/memory/",
        "pending reviews": "/admin/lifecycle/pendingdeletion/",
        "review: prune of 300": f"/admin/lifecycle/pendingdeletion/{w['prune'].pk}/change/",
        "review: merge": f"/admin/lifecycle/pendingdeletion/{w['merge'].pk}/change/",
        "consolidation preview (dry run)": f"/admin/console/consolidation/?tenant={t}",
        "task queue (failures)": "/admin/django_q/failure/",
        "import and export": "/admin/transfer/",
    }


def time_pages(urls: dict[str, str], runs: int) -> None:
    from django.contrib.auth.models import User
    from django.test import Client

    client = Client()
    client.force_login(User.objects.get(username="bench"))
    print("\n| page | median ms | max ms | bytes |\n|---|---|---|---|")
    for label, url in urls.items():
        times, size = [], 0
        for _ in range(runs):
            started = time.perf_counter()
            response = client.get(url)
            times.append(1000 * (time.perf_counter() - started))
            assert response.status_code == 200, (url, response.status_code)
            size = len(response.content)
        print(f"| {label} | {statistics.median(times):.0f} | {max(times):.0f} | {size:,} |")


def screenshots(urls: dict[str, str], folder: Path, runs: int) -> None:
    """A screenshot of each page, and its time in the browser (navigation to network idle)."""
    from django.contrib.staticfiles.handlers import StaticFilesHandler
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
    from django.core.wsgi import get_wsgi_application
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadedWSGIServer(("127.0.0.1", 0), Quiet)
    server.set_app(StaticFilesHandler(get_wsgi_application()))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    folder.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--no-sandbox"]
        )
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.goto(f"{base}/admin/login/")
        page.fill("#id_username", "bench")
        page.fill("#id_password", "bench-password-123")
        page.click("input[type=submit]")
        print(
            "\n| page (in Chromium) | load, median ms | load, max ms | settled, median ms"
            " |\n|---|---|---|---|"
        )
        for i, (label, url) in enumerate(urls.items()):
            if "data" in label:
                continue
            loads, settled = [], []
            for _ in range(runs):
                started = time.perf_counter()
                page.goto(base + url, wait_until="load")  # the page, its styles and scripts
                loads.append(1000 * (time.perf_counter() - started))
                # Settled: what scripts fetch after load too (the dashboard's chart data).
                # Playwright calls the network idle after 500 ms without requests; those 500 ms are
                # taken off.
                try:
                    page.wait_for_load_state("networkidle", timeout=10_000)
                    settled.append(1000 * (time.perf_counter() - started) - 500)
                except PlaywrightTimeout:  # requests kept going (a polling page): say so, go on
                    pass
            quiet = f"{statistics.median(settled):.0f}" if settled else "never quiet for 10 s"
            print(
                f"| {label} | {statistics.median(loads):.0f} | {max(loads):.0f} | {quiet} |",
                flush=True,
            )
            name = (
                f"{i:02d}-"
                + "".join(c if c.isalnum() else "-" for c in label.lower()).strip("-")[:50]
                + ".png"
            )
            page.screenshot(path=str(folder / name), full_page=False)
        browser.close()
    server.shutdown()
    print(f"screenshots in {folder}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--screenshots", type=Path, default=None)
    parser.add_argument("--limit-conversations", type=int, default=None)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    os.environ["TEST_DB_NAME"] = "bench_console"
    os.environ["MEMORYHUB_EMBEDDER"] = "hash"
    os.environ["MEMORYHUB_TASKS_EAGER"] = "true"
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    from memoryhub.plumbing.embedded_pg import ensure_running

    ensure_running()
    django.setup()
    from django.conf import settings
    from django.db import connection

    from bench.common import DATA_DIR, load

    DATA = DATA_DIR / "locomo10.jsonl"

    settings.ALLOWED_HOSTS = ["*"]
    conversations = load(DATA, args.limit_conversations)
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        world = seed(conversations)
        urls = pages(world)
        time_pages(urls, args.runs)
        if args.screenshots:
            screenshots(urls, args.screenshots, args.runs)
    finally:
        connection.creation.destroy_test_db(connection.settings_dict["NAME"], verbosity=0)


if __name__ == "__main__":
    main()
