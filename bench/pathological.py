"""Timings the test suite no longer asserts (a shared 2-core machine makes a duration a
flake; the tests assert the behaviour, this prints the seconds).

    .venv/bin/python bench/pathological.py

1. The extractive summariser over the 200k-character words of tests/memoryhub/test_summarisers.py
   (linear: tens of milliseconds each; the old expressions were quadratic, ~30 minutes each).
2. /api/v1/health/ through the real server (`manage.py run`) while 40 clients never finish their
   headers (tests/test_server.py asserts it is answered before their 408; here: how fast).
"""

from __future__ import annotations

import socket
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def summariser() -> None:
    from memoryhub.summarisers import ExtractiveSummariser, Turn
    from tests.memoryhub.test_summarisers import PATHOLOGICAL

    print("| input (200k characters) | seconds |\n|---|---:|")
    for name in sorted(PATHOLOGICAL):
        started = time.perf_counter()
        ExtractiveSummariser(line_chars=200).summarise(
            [Turn("user", "Start. " + PATHOLOGICAL[name])]
        )
        print(f"| {name} | {time.perf_counter() - started:.3f} |")


def stalled_health() -> None:
    from tests.served import Served, private_data_dir

    env = {"MEMORYHUB_HEADER_TIMEOUT_SECONDS": "5"}
    with private_data_dir() as data_dir, Served(data_dir, env=env) as served:
        stalled = []
        for _ in range(40):
            sock = socket.create_connection(("127.0.0.1", served.port), timeout=10)
            sock.sendall(b"GET /api/v1/health/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            stalled.append(sock)
        timings = []
        for _ in range(20):
            started = time.perf_counter()
            with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
                sock.sendall(
                    b"GET /api/v1/health/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
                )
                while sock.recv(65536):
                    pass
            timings.append(time.perf_counter() - started)
        for sock in stalled:
            sock.close()
    print(
        "\nhealth with 40 stalled clients, 20 requests: p50"
        f" {statistics.median(timings) * 1000:.1f} ms, max {max(timings) * 1000:.1f} ms"
    )


if __name__ == "__main__":
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    import django

    django.setup()
    summariser()
    stalled_health()
