"""`make install` with pip against uv, each from an empty cache into a fresh virtual environment.

    python3.11 bench/installers.py [--rounds 1]

What a new user waits for on the first `make run`: the Makefile's install (MemoryHub with its dev
extra and the Python client, under constraints.txt), once with pip and once with
uv (`uv pip install`, from PyPI into its own folder first: not counted), each with a cache of its
own made empty before the round, in the same run, alternating which goes first. Both read the same
package sources: pip's configuration (find-links, extra index URLs, the machine's constraints) is
handed to uv through its environment variables, by install_steps.uv_environment as `make install`
does. Prints the seconds of each and the ratio.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "memoryhub" / "plumbing"))
PYTHON = shutil.which("python3.11") or sys.executable

import install_steps  # noqa: E402  (standard library only: what `make install` runs)


def steps(installer: str, venv: Path, uv: Path | None) -> list[list[str]]:
    """The Makefile's one install command, with pip or with uv."""
    py = str(venv / "bin" / "python")
    arguments = ["-c", "constraints.txt", "-e", ".[dev]", "-e", "./sdk/python"]
    if installer == "pip":
        return [[py, "-m", "pip", "install", "--progress-bar", "off", *arguments]]
    assert uv is not None
    return [[str(uv), "pip", "install", "--python", py, *arguments]]


def one_round(installer: str, work: Path, uv: Path | None) -> float:
    venv, cache = work / f"venv-{installer}", work / f"cache-{installer}"
    shutil.rmtree(venv, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir()
    started = time.monotonic()
    subprocess.run([PYTHON, "-m", "venv", str(venv)], check=True)
    if installer == "pip":
        env = dict(os.environ, PIP_CACHE_DIR=str(cache))
    else:  # the environment `make install` gives uv
        env = dict(
            install_steps.uv_environment(install_steps.pip_settings(PYTHON)),
            UV_CACHE_DIR=str(cache),
        )
    for step in steps(installer, venv, uv):
        done = subprocess.run(
            step, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        if done.returncode:
            sys.exit(f"{installer} failed: {' '.join(step)}\n{done.stderr[-3000:]}")
    seconds = time.monotonic() - started
    check = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import torch, django, memoryhub_client; print(torch.__version__)",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(f"{installer}: {seconds:.1f} s (torch {check})", flush=True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mh-installers-") as tmp:
        work = Path(tmp)
        subprocess.run([PYTHON, "-m", "venv", str(work / "uv-tool")], check=True)
        subprocess.run([str(work / "uv-tool" / "bin" / "pip"), "install", "-q", "uv"], check=True)
        uv = work / "uv-tool" / "bin" / "uv"
        times: dict[str, list[float]] = {"pip": [], "uv": []}
        for n in range(args.rounds):
            order = ["pip", "uv"] if n % 2 == 0 else ["uv", "pip"]
            for installer in order:
                times[installer].append(one_round(installer, work, uv))
        pip_s, uv_s = min(times["pip"]), min(times["uv"])
        print(
            f"fastest of {args.rounds}: pip {pip_s:.1f} s, uv {uv_s:.1f} s, uv/pip"
            f" {uv_s / pip_s:.2f}; load {os.getloadavg()[0]:.1f}"
        )


if __name__ == "__main__":
    main()
