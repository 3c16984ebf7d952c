"""What users and operators read speaks their language: no design-document numbers ("seed 002"), no
tracker numbers ("issue 41"), no benchmark-note stops ("stop 26"), no specification sections
("(SPEC S12)") in the console (templates, model and form texts, the admin's own strings), the
README, the Python client's README and its docstrings. Code comments may keep them (they are not
read here). The OpenAPI texts have their own check: tests/memoryhub/test_openapi_descriptions.py.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.apps import apps
from django.contrib import admin

ROOT = Path(__file__).resolve().parents[2]
# The project's planning words: a design document, a tracker entry, a benchmark note's stop, a
# section of the specification. `profile: "seed002"` (an API value) and "stops the start" are words
# of the product and pass.
PLANNING = re.compile(r"(?i:\bseeds?\b|\bissues? ?#?\d+|\bstops? \d+)|\bSPEC\b|\bS\d{1,2}\b")

PROJECT_APPS = ("accounts", "memoryhub", "retrieval", "scheduling", "lifecycle")
# The console's Python: every string in these modules is shown to an operator or builds what is.
CONSOLE_MODULES = [
    *sorted((ROOT / "memoryhub" / "admin").glob("*.py")),
    *sorted((ROOT / "retrieval" / "console").glob("*.py")),
    ROOT / "memoryhub" / "plumbing" / "console_site.py",
    ROOT / "retrieval" / "admin.py",
    ROOT / "retrieval" / "admin_helpers.py",
    ROOT / "retrieval" / "lifecycle" / "admin.py",
    ROOT / "scheduling" / "admin.py",
    ROOT / "accounts" / "admin.py",
]
CLIENT = ROOT / "sdk" / "python" / "src" / "memoryhub_client"
TEMPLATE_COMMENTS = re.compile(r"\{#.*?#\}|\{% comment %\}.*?\{% endcomment %\}|<!--.*?-->", re.S)


def _docstring_nodes(tree: ast.AST) -> set[int]:
    """The ids of the nodes that are docstrings (read by developers, not shown by the console)."""
    found = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
        ):
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                found.add(id(first.value))
    return found


def console_strings(path: Path) -> Iterator[tuple[str, str]]:
    """Every string literal of a console module but its docstrings."""
    tree = ast.parse(path.read_text(), filename=str(path))
    docstrings = _docstring_nodes(tree)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            yield f"{path.relative_to(ROOT)}:{node.lineno}", node.value


def client_docstrings(path: Path) -> Iterator[tuple[str, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            text = ast.get_docstring(node, clean=False)
            if text:
                yield f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 1)}", text


def model_texts() -> Iterator[tuple[str, str]]:
    for model in apps.get_models():
        if model._meta.app_label not in PROJECT_APPS:
            continue
        where = f"{model._meta.label}"
        yield where, str(model._meta.verbose_name)
        yield where, str(model._meta.verbose_name_plural)
        for field in model._meta.get_fields():
            for attr in ("help_text", "verbose_name"):
                value = getattr(field, attr, "")
                if value:
                    yield f"{where}.{field.name}.{attr}", str(value)


def admin_texts() -> Iterator[tuple[str, str]]:
    """What the admin classes show that is not a literal of a console module: form fields' help."""
    for model, model_admin in admin.site._registry.items():
        for name, field in getattr(model_admin.form, "base_fields", {}).items():
            if field.help_text:
                yield f"{model._meta.label} form {name}", str(field.help_text)


def user_texts() -> Iterator[tuple[str, str, str]]:
    """(what kind of text, where it is, the text) for everything the check reads."""
    for path in sorted((ROOT / "templates").rglob("*.html")):
        yield "templates", str(path.relative_to(ROOT)), TEMPLATE_COMMENTS.sub("", path.read_text())
    for path in CONSOLE_MODULES:
        for where, text in console_strings(path):
            yield "console", where, text
    for where, text in [*model_texts(), *admin_texts()]:
        yield "models", where, text
    for path in sorted(CLIENT.rglob("*.py")):
        for where, text in client_docstrings(path):
            yield "client", where, text
    for path in (
        ROOT / "README.md",
        ROOT / "sdk" / "python" / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
    ):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            yield "readme", f"{path.relative_to(ROOT)}:{number}", line


def test_no_user_facing_text_says_seed_issue_stop_or_spec() -> None:
    leaks = [
        (where, PLANNING.findall(text), text[:160])
        for _, where, text in user_texts()
        if PLANNING.search(text)
    ]
    assert leaks == []


def test_the_scan_reads_every_kind_of_text() -> None:
    """Each source the check above reads is found and holds text (a moved file would empty it)."""
    counts = {"templates": 0, "console": 0, "models": 0, "client": 0, "readme": 0}
    for kind, _, _ in user_texts():
        counts[kind] += 1
    assert all(count >= 10 for count in counts.values()), counts
    assert all(path.exists() for path in CONSOLE_MODULES)


@pytest.mark.parametrize(
    "text",
    [
        "Every version of every fact (SPEC S12)",
        "as seed 002 does",
        "Seed fidelity",
        "(issue 41)",
        "issue #42",
        "bench/README.md, stop 26",
        "stops 26 and 33",
        "the dashboard (S9)",
    ],
)
def test_the_check_catches_planning_words(text: str) -> None:
    assert PLANNING.search(text)


@pytest.mark.parametrize(
    "text",
    [
        '`profile: "seed002"` is a relevance formula',
        "Bad values stop the start",
        "it stops the cluster",
        "an issue with the network",
        "the spec of a schedule",
        "SSE streams",
        "3 s",
    ],
)
def test_the_check_lets_product_words_pass(text: str) -> None:
    assert not PLANNING.search(text)
