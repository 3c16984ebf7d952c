"""The settings table of docs/configuration.md lists exactly the environment variables
memoryhub/settings.py reads, with the defaults the code has, and there are at most 40 MemoryHub
settings: tuning no operator needs is a named constant beside the code that uses it, not a
setting."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = ROOT / "memoryhub" / "settings.py"
README = ROOT / "docs" / "configuration.md"  # the settings table (moved there from README.md)
HELPERS = {"env_str", "env_int", "env_float", "env_bool", "env_choice", "env_networks", "env_list"}
# Read from the environment, but not settings: the test database's name (test and bench plumbing),
# the key the stdio MCP command acts as (a client's credential), the settings module itself, and
# what `manage.py run` tells its children (the supervision file).
NOT_SETTINGS = {
    "TEST_DB_NAME",
    "MEMORYHUB_API_KEY",
    "DJANGO_SETTINGS_MODULE",
    "MEMORYHUB_SUPERVISION_FILE",
}
UNSET = object()


def read_by_settings() -> dict[str, Any]:
    """Every name settings.py reads through memoryhub/plumbing/env.py, with its default (UNSET: none
    given; None: not a literal)."""
    names: dict[str, Any] = {}
    for node in ast.walk(ast.parse(SETTINGS.read_text())):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in HELPERS
        ):
            first = node.args[0]
            assert isinstance(first, ast.Constant) and isinstance(first.value, str), ast.unparse(
                node
            )
            default: Any = UNSET
            if len(node.args) > 1:
                try:
                    default = eval(
                        compile(ast.Expression(node.args[1]), "settings", "eval"),
                        {"__builtins__": {}},
                    )
                except Exception:  # a computed default (the cores, the memory): described in words
                    default = None
            names[first.value] = default
    return names


def environment_reads(path: Path) -> set[str]:
    """Names a module reads from os.environ directly (os.environ.get / os.getenv /
    os.environ[…])."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        target = None
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            name = ast.unparse(node.func)
            if name in ("os.environ.get", "os.getenv"):
                target = node.args[0].value
        elif (
            isinstance(node, ast.Subscript)
            and ast.unparse(node.value) == "os.environ"
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.slice, ast.Constant)
        ):
            target = node.slice.value
        if isinstance(target, str):
            found.add(target)
    return found


def table_rows() -> list[tuple[list[str], str]]:
    """(names, default cell) of every row of docs/configuration.md's settings table."""
    text = README.read_text()
    section = text[text.index("## Configuration (environment variables)") :]
    section = section.split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        names = re.findall(r"`([A-Z][A-Z0-9_]+)`", cells[0])
        assert names and ", ".join(f"`{n}`" for n in names) == cells[0], (
            f"a name written in full: {cells[0]}"
        )
        rows.append((names, cells[1]))
    return rows


def test_the_table_lists_exactly_the_settings_read() -> None:
    listed = [name for names, _ in table_rows() for name in names]
    assert len(listed) == len(set(listed)), "a setting listed twice"
    read = read_by_settings()
    assert set(listed) - set(read) == set(), (
        "listed in docs/configuration.md but not read by memoryhub/settings.py"
    )
    assert set(read) - set(listed) == set(), (
        "read by memoryhub/settings.py but not in docs/configuration.md's table"
    )


def test_settings_are_read_through_the_env_helpers_only() -> None:
    # One definition: a setting read with os.environ directly would escape the table's test.
    assert environment_reads(SETTINGS) <= NOT_SETTINGS


def test_no_other_module_reads_a_setting_of_its_own() -> None:
    listed = {name for names, _ in table_rows() for name in names}
    for app in ("memoryhub", "accounts", "retrieval", "scheduling"):
        for path in (ROOT / app).rglob("*.py"):
            if path == SETTINGS or "migrations" in path.parts:
                continue
            for name in environment_reads(path):
                assert name in listed or name in NOT_SETTINGS, (
                    f"{path.relative_to(ROOT)} reads {name}"
                )


def test_at_most_40_memoryhub_settings() -> None:
    names = [name for name in read_by_settings() if name.startswith("MEMORYHUB_")]
    assert len(names) <= 40, sorted(names)
    # Every MEMORYHUB_ name settings.py mentions, read or not (a formatter may put one call on two
    # lines).
    mentioned = set(re.findall(r"\bMEMORYHUB_[A-Z0-9_]+", SETTINGS.read_text()))
    assert len(mentioned) <= 40, sorted(mentioned)


def test_the_defaults_in_the_table_are_the_codes() -> None:
    read = read_by_settings()
    checked = 0
    for names, cell in table_rows():
        entries = cell.split(", ")
        if len(entries) != len(names):
            continue  # a default said in words
        for name, entry in zip(names, entries, strict=True):
            default = read[name]
            if entry == "unset":
                assert default in (UNSET, ""), (name, default)
                checked += 1
                continue
            match = re.fullmatch(r"`([^`]*)`", entry)
            if match is None or default is None:
                continue
            said = match.group(1)
            if isinstance(default, bool):
                assert said == str(default).lower(), (name, said, default)
            elif isinstance(default, int | float):
                assert float(said) == float(default), (name, said, default)
            else:
                assert said == default, (name, said, default)
            checked += 1
    assert checked >= 30  # the test reads the table it means to
