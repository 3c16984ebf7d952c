"""Every script in bench/ imports: the benchmarks import each other's helpers (bench/memory.py's
process reading serves load.py and export_memory.py), and nothing else runs them, so a helper
renamed in one script broke the others unseen until someone measured.

The scripts are imported the two ways they are run: as modules of the bench package (`python -m
bench.load`) and as files with bench/ first on the path (`python bench/export_memory.py`, which
imports its neighbours by their bare names). One fresh interpreter does it: a script may set up
Django or read its environment at import.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
BENCH = ROOT / "bench"

IMPORT_ALL = """
import importlib, sys, traceback
sys.path[:0] = {paths!r}
failed = []
for name in {names!r}:
    try:
        importlib.import_module(name)
    except Exception:
        failed.append(name + ": " + traceback.format_exc().strip().splitlines()[-1])
print("\\n".join(failed))
"""


def scripts() -> list[str]:
    return sorted(f"bench.{p.stem}" for p in BENCH.glob("*.py") if p.stem != "__init__")


def unimportable(names: list[str], paths: list[str] | None = None) -> list[str]:
    """The modules of `names` that fail to import, each with its error's last line; bench/ (and
    `paths`) first on the path."""
    source = IMPORT_ALL.format(paths=[str(BENCH), *(paths or [])], names=names)
    done = subprocess.run(
        [sys.executable, "-c", source], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if line.strip()]


def test_every_bench_script_imports() -> None:
    names = scripts()
    assert "bench.load" in names and "bench.memory" in names
    assert unimportable(names) == []


def test_a_script_naming_a_helper_that_is_gone_is_reported(tmp_path: Path) -> None:
    (tmp_path / "broken_script.py").write_text("from bench.memory import no_such_helper\n")
    found = unimportable(["bench.memory", "broken_script"], [str(tmp_path)])
    assert len(found) == 1 and "no_such_helper" in found[0]
