"""Export a tenant, a workspace, a session or an end user (docs/memory-model.md#export-and-import):
workspaces, sessions with their events and rolling summary, records of other areas, and what
extensions add (retrieval: documents, chunks).

The document is written as it is read (`export_json`): rows come from server-side cursors in
batches and leave as JSON text, so an export's memory stays bounded whatever the tenant's size;
only ids and the small references between rows (record positions, chunk sources) are kept.
The Exporter is what an extension sees of the export; runs.py writes the document."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from django.db import models

from accounts.models import Channel, Tenant, Workspace
from accounts.querysets import owned_by
from memoryhub.errors import NotFound
from memoryhub.forget import user_owned_models
from memoryhub.models import Event, RollingSummary, Session, iso
from memoryhub.transfer.format import ExportScope, json_text, json_value
from memoryhub.transfer.records import derived_metadata, record_fields, record_models, searchable_of


class Exporter:
    """One export: the scope's sessions, and what extensions need to refer to exported rows."""

    def __init__(self, tenant: Tenant, scope: ExportScope, *, user_id: str = "") -> None:
        self.tenant = tenant
        self.scope = scope
        # A user-limited key's export: that user's conversations and rows, and shared knowledge; a
        # user's export: that user's rows alone (in_scope), the key's user or one of a tenant key's.
        self.user_id = user_id or scope.user or ""
        sessions = (
            Session.objects.filter(tenant=tenant)
            .select_related("workspace", "channel")
            .order_by("id")
        )
        if self.user_id:
            sessions = sessions.owned_by(self.user_id)
        self.workspace: Workspace | None = None
        if scope.kind == "workspace":
            self.workspace = Workspace.objects.filter(tenant=tenant, name=scope.workspace).first()
            if self.workspace is None:
                raise NotFound(
                    "workspace_not_found", f"Workspace {scope.workspace!r} does not exist."
                )
            sessions = sessions.filter(workspace=self.workspace)
        elif scope.kind == "session":
            sessions = sessions.filter(external_id=scope.session)
            if not sessions.exists():
                raise NotFound("session_not_found", f"Session {scope.session!r} does not exist.")
        elif scope.kind == "user" and not has_rows(tenant, self.user_id):
            raise user_not_found(self.user_id)
        self.sessions = list(sessions)
        self.session_ids = {s.pk for s in self.sessions}
        self.record_keys: dict[str, dict[int, int]] = {}  # model label → pk → position
        self.source_refs: dict[tuple[str, str], dict[str, Any]] = {}  # (kind, source id) → ref
        # (kind, source id) → chunk metadata
        self.derived: dict[tuple[str, str], dict[str, Any]] = {}

    def in_scope(self, qs: models.QuerySet[Any], model: type[models.Model]) -> models.QuerySet[Any]:
        """Rows of a workspace or session export: those of its sessions (and of the workspace); of
        a user's export: the user's own (by `user_id`), those of her sessions, and their
        children."""
        if self.scope.kind == "tenant":
            return qs
        names = {f.name for f in model._meta.concrete_fields}
        keep = models.Q(pk__in=[])
        if self.scope.kind == "user" and "user_id" in names:
            keep |= models.Q(user_id=self.user_id)
        if "session" in names:
            keep |= models.Q(session_id__in=self.session_ids)
        if self.scope.kind == "workspace" and "workspace" in names:
            keep |= models.Q(workspace=self.workspace)
        for f in model._meta.concrete_fields:  # children of exported rows (a scratchpad's items)
            keys = (
                self.record_keys.get(f.related_model._meta.label)
                if f.is_relation and f.related_model
                else None
            )
            if keys and f.related_model is not model:
                keep |= models.Q(**{f"{f.attname}__in": list(keys)})
        return qs.filter(keep)

    def owned(self, qs: models.QuerySet[Any], model: type[models.Model]) -> models.QuerySet[Any]:
        """For a user's export, the rows of `qs` the user may see: owned by them or by no one, and
        hanging off nothing the export left out (another user's session, a record not exported)."""
        if not self.user_id:
            return qs
        for f in model._meta.concrete_fields:
            if f.name == "user_id":
                qs = qs.filter(owned_by("user_id", self.user_id))
            elif f.is_relation and f.related_model is Session:
                qs = qs.filter(
                    models.Q(**{f"{f.attname}__isnull": True})
                    | models.Q(**{f"{f.attname}__in": self.session_ids})
                )
            elif (
                f.is_relation
                and f.related_model is not model
                and f.related_model._meta.label in self.record_keys
            ):
                keys = list(self.record_keys[f.related_model._meta.label])
                qs = qs.filter(
                    models.Q(**{f"{f.attname}__isnull": True})
                    | models.Q(**{f"{f.attname}__in": keys})
                )
        return qs

    def workspaces(self) -> list[dict[str, Any]]:
        qs = Workspace.objects.filter(tenant=self.tenant).order_by("name")
        if self.workspace is not None:
            qs = qs.filter(pk=self.workspace.pk)
        elif self.scope.kind == "session":
            qs = qs.filter(pk__in={s.workspace_id for s in self.sessions})
        # those her sessions and records are in (after plan_records)
        elif self.scope.kind == "user":
            held = {s.workspace_id for s in self.sessions}
            for label, records in self.record_querysets.items():
                if (
                    "workspace" in {f.name for f in records.model._meta.concrete_fields}
                    and self.record_keys[label]
                ):
                    held |= set(
                        records.exclude(workspace=None)
                        .values_list("workspace_id", flat=True)
                        .distinct()
                    )
            qs = qs.filter(pk__in=held)
        channels = defaultdict(list)
        for channel in Channel.objects.filter(workspace__in=qs).order_by("name"):
            channels[channel.workspace_id].append(
                {
                    "name": channel.name,
                    "description": channel.description,
                    "is_default": channel.is_default,
                }
            )
        # No creation times: an importing tenant already has its own "default" workspace.
        return [{"name": w.name, "channels": channels[w.pk]} for w in qs]

    def session_json(self) -> Iterator[str]:
        """The sessions with their events as a JSON array, in one pass over the events (in
        session order): not even one session's events are held at once."""
        events = (
            Event.objects.filter(session_id__in=self.session_ids)
            .order_by("session_id", "sequence")
            .iterator(chunk_size=BATCH)
        )
        pending = next(events, None)
        yield "["
        for i, s in enumerate(self.sessions):
            row = self._session_row(s, [], RollingSummary.objects.filter(session_id=s.pk).first())
            summary = row.pop("rolling_summary")
            del row["events"]
            yield ("," if i else "") + json_text(row)[:-1] + ',"events":['
            first = True
            while pending is not None and pending.session_id == s.pk:
                yield ("" if first else ",") + json_text(self._event_row(pending))
                first = False
                pending = next(events, None)
            yield f'],"rolling_summary":{json_text(summary)}}}'
        yield "]"

    @staticmethod
    def _event_row(e: Event) -> dict[str, Any]:
        return {
            "sequence": e.sequence,
            "role": e.role,
            "content": e.content,
            "tool_name": e.tool_name,
            "tool_args": e.tool_args,
            "tool_result": e.tool_result,
            "tool_calls": e.tool_calls,
            "tool_call_id": e.tool_call_id,
            "message": e.message,
            "metadata": e.metadata,
            "importance": e.importance,
            "idempotency_key": e.idempotency_key,
            "created_at": iso(e.created_at),
        }

    @staticmethod
    def _session_row(
        s: Session, events: list[dict[str, Any]], summary: RollingSummary | None
    ) -> dict[str, Any]:
        return {
            "id": s.external_id,
            "user_id": s.user_id,
            "persistence_key": s.persistence_key,
            "agent": s.agent,
            "workspace": s.workspace.name,
            "channel": s.channel.name,
            "title": s.title,
            "metadata": s.metadata,
            "status": s.status,
            "created_at": iso(s.created_at),
            "updated_at": iso(s.updated_at),
            "events": events,
            "rolling_summary": None
            if summary is None
            else {
                "text": summary.text,
                "epoch": summary.epoch,
                "upper_sequence": summary.upper_sequence,
                "updated_at": iso(summary.updated_at),
            },
        }

    def plan_records(self) -> None:
        """Which rows of each record model the export holds, and their positions (ids only):
        children and chunks refer to records by position, so these are known before any is
        written."""
        self.record_querysets: dict[str, models.QuerySet[Any]] = {}
        for model in record_models():
            label = model._meta.label
            qs = self.owned(
                self.in_scope(model._default_manager.filter(tenant=self.tenant), model), model
            )
            # a model whose rows are visible by more than place and owner
            if hasattr(qs, "within_export"):
                qs = qs.within_export(
                    workspace_id=self.workspace.pk if self.workspace else None, user_id=self.user_id
                )
            qs = qs.order_by("pk")
            keys = self.record_keys.setdefault(label, {})
            for position, pk in enumerate(
                qs.values_list("pk", flat=True).iterator(chunk_size=BATCH)
            ):
                keys[pk] = position
            self.record_querysets[label] = qs

    def iter_records(self) -> Iterator[tuple[str, Iterator[dict[str, Any]]]]:
        """(label, its rows) for every record model with rows, after plan_records()."""
        for model in record_models():
            label = model._meta.label
            if self.record_keys.get(label):
                yield label, self._record_rows(model, self.record_querysets[label])

    def _record_rows(
        self, model: type[models.Model], qs: models.QuerySet[Any]
    ) -> Iterator[dict[str, Any]]:
        label = model._meta.label
        for position, obj in enumerate(qs.iterator(chunk_size=BATCH)):
            searchable = searchable_of(obj)
            if searchable is not None:
                ref = (searchable.kind, str(searchable.source_id))
                self.source_refs[ref] = {"record": label, "key": position}
                self.derived[ref] = derived_metadata(searchable)
            yield self._record(model, obj, position)

    def _record(
        self, model: type[models.Model], obj: models.Model, position: int
    ) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        for f in record_fields(model):
            if f.is_relation:
                target_id = getattr(obj, f.attname)
                fields[f.name] = None if target_id is None else self._relation(f, obj, target_id)
            else:
                fields[f.name] = json_value(f.value_from_object(obj))
        return {"key": position, "fields": fields}

    def _relation(self, f: models.Field, obj: models.Model, target_id: int) -> Any:
        target = f.related_model
        if target is Workspace:
            return getattr(obj, f.name).name
        if target is Channel:
            channel = getattr(obj, f.name)
            return [channel.workspace.name, channel.name]
        if target is Session:
            return getattr(obj, f.name).external_id
        keys = self.record_keys.get(target._meta.label, {})
        return {"key": keys[target_id]} if target_id in keys else None


BATCH = 500  # rows per round trip of a server-side cursor


def has_rows(tenant: Tenant, user_id: str) -> bool:
    """Whether the end user holds anything in the tenant: a session or a row of her own (the
    rows forgetting her deletes)."""
    return bool(user_id) and (
        Session.objects.filter(tenant=tenant, user_id=user_id).exists()
        or any(
            model._base_manager.filter(tenant=tenant, user_id=user_id).exists()
            for model in user_owned_models()
        )
    )


def user_not_found(user_id: str) -> NotFound:
    """The answer for a user with nothing here, and for one a key may not export: the same, so it
    tells no one whether another user exists."""
    return NotFound("user_not_found", f"User {user_id!r} has nothing in this tenant.")
