"""What `manage.py run` becomes once it has set up (database, migrations, first-start keys): a small
process without Django that starts the web server and the background processes and supervises
them (memoryhub.plumbing.supervision) until a signal, a child's exit or a database that cannot be
brought back.

`run` replaces itself by this process (hand_over: exec, so the pid, the terminal and the children
started so far stay): Django and the apps, which `run` needed only to set up, held 98 MB PSS for as
long as it served (bench/memory.py); without them the supervising process holds about 14 MB. `run`
writes what to start and say into a plan file only its user can read (the children's environment
holds the secret key and the database URL); this process reads it and removes it at once.
"""

from __future__ import annotations

import json
import logging.config
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from memoryhub.plumbing.logs import logging_config
from memoryhub.plumbing.still import STILL_SECONDS
from memoryhub.plumbing.supervision import Supervisor, restarts_path

# How long the web server may take to answer: its master loads Django and the query model first
# (tens of seconds on a 2-core machine under load).
WEB_START_SECONDS = 300


class Adopted:
    """A child `run` started before it handed over (the guard, a start-up step): still this
    process's child after exec, but without its Popen. Enough of Popen for the supervisor."""

    def __init__(self, pid: int, stdin_fd: int | None = None) -> None:
        self.pid = pid
        self.args: list[str] = []
        self.returncode: int | None = None
        self.stdin = os.fdopen(stdin_fd, "w") if stdin_fd is not None else None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped already
                self.returncode = 0
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0)
            time.sleep(0.05)
        assert self.returncode is not None
        return self.returncode


def hand_over(plan: dict[str, Any], guard: subprocess.Popen[str], data_dir: Path) -> NoReturn:
    """Replace this process (`run`, with Django loaded) by serve(plan); the guard's pipe is kept
    open across the exec so that the guard still learns of every child group."""
    assert guard.stdin is not None
    guard.stdin.flush()
    os.set_inheritable(guard.stdin.fileno(), True)
    plan = {**plan, "guard": {"pid": guard.pid, "fd": guard.stdin.fileno()}}
    data_dir.mkdir(parents=True, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix="run-plan-", suffix=".json", dir=data_dir)  # mode 0600
    with os.fdopen(fd, "w") as handle:
        json.dump(plan, handle)
    root = str(Path(__file__).resolve().parents[2])
    boot = (
        f"import sys; sys.path.insert(0, {root!r}); "
        "from memoryhub.plumbing.serving import main; main(sys.argv[1])"
    )
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    try:
        # `run`'s own arguments follow, unread: its command line still names this checkout's
        # `manage.py run`, by which `manage.py mcp` finds the running service's database
        # (memoryhub.plumbing.installation).
        os.execv(sys.executable, [sys.executable, "-c", boot, path, *sys.argv])
    except OSError:
        os.unlink(path)  # it holds the secret key
        raise


def main(plan_path: str) -> None:
    path = Path(plan_path)
    plan = json.loads(path.read_text())
    path.unlink()
    logging.config.dictConfig(
        logging_config(plan["log_level"], plan["log_format"], plan["log_file"])
    )
    data_dir = Path(plan["data_dir"]) if plan["data_dir"] else None
    supervisor = Supervisor(data_dir, say=say, warn=warn, max_restarts=plan["max_restarts"])
    supervisor.guard = Adopted(plan["guard"]["pid"], plan["guard"]["fd"])  # type: ignore[assignment]
    # A start-up step's end is said; the web workers take up what it made by themselves (the query
    # model: retrieval.query_embedding looks for it again), without a restart that would leave
    # requests waiting while new workers load.
    for helper in plan["helpers"]:
        supervisor.adopt_helper(
            Adopted(helper["pid"]),  # type: ignore[arg-type]
            lambda code, helper=helper: (
                say(helper["finished"]) if code == 0 else warn(helper["failed"])
            ),
        )
    serve(plan, supervisor, Path(plan["restarts_dir"]))


def say(line: str) -> None:
    print(line, flush=True)


def warn(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _starter(command: list[str], env: dict[str, str]) -> Callable[[], subprocess.Popen[bytes]]:
    """Starts the child in a session of its own (its process group: stopped, or cleaned up after
    it died, as one)."""
    return lambda: subprocess.Popen(command, env=env, start_new_session=True)


def serve(plan: dict[str, Any], supervisor: Supervisor, restarts_dir: Path) -> None:
    """Start the web server (and the background processes), then watch them and the embedded
    database until a signal, a child's exit or a database that cannot be brought back."""
    stopping = False

    def stop(signum: int, frame: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        # Each child is restarted alone should it exit; the count is kept beside the data for
        # /health/ and the dashboard.
        restarts_dir.mkdir(parents=True, exist_ok=True)
        supervisor.use_restarts_file(restarts_path(restarts_dir))
        for child in plan["children"]:
            start = _starter(child["command"], {**os.environ, **child["env"]})
            supervisor.adopt(child["name"], start(), cluster=child["cluster"], start=start)
        say("Starting the web server…")
        wait_until_serving(plan["health_url"], supervisor.supervised[0].process, plan["port"])
        for line in plan["serving"]:
            say(line)
        for line in plan["warnings"]:
            warn(line)
        while not stopping:
            problem = supervisor.problem()
            if problem:
                warn(problem)
                break
            time.sleep(0.2)
    finally:
        say("Stopping…")
        supervisor.shutdown()
        say("Stopped.")


def wait_until_serving(url: str, web: subprocess.Popen[bytes], port: int) -> None:
    """Until the health URL answers (the web server loads Django and the query model before it
    takes a request), said every STILL_SECONDS."""
    started = said = time.monotonic()
    while time.monotonic() - started < WEB_START_SECONDS:
        if web.poll() is not None:
            raise SystemExit(f"The web server exited (code {web.returncode}); is port {port} free?")
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.25)
        if time.monotonic() - said >= STILL_SECONDS:
            said = time.monotonic()
            say(f"  still starting the web server ({said - started:.0f} s so far)…")
    raise SystemExit(f"The web server did not answer within {WEB_START_SECONDS} s.")
