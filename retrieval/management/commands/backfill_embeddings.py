"""manage.py backfill_embeddings [--tenant NAME] [--limit N] [--dry-run]: embed what is still
missing."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from tqdm import tqdm

from retrieval.embedding import backfill_embeddings, pending_embeddings
from retrieval.management.commands._tenants import selected_tenants


class Command(BaseCommand):
    help = (
        "Embed chunks that have no embedding of the current model (new, failed, or made by another "
        "model), in batches, with a progress bar. --dry-run only counts them."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="Tenant name (default: every tenant).")
        parser.add_argument(
            "--limit", type=int, default=None, help="At most this many chunks per tenant."
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Count what would be embedded; change nothing."
        )
        parser.add_argument("--no-progress", action="store_true", help="No progress bar.")

    def handle(self, *args: Any, **options: Any) -> None:
        report: dict[str, Any] = {"dry_run": options["dry_run"], "tenants": {}}
        for tenant in selected_tenants(options["tenant"]):
            pending = pending_embeddings(tenant_id=tenant.pk).count()
            if options["dry_run"] or not pending:
                report["tenants"][tenant.name] = {"pending": pending}
                continue
            total = pending if options["limit"] is None else min(pending, options["limit"])
            bar = tqdm(
                total=total,
                unit="chunk",
                desc=tenant.name,
                disable=options["no_progress"],
                file=self.stderr._out,
            )
            try:
                result = backfill_embeddings(
                    tenant_id=tenant.pk,
                    limit=options["limit"],
                    progress=lambda embedded, failed: bar.update(embedded + failed - bar.n),  # noqa: B023
                )
            finally:
                bar.close()
            report["tenants"][tenant.name] = {"pending": pending, **result}
        self.stdout.write(json.dumps(report, indent=2))
