"""`make install`'s steps with a line at least every few seconds (run as a script by the Makefile,
before MemoryHub is installed: standard library only).

pip is quiet for minutes while it unpacks torch (~750 MB) and a hundred other packages; a person
watching a silent terminal for four minutes assumes it hung. Each step here says what it does and
about how long, passes on pip's lines that say progress ("Collecting …", "Installing collected
packages"), and says "still …" with the elapsed time whenever pip has been silent for a while.

    python memoryhub/plumbing/install_steps.py STEP_NAME -- pip install …
"""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
import time

# The longest a person waits without a line (issue: never quiet for more than ~15 s).
HEARTBEAT_SECONDS = 10.0
# pip's lines worth a person's attention; the rest (requirement already satisfied, wheel details,
# download URLs) go by unprinted.
SHOWN = ("Collecting ", "Downloading ", "Installing collected packages", "Successfully installed", "Building ",
         "ERROR", "error:")


def run(step: str, command: list[str]) -> int:
    started = time.monotonic()
    print(f"{step}…", flush=True)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
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
                print(f"  {collected} packages checked… ({line.split()[1]})", flush=True)
                last_said = now
            continue
        if line.startswith("Installing collected packages"):
            doing = "unpacking the packages (torch alone is ~750 MB)"
            count = len(line.split(","))
            print(f"  Unpacking {count} package{'s' if count > 1 else ''} into the virtual environment…", flush=True)
            last_said = now
            continue
        if line.startswith(SHOWN):
            print(f"  {line[:160]}", flush=True)
            last_said = now
        elif now - last_said >= HEARTBEAT_SECONDS:
            print(f"  still {doing} ({now - started:.0f} s so far)…", flush=True)
            last_said = now
    code = process.wait()
    print(f"{step}: {'done' if code == 0 else f'failed (exit code {code})'} in {time.monotonic() - started:.0f} s.",
          flush=True)
    return code


def _pump(process: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        lines.put(line.rstrip())
    lines.put(None)


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit("usage: install_steps.py STEP -- COMMAND …")
    sys.exit(run(sys.argv[1], sys.argv[3:]))
