"""The operator console's admin site: Django's own, with a sidebar and index grouped by what an
operator works with (people and their memory, schedules, reviews, tenants and access), the
internals (search index, background work, logs) last in a group of their own, and the header
links leading to the dashboard and the API reference instead of a "View site" with no site.

Installed in INSTALLED_APPS as `memoryhub.plumbing.console_site.ConsoleAdminConfig` (Django's
documented way to replace the default site); this module imports no models, as app loading requires.
"""

from __future__ import annotations

from typing import Any

from django.contrib.admin import AdminSite
from django.contrib.admin.apps import AdminConfig
from django.http import HttpRequest

# The operator's groups, in order; each model as "app_label.ModelName", in the order shown.
# A registered model named nowhere here falls into INTERNALS.
GROUPS: list[tuple[str, str, list[str]]] = [
    (
        "people",
        "People and their memory",
        [
            "memoryhub.EndUser",
            "memoryhub.Session",
            "memoryhub.Event",
            "lifecycle.Memory",
            "memoryhub.Fact",
            "memoryhub.Note",
            "memoryhub.RollingSummary",
            "memoryhub.Scratchpad",
            "retrieval.Document",
        ],
    ),
    (
        "schedules",
        "Schedules",
        ["scheduling.Schedule", "scheduling.Run", "scheduling.Delivery", "scheduling.Webhook"],
    ),
    (
        "reviews",
        "Reviews and consolidation",
        ["lifecycle.PendingDeletion", "lifecycle.ConsolidationReport", "lifecycle.ArchivedMemory"],
    ),
    (
        "access",
        "Tenants and access",
        [
            "accounts.Tenant",
            "accounts.Workspace",
            "accounts.Channel",
            "accounts.ApiKey",
            "auth.User",
            "auth.Group",
        ],
    ),
]
INTERNALS = ("internals", "Internals: search index, background work, logs")
# Names an operator knows them by, where the model's own name is the implementation's.
NAMES = {
    "memoryhub.Session": "Conversations (sessions)",
    "memoryhub.EndUser": "People (end users)",
    "memoryhub.Event": "Messages (events)",
}


def _key(model_dict: dict[str, Any]) -> str:
    meta = model_dict["model"]._meta
    return f"{meta.app_label}.{meta.object_name}"


class ConsoleSite(AdminSite):
    site_header = "MemoryHub console"
    site_title = "MemoryHub console"
    # no public site: the header links to the dashboard and the API reference instead
    site_url = None

    def get_app_list(
        self, request: HttpRequest, app_label: str | None = None
    ) -> list[dict[str, Any]]:
        if app_label:  # an app's own index page stays Django's
            return super().get_app_list(request, app_label)
        by_key = {
            _key(m): (m, app)
            for app in self._build_app_dict(request).values()
            for m in app["models"]
        }
        placed: set[str] = set()
        groups = []
        for label, name, keys in GROUPS:
            models = []
            for key in keys:
                if key in by_key:
                    model_dict = by_key[key][0]
                    model_dict["name"] = NAMES.get(key, model_dict["name"])
                    models.append(model_dict)
                    placed.add(key)
            if models:
                groups.append(self._group(label, name, models, by_key))
        rest = sorted(
            (m for key, (m, _) in by_key.items() if key not in placed),
            key=lambda m: (by_key[_key(m)][1]["name"].lower(), m["name"].lower()),
        )
        if rest:
            groups.append(self._group(*INTERNALS, rest, by_key))
        return groups

    @staticmethod
    def _group(
        label: str,
        name: str,
        models: list[dict[str, Any]],
        by_key: dict[str, tuple[dict[str, Any], dict[str, Any]]],
    ) -> dict[str, Any]:
        # The caption leads to the first list of the group (a group is no app with an index page).
        return {
            "name": name,
            "app_label": label,
            "app_url": models[0]["admin_url"] or "",
            "has_module_perms": True,
            "models": models,
        }


class ConsoleAdminConfig(AdminConfig):
    default_site = "memoryhub.plumbing.console_site.ConsoleSite"
