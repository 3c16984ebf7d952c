"""`make run` on a new data folder, as a person sees it: a plain line for each step,
serving as soon as the database is migrated, and a hint for a new API key that runs as printed."""

from __future__ import annotations

import os
import subprocess

import httpx

from tests.served import ROOT, Served, private_data_dir

HINT = "Another key, any time: "
LATER_HINT = "A new key: "


def run_hint(served: Served, line: str, marker: str) -> str:
    """The command after `marker`, run by a shell in the checkout with the environment of a fresh
    terminal (no data folder set: the hint must name it); the key it printed."""
    command = line.split(marker, 1)[1]
    env = {k: v for k, v in served.environment.items() if k != "MEMORYHUB_DATA_DIR"}
    done = subprocess.run(
        ["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def works(served: Served, key: str) -> bool:
    reply = httpx.get(
        f"{served.url}/api/v1/notes/", headers={"Authorization": f"Bearer {key}"}, timeout=30
    )
    return reply.status_code == 200


def test_a_first_start_says_each_step_and_its_key_hints_run_as_printed() -> None:
    with private_data_dir() as data_dir:
        served = Served(data_dir, env={"LOG_LEVEL": "INFO"}).wait()
        try:
            log = served.log[:]
            steps = [
                "Creating the embedded PostgreSQL database in",
                "Applying database migrations (first start: about",
                "Database ready and migrated.",
                "First start: created these.",
                "Starting the web server…",
                "MemoryHub is serving",
            ]
            positions = [
                next((i for i, line in enumerate(log) if step in line), -1) for step in steps
            ]
            assert -1 not in positions and positions == sorted(positions), log
            hint = next(line for line in log if HINT in line)
            assert (
                f"MEMORYHUB_DATA_DIR={data_dir} " in hint and "create_api_key --tenant demo" in hint
            )
            key = run_hint(served, hint, HINT)
            assert key.startswith("mh_") and key != served.key and works(served, key)
            # A terminal for people: the request lines (JSON, for machines) go to the data folder's
            # log file, which the start names; the terminal shows none of them.
            log_file = data_dir / "logs" / "memoryhub.log"
            assert any(f"Request and background logs: {log_file}" in line for line in served.log), (
                served.log
            )
            served.stop()
            assert '"logger": "memoryhub.request"' in log_file.read_text()
            assert [line for line in served.log if line.lstrip().startswith("{")] == []
        finally:
            served.stop()

        again = Served(data_dir).wait(key=False)
        try:
            assert any("Starting the embedded PostgreSQL in" in line for line in again.log), (
                again.log
            )
            assert any(line.startswith("Applying database migrations…") for line in again.log), (
                again.log
            )
            assert not any(
                "first start: about" in line or "First start: created" in line for line in again.log
            ), again.log
            hint = next(line for line in again.log if LATER_HINT in line)
            assert works(again, run_hint(again, hint, LATER_HINT))
            assert not works(again, "mh_00000000_not-a-key")
        finally:
            again.stop()


def test_the_hint_names_no_data_folder_when_the_default_one_is_used() -> None:
    """Run from the checkout with the default folder: the hint is the bare command (checked on the
    function that writes it, in a process with the default settings)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MEMORYHUB_DATA_DIR", "DATABASE_URL")}
    env["DJANGO_SETTINGS_MODULE"] = "memoryhub.settings"
    done = subprocess.run(
        [
            ".venv/bin/python",
            "-c",
            (
                "import django; django.setup()\nfrom memoryhub.management.commands.run import"
                " create_key_hint; print(create_key_hint())"
            ),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ".venv/bin/python manage.py create_api_key --tenant demo"
