"""django-q2's admin pages (queued, succeeded and failed tasks) with what each task is about:
"run of schedule nightly (acme)", "12 chunks", "3 events of session chat-7", instead of a
function path and a pickled argument list.

django-q2 registers its own admin classes; they are extended here, looked up through the admin
registry and the app registry so that the core imports no django_q module (memoryhub.tasks is
the one that talks to the queue).
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.contrib import admin
from django.db.models import Model
from django.urls import reverse
from django.utils.html import format_html

from memoryhub.admin.base import counted
from memoryhub.models import Session


def _short(func: Any) -> str:
    parts = str(func or "").split(".")
    return ".".join(parts[-2:]) if len(parts) > 1 else str(func or "")


def _run(run_id: Any) -> str:
    try:
        run_model = apps.get_model("scheduling", "Run")
        run = run_model.objects.select_related("schedule", "tenant").filter(pk=str(run_id)).first()
    except (LookupError, ValueError, Exception):  # noqa: BLE001 - a malformed id describes nothing
        return ""
    if run is None:
        return "a schedule run that no longer exists"
    url = reverse("admin:scheduling_run_change", args=[run.pk])
    return format_html(
        '<a href="{}">run of schedule {} ({})</a>', url, run.schedule.name, run.tenant.name
    )


def _session(session_pk: Any, what: str) -> str:
    session = (
        Session.objects.filter(pk=session_pk).select_related("tenant").first()
        if str(session_pk).isdigit()
        else None
    )
    if session is None:
        return f"{what} of a session that no longer exists"
    url = reverse("admin:memoryhub_session_transcript", args=[session.pk])
    return format_html(
        '{} of session <a href="{}">{}</a> ({})',
        what,
        url,
        session.external_id,
        session.tenant.name,
    )


def describe(func: Any, args: Any) -> str:
    """What a task is about, in words (with a link where there is a page for it)."""
    name = str(func or "")
    args = list(args or [])
    if name.endswith("execute_run") and args:
        return _run(args[0]) or "a schedule run"
    if name.endswith("index_events") and len(args) >= 2:
        return _session(args[0], counted(len(args[1]) if isinstance(args[1], list) else 1, "event"))
    if args and isinstance(args[0], list) and all(isinstance(v, int) for v in args[0]):
        return counted(len(args[0]), "chunk" if "chunk" in name or "embed" in name else "item")
    if "session" in name and args and str(args[0]).isdigit():
        return _session(args[0], "work")
    if not args:
        return "every tenant" if name else "—"
    text = ", ".join(repr(a) for a in args)
    return text if len(text) <= 120 else text[:117] + "…"


def _extend(label: str, fields: bool) -> None:
    """Re-register django-q2's admin of `label` with a task column and an "about" column."""
    try:
        model: type[Model] = apps.get_model(label)
    except LookupError:
        return
    base = type(admin.site._registry.get(model, admin.ModelAdmin(model, admin.site)))

    class Described(base):  # type: ignore[valid-type, misc]
        list_display = [
            "task_name",
            "about",
            *[f for f in getattr(base, "list_display", ()) if f not in ("id", "name")],
        ]

        @admin.display(description="task")
        def task_name(self, obj: Any) -> str:
            return f"{_short(obj.func)} ({obj.name})" if obj.name else _short(obj.func)

        @admin.display(description="about")
        def about(self, obj: Any) -> str:
            return describe(obj.func, obj.args)

        def change_view(
            self, request: Any, object_id: str, form_url: str = "", extra_context: Any = None
        ) -> Any:
            obj = self.get_object(request, object_id)
            title = (
                f"{_short(obj.func)}: {describe(obj.func, obj.args)}" if obj is not None else None
            )
            return super().change_view(
                request, object_id, form_url, {**(extra_context or {}), "title": title}
            )

    if fields:
        Described.readonly_fields = ["about", *getattr(base, "readonly_fields", ())]
        Described.fields = (
            ["about", *getattr(base, "fields", ())] if getattr(base, "fields", None) else None
        )
    if admin.site.is_registered(model):
        admin.site.unregister(model)
    admin.site.register(model, Described)


for _label in ("django_q.OrmQ", "django_q.Success", "django_q.Failure"):
    _extend(_label, fields=_label == "django_q.OrmQ")
