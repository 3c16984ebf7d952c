"""`make install`'s steps with a line at least every few seconds (run as a script by the Makefile,
before MemoryHub is installed: standard library only).

pip is quiet for minutes while it unpacks torch (~750 MB) and a hundred other packages; a person
watching a silent terminal for four minutes assumes it hung. Each step here says what it does and
about how long, passes on the installer's lines that say progress ("Collecting …", "Installing
collected packages", uv's "Resolved/Prepared/Installed N packages"), and says "still …" with the
elapsed time whenever it has been silent for a while.

    python memoryhub/plumbing/install_steps.py STEP_NAME -- COMMAND …
    python memoryhub/plumbing/install_steps.py packages PYTHON -- PIP_INSTALL_ARGUMENTS …

`packages` installs with uv (`uv pip install`, itself installed by pip first) and falls back to pip
when uv cannot be had or fails: from an empty cache on a 2-core VM uv took 26 s where pip took 170
s for the same packages (bench/installers.py). uv is given pip's own configuration (find-links,
index URLs, constraints, certificate: `pip config list` and PIP_* variables) and told to pick each
package's best version from all of them as pip does, so both install the same builds (a machine's
local torch wheel included).
"""

from __future__ import annotations

import os
import queue
import shlex
import subprocess
import sys
import threading
import time

# The longest a person waits without a line (issue: never quiet for more than ~15 s).
HEARTBEAT_SECONDS = 10.0
# pip's lines worth a person's attention; the rest (requirement already satisfied, wheel details,
# download URLs) go by unprinted.
SHOWN = (
    "Collecting ",
    "Downloading ",
    "Installing collected packages",
    "Successfully installed",
    "Building ",
    "ERROR",
    "error:",
    "Resolved ",
    "Prepared ",
    "Installed ",
    "Uninstalled ",
    "Built ",
    "Audited ",
)
# pip's settings and the uv environment variables that mean the same (uv reads no pip.conf).
UV_FROM_PIP = {
    "index-url": "UV_INDEX_URL",
    "extra-index-url": "UV_EXTRA_INDEX_URL",
    "find-links": "UV_FIND_LINKS",
    "constraint": "UV_CONSTRAINT",
    "cert": "SSL_CERT_FILE",
}


def run(step: str, command: list[str], env: dict[str, str] | None = None) -> int:
    started = time.monotonic()
    print(f"{step}…", flush=True)
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1, env=env
    )
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_pump, args=(process, lines), daemon=True).start()
    collected, last_said, doing = 0, time.monotonic(), "downloading"
    while True:
        try:
            line = lines.get(timeout=1.0)
        except queue.Empty:
            line = ""
        if line is None:
            break
        now = time.monotonic()
        if line.startswith("Collecting "):
            collected += 1
            if now - last_said >= 2:  # one line every few seconds, not one per package
                print(
                    f"  {collected} package{'' if collected == 1 else 's'} checked…"
                    f" ({line.split()[1]})",
                    flush=True,
                )
                last_said = now
            continue
        if line.startswith("Installing collected packages"):
            doing = "unpacking the packages (torch alone is ~750 MB)"
            count = len(line.split(","))
            print(
                f"  Unpacking {count} package{'s' if count > 1 else ''} into the virtual"
                " environment…",
                flush=True,
            )
            last_said = now
            continue
        if line.startswith(SHOWN):
            print(f"  {line[:160]}", flush=True)
            last_said = now
        elif now - last_said >= HEARTBEAT_SECONDS:
            print(f"  still {doing} ({now - started:.0f} s so far)…", flush=True)
            last_said = now
    code = process.wait()
    print(
        f"{step}: {'done' if code == 0 else f'failed (exit code {code})'} in"
        f" {time.monotonic() - started:.0f} s.",
        flush=True,
    )
    return code


def pip_settings(python: str) -> dict[str, str]:
    """pip's configured values as pip itself reads them (files, then PIP_* variables), by name."""
    listed = subprocess.run(
        [python, "-m", "pip", "config", "list"], capture_output=True, text=True
    ).stdout
    found: dict[str, str] = {}
    for line in listed.splitlines():  # e.g. global.find-links='/opt/wheels' or :env:.cert='…'
        key, _, value = line.partition("=")
        found[key.rsplit(".", 1)[-1]] = " ".join(shlex.split(value))
    for name in UV_FROM_PIP:
        if value := os.environ.get("PIP_" + name.upper().replace("-", "_")):
            found[name] = value
    return found


def uv_environment(pip: dict[str, str]) -> dict[str, str]:
    """The environment that makes uv read the sources pip reads and choose among them as pip
    does."""
    env = dict(os.environ, UV_INDEX_STRATEGY="unsafe-best-match", UV_NO_PROGRESS="1")
    for name, variable in UV_FROM_PIP.items():
        if value := pip.get(name):
            # uv takes several find-links separated by commas, several index URLs or constraint
            # files by spaces; pip's configuration separates any of them by whitespace.
            env[variable] = ",".join(value.split()) if name == "find-links" else value
    return env


def install_packages(python: str, arguments: list[str]) -> int:
    """`pip install ARGUMENTS` into `python`'s environment, with uv when it can be had."""
    step = "Installing MemoryHub and its dependencies"
    if (
        run(
            "Getting uv, a faster installer",
            [python, "-m", "pip", "install", "--progress-bar", "off", "uv"],
        )
        == 0
    ):
        uv = os.path.join(os.path.dirname(python), "uv")
        env = uv_environment(pip_settings(python))
        if (
            run(f"{step} (uv)", [uv, "pip", "install", "--python", python, *arguments], env=env)
            == 0
        ):
            return 0
        print("uv could not install them: installing with pip instead.", flush=True)
    return run(
        f"{step} (pip: a few minutes)",
        [python, "-m", "pip", "install", "--progress-bar", "off", *arguments],
    )


def _pump(process: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        lines.put(line.rstrip())
    lines.put(None)


if __name__ == "__main__":
    if sys.argv[1:2] == ["packages"] and len(sys.argv) >= 5 and sys.argv[3] == "--":
        sys.exit(install_packages(sys.argv[2], sys.argv[4:]))
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(
            "usage: install_steps.py STEP -- COMMAND … | install_steps.py packages PYTHON --"
            " ARGUMENTS …"
        )
    sys.exit(run(sys.argv[1], sys.argv[3:]))
