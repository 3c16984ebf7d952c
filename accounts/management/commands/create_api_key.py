"""Create a tenant (if missing) and an API key; the key alone is the last line of stdout."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from accounts.models import SCOPES, ApiKey, Tenant, Workspace


class Command(BaseCommand):
    help = "Create an API key for a tenant (the tenant is created if missing). Prints the key last."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True, help="Tenant name (created if missing).")
        # Not admin by default: an admin key manages webhooks, where MemoryHub sends
        # requests and whose replies a run stores. Ask for it: --scopes read,write,admin.
        parser.add_argument(
            "--scopes",
            default="read,write",
            help=f"Comma-separated scopes out of {', '.join(SCOPES)} (default: read,write).",
        )
        parser.add_argument("--workspace", default=None, help="Limit the key to this workspace.")
        parser.add_argument("--user", default="", help="Limit the key to this end user (user_id).")
        parser.add_argument("--name", default="", help="A label for the key.")

    def handle(self, *args: Any, **options: Any) -> None:
        scopes = [s.strip() for s in options["scopes"].split(",") if s.strip()]
        bad = [s for s in scopes if s not in SCOPES]
        if bad or not scopes:
            raise CommandError(f"Unknown scopes {bad}; choose from {', '.join(SCOPES)}.")
        user = options["user"].strip()
        if len(user) > ApiKey._meta.get_field("user_id").max_length:
            raise CommandError("--user is at most 200 characters.")
        name = options["tenant"].strip()
        if not name or len(name) > Tenant._meta.get_field("name").max_length:
            raise CommandError("--tenant needs a name of 1 to 100 characters.")
        with transaction.atomic():
            tenant, created = Tenant.get_or_create_named(name)
            workspace = (
                Workspace.get_named(tenant, options["workspace"]) if options["workspace"] else None
            )
            new = ApiKey.create_key(
                tenant=tenant,
                scopes=scopes,
                workspace=workspace,
                name=options["name"],
                user_id=user,
            )
        if created:
            self.stderr.write(f"Created tenant {tenant.name!r}.")
        limit = (f", workspace {workspace.name!r}" if workspace else "") + (
            f", user {user!r}" if user else ""
        )
        self.stderr.write(
            f"API key {new.api_key.prefix}… for {tenant.name!r} (scopes"
            f" {','.join(new.api_key.scopes)}{limit}). It is shown only once:"
        )
        self.stdout.write(new.raw)
