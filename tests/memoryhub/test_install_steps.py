"""`make install`'s installer choice: uv with pip's own sources, and pip when uv fails."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "memoryhub" / "plumbing"))

import install_steps  # noqa: E402  (run as a script by the Makefile: not imported as a package module)


def test_uv_is_given_the_sources_pip_reads_and_chooses_among_them_as_pip_does() -> None:
    env = install_steps.uv_environment(
        {
            "find-links": "/opt/wheels /srv/more-wheels",
            "extra-index-url": "file:///opt/pypi/simple file:///opt/pypi-more/simple",
            "constraint": "/etc/xdg/pip/constraints.txt",
            "cert": "/etc/ssl/certs/ca-certificates.crt",
        }
    )
    # uv separates find-links by commas
    assert env["UV_FIND_LINKS"] == "/opt/wheels,/srv/more-wheels"
    assert env["UV_EXTRA_INDEX_URL"] == "file:///opt/pypi/simple file:///opt/pypi-more/simple"
    assert env["UV_CONSTRAINT"] == "/etc/xdg/pip/constraints.txt"
    assert env["SSL_CERT_FILE"] == "/etc/ssl/certs/ca-certificates.crt"
    # Without it uv takes a package only from the first index that has it; pip takes the best of
    # all.
    assert env["UV_INDEX_STRATEGY"] == "unsafe-best-match"
    assert "UV_INDEX_URL" not in install_steps.uv_environment({})


def test_pip_settings_are_read_from_pip_itself_files_and_variables(
    tmp_path: Path, monkeypatch
) -> None:
    config = tmp_path / "pip.conf"
    config.write_text("[global]\nextra-index-url = file:///srv/a/simple file:///srv/b/simple\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    monkeypatch.setenv("PIP_FIND_LINKS", "/srv/wheels")
    found = install_steps.pip_settings(sys.executable)
    assert found["extra-index-url"] == "file:///srv/a/simple file:///srv/b/simple"
    assert found["find-links"] == "/srv/wheels"


def _fake_environment(tmp_path: Path, uv_exit: int) -> tuple[Path, Path]:
    """A `python` that logs what it is asked and succeeds, beside a `uv` that exits with uv_exit."""
    log = tmp_path / "calls.log"
    python, uv = tmp_path / "python", tmp_path / "uv"
    python.write_text(f'#!/bin/sh\necho "python $*" >> {log}\nexit 0\n')
    uv.write_text(
        f'#!/bin/sh\necho "uv $*" >> {log}\necho "Resolved 3 packages in 0.1s"\nexit {uv_exit}\n'
    )
    for script in (python, uv):
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return python, log


@pytest.mark.parametrize("uv_exit", [0, 2])
def test_packages_are_installed_with_uv_and_with_pip_when_uv_fails(
    tmp_path: Path, capsys, uv_exit: int
) -> None:
    python, log = _fake_environment(tmp_path, uv_exit)
    assert (
        install_steps.install_packages(str(python), ["-c", "constraints.txt", "-e", ".[dev]"]) == 0
    )
    calls = log.read_text().splitlines()
    assert calls[0] == "python -m pip install --progress-bar off uv"
    assert calls[1] == "python -m pip config list"  # pip's sources, handed to uv
    assert calls[2] == f"uv pip install --python {python} -c constraints.txt -e .[dev]"
    said = capsys.readouterr().out
    assert "Resolved 3 packages" in said  # uv's progress lines reach the person watching
    if uv_exit == 0:
        assert calls[3:] == []
    else:
        assert calls[3:] == [
            "python -m pip install --progress-bar off -c constraints.txt -e .[dev]"
        ]
        assert "installing with pip instead" in said


def test_the_makefile_installs_through_the_packages_step() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert (
        "install_steps.py packages $(BIN)/python -- -c constraints.txt -e '.[dev]' -e ./sdk/python"
        in makefile
    )
    assert os.access(ROOT / "memoryhub" / "plumbing" / "install_steps.py", os.R_OK)
