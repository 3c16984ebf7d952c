"""The README's counts and command tables say what the code has: the number of MCP tools and their
names, every management command of the project in the command table, and each option a row or the
keys line names is one the command takes (create_api_key's, all of them)."""

from __future__ import annotations

import re
from pathlib import Path

from django.core.management import get_commands, load_command_class

from retrieval.mcp_server import catalog

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()
APPS = ("accounts", "memoryhub", "retrieval", "scheduling")


def command_rows() -> dict[str, str]:
    """The command table's rows: each command named in the first cell, with that cell."""
    table = README.split("| command | what |", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in table.splitlines()[2:]:
        cell = line.replace("\\|", "/").split("|")[1]  # an escaped | inside a usage is no column
        for usage in re.findall(r"`([^`]+)`", cell):
            rows[usage.split()[0]] = cell
    return rows


def options(name: str) -> set[str]:
    """The --options a command takes beyond Django's own."""
    command = load_command_class(get_commands()[name], name)
    parser = command.create_parser("manage.py", name)
    django_own = {
        "--version",
        "--verbosity",
        "--settings",
        "--pythonpath",
        "--traceback",
        "--no-color",
        "--force-color",
        "--skip-checks",
        "--help",
    }
    return {
        flag
        for action in parser._actions
        for flag in action.option_strings
        if flag.startswith("--") and flag not in django_own
    }


def test_the_mcp_tools_are_counted_and_named_as_the_server_has_them() -> None:
    names = {spec.name for spec in catalog.build()}
    counts = [int(n) for n in re.findall(r"(\d+) memory tools", README)]
    assert counts and all(n == len(names) for n in counts), (counts, len(names))
    paragraph = README.split("**MCP**", 1)[1].split("Protocol", 1)[0]
    assert set(re.findall(r"`(\w+)`", paragraph)) == names


def test_the_command_table_names_every_command_of_the_project() -> None:
    ours = {name for name, app in get_commands().items() if app.split(".")[0] in APPS}
    rows = command_rows()
    assert ours - set(rows) == set()
    # and nothing that does not exist (Django's own may be named)
    assert set(rows) - set(get_commands()) == set()


def test_each_option_named_is_one_the_command_takes() -> None:
    rows = command_rows()
    for name, cell in rows.items():  # a row may name two commands (export_memory / import_memory)
        taken = set().union(*(options(other) for other, same in rows.items() if same == cell))
        named = set(re.findall(r"(--[\w-]+)", cell))
        assert named <= taken, (name, named - taken)
    keys_line = next(line for line in README.splitlines() if line.startswith("More keys:"))
    assert set(re.findall(r"(--[\w-]+)", command_rows()["create_api_key"])) >= options(
        "create_api_key"
    ) - {"--name"}
    assert set(re.findall(r"(--[\w-]+)", keys_line)) >= options("create_api_key") - {"--name"}
