"""Import the file's records (rows of other areas, see records.py) into the importing tenant.

With on_conflict skip or merge a record the tenant holds already is not created again: its place in
the file stands for the stored row (conflicts.py says how a row is recognised and what is kept).
"""

from __future__ import annotations

from typing import Any

from django.db import DatabaseError, IntegrityError, models, transaction
from django.utils.dateparse import parse_datetime

from accounts.models import Channel, Workspace
from memoryhub.errors import Conflict, NotFound
from memoryhub.models import Note, Session
from memoryhub.notes import note_not_found
from memoryhub.transfer.conflicts import stored_row
from memoryhub.transfer.format import InvalidImport, get_field
from memoryhub.transfer.importer import Importer
from memoryhub.transfer.records import record_fields, record_models

# A link between rows of one model (a summary node's parent), set once every row exists:
# (the row, or None for the one being built; the field; the raw reference; its path in the file).
Deferred = tuple[models.Model | None, models.Field, Any, str]


class _LeftOut(Exception):
    """The row links to a row of the file that was left out: it is left out too."""


def import_records(importer: Importer, data: Any) -> None:
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
        importer.records[label] = _create_records(importer, model, rows, f"records.{label}")


def _create_records(
    importer: Importer, model: type[models.Model], rows: list[Any], path: str
) -> list[models.Model | None]:
    """Create rows one by one with save(), so that the model's own logic runs (derived
    columns such as a fact's scope key). Links between rows of the same model (a summary
    node's parent) are set once every row exists. Returns the rows in file order: created,
    stored (skip/merge found it) or None (left out with what it hangs off)."""
    rows_out: list[models.Model | None] = []
    fields = record_fields(model)
    later: list[Deferred] = []
    for i, row in enumerate(rows):
        rpath = f"{path}[{i}]"
        if get_field(row, "key", int, rpath) != i:
            raise InvalidImport("record keys must be 0, 1, 2… in order", f"{rpath}.key")
        mark = len(later)
        try:
            kwargs = _record_kwargs(
                importer, model, fields, get_field(row, "fields", dict, rpath), rpath, later
            )
            _check_visible(importer, model, kwargs, rpath)
            obj = _existing(importer, model, fields, kwargs)
        except _LeftOut:
            obj = None
        if obj is None or importer.is_preexisting(obj):
            if obj is not None:  # matched, not written: still the key's user's row to name
                _check_owner(importer, model, kwargs, rpath)
            del later[mark:]  # a stored row keeps its own links
            importer.skipped[model._meta.label] += 1
        else:
            _check_placed(importer, model, kwargs, rpath)
            obj = _save_record(model, fields, kwargs, rpath)
            importer.counts[model._meta.label] += 1
        rows_out.append(obj)
        later = [(obj if o is None else o, f, raw, fp) for o, f, raw, fp in later]
    _link_within(model, rows_out, later)
    return rows_out


def _check_visible(
    importer: Importer, model: type[models.Model], kwargs: dict[str, Any], rpath: str
) -> None:
    """A row of the file that another workspace holds (a note id is unique in the tenant) is
    answered as missing, as a session is (Importer.check_visible)."""
    if importer.limit_workspace is None or not any(
        f.name == "workspace" for f in model._meta.concrete_fields
    ):
        return
    stored = stored_row(model, importer.tenant.pk, kwargs)
    if stored is not None:
        importer.check_visible(stored, _missing(stored, rpath))


def _missing(stored: models.Model, rpath: str) -> NotFound:
    """The 404 a read of the row's id answers (for a note, GET /notes/{id}/'s)."""
    if isinstance(stored, Note):
        return note_not_found(stored.note_id)
    name = stored._meta.model_name
    return NotFound(f"{name}_not_found", f"The {name} at {rpath} does not exist.")


def _existing(
    importer: Importer,
    model: type[models.Model],
    fields: list[models.Field],
    kwargs: dict[str, Any],
) -> models.Model | None:
    """With skip or merge: the stored row this one is (marked pre-existing), or None when this one
    is left out with the stored row it hangs off; otherwise an unsaved row to create."""
    new = model(**kwargs)
    if importer.on_conflict == "fail":
        return new
    links = [f for f in fields if f.is_relation and kwargs.get(f.attname) is not None]
    stored_parents = [
        f
        for f in links
        if f.related_model is not model
        and kwargs[f.attname] in importer.preexisting.get(f.related_model._meta.label, set())
    ]
    if importer.on_conflict == "skip" and stored_parents:
        return None  # skip keeps a stored session (a stored schedule…) with all that hangs off it
    if getattr(model, "transfer_keep_stored_for_session", False) and any(
        f.related_model is Session for f in stored_parents
    ):
        return None  # derived from a merged session's events: the stored ones stay
    history_of = getattr(model, "transfer_history_of", None)
    if history_of and any(f.name == history_of for f in stored_parents):
        return None  # the file's history of a stored row: the stored row keeps its own
    stored = stored_row(model, importer.tenant.pk, kwargs)
    if stored is not None:
        importer.mark_preexisting(stored)
        return stored
    prepare = getattr(new, "before_import_merge", None)
    if callable(prepare) and stored_parents:
        prepare()  # e.g. a scratchpad item takes the next free position in a stored scratchpad
        kwargs.update({f.attname: getattr(new, f.attname) for f in fields if not f.is_relation})
    return new


def _session_of(model: type[models.Model], kwargs: dict[str, Any]) -> Session | None:
    """The session the row belongs to (a link that deletes it with the session), if any."""
    sessions = [
        kwargs[f.attname]
        for f in model._meta.concrete_fields
        if f.is_relation
        and f.related_model is Session
        and f.remote_field.on_delete is models.CASCADE
        and kwargs.get(f.attname) is not None
    ]
    return Session.objects.filter(pk=sessions[0]).first() if sessions else None


def _check_owner(
    importer: Importer, model: type[models.Model], kwargs: dict[str, Any], rpath: str
) -> None:
    """A user-limited key's import: the row is its user's (Importer.check_owner). A row with no
    user, workspace or session of its own hangs off a record of the file (a scratchpad's item, a
    schedule's run), checked as that record; one that hangs off nothing is no one's: refused."""
    if not importer.limit_user:
        return
    names = {f.name for f in model._meta.concrete_fields}
    session = _session_of(model, kwargs)
    if "user_id" in names or "workspace" in names or session is not None:
        importer.check_owner(rpath, user_id=kwargs.get("user_id") or "", session=session)
    elif not any(
        f.is_relation and f.related_model in record_models() for f in model._meta.concrete_fields
    ):
        importer.check_owner(rpath, user_id="", session=None)


def _check_placed(
    importer: Importer, model: type[models.Model], kwargs: dict[str, Any], rpath: str
) -> None:
    """The row to create lands within the key's limits, beside its owner's rows
    (Importer.check_placed); a row of history (`transfer_history_of`) extends only the row it names,
    as that row's owner and workspace."""
    names = {f.name: f for f in model._meta.concrete_fields}
    session = _session_of(model, kwargs)
    if "workspace" in names or session is not None:
        importer.check_placed(
            rpath,
            workspace_id=kwargs.get("workspace_id"),
            session=session,
            user_id=kwargs.get("user_id") or "",
            tier=kwargs.get("tier"),
        )
    else:
        _check_owner(importer, model, kwargs, rpath)
    history_of = getattr(model, "transfer_history_of", None)
    parent_pk = kwargs.get(names[history_of].attname) if history_of else None
    if parent_pk is not None:
        parent = names[history_of].related_model._default_manager.filter(pk=parent_pk).first()
        if parent is not None and (
            getattr(parent, "user_id", "") != (kwargs.get("user_id") or "")
            or getattr(parent, "workspace_id", None) != kwargs.get("workspace_id")
        ):
            raise Conflict(
                "owner_mismatch",
                f"The row at {rpath} is history of a row of another owner or "
                "workspace: nothing was imported.",
                {"path": rpath},
            )


def _record_kwargs(
    importer: Importer,
    model: type[models.Model],
    fields: list[models.Field],
    values: dict[str, Any],
    rpath: str,
    later: list[Deferred],
) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"tenant": importer.tenant}
    for f in fields:
        if f.name not in values:
            continue
        fpath = f"{rpath}.fields.{f.name}"
        if f.is_relation and f.related_model is model and values[f.name] is not None:
            later.append((None, f, values[f.name], fpath))
            continue
        kwargs[f.attname if f.is_relation else f.name] = _field_value(
            importer, f, values[f.name], fpath
        )
    return kwargs


def _save_record(
    model: type[models.Model], fields: list[models.Field], kwargs: dict[str, Any], rpath: str
) -> models.Model:
    auto_times = {
        f.name: kwargs[f.name]
        for f in fields
        if f.name in kwargs and (getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False))
    }
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
    return obj


def _link_within(
    model: type[models.Model], created: list[models.Model | None], later: list[Deferred]
) -> None:
    for obj, f, raw, fpath in later:
        key = raw.get("key") if isinstance(raw, dict) else None
        if not isinstance(key, int) or not 0 <= key < len(created):
            raise InvalidImport(f"reference to {model._meta.label} not found in the file", fpath)
        assert obj is not None  # every deferred link got its row when that row was saved
        if created[key] is None:  # its parent was left out (a stored session's summary tree)
            continue
        model._default_manager.filter(pk=obj.pk).update(**{f.attname: created[key].pk})
        setattr(obj, f.attname, created[key].pk)


def _field_value(importer: Importer, f: models.Field, raw: Any, path: str) -> Any:
    if raw is None:
        return None
    if f.is_relation:
        return _relation_value(importer, f, raw, path)
    if isinstance(f, models.DateTimeField):
        value = parse_datetime(raw) if isinstance(raw, str) else None
        if value is None:
            raise InvalidImport("not an ISO-8601 time", path)
        return value
    return raw


def _relation_value(importer: Importer, f: models.Field, raw: Any, path: str) -> Any:
    target = f.related_model
    if target is Workspace:
        return importer.workspace(raw, path).pk
    if target is Channel:
        return importer.channel(raw, path).pk
    if target is Session:
        return importer.session(raw, path).pk
    label = target._meta.label
    if isinstance(raw, dict) and isinstance(raw.get("key"), int) and label in importer.records:
        rows = importer.records[label]
        if 0 <= raw["key"] < len(rows):
            target_row = rows[raw["key"]]
            if target_row is None:
                raise _LeftOut()
            return target_row.pk
    raise InvalidImport(f"reference to {label} not found in the file", path)
