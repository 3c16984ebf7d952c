"""Unsaved model instances as the rows of one hand-written INSERT (the append path,
docs/event-log.md#append).

The ORM builds an INSERT (and an UPDATE) afresh for every append: on a single event that was
about as much CPU as the database spent on it. The hot path writes its rows with statements of
its own (an event INSERT beside the session's UPDATE, a chunk INSERT that skips content already
indexed), and takes what goes into them from the models here, so that a field added to a model
is written the way `bulk_create` and `save` would write it: the same pre_save (defaults), the same
adaptation (`get_db_prep_save`: JSON, arrays, vectors), each value cast to its column's type.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from django.db import connection, models

# Up to this many rows a hand-written statement is the faster one (an agent's append is one or two
# events). Beyond, each row costs it more than bulk_create's (psycopg splits the longer query text
# uncached, every value carries its cast): 100 events took 9.6 ms against 6.8 ms, so bulk
# appends keep the ORM's statements (bench/README.md, stop 30).
SMALL_BATCH = 8


@dataclass(frozen=True)
class Rows:
    """A model's insertable columns and its instances' values: `INSERT INTO {table} ({columns})
    VALUES {values}` with `params`, or `SELECT … FROM (VALUES {values}) AS v({columns})`."""

    table: str
    columns: str
    values: str
    params: list[Any]


@cache
def _fields(model: type[models.Model]) -> tuple[tuple[models.Field[Any, Any], ...], str, str]:
    fields = tuple(f for f in model._meta.concrete_fields if not f.primary_key and not f.generated)
    quote = connection.ops.quote_name
    columns = ", ".join(quote(f.column) for f in fields)
    row = "(" + ", ".join(f"%s::{f.db_type(connection)}" for f in fields) + ")"
    return fields, columns, row


def rows(model: type[models.Model], objs: list[Any]) -> Rows:
    """The INSERT's parts for `objs` (unsaved instances of `model`, pk unset)."""
    fields, columns, row = _fields(model)
    params: list[Any] = []
    for obj in objs:
        params += [f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields]
    return Rows(
        connection.ops.quote_name(model._meta.db_table),
        columns,
        ", ".join([row] * len(objs)),
        params,
    )


def saved(obj: models.Model, pk: int) -> None:
    """Mark an instance written by a hand-written INSERT as bulk_create would."""
    obj.pk = pk
    obj._state.adding = False
    obj._state.db = connection.alias


def assignments(obj: models.Model, names: list[str]) -> tuple[str, list[Any]]:
    """`col = %s, …` and the values for an UPDATE of these fields of `obj`, as
    `save(update_fields=…)` would write them."""
    parts, params = [], []
    for name in names:
        field = obj._meta.get_field(name)
        parts.append(f"{connection.ops.quote_name(field.column)} = %s::{field.db_type(connection)}")
        params.append(field.get_db_prep_save(getattr(obj, field.attname), connection))
    return ", ".join(parts), params
