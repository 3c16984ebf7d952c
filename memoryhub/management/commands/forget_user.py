"""manage.py forget_user --tenant NAME USER_ID: delete every row of an end user
(docs/memory-model.md#sharing)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import Tenant
from memoryhub.forget import forget_user_report


class Command(BaseCommand):
    help = (
        "Forget an end user: delete all their rows in one tenant, in one transaction, and remove"
        " their words from run outputs, notifications and consolidation reports; prints counts per"
        " table."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("user_id")
        parser.add_argument("--tenant", required=True, help="Tenant name.")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(name=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"No tenant named {options['tenant']!r}.")
        if not options["user_id"]:
            raise CommandError("user_id must not be empty.")
        report = forget_user_report(tenant_id=tenant.pk, user_id=options["user_id"])
        self.stdout.write(
            json.dumps(
                {
                    "user_id": options["user_id"],
                    "deleted": report["deleted"],
                    "total": sum(report["deleted"].values()),
                    "redacted": report["redacted"],
                },
                indent=2,
            )
        )
