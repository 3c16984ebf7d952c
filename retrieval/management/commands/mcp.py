"""`manage.py mcp --key mh_…`: the MCP tools over stdio, for an agent that starts MemoryHub itself
(desktop assistants, IDE agents). Every call acts as the key, checked again on every call."""

from __future__ import annotations

import os
from typing import Any

import anyio
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, close_old_connections
from mcp.server.stdio import stdio_server
from rest_framework.exceptions import AuthenticationFailed

from accounts.authentication import authenticate_key
from retrieval.mcp_server.server import build_server


class Command(BaseCommand):
    help = (
        "Serve MemoryHub's MCP tools over stdio (stdin/stdout), acting as one API key. "
        "stdout carries the protocol only; messages go to stderr."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--key",
            default=os.environ.get("MEMORYHUB_API_KEY", ""),
            help="The API key the tools act as (default: $MEMORYHUB_API_KEY).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        raw = options["key"].strip()
        if not raw:
            raise CommandError("Give an API key: --key mh_… or MEMORYHUB_API_KEY.")
        try:
            # refuse a bad key at once rather than on the first call
            key = authenticate_key(raw, cached=False)
        except AuthenticationFailed as exc:
            raise CommandError(str(exc.detail)) from None
        except DatabaseError as exc:  # no tables (never migrated), or the server is unreachable
            where = settings.DATA_DIR if settings.EMBEDDED_DATABASE else "DATABASE_URL"
            raise CommandError(
                f"MemoryHub's database ({where}) cannot be used:"
                f" {str(exc).strip().splitlines()[0]}. Start MemoryHub once with make run (it"
                " creates and migrates it)."
            ) from None
        finally:
            close_old_connections()
        self.stderr.write(
            f"MemoryHub MCP server on stdio, acting as key {key.prefix}… of tenant"
            f" {key.tenant.name!r}."
        )
        server = build_server(lambda ctx: authenticate_key(raw, cached=False))
        anyio.run(_serve, server)


async def _serve(server: Any) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
