"""A comment cites only what a reader of the repository can open: no design seed, specification
section or tracker issue (none of them is in the repository; docs/ states the rules), and every
link to docs/ names a page and section that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = (
    "accounts",
    "memoryhub",
    "retrieval",
    "scheduling",
    "templates",
    "tests",
    "bench",
    "sdk",
    "docs",
)
SUFFIXES = {".py", ".html", ".js", ".md"}
SKIPPED = {"bench/data", "node_modules", "__pycache__"}
# Files whose subject is these words: they hold them as data (what must never be shown).
DATA = {"tests/memoryhub/test_user_words.py", "tests/test_citations.py"}

CITATION = re.compile(
    # seed 002, issue 41 ("seed002" is a profile's name)
    r"(?i:\bseeds? 0\d\d\b|\bissues? ?#?\d+\b)"
    r"|\bSPEC\b(?!TACULAR)"  # SPEC S12 (SPECTACULAR_SETTINGS is drf-spectacular's)
    # S12, S4's; "S1" in quotes is a test's session id
    r"|(?<![\"'\w])S(?:[0-9]|1[0-2])\b(?![\"'](?!s\b))"
)
DOCS_LINK = re.compile(r"docs/([\w.-]+\.md)(?:#([\w-]+))?")
PAGE_LINK = re.compile(r"\]\(([\w.-]+\.md)(?:#([\w-]+))?\)")  # a docs/ page's link to another page


def sources() -> list[Path]:
    found = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*")):
            relative = path.relative_to(ROOT).as_posix()
            if path.suffix in SUFFIXES and not any(part in relative for part in SKIPPED):
                found.append(path)
    return found + [ROOT / "README.md", ROOT / "pyproject.toml", ROOT / "Makefile"]


def citations(text: str) -> list[str]:
    """The citations in `text`, leaving out a ruff rule's code (`noqa: S608`) and the user-words
    tests' own examples of what must never be shown (`PLANNING.search(...)`)."""
    return [
        m.group(0)
        for line in text.splitlines()
        if "noqa: S" not in line and "PLANNING.search" not in line
        for m in CITATION.finditer(line)
    ]


def anchors(markdown: str) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces to hyphens."""
    found = set()
    for line in markdown.splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def broken_links(text: str, *, in_docs: bool = False) -> list[str]:
    broken = []
    for page, section in DOCS_LINK.findall(text) + (PAGE_LINK.findall(text) if in_docs else []):
        target = ROOT / "docs" / page
        if not target.exists() or (section and section not in anchors(target.read_text())):
            broken.append(f"docs/{page}" + (f"#{section}" if section else ""))
    return broken


def test_no_comment_cites_a_document_outside_the_repository() -> None:
    found = {}
    for path in sources():
        relative = path.relative_to(ROOT).as_posix()
        if relative not in DATA and (cited := citations(path.read_text(errors="replace"))):
            found[relative] = cited
    assert found == {}


def test_every_link_into_docs_names_a_page_and_section_that_exist() -> None:
    found = {}
    for path in sources():
        relative = path.relative_to(ROOT).as_posix()
        text = path.read_text(errors="replace")
        if relative not in DATA and (
            broken := broken_links(text, in_docs=relative.startswith("docs/"))
        ):
            found[path.relative_to(ROOT).as_posix()] = broken
    assert found == {}


def test_the_checks_bite() -> None:
    for cited in (
        "seed 004's floor",
        "(seeds 001 and 004)",
        "SPEC S12",
        "(S4)",
        "S4's 0.3 temporal",
        "issue 41 row 3",
        "Issue #42",
        "seed 000 cadence.rs",
    ):
        assert citations(cited), cited
    for plain in (
        "SPECTACULAR_SETTINGS = {}",
        'profile "seed002"',
        'session_id="S1"',
        "# noqa: S608 - our table",
        "tests/test_wiring.py",
    ):
        assert not citations(plain), plain
    assert broken_links("see docs/ranking.md#decay and docs/memory-model.md#tiers") == []
    assert broken_links("docs/ranking.md#no-such-section") == ["docs/ranking.md#no-such-section"]
    assert broken_links("docs/no-such-page.md") == ["docs/no-such-page.md"]
    assert broken_links("[decay](ranking.md#decay), [x](ranking.md#nothing)", in_docs=True) == [
        "docs/ranking.md#nothing"
    ]
    assert anchors("## memoryhub's inner layers") == {"memoryhubs-inner-layers"}
