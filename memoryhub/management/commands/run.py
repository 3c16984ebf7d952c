"""Run everything: database, migrations, first-start bootstrap, web server, task clusters and
lanes."""

from __future__ import annotations

import logging.config
import os
import secrets
import shlex
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from django.db import connections, transaction

from accounts.models import ApiKey, Tenant
from memoryhub.front import front_pages
from memoryhub.plumbing.env import WILDCARD_ADDRESSES
from memoryhub.plumbing.logs import logging_config
from memoryhub.plumbing.serving import hand_over
from memoryhub.plumbing.still import saying_still
from memoryhub.plumbing.supervision import Supervisor
from memoryhub.signals import BackgroundStep, cluster_starting, service_starting
from memoryhub.tasks import MAINTENANCE

DEMO_TENANT = "demo"
# What the first start's agent key may do: read and write its tenant's memory, nothing an operator
# does.
AGENT_SCOPES = ("read", "write")
# A supervisor (systemd, a container runtime) sends SIGKILL 10 s after SIGTERM: in-flight requests
# get this long, the cluster a little more, and the embedded PostgreSQL the rest.
WEB_GRACE_SECONDS = 5
# Migrating a new database, measured on a 2-core VM (the embedded PostgreSQL, 2026-11).
MIGRATE_SECONDS_HINT = 15


def create_key_hint() -> str:
    """The command that makes a new API key for the demo tenant, as typed from the checkout."""
    return f"{manage_hint()} create_api_key --tenant {DEMO_TENANT}"


def manage_hint() -> str:
    """`manage.py` as typed from the checkout: the virtual environment's Python and, when it is not
    the default one, this start's data folder (or database), so that a command acts where this
    server reads."""
    python = Path(sys.executable)
    try:
        python = python.relative_to(Path.cwd())
    except ValueError:
        pass
    manage = Path(settings.BASE_DIR) / "manage.py"
    try:
        manage = manage.relative_to(Path.cwd())
    except ValueError:
        pass
    env = ""  # a DATABASE_URL is in the operator's environment already, and a secret: not printed
    if (
        settings.EMBEDDED_DATABASE
        and Path(settings.DATA_DIR) != Path(settings.BASE_DIR) / ".memoryhub"
    ):
        env = f"MEMORYHUB_DATA_DIR={shlex.quote(str(settings.DATA_DIR))} "
    return f"{env}{shlex.quote(str(python))} {shlex.quote(str(manage))}"


def local_host(host: str) -> str:
    """The address, as a URL writes it, that a browser on this machine uses for the host the
    server binds."""
    if host in WILDCARD_ADDRESSES:
        return "127.0.0.1"
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def page_lines(base: str) -> list[str]:
    """The pages a person opens next, one a line, under the serving line."""
    pages = front_pages()
    named = [
        ("API reference", pages["reference"]),
        ("console", pages["console"]),
        ("health", pages["health"]),
        ("MCP", pages["mcp"]),
    ]
    return [f"  {name:<14} {base}{path}" for name, path in named]


class Command(BaseCommand):
    help = (
        "Serve the API, the MCP endpoint and the admin (gunicorn with uvicorn workers) and run the "
        "background lanes until Ctrl-C."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=settings.HOST)
        parser.add_argument("--port", type=int, default=settings.PORT)
        parser.add_argument("--web-workers", type=int, default=settings.WEB_WORKERS)
        parser.add_argument(
            "--no-cluster",
            action="store_true",
            help="Do not start the task clusters and background lanes.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # This process logs as its children do (start_children): the terminal is a person's.
        logging.config.dictConfig(
            logging_config(settings.LOG_LEVEL, settings.LOG_FORMAT, self.log_file())
        )
        # Every process started from here logs there too, the start-up steps' included (the
        # model's export wrote its JSON lines on the terminal).
        os.environ["LOG_FILE"] = self.log_file()
        self.stdout.write(f"MemoryHub data folder: {settings.DATA_DIR}")
        supervisor = Supervisor(
            settings.DATA_DIR if settings.EMBEDDED_DATABASE else None,
            say=self.stdout.write,
            warn=self.stderr.write,
            max_restarts=settings.MEMORYHUB_PG_RESTARTS,
        )
        # From here on, even a SIGKILL of this process leaves no database running.
        supervisor.start_guard()
        if settings.EMBEDDED_DATABASE:
            from memoryhub.plumbing.embedded_pg import raise_shared_buffers

            connections.close_all()  # nothing may hold a connection across the restart
            if raise_shared_buffers(settings.DATA_DIR, settings.EMBEDDED_SHARED_BUFFERS_MB):
                self.stdout.write(
                    "Embedded PostgreSQL: shared buffers set to "
                    f"{settings.EMBEDDED_SHARED_BUFFERS_MB} MB."
                )
        self.stdout.write(
            "Applying database migrations"
            + (f" (first start: about {MIGRATE_SECONDS_HINT} s)…" if self.fresh() else "…")
        )
        with saying_still(self.stdout.write, "applying migrations"):
            call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write("Database ready and migrated.")
        # Slow preparation (the ONNX model, first start only) runs beside the service: the web
        # server answers meanwhile (searches by the torch model, /health/ says so); its workers
        # take up the fast model once it is made.
        steps = [
            step
            for _, step in service_starting.send(sender=self.__class__, background=True)
            if isinstance(step, BackgroundStep)
        ]
        self.steps: list[tuple[Any, BackgroundStep]] = []
        for step in steps:
            self.stdout.write(step.starting)
            supervisor.adopt_helper(step.process, lambda code: None)  # the guard learns of it
            self.steps.append((step.process, step))
        if not options["no_cluster"]:
            # The cluster's own schedules (built-in cadences, dispatcher) follow this start's
            # settings.
            cluster_starting.send(sender=self.__class__)
        self.bootstrap()
        connections.close_all()

        self.serve(options, supervisor)

    @staticmethod
    def fresh() -> bool:
        """Whether no migration was applied yet (a new data folder or database)."""
        from django.db.migrations.recorder import MigrationRecorder

        return not MigrationRecorder(connections["default"]).has_table()

    def serve(self, options: dict[str, Any], supervisor: Supervisor) -> None:
        """Hand over to the supervising process (memoryhub.plumbing.serving, without Django): it
        starts the web server and the background processes, says where the service answers, and
        watches them and the embedded database until a signal."""
        host, port = options["host"], options["port"]
        base = f"http://{local_host(host)}:{port}/"
        serving = [
            self.style.SUCCESS(
                f"MemoryHub is serving {base}"
                + ("" if options["no_cluster"] else " with the task cluster")
                + ". Ctrl-C stops it."
            ),
            *page_lines(base.rstrip("/")),
        ]
        if self.log_file() not in ("", "-"):
            serving.append(
                f"Request and background logs: {self.log_file()} (LOG_FILE=- shows them here)."
            )
        warnings = []
        if host in WILDCARD_ADDRESSES and not os.environ.get("ALLOWED_HOSTS"):
            warnings.append(
                "Serving on every interface, but ALLOWED_HOSTS is not set: only requests "
                "for localhost are answered (set ALLOWED_HOSTS to the names clients use)."
            )
        assert supervisor.guard is not None
        plan = {
            "port": port,
            "health_url": f"{base}api/v1/health/",
            "children": self.start_children(options),
            "serving": serving,
            "warnings": warnings,
            "helpers": [
                {"pid": child.pid, "finished": step.finished, "failed": step.failed}
                for child, step in self.steps
            ],
            "data_dir": str(supervisor.data_dir) if supervisor.data_dir is not None else None,
            "restarts_dir": str(settings.DATA_DIR),
            "max_restarts": supervisor.max_restarts,
            "log_level": settings.LOG_LEVEL,
            "log_format": settings.LOG_FORMAT,
            "log_file": self.log_file(),
        }
        hand_over(plan, supervisor.guard, Path(settings.DATA_DIR))

    @staticmethod
    def log_file() -> str:
        """Where the children log: the operator's LOG_FILE ("-": the terminal), else a file in the
        data folder, so that the terminal shows people's lines and warnings, not every request."""
        return os.environ.get("LOG_FILE", str(Path(settings.DATA_DIR) / "logs" / "memoryhub.log"))

    def start_children(self, options: dict[str, Any]) -> list[dict[str, Any]]:
        """Each child's name, command and environment (beyond this process's), and whether it is a
        task cluster: started, and restarted, by memoryhub.plumbing.serving; the web server
        first."""
        # Own sessions: a terminal's Ctrl-C must reach only us; we stop the children one by one
        # (signalling qcluster's whole group can deadlock it).
        env = {
            "DATABASE_URL": settings.DATABASE_URL,
            "SECRET_KEY": settings.SECRET_KEY,
            "HOST": options["host"],
            "LOG_FILE": self.log_file(),
        }
        # ASGI runs each request in a thread of its own, so persistent per-thread connections would
        # pile up: the web workers share a connection pool instead (DB_POOL=false turns it off).
        web_env = {**env, "DB_POOL": os.environ.get("DB_POOL", "true")}
        # uvicorn workers (asyncio) under gunicorn: a slow or idle client holds no thread.
        web = [
            sys.executable,
            "-m",
            "gunicorn",
            "memoryhub.plumbing.asgi:application",
            "--config",
            "python:memoryhub.plumbing.gunicorn_conf",
            "--bind",
            f"{options['host']}:{options['port']}",
            "--workers",
            str(options["web_workers"]),
            "--worker-class",
            "memoryhub.plumbing.webserver.Worker",
            "--timeout",
            "120",
            "--graceful-timeout",
            str(WEB_GRACE_SECONDS),
            "--log-level",
            "warning",
        ]
        children = [{"name": "web", "command": web, "env": web_env, "cluster": False}]
        if not options["no_cluster"]:
            children += [
                {
                    "name": name,
                    "command": command,
                    "env": {**env, **extra},
                    "cluster": "qcluster" in command,
                }
                for name, command, extra in self.background_commands()
            ]
        return children

    def background_commands(self) -> list[tuple[str, list[str], dict[str, str]]]:
        """The clusters and the lanes (docs/operating.md#background-work): user schedule runs (the
        default cluster), the built-in cadences and bulk jobs (the maintenance cluster), and one
        process for every lane, each lane at its own niceness (memoryhub.management.commands.work:
        the dispatcher claims due schedules every second at normal priority, embedding and
        summarising are niced so that requests come first)."""
        manage = [sys.executable, str(settings.BASE_DIR / "manage.py")]
        return [
            ("schedules cluster", [*manage, "qcluster"], {}),
            ("maintenance cluster", [*manage, "qcluster"], {"Q_CLUSTER_NAME": MAINTENANCE}),
            ("lanes", [*manage, "work"], {}),
        ]

    @transaction.atomic
    def bootstrap(self) -> None:
        """On first start: a demo tenant with two keys (one for agents, read and write; one with the
        admin scope, for the operator) and an admin user for the console, each shown once."""
        if Tenant.objects.filter(name=DEMO_TENANT).exists():
            self.stdout.write(
                f"Tenant {DEMO_TENANT!r} exists; keys and passwords were shown on first start. "
                f"A new key: {create_key_hint()}"
            )
            return
        tenant, _ = Tenant.get_or_create_named(DEMO_TENANT)
        # An agent's key cannot forget users, delete workspaces or manage webhooks: the admin scope
        # stays with the operator, on a key of its own.
        agent = ApiKey.create_key(tenant=tenant, name="agent key", scopes=AGENT_SCOPES)
        admin = ApiKey.create_key(tenant=tenant, name="admin key")
        user_model = get_user_model()
        username = settings.MEMORYHUB_ADMIN_USER
        password = settings.MEMORYHUB_ADMIN_PASSWORD or secrets.token_urlsafe(12)
        created_admin = not user_model.objects.filter(username=username).exists()
        if created_admin:
            user_model.objects.create_superuser(username=username, email="", password=password)
        lines = [
            "First start: created these. They are shown ONCE; copy them now.",
            f"  tenant:     {tenant.name}",
            f"  agent key:  {agent.raw}",
            (
                f"              ({', '.join(AGENT_SCOPES)}: the key to give agents and apps, KEY="
                " in the README)"
            ),
            f"  admin key:  {admin.raw}",
            (
                f"              ({', '.join(admin.api_key.scopes)}: also forgets users, deletes"
                " workspaces, manages webhooks; keep it for yourself)"
            ),
        ]
        if created_admin:
            lines += [
                f"  console:    user {username!r}, password {password}",
                (
                    f"              (a new password, any time: {manage_hint()} changepassword"
                    f" {username})"
                ),
            ]
        lines += [f"Another key, any time: {create_key_hint()}"]
        width = max(len(line) for line in lines) + 4
        self.stdout.write("=" * width)
        for line in lines:
            self.stdout.write(self.style.WARNING(line))
        self.stdout.write("=" * width)
