"""Export and import of memory as JSON with a schema version (SPEC S9, seed 001).

One format for a tenant, a workspace or a session. It holds no database ids and nothing global
(no tenant name, no ref codes), so that export → import into an empty tenant → export gives the
same document. Rows are listed in id order and referred to by name (workspace, channel, session
id, document URI) or by their position in the file ("key"), never by id.

Chunks (the searchable memories, with their embeddings, access counts, tiers and merge
provenance) are carried as they are, so a consolidated memory comes back consolidated; a file
without "chunks" is re-indexed through the pipeline instead, and chunks whose embedding is
missing or of another model are re-embedded after import.

Models of other areas that belong to a tenant (notes, facts, scratchpads, summaries, schedules…)
are discovered and carried generically under "records", keyed by model label.

Import is all or nothing: one transaction; a malformed, partial or conflicting file is refused
with a 4xx code and nothing is stored.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

from django.apps import apps
from django.conf import settings
from django.db import DatabaseError, IntegrityError, models, transaction
from django.utils.dateparse import parse_datetime
from django.utils.duration import duration_iso_string

from accounts.models import Channel, Tenant, Workspace
from memoryhub.errors import Conflict, Forbidden, Invalid, NotFound, TooLarge
from memoryhub.models import Event, RollingSummary, Session, SessionStatus, iso
from memoryhub.searchable import Searchable
from memoryhub.signals import memory_saved
from memoryhub.tasks import enqueue_on_commit
from retrieval.embedders import DIMENSIONS, get_embedder
from retrieval.models import Chunk, Document

SCHEMA_VERSION = 1
FORMAT = "memoryhub-export"
SCOPES = ("tenant", "workspace", "session")

# Apps and models carried explicitly, or not at all (configuration, operations, our own reports).
_SKIP_APPS = {"accounts", "retrieval", "lifecycle", "django_q", "admin", "auth", "contenttypes", "sessions"}
_EXPLICIT = {Session, Event, RollingSummary}


class InvalidImport(Invalid):
    def __init__(self, message: str, path: str = "", code: str = "invalid_import") -> None:
        super().__init__(code, message + (f" (at {path})" if path else ""), details={"path": path})


@dataclass(frozen=True)
class ExportScope:
    kind: str = "tenant"
    workspace: str | None = None
    session: str | None = None

    def as_dict(self) -> dict[str, str]:
        out = {"type": self.kind}
        if self.workspace:
            out["workspace"] = self.workspace
        if self.session:
            out["session"] = self.session
        return out


# --- generic records of other areas ----------------------------------------------------------


def record_models() -> list[type[models.Model]]:
    """Tenant-owned models of other areas, parents before children.

    A model with a required link to something the file cannot name (a row of another system,
    e.g. a queue's task) is left out rather than exported into a file that could not be imported.
    """
    found = [
        m for m in apps.get_models()
        if m._meta.app_label not in _SKIP_APPS and m not in _EXPLICIT and not m._meta.proxy
        and getattr(m, "exportable", True)  # operational counters say `exportable = False`
        and any(f.name == "tenant" and f.is_relation for f in m._meta.concrete_fields)
    ]
    nameable = {Tenant, Workspace, Channel, Session, *found}
    changed = True
    while changed:
        keep = [m for m in found if all(f.related_model in nameable or f.null
                                        for f in m._meta.concrete_fields if f.is_relation)]
        changed = len(keep) != len(found)
        found, nameable = keep, {Tenant, Workspace, Channel, Session, *keep}
    ordered: list[type[models.Model]] = []
    pending = sorted(found, key=lambda m: m._meta.label)
    while pending:
        progressed = False
        for model in list(pending):
            parents = {f.related_model for f in model._meta.concrete_fields if f.is_relation} & set(pending)
            if not parents - {model}:
                ordered.append(model)
                pending.remove(model)
                progressed = True
        if not progressed:  # a cycle: keep label order, FKs inside the cycle are carried as keys
            ordered.extend(pending)
            break
    return ordered


def _record_fields(model: type[models.Model]) -> list[models.Field]:
    return [
        f for f in model._meta.concrete_fields
        if not f.primary_key and f.name != "tenant" and not (f.unique and not f.is_relation)
        and not getattr(f, "generated", False) and f.editable  # not editable: derived by the model
    ]


def _searchable(obj: models.Model) -> Searchable | None:
    for name in ("as_searchable", "searchable", "to_searchable"):
        method = getattr(obj, name, None)
        if callable(method):
            try:
                value = method()
            except Exception:  # a half-built row: not searchable
                return None
            return value if isinstance(value, Searchable) else None
    return None


def _derived_metadata(searchable: Searchable | None) -> dict[str, Any]:
    """What indexing copies from a memory into its chunks' metadata (ids included): not exported,
    rebuilt from the imported memory."""
    if searchable is None:
        return {}
    return {k: v for k, v in json.loads(json.dumps(searchable.metadata, default=str)).items()
            if v not in (None, "", [], {})}


# --- export ----------------------------------------------------------------------------------


def _value(value: Any) -> Any:
    """A field's value as JSON; the model field parses these strings back on import."""
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, (date, time)):
        return value.isoformat()
    if isinstance(value, timedelta):
        return duration_iso_string(value)
    if isinstance(value, (Decimal, UUID)):
        return str(value)
    if hasattr(value, "to_list"):
        return [float(v) for v in value.to_list()]
    return value


class Exporter:
    def __init__(self, tenant: Tenant, scope: ExportScope) -> None:
        self.tenant = tenant
        self.scope = scope
        sessions = Session.objects.filter(tenant=tenant).select_related("workspace", "channel").order_by("id")
        self.workspace: Workspace | None = None
        if scope.kind == "workspace":
            self.workspace = Workspace.objects.filter(tenant=tenant, name=scope.workspace).first()
            if self.workspace is None:
                raise NotFound("workspace_not_found", f"Workspace {scope.workspace!r} does not exist.")
            sessions = sessions.filter(workspace=self.workspace)
        elif scope.kind == "session":
            sessions = sessions.filter(external_id=scope.session)
            if not sessions.exists():
                raise NotFound("session_not_found", f"Session {scope.session!r} does not exist.")
        self.sessions = list(sessions)
        self.session_ids = {s.pk for s in self.sessions}
        self.record_keys: dict[str, dict[int, int]] = {}  # model label → pk → position
        self.source_refs: dict[tuple[str, str], dict[str, Any]] = {}  # (kind, source id) → ref
        self.derived: dict[tuple[str, str], dict[str, Any]] = {}  # (kind, source id) → chunk metadata

    def _in_scope(self, qs: models.QuerySet[Any], model: type[models.Model]) -> models.QuerySet[Any]:
        """Rows of a workspace or session export: those of its sessions (and of the workspace)."""
        if self.scope.kind == "tenant":
            return qs
        names = {f.name for f in model._meta.concrete_fields}
        keep = models.Q(pk__in=[])
        if "session" in names:
            keep |= models.Q(session_id__in=self.session_ids)
        if self.scope.kind == "workspace" and "workspace" in names:
            keep |= models.Q(workspace=self.workspace)
        for f in model._meta.concrete_fields:  # children of exported rows (a scratchpad's items)
            keys = self.record_keys.get(f.related_model._meta.label) if f.is_relation and f.related_model else None
            if keys and f.related_model is not model:
                keep |= models.Q(**{f"{f.attname}__in": list(keys)})
        return qs.filter(keep)

    def workspaces(self) -> list[dict[str, Any]]:
        qs = Workspace.objects.filter(tenant=self.tenant).order_by("name")
        if self.workspace is not None:
            qs = qs.filter(pk=self.workspace.pk)
        elif self.scope.kind == "session":
            qs = qs.filter(pk__in={s.workspace_id for s in self.sessions})
        channels = defaultdict(list)
        for channel in Channel.objects.filter(workspace__in=qs).order_by("name"):
            channels[channel.workspace_id].append({"name": channel.name})
        # No creation times: an importing tenant already has its own "default" workspace.
        return [{"name": w.name, "channels": channels[w.pk]} for w in qs]

    def session_rows(self) -> list[dict[str, Any]]:
        events = defaultdict(list)
        for e in Event.objects.filter(session_id__in=self.session_ids).order_by("session_id", "sequence"):
            events[e.session_id].append({
                "sequence": e.sequence, "role": e.role, "content": e.content, "tool_name": e.tool_name,
                "tool_args": e.tool_args, "tool_result": e.tool_result, "metadata": e.metadata,
                "importance": e.importance, "idempotency_key": e.idempotency_key, "created_at": iso(e.created_at),
            })
        summaries = {r.session_id: r for r in RollingSummary.objects.filter(session_id__in=self.session_ids)}
        rows = []
        for s in self.sessions:
            summary = summaries.get(s.pk)
            rows.append({
                "id": s.external_id, "user_id": s.user_id, "persistence_key": s.persistence_key, "agent": s.agent,
                "workspace": s.workspace.name, "channel": s.channel.name, "title": s.title, "metadata": s.metadata,
                "status": s.status, "created_at": iso(s.created_at), "updated_at": iso(s.updated_at),
                "events": events[s.pk],
                "rolling_summary": None if summary is None else {
                    "text": summary.text, "epoch": summary.epoch, "upper_sequence": summary.upper_sequence,
                    "updated_at": iso(summary.updated_at),
                },
            })
        return rows

    def documents(self) -> list[dict[str, Any]]:
        qs = self._in_scope(Document.objects.filter(tenant=self.tenant), Document).select_related("workspace", "session")
        rows = []
        for d in qs.order_by("id"):
            self.source_refs[("document", d.source_id)] = {"document": d.source_uri}
            rows.append({
                "source_uri": d.source_uri, "workspace": d.workspace.name if d.workspace else None,
                "session": d.session.external_id if d.session else None, "content_hash": d.content_hash,
                "metadata": d.metadata, "chunk_count": d.chunk_count, "created_at": iso(d.created_at),
                "updated_at": iso(d.updated_at),
            })
        return rows

    def records(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for model in record_models():
            label = model._meta.label
            rows = list(self._in_scope(model._default_manager.filter(tenant=self.tenant), model).order_by("pk"))
            keys = self.record_keys.setdefault(label, {})
            for position, obj in enumerate(rows):
                keys[obj.pk] = position
            out[label] = [self._record(model, obj, position) for position, obj in enumerate(rows)]
            for position, obj in enumerate(rows):
                searchable = _searchable(obj)
                if searchable is not None:
                    ref = (searchable.kind, str(searchable.source_id))
                    self.source_refs[ref] = {"record": label, "key": position}
                    self.derived[ref] = _derived_metadata(searchable)
        return {k: v for k, v in out.items() if v}

    def _record(self, model: type[models.Model], obj: models.Model, position: int) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        for f in _record_fields(model):
            if f.is_relation:
                target_id = getattr(obj, f.attname)
                fields[f.name] = None if target_id is None else self._relation(f, obj, target_id)
            else:
                fields[f.name] = _value(f.value_from_object(obj))
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

    def chunks(self) -> list[dict[str, Any]]:
        qs = Chunk.objects.filter(tenant=self.tenant)
        if self.scope.kind == "session":
            qs = qs.filter(session_id__in=self.session_ids)
        elif self.scope.kind == "workspace":
            qs = qs.filter(models.Q(workspace=self.workspace) | models.Q(session_id__in=self.session_ids))
        sequences = {}
        event_ids = [c.metadata.get("event_id") for c in qs.only("metadata") if isinstance(c.metadata, dict)]
        for pk, seq in Event.objects.filter(pk__in=[i for i in event_ids if isinstance(i, int)]).values_list("id", "sequence"):
            sequences[pk] = seq
        rows = []
        for c in qs.select_related("session", "workspace", "channel__workspace").order_by("id"):
            metadata = dict(c.metadata)
            event_id = metadata.pop("event_id", None)
            derived = self.derived.get((c.kind, c.source_id), {})
            metadata = {k: v for k, v in metadata.items() if not (k in derived and derived[k] == v)}
            rows.append({
                "kind": c.kind,
                "source": self.source_refs.get((c.kind, c.source_id), {"id": c.source_id} if c.source_id else None),
                "session": c.session.external_id if c.session_id else None,
                "event": sequences.get(event_id) if event_id is not None else None,
                "workspace": c.workspace.name if c.workspace_id else None,
                "channel": [c.channel.workspace.name, c.channel.name] if c.channel_id else None,
                "tier": c.tier, "lifetime": c.lifetime, "user_id": c.user_id, "role": c.role, "agent": c.agent,
                "tags": list(c.tags), "sequence_start": c.sequence_start, "sequence_end": c.sequence_end,
                "text": c.text, "context": c.context, "content_hash": c.content_hash, "metadata": metadata,
                "importance": c.importance, "access_count": c.access_count,
                "accessed_at": iso(c.accessed_at) if c.accessed_at else None, "created_at": iso(c.created_at),
                "indexed_at": iso(c.indexed_at),
                "embedding": _value(c.embedding) if c.embedding is not None else None,
                "embedding_model": c.embedding_model,
            })
        return rows


def export_memory(*, tenant: Tenant, scope: ExportScope) -> dict[str, Any]:
    exporter = Exporter(tenant, scope)
    records = exporter.records()  # first: chunks refer to their sources
    documents = exporter.documents()
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "scope": scope.as_dict(),
        "workspaces": exporter.workspaces(),
        "sessions": exporter.session_rows(),
        "documents": documents,
        "records": records,
        "chunks": exporter.chunks(),
    }


# --- import ----------------------------------------------------------------------------------


def _get(row: Any, name: str, types: type | tuple[type, ...], path: str, *, required: bool = True,
         nullable: bool = False, default: Any = None) -> Any:
    if not isinstance(row, dict):
        raise InvalidImport("expected an object", path)
    if name not in row:
        if required:
            raise InvalidImport(f"missing field {name!r}", path)
        return default
    value = row[name]
    if value is None and nullable:
        return None
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise InvalidImport(f"field {name!r} has the wrong type", f"{path}.{name}")
    if not isinstance(value, types):
        raise InvalidImport(f"field {name!r} has the wrong type", f"{path}.{name}")
    return value


def _time(row: Any, name: str, path: str, *, nullable: bool = False) -> datetime | None:
    raw = _get(row, name, str, path, nullable=nullable)
    if raw is None:
        return None
    value = parse_datetime(raw)
    if value is None or value.tzinfo is None:
        raise InvalidImport(f"field {name!r} is not an ISO-8601 time with a zone", f"{path}.{name}")
    return value


def _list(data: dict[str, Any], name: str) -> list[Any]:
    value = data.get(name, [])
    if not isinstance(value, list):
        raise InvalidImport(f"{name!r} must be a list", name)
    return value


def check_header(data: Any) -> None:
    if not isinstance(data, dict):
        raise InvalidImport("the import must be a JSON object")
    if data.get("format") != FORMAT:
        raise InvalidImport(f"not a MemoryHub export (format must be {FORMAT!r})", "format")
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise InvalidImport("schema_version is missing", "schema_version")
    if version != SCHEMA_VERSION:
        raise Invalid("unsupported_schema_version",
                       f"schema_version {version} is not supported (this server reads {SCHEMA_VERSION}).",
                       details={"supported": [SCHEMA_VERSION]})
    for name in ("workspaces", "sessions"):
        if name not in data:
            raise InvalidImport(f"missing {name!r}: the file is incomplete", name)


class Importer:
    def __init__(self, tenant: Tenant, limit_workspace: Workspace | None) -> None:
        self.tenant = tenant
        self.limit_workspace = limit_workspace
        self.workspaces: dict[str, Workspace] = {}
        self.channels: dict[tuple[str, str], Channel] = {}
        self.sessions: dict[str, Session] = {}
        self.events: dict[tuple[str, int], int] = {}
        self.documents: dict[str, Document] = {}
        self.records: dict[str, list[models.Model]] = {}
        self.counts: dict[str, int] = defaultdict(int)

    def workspace(self, name: Any, path: str) -> Workspace:
        if not isinstance(name, str) or not name:
            raise InvalidImport("a workspace name is required", path)
        if name not in self.workspaces:
            if self.limit_workspace is not None and name != self.limit_workspace.name:
                raise Forbidden("workspace_forbidden", f"This API key is limited to workspace "
                               f"{self.limit_workspace.name!r}; the file has {name!r}.")
            workspace, created = Workspace.objects.get_or_create(tenant=self.tenant, name=name)
            self.workspaces[name] = workspace
            self.counts["workspaces"] += int(created)
        return self.workspaces[name]

    def channel(self, ref: Any, path: str) -> Channel:
        if not (isinstance(ref, list) and len(ref) == 2 and all(isinstance(v, str) and v for v in ref)):
            raise InvalidImport("a channel is [workspace, channel]", path)
        key = (ref[0], ref[1])
        if key not in self.channels:
            self.channels[key], _ = Channel.objects.get_or_create(
                tenant=self.tenant, workspace=self.workspace(ref[0], path), name=ref[1])
        return self.channels[key]

    def session(self, ref: Any, path: str) -> Session:
        if ref not in self.sessions:
            raise InvalidImport(f"session {ref!r} is not in the file", path)
        return self.sessions[ref]

    # -- rows

    def import_workspaces(self, rows: list[Any]) -> None:
        for i, row in enumerate(rows):
            path = f"workspaces[{i}]"
            workspace = self.workspace(_get(row, "name", str, path), path)
            for j, channel_row in enumerate(_get(row, "channels", list, path)):
                cpath = f"{path}.channels[{j}]"
                self.channel([workspace.name, _get(channel_row, "name", str, cpath)], cpath)

    def import_sessions(self, rows: list[Any]) -> None:
        for i, row in enumerate(rows):
            path = f"sessions[{i}]"
            external_id = _get(row, "id", str, path)
            if not external_id or len(external_id) > 200:
                raise InvalidImport("a session id is 1 to 200 characters", f"{path}.id")
            if external_id in self.sessions or Session.objects.filter(tenant=self.tenant, external_id=external_id).exists():
                raise Conflict("session_exists", f"Session {external_id!r} already exists in this tenant; "
                               "nothing was imported.", {"session": external_id})
            status = _get(row, "status", str, path)
            if status not in SessionStatus.values:
                raise InvalidImport(f"unknown status {status!r}", f"{path}.status")
            workspace = self.workspace(_get(row, "workspace", str, path), f"{path}.workspace")
            events = _get(row, "events", list, path)
            session = Session.objects.create(
                tenant=self.tenant, workspace=workspace,
                channel=self.channel([workspace.name, _get(row, "channel", str, path)], f"{path}.channel"),
                external_id=external_id, user_id=_get(row, "user_id", str, path),
                persistence_key=_get(row, "persistence_key", str, path), agent=_get(row, "agent", str, path),
                title=_get(row, "title", str, path), metadata=_get(row, "metadata", dict, path), status=status,
                created_at=_time(row, "created_at", path), updated_at=_time(row, "updated_at", path),
            )
            self.sessions[external_id] = session
            last = self.import_events(session, events, f"{path}.events")
            Session.objects.filter(pk=session.pk).update(last_sequence=last, event_count=len(events))
            summary = _get(row, "rolling_summary", dict, path, nullable=True)
            if summary is not None:
                spath = f"{path}.rolling_summary"
                RollingSummary.objects.create(
                    session=session, tenant=self.tenant, text=_get(summary, "text", str, spath),
                    epoch=_get(summary, "epoch", int, spath), upper_sequence=_get(summary, "upper_sequence", int, spath),
                    updated_at=_time(summary, "updated_at", spath))
                self.counts["rolling_summaries"] += 1
            self.counts["sessions"] += 1

    def import_events(self, session: Session, rows: list[Any], path: str) -> int:
        events, last = [], 0
        for i, row in enumerate(rows):
            epath = f"{path}[{i}]"
            sequence = _get(row, "sequence", int, epath)
            if sequence <= last:
                raise InvalidImport("event sequences must be positive and increasing", f"{epath}.sequence")
            last = sequence
            role = _get(row, "role", str, epath)
            if role not in ("user", "assistant", "tool", "system"):
                raise InvalidImport(f"unknown role {role!r}", f"{epath}.role")
            importance = _get(row, "importance", (int, float), epath)
            if not 0.0 <= importance <= 1.0:
                raise InvalidImport("importance must be within [0, 1]", f"{epath}.importance")
            events.append(Event(
                tenant=self.tenant, session=session, sequence=sequence, role=role,
                content=_get(row, "content", str, epath), tool_name=_get(row, "tool_name", str, epath),
                tool_args=row.get("tool_args"), tool_result=row.get("tool_result"),
                metadata=_get(row, "metadata", dict, epath), importance=float(importance),
                idempotency_key=_get(row, "idempotency_key", str, epath, nullable=True),
                created_at=_time(row, "created_at", epath),
            ))
        for event in Event.objects.bulk_create(events):
            self.events[(session.external_id, event.sequence)] = event.pk
        self.counts["events"] += len(events)
        return last

    def import_documents(self, rows: list[Any]) -> None:
        for i, row in enumerate(rows):
            path = f"documents[{i}]"
            uri = _get(row, "source_uri", str, path)
            if uri in self.documents or Document.objects.filter(tenant=self.tenant, source_uri=uri).exists():
                raise Conflict("document_exists", f"Document {uri!r} already exists in this tenant; nothing was imported.")
            workspace = _get(row, "workspace", str, path, nullable=True)
            session = _get(row, "session", str, path, nullable=True)
            self.documents[uri] = Document.objects.create(
                tenant=self.tenant, source_uri=uri,
                workspace=self.workspace(workspace, path) if workspace else None,
                session=self.session(session, f"{path}.session") if session else None,
                content_hash=_get(row, "content_hash", str, path), metadata=_get(row, "metadata", dict, path),
                chunk_count=_get(row, "chunk_count", int, path), created_at=_time(row, "created_at", path),
                updated_at=_time(row, "updated_at", path))
            self.counts["documents"] += 1

    def import_records(self, data: Any) -> None:
        if not isinstance(data, dict):
            raise InvalidImport("'records' must be an object", "records")
        known = {m._meta.label: m for m in record_models()}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise InvalidImport(f"unknown record types {unknown}", "records")
        for label, model in known.items():
            rows = data.get(label, [])
            if not isinstance(rows, list):
                raise InvalidImport("records of a type must be a list", f"records.{label}")
            self.records[label] = self._create_records(model, rows, f"records.{label}")

    def _create_records(self, model: type[models.Model], rows: list[Any], path: str) -> list[models.Model]:
        """Create rows one by one with save(), so that the model's own logic runs (derived
        columns such as a fact's scope key). Links between rows of the same model (a summary
        node's parent) are set once every row exists."""
        created: list[models.Model] = []
        fields = _record_fields(model)
        later: list[tuple[models.Model, models.Field, Any, str]] = []
        for i, row in enumerate(rows):
            rpath = f"{path}[{i}]"
            if _get(row, "key", int, rpath) != i:
                raise InvalidImport("record keys must be 0, 1, 2… in order", f"{rpath}.key")
            values = _get(row, "fields", dict, rpath)
            kwargs: dict[str, Any] = {"tenant": self.tenant}
            for f in fields:
                if f.name not in values:
                    continue
                fpath = f"{rpath}.fields.{f.name}"
                if f.is_relation and f.related_model is model and values[f.name] is not None:
                    later.append((None, f, values[f.name], fpath))  # type: ignore[arg-type]
                    continue
                kwargs[f.attname if f.is_relation else f.name] = self._field_value(f, values[f.name], fpath)
            auto_times = {f.name: kwargs[f.name] for f in fields if f.name in kwargs
                          and (getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False))}
            try:
                obj = model(**kwargs)
                with transaction.atomic():
                    obj.save()
                    if auto_times:  # save() stamped auto_now fields "now": put the file's times back
                        model._default_manager.filter(pk=obj.pk).update(**auto_times)
            except IntegrityError:
                raise
            except (DatabaseError, TypeError, ValueError) as exc:
                raise InvalidImport(f"invalid {model._meta.label}: {exc}".splitlines()[0], rpath) from None
            created.append(obj)
            later = [(obj if o is None else o, f, raw, fp) for o, f, raw, fp in later]
        for obj, f, raw, fpath in later:
            key = raw.get("key") if isinstance(raw, dict) else None
            if not isinstance(key, int) or not 0 <= key < len(created):
                raise InvalidImport(f"reference to {model._meta.label} not found in the file", fpath)
            model._default_manager.filter(pk=obj.pk).update(**{f.attname: created[key].pk})
            setattr(obj, f.attname, created[key].pk)
        self.counts[model._meta.label] += len(created)
        return created

    def _field_value(self, f: models.Field, raw: Any, path: str) -> Any:
        if raw is None:
            return None
        if f.is_relation:
            target = f.related_model
            if target is Workspace:
                return self.workspace(raw, path).pk
            if target is Channel:
                return self.channel(raw, path).pk
            if target is Session:
                return self.session(raw, path).pk
            label = target._meta.label
            if isinstance(raw, dict) and isinstance(raw.get("key"), int) and label in self.records:
                rows = self.records[label]
                if 0 <= raw["key"] < len(rows):
                    return rows[raw["key"]].pk
            raise InvalidImport(f"reference to {label} not found in the file", path)
        if isinstance(f, models.DateTimeField):
            value = parse_datetime(raw) if isinstance(raw, str) else None
            if value is None:
                raise InvalidImport("not an ISO-8601 time", path)
            return value
        return raw

    def import_chunks(self, rows: list[Any]) -> list[int]:
        chunks, current = [], get_embedder().name
        for i, row in enumerate(rows):
            path = f"chunks[{i}]"
            kind = _get(row, "kind", str, path)
            if kind not in ("event", "note", "fact", "summary", "document"):
                raise InvalidImport(f"unknown kind {kind!r}", f"{path}.kind")
            tier = _get(row, "tier", str, path)
            lifetime = _get(row, "lifetime", str, path)
            if tier not in ("conversation", "channel", "workspace", "account") or \
                    lifetime not in ("long_term", "short_term", "conversation"):
                raise InvalidImport("unknown tier or lifetime", path)
            session_ref = _get(row, "session", str, path, nullable=True)
            session = self.session(session_ref, f"{path}.session") if session_ref else None
            workspace = _get(row, "workspace", str, path, nullable=True)
            channel = row.get("channel")
            metadata = dict(_get(row, "metadata", dict, path))
            event_sequence = _get(row, "event", int, path, nullable=True)
            if event_sequence is not None:
                event_id = self.events.get((session_ref or "", event_sequence))
                if event_id is None:
                    raise InvalidImport("the chunk's event is not in the file", f"{path}.event")
                metadata["event_id"] = event_id
            embedding = _get(row, "embedding", list, path, nullable=True)
            if embedding is not None and (len(embedding) != DIMENSIONS or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) for v in embedding)):
                raise InvalidImport(f"an embedding is a list of {DIMENSIONS} numbers", f"{path}.embedding")
            importance = _get(row, "importance", (int, float), path)
            accessed_at = _time(row, "accessed_at", path, nullable=True)
            source_id, derived = self._source(row.get("source"), f"{path}.source")
            metadata = {**derived, **metadata}
            chunks.append(Chunk(
                tenant=self.tenant, kind=kind, source_id=source_id,
                session=session, workspace=self.workspace(workspace, f"{path}.workspace") if workspace else None,
                channel=self.channel(channel, f"{path}.channel") if channel is not None else None,
                tier=tier, lifetime=lifetime, user_id=_get(row, "user_id", str, path),
                role=_get(row, "role", str, path), agent=_get(row, "agent", str, path),
                tags=[str(t) for t in _get(row, "tags", list, path)],
                sequence_start=_get(row, "sequence_start", int, path, nullable=True),
                sequence_end=_get(row, "sequence_end", int, path, nullable=True),
                text=_get(row, "text", str, path), context=_get(row, "context", str, path),
                content_hash=_get(row, "content_hash", str, path), metadata=metadata,
                importance=float(importance), access_count=_get(row, "access_count", int, path),
                accessed_at=accessed_at, created_at=_time(row, "created_at", path),
                indexed_at=_time(row, "indexed_at", path), embedding=embedding,
                embedding_model=_get(row, "embedding_model", str, path) if embedding is not None else "",
            ))
        created = Chunk.objects.bulk_create(chunks)
        self.counts["chunks"] += len(created)
        return [c.pk for c in created if c.embedding is None or c.embedding_model != current]

    def _source(self, ref: Any, path: str) -> tuple[str, dict[str, Any]]:
        """The chunk's source id in this tenant, and the metadata indexing derives from it."""
        if ref is None:
            return "", {}
        if not isinstance(ref, dict):
            raise InvalidImport("a chunk's source is an object", path)
        if "document" in ref:
            document = self.documents.get(ref["document"])
            if document is None:
                raise InvalidImport("the chunk's document is not in the file", path)
            return document.source_id, {}
        if "record" in ref:
            rows = self.records.get(ref["record"], [])
            key = ref.get("key")
            if not isinstance(key, int) or not 0 <= key < len(rows):
                raise InvalidImport("the chunk's source record is not in the file", path)
            searchable = _searchable(rows[key])
            if searchable is None:
                raise InvalidImport("the chunk's source record is not a searchable memory", path)
            return str(searchable.source_id), _derived_metadata(searchable)
        if isinstance(ref.get("id"), str):
            return ref["id"], {}
        raise InvalidImport("unknown source reference", path)


@transaction.atomic
def import_memory(*, tenant: Tenant, data: Any, limit_workspace: Workspace | None = None) -> dict[str, int]:
    """Import an export into `tenant`: everything or nothing. Returns counts per kind of row."""
    check_header(data)
    importer = Importer(tenant, limit_workspace)
    first_new_chunk = Chunk.objects.order_by("-id").values_list("id", flat=True).first() or 0
    try:
        importer.import_workspaces(_list(data, "workspaces"))
        importer.import_sessions(_list(data, "sessions"))
        importer.import_documents(_list(data, "documents"))
        importer.import_records(data.get("records", {}))
        # Rows of other areas may index themselves when created: the file's chunks replace them.
        Chunk.objects.filter(tenant=tenant, id__gt=first_new_chunk).delete()
        if "chunks" in data:
            stale = importer.import_chunks(_list(data, "chunks"))
            if stale:
                enqueue_on_commit("retrieval.tasks.embed_chunks", stale)
        else:
            for rows in importer.records.values():
                for obj in rows:
                    searchable = _searchable(obj)
                    if searchable is not None:
                        memory_saved.send(sender=type(obj), kind=searchable.kind, instance=obj)
            for session in importer.sessions.values():
                event_ids = list(Event.objects.filter(session=session).values_list("id", flat=True))
                if event_ids:
                    enqueue_on_commit("retrieval.tasks.index_events", session.pk, event_ids)
    except IntegrityError as exc:
        raise Conflict("import_conflict", f"The file conflicts with stored data: {exc}".splitlines()[0]) from None
    except DatabaseError as exc:  # a value the column cannot hold (too long, out of range…)
        raise InvalidImport(f"a value does not fit: {exc}".splitlines()[0]) from None
    return {k: v for k, v in sorted(importer.counts.items()) if v}


def parse_export_file(raw: bytes) -> Any:
    if len(raw) > settings.MEMORYHUB_IMPORT_MAX_BYTES:
        raise TooLarge("import_too_large", "The file is larger than MEMORYHUB_IMPORT_MAX_BYTES.")
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidImport(f"not valid JSON: {exc}", code="malformed_json") from None
