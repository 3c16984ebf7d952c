"""Re-recording the API documentation's examples: `MEMORYHUB_RECORD_EXAMPLES=1 pytest
tests/test_api_examples.py` replays every example as the test does and, where the documented answer
no longer matches the server's (a field added, a shape changed), writes the server's answer into
the example's source in place of the old one (`response=…` of its `example(...)` call). The request
and the status stay as written: a changed status is a failure to fix by hand. Review the diff."""

from __future__ import annotations

import ast
import os
import pprint
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [
    *sorted((ROOT / "memoryhub/api/examples").glob("*.py")),
    ROOT / "retrieval/api_examples.py",
    ROOT / "retrieval/documents_api_examples.py",
    ROOT / "scheduling/api_examples.py",
]
WIDTH = 120


def recording() -> bool:
    return os.environ.get("MEMORYHUB_RECORD_EXAMPLES", "") not in ("", "0")


def _schema_name(name: str) -> str:
    """An example's key in the OpenAPI document, as drf-spectacular makes it of its name."""
    import inflection

    return str(inflection.camelize(name.replace(" ", "_")))


def _is_example(node: ast.AST, name: str, status: int) -> bool:
    if not (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "example"
    ):
        return False
    if not (
        node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
        and _schema_name(node.args[0].value) == name
    ):
        return False
    given = {k.arg: k.value for k in node.keywords}
    return isinstance(given.get("status"), ast.Constant) and given["status"].value == status


def _find(name: str, status: int) -> tuple[Path, ast.expr]:
    found = []
    for path in SOURCES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if _is_example(node, name, status):
                found += [(path, k.value) for k in node.keywords if k.arg == "response"]  # type: ignore[attr-defined]
    if len(found) != 1:
        raise LookupError(f"example {name!r} ({status}) is defined {len(found)} times, not once")
    return found[0]


def _offset(lines: list[bytes], line: int, col: int) -> int:
    """A byte offset in the file from ast's (1-based line, byte column)."""
    return sum(len(x) for x in lines[: line - 1]) + col


def record(name: str, status: int, body: Any) -> None:
    """Write `body` as the response of the example whose key in the OpenAPI document is `name`
    (answered with `status`)."""
    path, value = _find(name, status)
    raw = path.read_bytes()
    lines = raw.splitlines(keepends=True)
    start = _offset(lines, value.lineno, value.col_offset)
    end = _offset(lines, value.end_lineno or value.lineno, value.end_col_offset or 0)
    column = len(lines[value.lineno - 1][: value.col_offset].decode("utf-8"))
    text = pprint.pformat(body, width=WIDTH - column, sort_dicts=False)
    text = text.replace("\n", "\n" + " " * column)
    path.write_bytes(raw[:start] + text.encode("utf-8") + raw[end:])
