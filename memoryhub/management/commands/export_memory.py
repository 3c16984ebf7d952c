"""manage.py export_memory --tenant NAME [--workspace W | --session S | --user U] [--output
FILE]."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import Tenant
from memoryhub.errors import DomainError
from memoryhub.transfer import ExportScope, export_memory


class Command(BaseCommand):
    help = (
        "Export a tenant, workspace, session or end user as JSON with a schema version"
        " (docs/memory-model.md#export-and-import)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True)
        group = parser.add_mutually_exclusive_group()
        group.add_argument("--workspace")
        group.add_argument("--session")
        group.add_argument("--user", help="An end user's id: everything of hers.")
        parser.add_argument("--output", "-o", help="File to write (default: standard output).")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(name=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"No tenant named {options['tenant']!r}.")
        if options["user"]:
            scope = ExportScope("user", user=options["user"])
        elif options["session"]:
            scope = ExportScope("session", session=options["session"])
        elif options["workspace"]:
            scope = ExportScope("workspace", workspace=options["workspace"])
        else:
            scope = ExportScope("tenant")
        try:
            data = export_memory(tenant=tenant, scope=scope)
        except DomainError as exc:
            raise CommandError(exc.message) from None
        text = json.dumps(data, ensure_ascii=False, sort_keys=True)
        if options["output"]:
            with open(options["output"], "w", encoding="utf-8") as fh:
                fh.write(text)
            self.stderr.write(
                f"Wrote {len(data['sessions'])} sessions, {len(data['chunks'])} chunks to"
                f" {options['output']}"
            )
        else:
            self.stdout.write(text)
