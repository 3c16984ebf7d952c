"""Background work: enqueue by dotted path, on commit, onto the django-q2 cluster.

Only tasks.py modules import django_q. With MEMORYHUB_TASKS_EAGER (tests, one-off tools) the
function runs inline instead; the setting is read at call time, unlike Q_CLUSTER.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils.module_loading import import_string

logger = logging.getLogger(__name__)


def enqueue(func_path: str, *args: Any, group: str | None = None, **kwargs: Any) -> str | None:
    """Run `func_path(*args, **kwargs)` in the cluster (or inline when eager). Returns the task id."""
    if settings.MEMORYHUB_TASKS_EAGER:
        import_string(func_path)(*args, **kwargs)
        return None
    from django_q.tasks import async_task

    options: dict[str, Any] = {"group": group} if group else {}
    return async_task(func_path, *args, q_options=options, **kwargs)


def enqueue_on_commit(func_path: str, *args: Any, group: str | None = None, **kwargs: Any) -> None:
    """Enqueue once the current transaction commits, so the task sees the rows it is about."""
    transaction.on_commit(lambda: enqueue(func_path, *args, group=group, **kwargs))
