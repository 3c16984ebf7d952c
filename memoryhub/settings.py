"""MemoryHub settings: one module, driven by environment variables, loud on bad values.

One module on purpose (over 400 lines): every setting is found by reading it top to bottom, a
block per area; the helpers that read the environment live in memoryhub/plumbing/env.py.
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

DATABASE_URL = os.environ.get("DATABASE_URL", "")
# No DATABASE_URL: MemoryHub runs its own PostgreSQL in DATA_DIR. Importing settings never starts
# it: manage.py, wsgi/asgi, the test setup and the benches call memoryhub.plumbing.embedded_pg.ensure_running(),
# which starts it and points the connection at its socket (HOST below is that socket's usual folder).
EMBEDDED_DATABASE = not DATABASE_URL
if EMBEDDED_DATABASE:
    from memoryhub.plumbing.embedded_pg import default_shared_buffers_mb, embedded_database_url

    DATABASE_URL = embedded_database_url(DATA_DIR)
    # `manage.py run` raises the embedded server's shared buffers to this (0: leave them alone).
    EMBEDDED_SHARED_BUFFERS_MB = env_int("MEMORYHUB_PG_SHARED_BUFFERS_MB", default_shared_buffers_mb(), minimum=0)
# `manage.py run` starts the embedded PostgreSQL again when it dies, this many times in 10 minutes;
# then it stops (0: stop at once).
MEMORYHUB_PG_RESTARTS = env_int("MEMORYHUB_PG_RESTARTS", 3, minimum=0)


def _database_config(url: str) -> dict[str, Any]:
    import dj_database_url

    try:
        config = dj_database_url.parse(url, conn_max_age=env_int("DB_CONN_MAX_AGE", 60, minimum=0))
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL: {exc}") from None
    if config.get("ENGINE") != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_URL must point at PostgreSQL (postgres:// or postgresql://)")
    options = config.setdefault("OPTIONS", {})
    # A unix-socket URL carries the socket folder as ?host=…
    if "host" in options and not config.get("HOST"):
        config["HOST"] = options.pop("host")
    config["CONN_HEALTH_CHECKS"] = True
    if env_bool("DB_POOL", False):
        config["CONN_MAX_AGE"] = 0
        # A request waits at most DB_POOL_TIMEOUT seconds for a connection, then gets a 503
        # database_unavailable with Retry-After (a database that is down, or every connection busy).
        options["pool"] = {"min_size": 1, "max_size": env_int("DB_POOL_SIZE", 8, minimum=1),
                           "timeout": env_float("DB_POOL_TIMEOUT", 5.0, low=0.1)}
    return config


DATABASES = {"default": _database_config(DATABASE_URL)}
# Lets several test runs share one server without dropping each other's database.
DATABASES["default"]["TEST"] = {"NAME": env_str("TEST_DB_NAME", "test_memoryhub")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Secrets and hosts ----------------------------------------------------------------------


def _secret_key() -> str:
    key = os.environ.get("SECRET_KEY", "")
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
ALLOWED_HOSTS = allowed_hosts(env_str("ALLOWED_HOSTS", ""), HOST)
CSRF_TRUSTED_ORIGINS = [o.strip() for o in env_str("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

# --- Requests and the web server (`manage.py run`: uvicorn workers under gunicorn) --------------

# The largest request body (bulk appends included); imports have MEMORYHUB_IMPORT_MAX_BYTES. Django's
# own limit is the same number, so there is one limit and the 413 states it.
MEMORYHUB_MAX_REQUEST_BYTES = env_int("MEMORYHUB_MAX_REQUEST_BYTES", 16 * 1024 * 1024, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = MEMORYHUB_MAX_REQUEST_BYTES
# Request line plus headers (431 past it), and the URL alone (414), both in the error envelope.
MEMORYHUB_MAX_HEADER_BYTES = env_int("MEMORYHUB_MAX_HEADER_BYTES", 32 * 1024, minimum=4096)
MEMORYHUB_MAX_URL_BYTES = env_int("MEMORYHUB_MAX_URL_BYTES", 16 * 1024, minimum=1024)
# A client has this long to send its request line and headers, and then this long for its body
# (408 after); an idle keep-alive connection is closed after the last one.
MEMORYHUB_HEADER_TIMEOUT_SECONDS = env_float("MEMORYHUB_HEADER_TIMEOUT_SECONDS", 10.0, low=0.1)
MEMORYHUB_BODY_TIMEOUT_SECONDS = env_float("MEMORYHUB_BODY_TIMEOUT_SECONDS", 60.0, low=0.1)
MEMORYHUB_KEEPALIVE_SECONDS = env_int("MEMORYHUB_KEEPALIVE_SECONDS", 5, minimum=1)
# Reverse proxies whose X-Forwarded-For and X-Forwarded-Proto are believed (addresses or CIDR
# networks, comma-separated; none by default). A request from any other peer is taken as it came:
# its own address is the client's (admin lock-out, logs) and its scheme is the connection's.
MEMORYHUB_TRUSTED_PROXIES = env_networks("MEMORYHUB_TRUSTED_PROXIES")
# What a 503 database_unavailable asks the client to wait before retrying (Retry-After).
MEMORYHUB_RETRY_AFTER_SECONDS = env_int("MEMORYHUB_RETRY_AFTER_SECONDS", 5, minimum=1)

# --- Applications ---------------------------------------------------------------------------

INSTALLED_APPS = [
    # Django's admin with the console's grouped sidebar and header links (memoryhub/plumbing/console_site.py).
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

# Admin login throttling (django-axes): after MEMORYHUB_LOGIN_FAILURE_LIMIT failed logins of one
# user name (from any address), or from one address (for any name), that name or address is locked
# out for MEMORYHUB_LOGIN_COOLOFF_MINUTES (429), even with the right password. By name too, so that
# guesses spread over many addresses are counted together (issue 40); the price is that a guesser
# can keep the real operator out for the cool-off (`manage.py axes_reset_username <name>` lets
# them in). The address is the connection's, or the one a trusted proxy forwarded (uvicorn
# resolves it before Django sees the request; MEMORYHUB_TRUSTED_PROXIES). The API's keys never
# pass through here.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("MEMORYHUB_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("MEMORYHUB_LOGIN_COOLOFF_MINUTES", 15, minimum=1))
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

# --- Cache (recent-window cache of S2) ------------------------------------------------------

CACHE_URL = os.environ.get("CACHE_URL", "")
if CACHE_URL.startswith(("redis://", "rediss://")):
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}}
elif CACHE_URL:
    raise ImproperlyConfigured("CACHE_URL must be a redis:// URL (or unset for the in-process cache)")
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "memoryhub",
            "OPTIONS": {"MAX_ENTRIES": env_int("CACHE_MAX_ENTRIES", 5000, minimum=10)},
        }
    }

# --- REST API -------------------------------------------------------------------------------

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["accounts.authentication.ApiKeyAuthentication"],
    # The key and its scope, then the query's parameter names (400 unknown_parameter).
    "DEFAULT_PERMISSION_CLASSES": ["accounts.permissions.HasApiScope",
                                   "memoryhub.api.parameters.KnownQueryParameters"],
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
    REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"].append("rest_framework.renderers.BrowsableAPIRenderer")

SPECTACULAR_SETTINGS = {
    "TITLE": "MemoryHub API",
    # The full introduction is memoryhub/api/docs.py's DESCRIPTION, put in by its hook below.
    "DESCRIPTION": "Memory for AI agents: sessions, events, search, notes, facts, summaries, schedules.",
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

Q_REDIS_URL = os.environ.get("Q_REDIS_URL", "")
_MAINTENANCE_TIMEOUT = env_int("Q_MAINTENANCE_TIMEOUT", 3 * 3600, minimum=60)
# The default cluster ("memoryhub") runs user schedule runs only, so that nothing queues in front
# of them. `Q_CLUSTER_NAME=maintenance manage.py qcluster` starts the maintenance cluster: the
# built-in cadences and bulk jobs (consolidation may run for long: its own timeout).
Q_CLUSTER: dict[str, Any] = {
    "name": "memoryhub",
    "workers": env_int("Q_WORKERS", 2, minimum=1),
    "timeout": env_int("Q_TIMEOUT", 300, minimum=10),
    "retry": env_int("Q_TIMEOUT", 300, minimum=10) + 60,
    "max_attempts": env_int("Q_MAX_ATTEMPTS", 3, minimum=1),
    "save_limit": 500,
    "catch_up": False,
    "poll": 0.5,
    "label": "Task queue",
    "ALT_CLUSTERS": {
        "maintenance": {"workers": env_int("Q_MAINTENANCE_WORKERS", 1, minimum=1),
                        "timeout": _MAINTENANCE_TIMEOUT, "retry": _MAINTENANCE_TIMEOUT + 60, "poll": 2.0},
    },
}
if Q_REDIS_URL:
    Q_CLUSTER["redis"] = Q_REDIS_URL
else:
    Q_CLUSTER["orm"] = "default"

# --- MemoryHub behaviour --------------------------------------------------------------------

# ASGI apps served beside Django by memoryhub.plumbing.asgi, by path prefix: the MCP endpoint (streamable
# HTTP, API-key authenticated). MEMORYHUB_MCP_HTTP=0 leaves it out.
MEMORYHUB_ASGI_MOUNTS = (
    {"/mcp/": "retrieval.mcp_server.http.application"} if env_bool("MEMORYHUB_MCP_HTTP", True) else {}
)
# GET /mcp/ event streams (a stateless server writes nothing to them): each web worker holds at
# most this many per API key and in all (429 past either), and closes one idle this many seconds.
MEMORYHUB_MCP_STREAMS_PER_KEY = env_int("MEMORYHUB_MCP_STREAMS_PER_KEY", 4, minimum=1)
MEMORYHUB_MCP_STREAMS = env_int("MEMORYHUB_MCP_STREAMS", 100, minimum=1)
MEMORYHUB_MCP_STREAM_IDLE_SECONDS = env_float("MEMORYHUB_MCP_STREAM_IDLE_SECONDS", 60.0, low=1.0, high=86400)

# Run enqueued background work inline (tests, single-process tools). Read at call time.
MEMORYHUB_TASKS_EAGER = env_bool("MEMORYHUB_TASKS_EAGER", False)
# Embedder backend: "minilm" (all-MiniLM-L6-v2, offline) or "hash" (deterministic, no semantics).
MEMORYHUB_EMBEDDER = env_choice("MEMORYHUB_EMBEDDER", "minilm", {"minilm", "hash"})
MEMORYHUB_RECENT_WINDOW = env_int("MEMORYHUB_RECENT_WINDOW", 50, minimum=1)
MEMORYHUB_DEFAULT_IMPORTANCE = {"user": 0.5, "assistant": 0.5, "tool": 0.3, "system": 0.1}
MEMORYHUB_MAX_BULK_EVENTS = env_int("MEMORYHUB_MAX_BULK_EVENTS", 1000, minimum=1)
MEMORYHUB_MAX_CONTENT_CHARS = env_int("MEMORYHUB_MAX_CONTENT_CHARS", 200_000, minimum=1000)
MEMORYHUB_RESTORE_BUDGET = env_int("MEMORYHUB_RESTORE_BUDGET", 4000, minimum=1)
# How long each process reuses an API key it read (0: read it on every request). A key revoked
# elsewhere is refused by every process within this many seconds (at once by the one revoking it).
MEMORYHUB_API_KEY_CACHE_SECONDS = env_float("MEMORYHUB_API_KEY_CACHE_SECONDS", 5.0, low=0.0, high=300.0)
# How often each process writes its request counters (searches, context, restores) for the dashboard,
# and the last use of its API keys (the admin's "last used": refreshed at most every minute: accounts.authentication.TOUCH_SECONDS).
MEMORYHUB_USAGE_FLUSH_SECONDS = env_int("MEMORYHUB_USAGE_FLUSH_SECONDS", 10, minimum=0)
# How often each process writes the access counts of the memories its searches returned.
MEMORYHUB_ACCESS_FLUSH_SECONDS = env_int("MEMORYHUB_ACCESS_FLUSH_SECONDS", 10, minimum=0)
# Built-in cadences on the maintenance cluster (scheduling.tasks), in minutes; 0 turns one off.
# Embedding and summarising are the work lanes' job (manage.py work): their cadences are off by
# default and only needed where no lane runs.
MEMORYHUB_MAINTENANCE_EMBED_MINUTES = env_int("MEMORYHUB_MAINTENANCE_EMBED_MINUTES", 0, minimum=0)
MEMORYHUB_MAINTENANCE_SUMMARISE_MINUTES = env_int("MEMORYHUB_MAINTENANCE_SUMMARISE_MINUTES", 0, minimum=0)
# Consolidation every 6 hours, as seed 004's consolidation_interval_hours (issue 14 item 17).
MEMORYHUB_MAINTENANCE_CONSOLIDATE_MINUTES = env_int("MEMORYHUB_MAINTENANCE_CONSOLIDATE_MINUTES", 6 * 60, minimum=0)

# --- Background lanes (memoryhub.plumbing.background; `manage.py work`) -------------------------------

# A lane that nothing woke looks for work this often anyway (a NOTIFY sent while no lane listened).
MEMORYHUB_WORK_IDLE_SECONDS = env_float("MEMORYHUB_WORK_IDLE_SECONDS", 10.0, low=0.1, high=3600)
# Time budget of one background step on one item (a session's summary, tree or facts).
MEMORYHUB_STEP_SECONDS = env_float("MEMORYHUB_STEP_SECONDS", 120.0, low=1.0, high=24 * 3600)
# Failures in a row after which a session is set aside (skipped until retried in the admin).
MEMORYHUB_BACKGROUND_MAX_ATTEMPTS = env_int("MEMORYHUB_BACKGROUND_MAX_ATTEMPTS", 3, minimum=1)
# The work processes run at this niceness, so that requests come first on a shared machine.
MEMORYHUB_WORK_NICE = env_int("MEMORYHUB_WORK_NICE", 10, minimum=0)

# --- Logging --------------------------------------------------------------------------------

LOG_LEVEL = env_choice("LOG_LEVEL", "INFO", {"DEBUG", "INFO", "WARNING", "ERROR"})
LOG_FORMAT = env_choice("LOG_FORMAT", "json", {"json", "text"})
# A file for the logs (JSON lines: request logs, the cluster's and the lanes' lines), the terminal
# keeping warnings and errors for people. `manage.py run` sets it to DATA_DIR/logs/memoryhub.log
# for its children unless the operator sets it; "-" or empty: everything on the terminal.
LOG_FILE = env_str("LOG_FILE", "")
LOGGING = logging_config(LOG_LEVEL, LOG_FORMAT, LOG_FILE)

# --- Retrieval (retrieval/: chunking, embeddings, search) ------------------------------------

MEMORYHUB_CHUNK_CHARS = env_int("MEMORYHUB_CHUNK_CHARS", 640, minimum=64)
MEMORYHUB_CHUNK_OVERLAP = env_int("MEMORYHUB_CHUNK_OVERLAP", 96, minimum=0)
# Most batches the local model that embeds stored texts runs at once, each on one thread (each call
# gets only the cores the rest of the machine left idle lately, at least one: memoryhub.plumbing.cpu).
MEMORYHUB_EMBED_THREADS = env_int("MEMORYHUB_EMBED_THREADS", min(os.cpu_count() or 1, 4), minimum=1)
# Threads of the torch-free query embedder of web processes (one query each; retrieval.query_embedding).
MEMORYHUB_QUERY_EMBED_THREADS = env_int("MEMORYHUB_QUERY_EMBED_THREADS", 1, minimum=1)
# Web processes embed queries with the int8 copy of the ONNX model (made beside it and judged
# against it when the data folder is prepared): ~2.7x faster and a quarter of the weights' memory;
# query vectors agree with the full model's to cosine ≥ 0.98 (bench/README.md, stop 26). Off: the
# full model. Stored vectors follow MEMORYHUB_EMBED_BACKEND (retrieval.embedders).
MEMORYHUB_QUERY_EMBED_INT8 = env_bool("MEMORYHUB_QUERY_EMBED_INT8", True)
# Rows per background embedding batch (seed 001: 50).
MEMORYHUB_EMBED_BACKFILL_BATCH = env_int("MEMORYHUB_EMBED_BACKFILL_BATCH", 50, minimum=1)
# A chunk whose embedding failed this many times is set aside (skipped until retried in the admin).
MEMORYHUB_EMBED_MAX_ATTEMPTS = env_int("MEMORYHUB_EMBED_MAX_ATTEMPTS", 3, minimum=1)
# MiniLM's runtime: "auto" (ONNX Runtime when its export in the data folder matched torch and
# measured faster; torch otherwise), "onnx" or "torch".
MEMORYHUB_EMBED_BACKEND = env_choice("MEMORYHUB_EMBED_BACKEND", "auto", {"auto", "onnx", "torch"})
# How many earlier messages of the conversation are embedded with a message (contextual
# embeddings: "yes, since 2019" is findable by what it answers), as far as the message leaves
# room (retrieval.indexing.CONTEXT_FILL: a long message reads itself). 0 embeds the message alone.
MEMORYHUB_EMBED_CONTEXT_MESSAGES = env_int("MEMORYHUB_EMBED_CONTEXT_MESSAGES", 2, minimum=0)
# Candidates fetched from each index before fusion, and HNSW's ef_search.
MEMORYHUB_SEARCH_CANDIDATES = env_int("MEMORYHUB_SEARCH_CANDIDATES", 100, minimum=10)
MEMORYHUB_HNSW_EF_SEARCH = env_int("MEMORYHUB_HNSW_EF_SEARCH", 100, minimum=10)
# Every connection starts with search's HNSW settings (ef_search; iterative scans, so that filtered
# queries return enough rows), so a search needs no SET and no transaction around it. A pooler that
# refuses startup options (PgBouncer without ignore_startup_parameters) wants this off: search then
# sets them per query (retrieval.search.sql.hnsw_settings).
if env_bool("MEMORYHUB_PG_STARTUP_OPTIONS", True):
    _options = DATABASES["default"].setdefault("OPTIONS", {})
    _options["options"] = (f"{_options.get('options', '')} -c hnsw.ef_search={MEMORYHUB_HNSW_EF_SEARCH}"
                           " -c hnsw.iterative_scan=relaxed_order").strip()
# Vector search of a scope with fewer chunks than this (a channel, a user, a small tenant) is exact
# instead of a filtered HNSW walk over the whole table (0: always HNSW). bench/README.md, run G.
MEMORYHUB_SEARCH_EXACT_BELOW = env_int("MEMORYHUB_SEARCH_EXACT_BELOW", 5_000, minimum=0)
# Full text over a scope with fewer chunks than this tests the scope's rows instead of reading the
# table-wide full-text index (0: always the index). bench/README.md, stop 25.
MEMORYHUB_TEXT_SCAN_BELOW = env_int("MEMORYHUB_TEXT_SCAN_BELOW", 5_000, minimum=0)
MEMORYHUB_SEARCH_MAX_TOP_K = env_int("MEMORYHUB_SEARCH_MAX_TOP_K", 100, minimum=1)
MEMORYHUB_CONTEXT_BUDGET = env_int("MEMORYHUB_CONTEXT_BUDGET", 4000, minimum=100)
# Full text scores a chunk of a message as the whole message: a query's words count wherever the
# message says them, against the message's length (a long answer is several chunks; its words
# spread over them). Off: each chunk alone.
MEMORYHUB_TEXT_PER_MESSAGE = env_bool("MEMORYHUB_TEXT_PER_MESSAGE", True)
# Typo tolerance in text and hybrid search: a query word the scope never says also matches the
# scope's closest words by trigram similarity (retrieval.search.fuzzy). Mode "fuzzy" always does.
MEMORYHUB_SEARCH_FUZZY = env_bool("MEMORYHUB_SEARCH_FUZZY", True)
# Hybrid search: the first share of top_k places by rank, the rest first to the best results of
# conversations not among the results yet (1 turns it off).
MEMORYHUB_SEARCH_COVERAGE = env_float("MEMORYHUB_SEARCH_COVERAGE", 0.7, low=0.0, high=1.0)
# Search mode "regex": the longest pattern accepted, and how long its scan may run before the
# request answers regex_timeout (statement_timeout: PostgreSQL cancels the scan, the worker goes on).
MEMORYHUB_SEARCH_REGEX_MAX_LENGTH = env_int("MEMORYHUB_SEARCH_REGEX_MAX_LENGTH", 512, minimum=1)
MEMORYHUB_SEARCH_REGEX_TIMEOUT_MS = env_int("MEMORYHUB_SEARCH_REGEX_TIMEOUT_MS", 2000, minimum=10)

# --- Notes, facts, scratchpad, summaries (memoryhub/) -------------------------------------------

# --- Notes and facts (S5) ----------------------------------------------------------------------
MEMORYHUB_MAX_TAGS = env_int("MEMORYHUB_MAX_TAGS", 16, minimum=1)
MEMORYHUB_MAX_TAG_CHARS = env_int("MEMORYHUB_MAX_TAG_CHARS", 64, minimum=1)
MEMORYHUB_MAX_MEMORY_CHARS = env_int("MEMORYHUB_MAX_MEMORY_CHARS", 50_000, minimum=100)
# Importance of a note or fact the client gives none for, by its type (a fact's category, a note's
# tags; seed 002), and of one of no known type.
MEMORYHUB_IMPORTANCE_BY_TYPE = {"correction": 0.9, "preference": 0.8, "fact": 0.6, "task": 0.5}
MEMORYHUB_DEFAULT_MEMORY_IMPORTANCE = env_float("MEMORYHUB_DEFAULT_MEMORY_IMPORTANCE", 0.5, low=0.0, high=1.0)

# Archiving a session clears its conversation-tier notes and facts (seed 001), except pinned ones
# and facts consolidation promoted to long-term; true keeps them all.
MEMORYHUB_KEEP_CONVERSATION_MEMORIES = env_bool("MEMORYHUB_KEEP_CONVERSATION_MEMORIES", False)

# --- Scratchpad (S5, seed 000): at most 32 items of at most 240 characters ---------------------
MEMORYHUB_SCRATCHPAD_MAX_ITEMS = env_int("MEMORYHUB_SCRATCHPAD_MAX_ITEMS", 32, minimum=1)
MEMORYHUB_SCRATCHPAD_MAX_CHARS = env_int("MEMORYHUB_SCRATCHPAD_MAX_CHARS", 240, minimum=1)

# --- Rolling summary (S6, seed 000) -------------------------------------------------------------
# Summarise when at least this many messages are not yet in the summary ...
MEMORYHUB_SUMMARY_MIN_MESSAGES = env_int("MEMORYHUB_SUMMARY_MIN_MESSAGES", 4, minimum=1)
# ... and they use more than this share of the budget (tokens; a session's summary_budget, or the
# summary call's budget, overrides this default) ...
MEMORYHUB_SUMMARY_BUDGET = env_int("MEMORYHUB_SUMMARY_BUDGET", 4000, minimum=50)
MEMORYHUB_SUMMARY_TRIGGER = env_float("MEMORYHUB_SUMMARY_TRIGGER", 0.80, low=0.01, high=1.0)
# ... condensing the oldest of them until the rest fits in this share.
MEMORYHUB_SUMMARY_TARGET = env_float("MEMORYHUB_SUMMARY_TARGET", 0.50, low=0.0, high=1.0)
# The rolling summary itself never grows beyond this share of the budget: past it, it is condensed
# (re-summarised, older lines merged; memoryhub/condense.py), never cut.
MEMORYHUB_SUMMARY_MAX_SHARE = env_float("MEMORYHUB_SUMMARY_MAX_SHARE", 0.30, low=0.01, high=1.0)
# At most this many of the newest unsummarised events are read by one summarisation.
MEMORYHUB_SUMMARY_MAX_EVENTS = env_int("MEMORYHUB_SUMMARY_MAX_EVENTS", 2000, minimum=10)
# Check the trigger (and grow the summary tree) in the background after every append.
MEMORYHUB_AUTO_SUMMARISE = env_bool("MEMORYHUB_AUTO_SUMMARISE", True)

# --- Summary tree (S6, seed 002) ----------------------------------------------------------------
MEMORYHUB_SUMMARY_LEAF_EVENTS = env_int("MEMORYHUB_SUMMARY_LEAF_EVENTS", 8, minimum=1)
MEMORYHUB_SUMMARY_BRANCH_CHILDREN = env_int("MEMORYHUB_SUMMARY_BRANCH_CHILDREN", 4, minimum=2)
# A session with no new event for this many minutes gets its unfinished leaf/branch closed.
MEMORYHUB_SUMMARY_IDLE_MINUTES = env_int("MEMORYHUB_SUMMARY_IDLE_MINUTES", 30, minimum=0)

# --- Summariser (S6): "extractive" (no LLM) or "http" (an OpenAI-compatible chat completions API) -
MEMORYHUB_SUMMARISER = env_choice("MEMORYHUB_SUMMARISER", "extractive", {"extractive", "http"})
MEMORYHUB_SUMMARISER_URL = env_str("MEMORYHUB_SUMMARISER_URL", "")  # e.g. http://host:port/v1
MEMORYHUB_SUMMARISER_MODEL = env_str("MEMORYHUB_SUMMARISER_MODEL", "")
MEMORYHUB_SUMMARISER_API_KEY = env_str("MEMORYHUB_SUMMARISER_API_KEY", "")
MEMORYHUB_SUMMARISER_TIMEOUT = env_float("MEMORYHUB_SUMMARISER_TIMEOUT", 30.0, low=0.1)
# Characters kept of one condensed turn by the extractive summariser.
MEMORYHUB_SUMMARY_LINE_CHARS = env_int("MEMORYHUB_SUMMARY_LINE_CHARS", 200, minimum=20)
# The HTTP summariser (seed 002) never cuts a message: one longer than this many characters is
# sent as consecutive parts ("part 2/3") ...
MEMORYHUB_SUMMARISER_PART_CHARS = env_int("MEMORYHUB_SUMMARISER_PART_CHARS", 4000, minimum=200)
# ... and a transcript longer than this is summarised a request at a time, each request given the
# summary so far, so that the last reply covers all of it.
MEMORYHUB_SUMMARISER_INPUT_CHARS = env_int("MEMORYHUB_SUMMARISER_INPUT_CHARS", 24000, minimum=1000)
if MEMORYHUB_SUMMARISER_PART_CHARS > MEMORYHUB_SUMMARISER_INPUT_CHARS:
    raise ImproperlyConfigured("MEMORYHUB_SUMMARISER_PART_CHARS must not exceed MEMORYHUB_SUMMARISER_INPUT_CHARS")

# --- Outbound requests (memoryhub/plumbing/outbound.py): webhooks, the summariser and the fact extractor ---
# Webhooks and model endpoints are never sent to loopback, private, link-local (cloud metadata),
# or reserved addresses, checked when a URL is stored and again, resolved, when a request goes
# out; except to these networks (addresses or CIDR, comma-separated; e.g. 127.0.0.1 for a model
# server on this machine, 10.0.0.0/8 for webhook receivers on a private network).
MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS = env_networks("MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS")

# --- Model calls (memoryhub/plumbing/llm.py; the HTTP summariser and fact extractor) ---------------------
# A call that failed on a connection error, a timeout, 429 or 5xx is tried again this many times,
# after BACKOFF seconds, then twice that, ... (never past a background step's time budget).
MEMORYHUB_LLM_RETRIES = env_int("MEMORYHUB_LLM_RETRIES", 3, minimum=0)
MEMORYHUB_LLM_BACKOFF_SECONDS = env_float("MEMORYHUB_LLM_BACKOFF_SECONDS", 2.0, low=0.0, high=600)

# --- Fact extractor (S5): "none" (default) or "http" (OpenAI-compatible) -------------------------
MEMORYHUB_FACT_EXTRACTOR = env_choice("MEMORYHUB_FACT_EXTRACTOR", "none", {"none", "http"})
MEMORYHUB_FACT_EXTRACTOR_URL = env_str("MEMORYHUB_FACT_EXTRACTOR_URL", "")
MEMORYHUB_FACT_EXTRACTOR_MODEL = env_str("MEMORYHUB_FACT_EXTRACTOR_MODEL", "")
MEMORYHUB_FACT_EXTRACTOR_API_KEY = env_str("MEMORYHUB_FACT_EXTRACTOR_API_KEY", "")
MEMORYHUB_FACT_EXTRACTOR_TIMEOUT = env_float("MEMORYHUB_FACT_EXTRACTOR_TIMEOUT", 30.0, low=0.1)
# New messages sent to the extractor per request, in characters: more go in further requests, a
# longer message in parts (every word is read; earlier messages as context come on top).
MEMORYHUB_FACT_EXTRACTOR_INPUT_CHARS = env_int("MEMORYHUB_FACT_EXTRACTOR_INPUT_CHARS", 12000, minimum=1000)
# What the extractor asks for: "json" (a JSON-mode model: {"facts": [...]}) or "lines" (seed 003:
# one fact per line, "- key: value" or "- sentence", "NONE" when there is none). Replies of either
# form are accepted in both cases.
MEMORYHUB_FACT_EXTRACTOR_FORMAT = env_choice("MEMORYHUB_FACT_EXTRACTOR_FORMAT", "json", {"json", "lines"})
# The extractor sees the new events with this many earlier events of the session before them, as
# context (a question and its answer appended in two calls are read as one exchange); facts are
# taken from the new events only.
MEMORYHUB_FACT_WINDOW_EVENTS = env_int("MEMORYHUB_FACT_WINDOW_EVENTS", 6, minimum=0)

# --- Lifecycle: decay, consolidation, import/export ---------------------------------------------

# --- Decay (SPEC S8, seed 001): relevance = importance · rate^hours · (1 + ln(1 + accesses)) ----
# Per-hour retention by tier. A rate must be in (0, 1]: 1 means "never decays".
MEMORYHUB_DECAY_RATES = {
    "account": env_float("MEMORYHUB_DECAY_ACCOUNT", 0.999, low=1e-6, high=1.0),
    "workspace": env_float("MEMORYHUB_DECAY_WORKSPACE", 0.998, low=1e-6, high=1.0),
    "channel": env_float("MEMORYHUB_DECAY_CHANNEL", 0.995, low=1e-6, high=1.0),
    "conversation": env_float("MEMORYHUB_DECAY_CONVERSATION", 0.99, low=1e-6, high=1.0),
}

# --- Consolidation (SPEC S8, seeds 001 and 004) -----------------------------------------------
# Promote a short-term memory to long-term when relevance > this and access count > the next.
MEMORYHUB_PROMOTE_RELEVANCE = env_float("MEMORYHUB_PROMOTE_RELEVANCE", 0.7, low=0.0)
MEMORYHUB_PROMOTE_MIN_ACCESSES = env_int("MEMORYHUB_PROMOTE_MIN_ACCESSES", 3, minimum=0)
# Prune memories whose relevance fell below this (never when the tenant's transcript is immutable).
MEMORYHUB_PRUNE_RELEVANCE = env_float("MEMORYHUB_PRUNE_RELEVANCE", 0.01, low=0.0)
# Merge near-duplicates whose embeddings' cosine similarity is above this.
MEMORYHUB_MERGE_COSINE = env_float("MEMORYHUB_MERGE_COSINE", 0.95, low=0.0, high=1.0)
# Keep at most this many memories per scope (tenant, workspace, channel, session, tier); the
# lowest relevance goes first.
MEMORYHUB_CAP_PER_SCOPE = env_int("MEMORYHUB_CAP_PER_SCOPE", 10_000, minimum=1)
# Compress conversations idle (no new event) for this many hours into summaries.
MEMORYHUB_COMPRESS_AFTER_HOURS = env_int("MEMORYHUB_COMPRESS_AFTER_HOURS", 72, minimum=1)
# Kinds of memory consolidation may delete (prune, merge, cap): derived memories only. The event
# log is the record and its chunks keep it searchable forever: "event" is deleted only when an
# operator lists it here (the log itself is never touched). Documents are sources, not derived.
MEMORYHUB_CONSOLIDATE_DELETE_KINDS = tuple(
    k.strip() for k in env_str("MEMORYHUB_CONSOLIDATE_DELETE_KINDS", "note,fact,summary").split(",") if k.strip()
)
if set(MEMORYHUB_CONSOLIDATE_DELETE_KINDS) - {"event", "note", "fact", "summary", "document"}:
    raise ImproperlyConfigured(f"MEMORYHUB_CONSOLIDATE_DELETE_KINDS has unknown kinds: {MEMORYHUB_CONSOLIDATE_DELETE_KINDS}")
# Until an operator has decided one review of a tenant (approved or rejected), every deletion
# consolidation wants to make there is held for review: the first destructive run is previewed.
MEMORYHUB_CONSOLIDATE_FIRST_REVIEW = env_bool("MEMORYHUB_CONSOLIDATE_FIRST_REVIEW", True)
# Near-duplicates must also say the same thing in their own words: the share of words two memories
# have in common (Jaccard of their word sets). Embeddings of messages carry the conversation around
# them, so a reply can sit very close to the question it answers.
MEMORYHUB_MERGE_TEXT_SIMILARITY = env_float("MEMORYHUB_MERGE_TEXT_SIMILARITY", 0.8, low=0.0, high=1.0)

# --- Import/export (SPEC S9) ------------------------------------------------------------------
MEMORYHUB_IMPORT_MAX_BYTES = env_int("MEMORYHUB_IMPORT_MAX_BYTES", 200 * 1024 * 1024, minimum=1024)

# --- Schedules (scheduling/) ------------------------------------------------------------------

# Shortest allowed interval between two runs of a schedule (interval cadences and cron), seconds.
MEMORYHUB_SCHEDULE_MIN_INTERVAL_SECONDS = env_int("MEMORYHUB_SCHEDULE_MIN_INTERVAL_SECONDS", 60, minimum=1)
# This many failed runs in a row pause the schedule.
MEMORYHUB_SCHEDULE_MAX_FAILURES = env_int("MEMORYHUB_SCHEDULE_MAX_FAILURES", 3, minimum=1)
# Runs kept per schedule (older ones are pruned when a run finishes and by `prune_runs`).
MEMORYHUB_SCHEDULE_RUNS_KEPT = env_int("MEMORYHUB_SCHEDULE_RUNS_KEPT", 50, minimum=1)
# A run still running this long after it started is marked failed (timeout). A run that is still
# queued is never failed for waiting: it is sent to the cluster again after
# MEMORYHUB_SCHEDULE_REQUEUE_SECONDS (its task was lost with a broker or a killed worker).
MEMORYHUB_SCHEDULE_RUN_TIMEOUT_SECONDS = env_int("MEMORYHUB_SCHEDULE_RUN_TIMEOUT_SECONDS", 900, minimum=10)
MEMORYHUB_SCHEDULE_REQUEUE_SECONDS = env_int("MEMORYHUB_SCHEDULE_REQUEUE_SECONDS", 300, minimum=1)
# The `agent_goal` action POSTs the goal to the tenant's agent webhook (POST /webhooks/), or
# here when the tenant has none (the server default); neither = `agent_goal` is refused.
MEMORYHUB_AGENT_WEBHOOK_URL = env_str("MEMORYHUB_AGENT_WEBHOOK_URL", "")
MEMORYHUB_AGENT_WEBHOOK_TIMEOUT = env_float("MEMORYHUB_AGENT_WEBHOOK_TIMEOUT", 30.0, low=0.1, high=3600)
MEMORYHUB_AGENT_WEBHOOK_TOKEN = env_str("MEMORYHUB_AGENT_WEBHOOK_TOKEN", "")
# Run notifications: attempts per delivery, the wait before the first retry (doubled after each
# failed attempt, at most 6 hours; retries go out with the dispatcher's pass, every minute) and
# the time one POST may take.
MEMORYHUB_NOTIFY_MAX_ATTEMPTS = env_int("MEMORYHUB_NOTIFY_MAX_ATTEMPTS", 5, minimum=1)
MEMORYHUB_NOTIFY_BACKOFF_SECONDS = env_int("MEMORYHUB_NOTIFY_BACKOFF_SECONDS", 30, minimum=0)
MEMORYHUB_NOTIFY_TIMEOUT = env_float("MEMORYHUB_NOTIFY_TIMEOUT", 10.0, low=0.1, high=600)


def _check_configured_endpoints() -> None:
    # The operator's own URLs get the guard the tenants' webhooks get (memoryhub.plumbing.outbound): a model
    # server on this machine must be allowed by name, here at start rather than at its first call.
    from memoryhub.plumbing.outbound import DestinationRefused, check_url

    for name in ("MEMORYHUB_SUMMARISER_URL", "MEMORYHUB_FACT_EXTRACTOR_URL", "MEMORYHUB_AGENT_WEBHOOK_URL"):
        try:
            check_url(globals()[name], MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS)
        except DestinationRefused as exc:
            raise ImproperlyConfigured(f"{name}: {exc}; allow it with MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS "
                                       "(e.g. 127.0.0.1)") from None


_check_configured_endpoints()
