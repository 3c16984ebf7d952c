"""manage.py consolidate [--tenant NAME] [--dry-run]: run consolidation now, with a progress bar."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from accounts.models import Tenant
from retrieval.lifecycle.consolidation import run_consolidation


class Command(BaseCommand):
    help = (
        "Score, promote, prune, merge, cap and compress memories (docs/lifecycle.md); --dry-run"
        " changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="Tenant name (default: every tenant).")
        parser.add_argument(
            "--dry-run", action="store_true", help="Report what would change; change nothing."
        )
        parser.add_argument("--no-progress", action="store_true", help="No progress bar.")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant_id = None
        if options["tenant"]:
            tenant = Tenant.objects.filter(name=options["tenant"]).first()
            if tenant is None:
                raise CommandError(f"No tenant named {options['tenant']!r}.")
            tenant_id = tenant.pk
        bar = tqdm(total=0, unit="step", disable=options["no_progress"], file=self.stderr._out)

        def progress(done: int, total: int, label: str) -> None:
            bar.total = total
            bar.set_description(label)
            bar.update(done - bar.n)

        try:
            result = run_consolidation(
                tenant_id=tenant_id, dry_run=options["dry_run"], progress=progress
            )
        finally:
            bar.close()
        summary = {
            k: result[k] for k in ("dry_run", "report_id", "counts", "tenants", "duration_ms")
        }
        self.stdout.write(json.dumps(summary, indent=2))
