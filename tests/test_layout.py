"""No tracked source file is over 500 lines.

A file that long holds several things with names of their own; it is split along a seam (a group
of functions, views or tests that belong together), not cut at a line number. The files checked
are those git tracks as *.py, *.js, *.css and *.html (git ls-files), so an ignored file is never
counted. Migrations are counted too: a squash that would be longer is made as two, each replacing
a part of the old graph that depends only on itself and the parts before it (memoryhub's
0001_squashed_0011 and 0012_squashed_0018). The check is a plain function over paths, so that the
test below can also show that it fails.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 500
PATTERNS = ("*.py", "*.js", "*.css", "*.html")


def tracked_files(root: Path = ROOT) -> list[str]:
    """The files git tracks under these patterns (at any depth), relative to the root."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", *PATTERNS], cwd=root, capture_output=True, check=True
    )
    return sorted(name for name in listed.stdout.decode().split("\0") if name)


def line_count(path: Path) -> int:
    return len(path.read_bytes().splitlines())


def too_long(root: Path, names: list[str], limit: int = LIMIT) -> list[str]:
    """A line for each file over `limit` lines, longest first (a file deleted but not yet staged
    is not counted)."""
    counts = [(line_count(root / name), name) for name in names if (root / name).is_file()]
    return [
        f"{name}: {count} lines"
        for count, name in sorted(counts, key=lambda c: (-c[0], c[1]))
        if count > limit
    ]


needs_git = pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(),
    reason="not a git checkout: the tracked files cannot be listed",
)


@needs_git
def test_no_tracked_source_file_is_over_500_lines() -> None:
    problems = too_long(ROOT, tracked_files())
    assert not problems, (
        f"Over {LIMIT} lines (split each along a seam: a cohesive group of functions, views or"
        " tests with a name of its own, in a module whose docstring says what it holds):\n"
        + "\n".join(problems)
    )


@needs_git
def test_the_tracked_files_are_the_sources_of_every_kind() -> None:
    names = tracked_files()
    assert {"manage.py", "tests/test_layout.py"} <= set(names)
    assert {Path(name).suffix for name in names} == {".py", ".js", ".css", ".html"}
    assert not any(name.startswith((".venv/", ".memoryhub/")) for name in names)
    assert any("/migrations/" in name for name in names)  # migrations are counted like any source


def test_a_file_over_the_limit_is_named_and_one_at_it_is_not(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "long.py").write_text("x = 1\n" * (LIMIT + 1))
    (tmp_path / "pkg" / "longer.js").write_text("let x;\n" * (LIMIT + 7))
    (tmp_path / "at_limit.py").write_text("x = 1\n" * LIMIT)
    (tmp_path / "no_newline_at_end.css").write_text("a {}\n" * (LIMIT - 1) + "b {}")
    names = ["at_limit.py", "gone.py", "no_newline_at_end.css", "pkg/long.py", "pkg/longer.js"]
    assert too_long(tmp_path, names) == [
        f"pkg/longer.js: {LIMIT + 7} lines",
        f"pkg/long.py: {LIMIT + 1} lines",
    ]


# The two READMEs a newcomer opens first stay short enough to read: the top one holds the
# quickstart, the layout, the set-up and the API in brief (the rest is in docs/), the bench one
# today's figures (the history is in git: `git log -p bench/README.md`).
README_LIMITS = {"README.md": 400, "bench/README.md": 600}


def test_the_top_and_bench_readmes_are_within_their_lengths() -> None:
    problems = too_long(ROOT, ["README.md"], README_LIMITS["README.md"]) + too_long(
        ROOT, ["bench/README.md"], README_LIMITS["bench/README.md"]
    )
    assert not problems, problems
    assert too_long(ROOT, ["README.md"], 10) != []  # the check counts this file's lines
