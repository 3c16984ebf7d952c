"""manage.py stats [--tenant NAME]: the memory statistics of each tenant, as JSON."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from retrieval.management.commands._tenants import selected_tenants
from retrieval.stats import memory_stats, most_used


class Command(BaseCommand):
    help = (
        "Memory statistics per tenant: sessions, events, unsummarised messages, chunks by kind,"
        " embedding coverage and errors, notes/facts/summaries/documents/schedules, and the task"
        " queue (all tenants' tasks: GET /stats/ leaves those figures out), and the most used"
        " memories with their access counts (the figure the API, the admin and the explorer show)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="Tenant name (default: every tenant).")

    def handle(self, *args: Any, **options: Any) -> None:
        report = {
            tenant.name: {
                **memory_stats(tenant, cluster_queue=True),
                "most_used": most_used(tenant),
            }
            for tenant in selected_tenants(options["tenant"])
        }
        self.stdout.write(json.dumps(report, indent=2, default=str))
