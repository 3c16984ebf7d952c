"""manage.py import_memory --tenant NAME FILE: import an export, all or nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import Tenant
from memoryhub.errors import DomainError
from memoryhub.transfer import ON_CONFLICT, import_memory, parse_export_file


class Command(BaseCommand):
    help = (
        "Import a MemoryHub export into a tenant (created if missing); nothing is stored if it"
        " fails."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument("--tenant", required=True)
        parser.add_argument(
            "--on-conflict",
            choices=ON_CONFLICT,
            default="fail",
            help=(
                "sessions and records the tenant holds already: fail (the default), skip "
                "(keep them, import the rest) or merge (add what they lack)"
            ),
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["file"])
        if not path.is_file():
            raise CommandError(f"No file {path}.")
        try:
            data = parse_export_file(path.read_bytes())
            tenant, _ = Tenant.get_or_create_named(options["tenant"])
            report = import_memory(tenant=tenant, data=data, on_conflict=options["on_conflict"])
        except DomainError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from None
        self.stdout.write(json.dumps(report.as_dict(), indent=2))
