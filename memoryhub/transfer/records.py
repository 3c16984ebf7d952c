"""Records: the tenant-owned rows of other areas (notes, facts, scratchpads, summaries,
schedules…), discovered from the installed models and carried generically, keyed by model label.

A record names what it links to (a workspace, a channel, a session) or points at another record by
its position in the file ({"key": n}), never by database id.
"""

from __future__ import annotations

import json
from typing import Any

from django.apps import apps
from django.db import models

from accounts.models import Channel, Tenant, Workspace
from memoryhub.models import Event, RollingSummary, Session
from memoryhub.searchable import Searchable

# Apps and models carried explicitly, or not at all (configuration, operations, our own reports).
_SKIP_APPS = {
    "accounts",
    "retrieval",
    "lifecycle",
    "django_q",
    "admin",
    "auth",
    "contenttypes",
    "sessions",
}
_EXPLICIT = {Session, Event, RollingSummary}


def record_models() -> list[type[models.Model]]:
    """Tenant-owned models of other areas, parents before children.

    A model with a required link to something the file cannot name (a row of another system,
    e.g. a queue's task) is left out rather than exported into a file that could not be imported.
    """
    found = [
        m
        for m in apps.get_models()
        if m._meta.app_label not in _SKIP_APPS
        and m not in _EXPLICIT
        and not m._meta.proxy
        and getattr(m, "exportable", True)  # operational counters say `exportable = False`
        and any(f.name == "tenant" and f.is_relation for f in m._meta.concrete_fields)
    ]
    return _parents_first(_nameable_only(found))


def _nameable_only(found: list[type[models.Model]]) -> list[type[models.Model]]:
    """Drop models with a required link the file cannot name, until none is left to drop."""
    nameable = {Tenant, Workspace, Channel, Session, *found}
    changed = True
    while changed:
        keep = [
            m
            for m in found
            if all(
                f.related_model in nameable or f.null
                for f in m._meta.concrete_fields
                if f.is_relation
            )
        ]
        changed = len(keep) != len(found)
        found, nameable = keep, {Tenant, Workspace, Channel, Session, *keep}
    return found


def _parents_first(found: list[type[models.Model]]) -> list[type[models.Model]]:
    ordered: list[type[models.Model]] = []
    pending = sorted(found, key=lambda m: m._meta.label)
    while pending:
        progressed = False
        for model in list(pending):
            parents = {f.related_model for f in model._meta.concrete_fields if f.is_relation} & set(
                pending
            )
            if not parents - {model}:
                ordered.append(model)
                pending.remove(model)
                progressed = True
        if not progressed:  # a cycle: keep label order, FKs inside the cycle are carried as keys
            ordered.extend(pending)
            break
    return ordered


def record_fields(model: type[models.Model]) -> list[models.Field]:
    """The fields a record carries: not the id, tenant, unique values or what the model derives."""
    return [
        f
        for f in model._meta.concrete_fields
        if not f.primary_key
        and f.name != "tenant"
        and not (f.unique and not f.is_relation)
        and not getattr(f, "generated", False)
        and f.editable  # not editable: derived by the model
    ]


def searchable_of(obj: models.Model) -> Searchable | None:
    """What the row announces to search (memory_saved), if it is a searchable memory."""
    for name in ("as_searchable", "searchable", "to_searchable"):
        method = getattr(obj, name, None)
        if callable(method):
            try:
                value = method()
            except Exception:  # a half-built row: not searchable
                return None
            return value if isinstance(value, Searchable) else None
    return None


def derived_metadata(searchable: Searchable | None) -> dict[str, Any]:
    """What indexing copies from a memory into its chunks' metadata (ids included): not exported,
    rebuilt from the imported memory."""
    if searchable is None:
        return {}
    return {
        k: v
        for k, v in json.loads(json.dumps(searchable.metadata, default=str)).items()
        if v not in (None, "", [], {})
    }
