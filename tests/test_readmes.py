"""The READMEs' module tables and the top README's layout table stay true to the tree.

Every module (a .py file other than __init__.py, outside migrations/) under accounts/, memoryhub/,
retrieval/, scheduling/ and sdk/python/src/ is named in exactly one README table: the module table
of the README nearest to it (its own folder's, else the closest folder above it that has one, within
its app; the client's is sdk/python/README.md). A module table is a Markdown table whose first
header cell is "module"; its rows name modules in backticks in their first cell, relative to the
README's folder (`api/urls.py`, `management/commands/run.py`). Every name such a table gives must
exist. Every path the top README's "Where things are" table names must exist, and a name it gives a
module's in "`path.py` (`name`" must be defined there. A default a README (or a docs/ page)
states as "`MEMORYHUB_NAME` = value" (a number, or on/off) is the default memoryhub/settings.py
gives.

The checks are plain functions over paths and texts, so that the tests below can also show that
they fail (a module added without its line, a line left for a module removed).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Where modules live, and the folder whose README is the last one looked at for each.
APPS = {
    "accounts": "accounts",
    "memoryhub": "memoryhub",
    "retrieval": "retrieval",
    "scheduling": "scheduling",
    "sdk/python/src": "sdk/python",
}
LAYOUT_HEADING = "## Where things are"

_BACKTICKED = re.compile(r"`([^`]+)`")
_PATH_AND_NAME = re.compile(r"`([\w/.-]+\.py)` \(`(\w+)")


def modules(root: Path = ROOT) -> list[str]:
    """Every module the tables must name, as a path relative to the repository root."""
    found = []
    for folder in APPS:
        for path in (root / folder).rglob("*.py"):
            relative = path.relative_to(root)
            if path.name == "__init__.py" or "migrations" in relative.parts:
                continue
            found.append(relative.as_posix())
    return sorted(found)


def readmes(root: Path = ROOT) -> dict[str, str]:
    """Every README.md of the apps (and of the client), by path relative to the root."""
    found = {}
    for top in sorted(set(APPS.values())):
        for path in (root / top).rglob("README.md"):
            found[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8")
    return found


def prose_pages(root: Path = ROOT) -> dict[str, str]:
    """The top README and the docs/ pages (where the top README's details moved), by path."""
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    return {path.relative_to(root).as_posix(): path.read_text(encoding="utf-8") for path in pages}


def nearest_readme(module: str, readme_paths: set[str]) -> str:
    """The README a module's line belongs in: its folder's, else the closest one above it."""
    app = next(folder for folder in APPS if module.startswith(folder + "/"))
    stop = APPS[app]
    folder = module.rsplit("/", 1)[0]
    while True:
        candidate = f"{folder}/README.md"
        if candidate in readme_paths:
            return candidate
        if folder == stop or "/" not in folder:
            return f"{stop}/README.md"
        folder = folder.rsplit("/", 1)[0]


def table_rows(text: str, first_header: str) -> list[list[str]]:
    """The body rows (as cells) of every Markdown table whose first header cell is first_header."""
    rows: list[list[str]] = []
    in_table = False
    lines = text.splitlines()
    for number, line in enumerate(lines):
        stripped = line.strip()
        if not stripped.startswith("|"):
            in_table = False
            continue
        cells = [cell.strip() for cell in stripped.strip("|").split("|")]
        if in_table:
            if not set(stripped) <= set("|-: "):
                rows.append(cells)
            continue
        following = lines[number + 1].strip() if number + 1 < len(lines) else ""
        header_row = following.startswith("|") and set(following) <= set("|-: ")
        in_table = header_row and cells[0].lower().startswith(first_header)
    return rows


def named_modules(readme: str, text: str) -> list[str]:
    """The modules a README's module tables name, as paths relative to the repository root."""
    folder = readme.rsplit("/", 1)[0]
    names = []
    for cells in table_rows(text, "module"):
        for name in _BACKTICKED.findall(cells[0]):
            if name.endswith(".py"):
                names.append(f"{folder}/{name}")
    return names


def module_problems(module_paths: list[str], readme_texts: dict[str, str]) -> list[str]:
    """What is wrong with the module tables: each problem says which README to edit, and how."""
    problems = []
    listed: dict[str, list[str]] = {}
    for readme, text in sorted(readme_texts.items()):
        for name in named_modules(readme, text):
            listed.setdefault(name, []).append(readme)
    existing = set(module_paths)
    readme_paths = set(readme_texts)
    for module in module_paths:
        home = nearest_readme(module, readme_paths)
        short = module.removeprefix(home.rsplit("/", 1)[0] + "/")
        where = listed.get(module, [])
        if not where:
            problems.append(
                f"{module} is named in no README: add a row for `{short}` (what the module "
                f"holds, in a line) to the module table of {home}"
            )
        elif where != [home]:
            problems.append(
                f"{module} is named in {', '.join(where)}: name it once, in the module table "
                f"of {home} (as `{short}`), and nowhere else"
            )
    for name, where in sorted(listed.items()):
        if name not in existing:
            for readme in where:
                problems.append(
                    f"{readme} names `{name.removeprefix(readme.rsplit('/', 1)[0] + '/')}` "
                    f"({name}), which is not a module: correct the name or remove the row"
                )
    return problems


def layout_section(text: str) -> str:
    """The top README's "Where things are" section (up to the next heading of its level)."""
    start = text.index(LAYOUT_HEADING)
    rest = text[start + len(LAYOUT_HEADING) :]
    end = re.search(r"^## ", rest, flags=re.MULTILINE)
    return rest[: end.start()] if end else rest


def layout_paths(section: str) -> list[str]:
    """The repository paths the layout table names: backticked, with a / or ending in .py
    (a URL such as `/mcp/` starts with a slash; a command such as `manage.py run` has a space)."""
    paths = []
    for cells in table_rows(section, "where is"):
        for cell in cells[1:]:
            for name in _BACKTICKED.findall(cell):
                if name.startswith("/") or " " in name:
                    continue
                if "/" in name or name.endswith(".py"):
                    paths.append(name)
    return paths


def layout_problems(text: str, root: Path = ROOT) -> list[str]:
    if text.count(LAYOUT_HEADING) != 1:
        return [f"README.md must have one '{LAYOUT_HEADING}' section"]
    problems = []
    headings = re.findall(r"^## .*$", text, flags=re.MULTILINE)
    if headings[0] != LAYOUT_HEADING:
        problems.append(
            f"README.md: '{LAYOUT_HEADING}' must be the first section, right after the "
            f"quickstart (it comes after {headings[: headings.index(LAYOUT_HEADING)]})"
        )
    if re.search(r"^## Layout", text, flags=re.MULTILINE):
        problems.append("README.md: one layout section: fold '## Layout' into 'Where things are'")
    paths = layout_paths(layout_section(text))
    if not paths:
        problems.append("README.md: the 'Where things are' table names no path")
    for path in paths:
        if not (root / path.rstrip("/")).exists():
            problems.append(
                f"README.md's 'Where things are' table names `{path}`, which does not exist: "
                "correct the path"
            )
    for path, name in _PATH_AND_NAME.findall(layout_section(text)):
        file = root / path
        defined = re.compile(rf"^\s*(?:async def|def|class) {name}\b|^{name}\s*[:=]", re.MULTILINE)
        if file.is_file() and not defined.search(file.read_text(encoding="utf-8")):
            problems.append(
                f"README.md's 'Where things are' table sends `{name}` to `{path}`, which does not "
                "define it: name the module that does"
            )
    return problems


_STATED_DEFAULT = re.compile(
    r"`(MEMORYHUB_[A-Z0-9_]+)` = (on|off|true|false|[0-9][0-9,]*(?:\.[0-9]+)?)\b"
)


def setting_defaults(source: str) -> dict[str, object]:
    """Each setting's default as settings.py writes it: env_int("MEMORYHUB_X", 6 * 60, …) → 360."""
    defaults: dict[str, object] = {}
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id.startswith("env_")
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Constant)
        ):
            arithmetic = all(
                isinstance(n, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop))
                for n in ast.walk(node.args[1])
            )
            if arithmetic:
                defaults[node.args[0].value] = eval(
                    compile(ast.Expression(node.args[1]), "settings", "eval")
                )
    return defaults


# A default the code keeps as a constant, named by its module: `recent.WINDOW` = 50.
_STATED_CONSTANT = re.compile(
    r"`([a-z_]+)\.([A-Z][A-Z0-9_]+)` = (on|off|true|false|[0-9][0-9,]*(?:\.[0-9]+)?)\b"
)


def constant_values(module: str) -> dict[str, object]:
    """Top-level constants (NAME = an arithmetic of literals) of every app module called
    `module`.py."""
    values: dict[str, object] = {}
    for path in sorted(
        p for app in APPS for p in (ROOT / app).rglob(f"{module}.py") if "migrations" not in p.parts
    ):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            target = (
                node.targets[0]
                if isinstance(node, ast.Assign) and len(node.targets) == 1
                else getattr(node, "target", None)
            )
            value = getattr(node, "value", None)
            if (
                isinstance(target, ast.Name)
                and value is not None
                and all(
                    isinstance(n, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop))
                    for n in ast.walk(value)
                )
            ):
                values.setdefault(
                    target.id, eval(compile(ast.Expression(value), str(path), "eval"))
                )
    return values


def _agrees(stated: str, value: object) -> bool:
    if stated in ("on", "off", "true", "false"):
        return value is (stated in ("on", "true"))
    return (
        not isinstance(value, bool)
        and isinstance(value, (int, float))
        and float(stated.replace(",", "")) == value
    )


def constant_problems(readme_texts: dict[str, str]) -> list[str]:
    problems = []
    for readme, text in sorted(readme_texts.items()):
        for module, name, stated in _STATED_CONSTANT.findall(text):
            values = constant_values(module)
            if name not in values:
                problems.append(
                    f"{readme} states `{module}.{name}` = {stated}, but no {module}.py defines "
                    f"{name}: name the module that holds it now, or remove the value"
                )
            elif not _agrees(stated, values[name]):
                problems.append(
                    f"{readme} states `{module}.{name}` = {stated}; the code's value is "
                    f"{values[name]!r}: correct the README"
                )
    return problems


def default_problems(readme_texts: dict[str, str], defaults: dict[str, object]) -> list[str]:
    problems = []
    for readme, text in sorted(readme_texts.items()):
        for name, stated in _STATED_DEFAULT.findall(text):
            if name not in defaults:
                problems.append(
                    f"{readme} states `{name}` = {stated}, but memoryhub/settings.py has no "
                    "such setting: name the constant that holds it now, or remove the value"
                )
                continue
            value = defaults[name]
            if stated in ("on", "off", "true", "false"):
                agrees = value is (stated in ("on", "true"))
            else:
                agrees = not isinstance(value, bool) and float(stated.replace(",", "")) == value
            if not agrees:
                problems.append(
                    f"{readme} states `{name}` = {stated}; memoryhub/settings.py's default is "
                    f"{value!r}: correct the README"
                )
    return problems


def test_every_module_is_named_once_in_its_readme():
    problems = module_problems(modules(), readmes())
    assert not problems, "\n".join(problems)


def test_defaults_the_readmes_state_are_the_settings():
    defaults = setting_defaults((ROOT / "memoryhub/settings.py").read_text(encoding="utf-8"))
    assert defaults["MEMORYHUB_MCP_STREAMS"] == 100
    texts = {**readmes(), **prose_pages()}
    assert {"README.md", "docs/configuration.md", "docs/operating.md"} <= set(texts)
    everything = "".join(texts.values())
    assert len(_STATED_DEFAULT.findall(everything)) + len(_STATED_CONSTANT.findall(everything)) > 20
    problems = default_problems(texts, defaults) + constant_problems(texts)
    assert not problems, "\n".join(problems)
    # A wrong constant, or one no module of that name defines, is reported.
    assert constant_problems(
        {"retrieval/README.md": "`indexing.CHUNK_CHARS` = 500, `indexing.NO_SUCH` = 1"}
    ) == [
        (
            "retrieval/README.md states `indexing.CHUNK_CHARS` = 500; the code's value is 640:"
            " correct the README"
        ),
        (
            "retrieval/README.md states `indexing.NO_SUCH` = 1, but no indexing.py defines NO_SUCH:"
            " name the module that holds it now, or remove the value"
        ),
    ]
    # A wrong default, or one for a setting that is gone, is reported.
    texts["retrieval/README.md"] += "`MEMORYHUB_MCP_STREAMS` = 50, `MEMORYHUB_NO_SUCH` = 1"
    assert default_problems(texts, defaults) == [
        (
            "retrieval/README.md states `MEMORYHUB_MCP_STREAMS` = 50; memoryhub/settings.py's"
            " default is 100: correct the README"
        ),
        (
            "retrieval/README.md states `MEMORYHUB_NO_SUCH` = 1, but memoryhub/settings.py has no"
            " such setting: name the constant that holds it now, or remove the value"
        ),
    ]


def test_the_layout_table_names_paths_that_exist():
    problems = layout_problems((ROOT / "README.md").read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


def test_a_module_added_without_its_line_fails_and_says_where():
    added = modules() + ["memoryhub/plumbing/newcomer.py", "retrieval/console/newcomer.py"]
    problems = module_problems(added, readmes())
    assert problems == [
        (
            "memoryhub/plumbing/newcomer.py is named in no README: add a row for `newcomer.py` "
            "(what the module holds, in a line) to the module table of memoryhub/plumbing/README.md"
        ),
        # retrieval/console/ has no README of its own: its modules are listed in retrieval's.
        (
            "retrieval/console/newcomer.py is named in no README: add a row for "
            "`console/newcomer.py` (what the module holds, in a line) to the module table of "
            "retrieval/README.md"
        ),
    ]


def test_a_module_removed_or_named_twice_fails():
    present = modules()
    removed = "memoryhub/plumbing/outbound.py"
    problems = module_problems([m for m in present if m != removed], readmes())
    assert problems == [
        "memoryhub/plumbing/README.md names `outbound.py` (memoryhub/plumbing/outbound.py), "
        "which is not a module: correct the name or remove the row"
    ]
    texts = readmes()
    texts["memoryhub/README.md"] += (
        "\n| module | what |\n| --- | --- |\n| `plumbing/cpu.py` | x |\n"
    )
    assert module_problems(present, texts) == [
        "memoryhub/plumbing/cpu.py is named in memoryhub/README.md, memoryhub/plumbing/README.md: "
        "name it once, in the module table of memoryhub/plumbing/README.md (as `cpu.py`), and "
        "nowhere else"
    ]


def test_a_layout_path_that_does_not_exist_fails():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = layout_section(text)
    assert "`retrieval/mcp_server/`" in section
    broken = text.replace("`retrieval/mcp_server/`", "`retrieval/mcp/`", 1)
    assert layout_problems(broken) == [
        "README.md's 'Where things are' table names `retrieval/mcp/`, which does not exist: "
        "correct the path"
    ]
    assert ("memoryhub/event_log.py", "append_events") in _PATH_AND_NAME.findall(section)
    moved = text.replace(
        "`memoryhub/event_log.py` (`append_events`", "`memoryhub/notes.py` (`append_events`", 1
    )
    assert layout_problems(moved) == [
        "README.md's 'Where things are' table sends `append_events` to `memoryhub/notes.py`, which "
        "does not define it: name the module that does"
    ]
