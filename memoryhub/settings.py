"""MemoryHub settings: one module, driven by environment variables, loud on bad values.

Only what an operator sets is read from the environment here (docs/configuration.md's settings table
lists exactly these; tests/test_settings_table.py keeps the two equal). Tuning no operator needs
(cadences, batch sizes, thresholds, internal timeouts) is a named constant beside the code that
uses it. The helpers that read the environment live in memoryhub/plumbing/env.py.
"""

from __future__ import annotations

import os
import secrets
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from memoryhub.plumbing.env import (
    allowed_hosts,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_networks,
    env_str,
)
from memoryhub.plumbing.logs import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent

# Model weights ship inside an installed package; nothing may be fetched from a hub at run time.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# No progress bars in the logs (transformers draws one while it loads the weights).
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


DATA_DIR = Path(env_str("MEMORYHUB_DATA_DIR", str(BASE_DIR / ".memoryhub"))).expanduser().resolve()
DEBUG = env_bool("DEBUG", False)

# --- Database -------------------------------------------------------------------------------

DATABASE_URL = env_str("DATABASE_URL", "")
# No DATABASE_URL: MemoryHub runs its own PostgreSQL in DATA_DIR. Importing settings never starts
# it: manage.py, wsgi/asgi, the test setup and the benches call
# memoryhub.plumbing.embedded_pg.ensure_running(), which starts it and points the connection at its
# socket (HOST below is that socket's usual folder).
EMBEDDED_DATABASE = not DATABASE_URL
if EMBEDDED_DATABASE:
    from memoryhub.plumbing.embedded_pg import default_shared_buffers_mb, embedded_database_url

    DATABASE_URL = embedded_database_url(DATA_DIR)
    # `manage.py run` raises the embedded server's shared buffers to this (0: leave them alone).
    EMBEDDED_SHARED_BUFFERS_MB = env_int(
        "MEMORYHUB_PG_SHARED_BUFFERS_MB", default_shared_buffers_mb(), minimum=0
    )
# `manage.py run` starts the embedded PostgreSQL again when it dies, this many times in 10 minutes;
# then it stops (0: stop at once).
MEMORYHUB_PG_RESTARTS = env_int("MEMORYHUB_PG_RESTARTS", 3, minimum=0)


def _database_config(url: str) -> dict[str, Any]:
    import dj_database_url

    try:
        config = dj_database_url.parse(url, conn_max_age=60)
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL: {exc}") from None
    if config.get("ENGINE") != "django.db.backends.postgresql":
        raise ImproperlyConfigured(
            "DATABASE_URL must point at PostgreSQL (postgres:// or postgresql://)"
        )
    options = config.setdefault("OPTIONS", {})
    # A unix-socket URL carries the socket folder as ?host=…
    if "host" in options and not config.get("HOST"):
        config["HOST"] = options.pop("host")
    config["CONN_HEALTH_CHECKS"] = True
    if env_bool("DB_POOL", False):
        config["CONN_MAX_AGE"] = 0
        # A web worker serves at most max_size requests at once (memoryhub.plumbing.asgi.Admitted),
        # so a connection is free for each; one the database does not give within 5 seconds (it is
        # down or restarting) is a 503 database_unavailable with Retry-After.
        options["pool"] = {
            "min_size": 1,
            "max_size": env_int("DB_POOL_SIZE", 8, minimum=1),
            "timeout": 5.0,
        }
    return config


DATABASES = {"default": _database_config(DATABASE_URL)}
# Lets several test runs (and the benches) share one server without dropping each other's
# database: test plumbing, not a setting (read directly, so it is not in docs/configuration.md's
# table).
DATABASES["default"]["TEST"] = {"NAME": os.environ.get("TEST_DB_NAME", "test_memoryhub")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Secrets and hosts ----------------------------------------------------------------------


def _secret_key() -> str:
    key = env_str("SECRET_KEY", "")
    if key:
        return key
    if not EMBEDDED_DATABASE and not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DATABASE_URL points at a server")
    path = DATA_DIR / "secret_key"
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(50))
    return path.read_text().strip()


SECRET_KEY = _secret_key()
# The address `manage.py run` serves on (HOST): with no ALLOWED_HOSTS, the hosts answered follow it.
HOST = env_str("HOST", "127.0.0.1")
PORT = env_int("PORT", 8000, minimum=1)
# Web worker processes of `manage.py run` (uvicorn workers under gunicorn).
WEB_WORKERS = env_int("WEB_WORKERS", 2, minimum=1)
ALLOWED_HOSTS = allowed_hosts(env_str("ALLOWED_HOSTS", ""), HOST)
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in env_str("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]

# --- Requests and the web server (`manage.py run`: uvicorn workers under gunicorn) --------------

# The largest request body (bulk appends included); imports have their own, larger limit. Django's
# own limit is the same number, so there is one limit and the 413 states it.
DATA_UPLOAD_MAX_MEMORY_SIZE = MEMORYHUB_MAX_REQUEST_BYTES = env_int(
    "MEMORYHUB_MAX_REQUEST_BYTES", 16 << 20, minimum=1024
)
MEMORYHUB_IMPORT_MAX_BYTES = env_int("MEMORYHUB_IMPORT_MAX_BYTES", 200 * 1024 * 1024, minimum=1024)
# A client has this long to send its request line and headers, and then this long for its body
# (408 after). Header and URL sizes and keep-alive: memoryhub/plumbing/webserver.py, asgi_body.py.
MEMORYHUB_HEADER_TIMEOUT_SECONDS = env_float("MEMORYHUB_HEADER_TIMEOUT_SECONDS", 10.0, low=0.1)
MEMORYHUB_BODY_TIMEOUT_SECONDS = env_float("MEMORYHUB_BODY_TIMEOUT_SECONDS", 60.0, low=0.1)
# Reverse proxies whose X-Forwarded-For and X-Forwarded-Proto are believed (addresses or CIDR
# networks, comma-separated; none by default). A request from any other peer is taken as it came:
# its own address is the client's (admin lock-out, logs) and its scheme is the connection's.
MEMORYHUB_TRUSTED_PROXIES = env_networks("MEMORYHUB_TRUSTED_PROXIES")

# --- Applications ---------------------------------------------------------------------------

INSTALLED_APPS = [
    # Django's admin with the console's grouped sidebar and header links
    # (memoryhub/plumbing/console_site.py).
    "memoryhub.plumbing.console_site.ConsoleAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "pgtrigger",
    "django_q",
    "axes",
    "accounts",
    "memoryhub",
    "retrieval",
    "scheduling",
    "retrieval.lifecycle",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "memoryhub.api.middleware.RequestLogMiddleware",
    # Last, as django-axes asks: it answers a locked-out admin login before the view runs.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "memoryhub.urls"
WSGI_APPLICATION = "memoryhub.plumbing.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Admin login throttling (django-axes): after 5 failed logins of one user name (from any address),
# or from one address (for any name), that name or address is locked out for 15 minutes (429),
# even with the right password. By name too, so that guesses spread over many addresses are
# counted together; the price is that a guesser can keep the real operator out for the
# cool-off (`manage.py axes_reset_username <name>` lets them in). The address is the connection's,
# or the one a trusted proxy forwarded (uvicorn resolves it before Django sees the request). The
# API's keys never pass through here.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = 5
AXES_COOLOFF_TIME = timedelta(minutes=15)
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
# REMOTE_ADDR only, even should django-ipware be installed: forwarded headers are the web server's
# business, and only from trusted proxies.
AXES_IPWARE_META_PRECEDENCE_ORDER = ("REMOTE_ADDR",)
AXES_RESET_ON_SUCCESS = True

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
# One way of writing dates and times in the console (memoryhub/formats/en/formats.py).
FORMAT_MODULE_PATH = ["memoryhub.formats"]
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Serve admin and docs assets straight from the installed apps, so no collectstatic step is needed.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# --- Cache (the recent-window cache) ---------------------------------------------------------

CACHE_URL = env_str("CACHE_URL", "")
if CACHE_URL.startswith(("redis://", "rediss://")):
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}
    }
elif CACHE_URL:
    raise ImproperlyConfigured(
        "CACHE_URL must be a redis:// URL (or unset for the in-process cache)"
    )
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "memoryhub",
            "OPTIONS": {"MAX_ENTRIES": 5000},
        }
    }

# --- REST API -------------------------------------------------------------------------------

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["accounts.authentication.ApiKeyAuthentication"],
    # The key and its scope, then the query's parameter names (400 unknown_parameter).
    "DEFAULT_PERMISSION_CLASSES": [
        "accounts.permissions.HasApiScope",
        "memoryhub.api.parameters.KnownQueryParameters",
    ],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["memoryhub.api.parsers.CheckedJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "memoryhub.api.errors.api_exception_handler",
    "UNAUTHENTICATED_USER": None,
    # `?format=` is the events' and restore's chat shape (openai, anthropic), not a renderer: the
    # API answers JSON only.
    "URL_FORMAT_OVERRIDE": None,
}
if DEBUG:
    REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"].append(
        "rest_framework.renderers.BrowsableAPIRenderer"
    )

SPECTACULAR_SETTINGS = {
    "TITLE": "MemoryHub API",
    # The full introduction is memoryhub/api/docs.py's DESCRIPTION, put in by its hook below.
    "DESCRIPTION": (
        "Memory for AI agents: sessions, events, search, notes, facts, summaries, schedules."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "memoryhub.api.docs.complete_schema",
    ],
    # Several serializers share these choice sets; name each set once in the schema.
    "ENUM_NAME_OVERRIDES": {
        "MemoryScopeEnum": "memoryhub.searchable.TIERS",
        "SearchScopeEnum": ["conversation", "channel", "workspace", "account", "session"],
        "RoleEnum": "memoryhub.models.Role",
        "ScheduleStatusEnum": "scheduling.models.ScheduleStatus",
        "RunStatusEnum": "scheduling.models.RunStatus",
        # Sessions, schedules and runs each have a `status`: name every set, or one gets a hash.
        "SessionStatusEnum": "memoryhub.models.SessionStatus",
        "NotificationPolicyEnum": "scheduling.models.NotificationPolicy",
    },
}

# --- django-q2: one cluster per lane (memoryhub.tasks) ---------------------------------------

Q_REDIS_URL = env_str("Q_REDIS_URL", "")
_TIMEOUT = 300  # seconds a schedule run may take
_MAINTENANCE_TIMEOUT = 3 * 3600
# The default cluster ("memoryhub") runs user schedule runs only, so that nothing queues in front
# of them. `Q_CLUSTER_NAME=maintenance manage.py qcluster` starts the maintenance cluster: the
# built-in cadences and bulk jobs (consolidation may run for long: its own timeout).
Q_CLUSTER: dict[str, Any] = {
    "name": "memoryhub",
    "workers": env_int("Q_WORKERS", 2, minimum=1),
    "timeout": _TIMEOUT,
    "retry": _TIMEOUT + 60,
    "max_attempts": 3,
    "save_limit": 500,
    "catch_up": False,
    "poll": 0.5,
    "label": "Task queue",
    "ALT_CLUSTERS": {
        "maintenance": {
            "workers": 1,
            "timeout": _MAINTENANCE_TIMEOUT,
            "retry": _MAINTENANCE_TIMEOUT + 60,
            "poll": 2.0,
        },
    },
}
if Q_REDIS_URL:
    Q_CLUSTER["redis"] = Q_REDIS_URL
else:
    Q_CLUSTER["orm"] = "default"

# --- MemoryHub ------------------------------------------------------------------------------

# The MCP endpoint (streamable HTTP, API-key authenticated) is served beside Django at /mcp/ by
# memoryhub.plumbing.asgi; false leaves it out.
MEMORYHUB_ASGI_MOUNTS = (
    {"/mcp/": "retrieval.mcp_server.http.application"}
    if env_bool("MEMORYHUB_MCP_HTTP", True)
    else {}
)
# GET /mcp/ event streams (a stateless server writes nothing to them): each web worker holds at
# most this many per API key and in all (429 past either), and closes one idle this many seconds.
MEMORYHUB_MCP_STREAMS_PER_KEY = env_int("MEMORYHUB_MCP_STREAMS_PER_KEY", 4, minimum=1)
MEMORYHUB_MCP_STREAMS = env_int("MEMORYHUB_MCP_STREAMS", 100, minimum=1)
MEMORYHUB_MCP_STREAM_IDLE_SECONDS = env_float(
    "MEMORYHUB_MCP_STREAM_IDLE_SECONDS", 60.0, low=1.0, high=86400
)
# How long each process reuses an API key it read (0: read it on every request). A key revoked
# elsewhere is refused by every process within this many seconds (at once by the one revoking it).
MEMORYHUB_API_KEY_CACHE_SECONDS = env_float(
    "MEMORYHUB_API_KEY_CACHE_SECONDS", 5.0, low=0.0, high=300.0
)
# Run enqueued background work inline (the stdio MCP server, tests, one-off tools). Read at call
# time.
MEMORYHUB_TASKS_EAGER = env_bool("MEMORYHUB_TASKS_EAGER", False)

# --- Logging --------------------------------------------------------------------------------

LOG_LEVEL = env_choice("LOG_LEVEL", "INFO", {"DEBUG", "INFO", "WARNING", "ERROR"})
LOG_FORMAT = env_choice("LOG_FORMAT", "json", {"json", "text"})
# A file for the logs (JSON lines: request logs, the cluster's and the lanes' lines), the terminal
# keeping warnings and errors for people. `manage.py run` sets it to DATA_DIR/logs/memoryhub.log
# for its children unless the operator sets it; "-" or empty: everything on the terminal.
LOG_FILE = env_str("LOG_FILE", "")
LOGGING = logging_config(LOG_LEVEL, LOG_FORMAT, LOG_FILE)

# --- Embeddings and search (retrieval/) -------------------------------------------------------

# Embedder backend: "minilm" (all-MiniLM-L6-v2, offline) or "hash" (deterministic, no semantics).
MEMORYHUB_EMBEDDER = env_choice("MEMORYHUB_EMBEDDER", "minilm", {"minilm", "hash"})
# MiniLM's runtime: "auto" (ONNX Runtime when its export in the data folder matched torch and
# measured faster; torch otherwise), "onnx" or "torch".
MEMORYHUB_EMBED_BACKEND = env_choice("MEMORYHUB_EMBED_BACKEND", "auto", {"auto", "onnx", "torch"})
# Most batches the local model that embeds stored texts runs at once, each on one thread (each call
# gets only the cores the rest of the machine left idle lately, at least one:
# memoryhub.plumbing.cpu).
MEMORYHUB_EMBED_THREADS = env_int("MEMORYHUB_EMBED_THREADS", min(os.cpu_count() or 1, 4), minimum=1)
# HNSW's ef_search floor (retrieval.search.statements.ef_search raises it with the table's size).
HNSW_EF_SEARCH = 100
# Every connection starts with search's HNSW settings (ef_search; iterative scans, so that filtered
# queries return enough rows), so a search needs no SET and no transaction around it. A pooler that
# refuses startup options (PgBouncer without ignore_startup_parameters) wants this off: search then
# sets them per query (retrieval.search.statements.hnsw_settings).
if env_bool("MEMORYHUB_PG_STARTUP_OPTIONS", True):
    _options = DATABASES["default"].setdefault("OPTIONS", {})
    _options["options"] = (
        f"{_options.get('options', '')} -c hnsw.ef_search={HNSW_EF_SEARCH}"
        " -c hnsw.iterative_scan=relaxed_order"
    ).strip()

# --- Models: the summariser and the fact extractor (OpenAI-compatible chat completions) --------

# "extractive" (no LLM) or "http" (an OpenAI-compatible chat completions API, e.g.
# http://host:port/v1).
MEMORYHUB_SUMMARISER = env_choice("MEMORYHUB_SUMMARISER", "extractive", {"extractive", "http"})
MEMORYHUB_SUMMARISER_URL = env_str("MEMORYHUB_SUMMARISER_URL", "")
MEMORYHUB_SUMMARISER_MODEL = env_str("MEMORYHUB_SUMMARISER_MODEL", "")
MEMORYHUB_SUMMARISER_API_KEY = env_str("MEMORYHUB_SUMMARISER_API_KEY", "")
MEMORYHUB_SUMMARISER_TIMEOUT = env_float("MEMORYHUB_SUMMARISER_TIMEOUT", 30.0, low=0.1)
# Facts from new events: "none" (default) or "http" (OpenAI-compatible).
MEMORYHUB_FACT_EXTRACTOR = env_choice("MEMORYHUB_FACT_EXTRACTOR", "none", {"none", "http"})
MEMORYHUB_FACT_EXTRACTOR_URL = env_str("MEMORYHUB_FACT_EXTRACTOR_URL", "")
MEMORYHUB_FACT_EXTRACTOR_MODEL = env_str("MEMORYHUB_FACT_EXTRACTOR_MODEL", "")
MEMORYHUB_FACT_EXTRACTOR_API_KEY = env_str("MEMORYHUB_FACT_EXTRACTOR_API_KEY", "")
MEMORYHUB_FACT_EXTRACTOR_TIMEOUT = env_float("MEMORYHUB_FACT_EXTRACTOR_TIMEOUT", 30.0, low=0.1)
# What the extractor asks for: "json" (a JSON-mode model: {"facts": [...]}) or "lines" (a model
# without a JSON mode: one fact per line, "- key: value" or "- sentence", "NONE" when there is
# none). Replies of either form are accepted in both cases.
MEMORYHUB_FACT_EXTRACTOR_FORMAT = env_choice(
    "MEMORYHUB_FACT_EXTRACTOR_FORMAT", "json", {"json", "lines"}
)

# --- Outbound requests (memoryhub/plumbing/outbound.py): webhooks, the summariser and the fact
# extractor --- Webhooks and model endpoints are never sent to loopback, private, link-local (cloud
# metadata), or reserved addresses, checked when a URL is stored and again, resolved, when a request
# goes out; except to these networks (addresses or CIDR, comma-separated; e.g. 127.0.0.1 for a model
# server on this machine, 10.0.0.0/8 for webhook receivers on a private network).
MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS = env_networks("MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS")

# --- Consolidation (retrieval/lifecycle/) -------------------------------------------------------

# Kinds of memory consolidation may delete (prune, merge, cap): derived memories only. The event
# log is the record and its chunks keep it searchable forever: "event" is deleted only when an
# operator lists it here (the log itself is never touched). Documents are sources, not derived.
MEMORYHUB_CONSOLIDATE_DELETE_KINDS = env_list(
    "MEMORYHUB_CONSOLIDATE_DELETE_KINDS",
    "note,fact,summary",
    {"event", "note", "fact", "summary", "document"},
)

# --- Schedules (scheduling/) ------------------------------------------------------------------

# The `agent_goal` action POSTs the goal to the tenant's agent webhook (POST /webhooks/), or
# here when the tenant has none (the server default); neither = `agent_goal` is refused.
MEMORYHUB_AGENT_WEBHOOK_URL = env_str("MEMORYHUB_AGENT_WEBHOOK_URL", "")
MEMORYHUB_AGENT_WEBHOOK_TOKEN = env_str("MEMORYHUB_AGENT_WEBHOOK_TOKEN", "")
# Shortest interval a tenant may give a schedule (interval cadences and cron), seconds.
MEMORYHUB_SCHEDULE_MIN_INTERVAL_SECONDS = env_int(
    "MEMORYHUB_SCHEDULE_MIN_INTERVAL_SECONDS", 60, minimum=1
)

# --- First start (`manage.py run`) ------------------------------------------------------------

# The admin user made on first start, and its password (default: a random one, shown once).
MEMORYHUB_ADMIN_USER = env_str("MEMORYHUB_ADMIN_USER", "admin")
MEMORYHUB_ADMIN_PASSWORD = env_str("MEMORYHUB_ADMIN_PASSWORD", "")


def _check_configured_endpoints() -> None:
    # The operator's own URLs get the guard the tenants' webhooks get (memoryhub.plumbing.outbound):
    # a model server on this machine must be allowed by name, here at start rather than at its first
    # call.
    from memoryhub.plumbing.outbound import DestinationRefused, check_url

    allow = "MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS"
    for name in (
        "MEMORYHUB_SUMMARISER_URL",
        "MEMORYHUB_FACT_EXTRACTOR_URL",
        "MEMORYHUB_AGENT_WEBHOOK_URL",
    ):
        try:
            check_url(globals()[name], globals()[allow])
        except DestinationRefused as exc:
            raise ImproperlyConfigured(
                f"{name}: {exc}; allow it with {allow} (e.g. 127.0.0.1)"
            ) from None


_check_configured_endpoints()
