"""manage.py reindex_tool_calls [--tenant NAME] [--dry-run]: re-extract the text of tool-call
events."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from tqdm import tqdm

from memoryhub.models import Event
from retrieval.indexing import reindex_tool_calls
from retrieval.management.commands._tenants import selected_tenants


class Command(BaseCommand):
    help = (
        "Re-extract the searchable text of tool-call events (content + arguments, or the"
        " synthesised 'Called <tool> with <args>') and replace chunks that no longer match."
        " --dry-run only counts."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="Tenant name (default: every tenant).")
        parser.add_argument(
            "--dry-run", action="store_true", help="Count what would change; change nothing."
        )
        parser.add_argument("--no-progress", action="store_true", help="No progress bar.")

    def handle(self, *args: Any, **options: Any) -> None:
        report: dict[str, Any] = {"dry_run": options["dry_run"], "tenants": {}}
        for tenant in selected_tenants(options["tenant"]):
            sessions = (
                Event.objects.filter(tenant_id=tenant.pk)
                .exclude(tool_name="")
                .values("session_id")
                .distinct()
                .count()
            )
            bar = tqdm(
                total=sessions,
                unit="session",
                desc=tenant.name,
                disable=options["no_progress"],
                file=self.stderr._out,
            )
            try:
                result = reindex_tool_calls(
                    tenant_id=tenant.pk,
                    dry_run=options["dry_run"],
                    progress=lambda done: bar.update(done - bar.n),  # noqa: B023
                )
            finally:
                bar.close()
            report["tenants"][tenant.name] = asdict(result)
        self.stdout.write(json.dumps(report, indent=2))
