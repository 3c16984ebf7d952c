"""docs/wiring.md is the one table of what reacts to an append, a save, a forget or an export: after
django.setup() every hook holds exactly what it lists, no more, no less."""

from __future__ import annotations

import re
import weakref
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import signals as model_signals
from django.dispatch import Signal
from django_q import signals as queue_signals

from accounts import signals as account_signals
from memoryhub import forget
from memoryhub import signals as core_signals
from memoryhub.admin import dashboard
from memoryhub.plumbing import background
from memoryhub.transfer import extensions
from memoryhub.transfer.records import record_models

WIRING = Path(__file__).resolve().parent.parent / "docs" / "wiring.md"
OURS = ("accounts.", "memoryhub.", "retrieval.", "scheduling.")


def sections() -> dict[str, list[list[list[str]]]]:
    """Each `## ` heading's table rows, each cell's `code` spans."""
    found: dict[str, list[list[list[str]]]] = {}
    for block in WIRING.read_text().split("\n## ")[1:]:
        heading, _, body = block.partition("\n")
        # Header rows name columns in plain words: the rows with code spans are the table's entries.
        rows = [line for line in body.splitlines() if line.startswith("|") and "`" in line]
        found[heading.strip()] = [
            [re.findall(r"`([^`]+)`", cell) for cell in row.strip("|").split("|")] for row in rows
        ]
    return found


def dotted(func: Any) -> str:
    if isinstance(func, weakref.ref):
        func = func()
    return f"{func.__module__}.{func.__qualname__}"


def live_receivers() -> set[tuple[str, str]]:
    found, seen = set(), set()
    # Django's model signals before django_q's module, which re-exports post_save under its name.
    for module in (core_signals, account_signals, model_signals, queue_signals):
        for name, signal in vars(module).items():
            if not isinstance(signal, Signal) or id(signal) in seen:
                continue
            seen.add(id(signal))
            for _, receiver, *_ in signal.receivers:
                if dotted(receiver).startswith(OURS):
                    found.add((f"{module.__name__}.{name}", dotted(receiver)))
    return found


def test_the_signals_table_is_what_is_connected() -> None:
    table = {(cells[1][0], cells[2][0]) for cells in sections()["Signals"]}
    assert table == live_receivers()


def test_every_signal_of_the_core_is_in_the_table_or_said_to_have_no_receiver() -> None:
    text = WIRING.read_text()
    for name, value in vars(core_signals).items():
        if isinstance(value, Signal):
            assert f"`memoryhub.signals.{name}`" in text, name


def test_the_lanes_table_is_what_is_registered() -> None:
    table = {cells[0][0]: cells[1][0] for cells in sections()["Background lanes"]}
    assert table == {name: dotted(factory) for name, factory in background._LANES.items()}


def test_the_export_tables_are_what_export_runs() -> None:
    rows = sections()["Export and import"]
    table_extensions = [cells[0][0] for cells in rows if len(cells) > 1]
    table_records = {cells[0][0] for cells in rows if len(cells) == 1}
    assert table_extensions == [dotted(factory) for factory in extensions._registered]  # in order
    assert table_records == {model._meta.label for model in record_models()}


def test_the_forget_tables_are_what_forget_runs() -> None:
    rows = sections()["Forget a user"]
    table_models = {cells[0][0] for cells in rows if len(cells) == 1}
    table_redactors = [cells[0][0] for cells in rows if len(cells) > 1]
    assert table_models == {model._meta.label for model in forget.user_owned_models()}
    assert table_redactors == [dotted(redactor.__func__) for redactor in forget.redactors()]


def test_the_dashboard_counts_table_is_what_is_registered() -> None:
    table = {cells[0][0]: cells[1][0] for cells in sections()["Dashboard counts"]}
    assert table == {name: dotted(count) for name, count in dashboard.TENANT_COUNTS.items()}


def test_the_mounts_table_is_what_asgi_serves() -> None:
    table = {cells[0][0]: cells[1][0] for cells in sections()["ASGI mounts"]}
    assert table == settings.MEMORYHUB_ASGI_MOUNTS
