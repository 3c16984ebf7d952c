"""Fuzz a running MemoryHub with schemathesis for N minutes; print the cases tried and the failures.

    .venv/bin/python -m bench.fuzz --minutes 5            # starts its own server (manage.py run)
    .venv/bin/python -m bench.fuzz --url URL --key KEY    # or targets one that runs

Every operation of the live OpenAPI schema (/api/v1/schema/) in turn, positive and negative cases,
a new seed each round, over real HTTP against the real server (uvicorn workers, the embedded
PostgreSQL). A case fails any of tests/fuzzing.py's checks (the same as tests/test_fuzz.py): every
check schemathesis registers (its `--checks all`) and the error envelope: a 5xx, a 4xx outside the
envelope, a status, header or body the schema does not document, a schema-valid request refused
(but for the named rules a JSON Schema cannot state, fuzzing.SEMANTIC_CODES) or a schema-invalid
one accepted, an operation that ignores the key.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import schemathesis  # noqa: E402

from tests.fuzzing import CHECKS, Outcome, fuzz_operation  # noqa: E402
from tests.served import Served  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--url", help="A running MemoryHub (with --key) instead of starting one.")
    parser.add_argument("--key", help="An API key with every scope, for --url.")
    parser.add_argument(
        "--examples", type=int, default=10, help="Cases per operation, mode and round."
    )
    parser.add_argument(
        "--seed", type=int, default=1, help="The first round's seed (then +1 a round)."
    )
    args = parser.parse_args()
    if bool(args.url) != bool(args.key):
        parser.error("--url and --key go together")
    server = None if args.url else Served(web_workers=2).wait()
    url, key = (args.url, args.key) if server is None else (server.url, server.key)
    try:
        total = fuzz(url, key, minutes=args.minutes, examples=args.examples, seed=args.seed)
    finally:
        if server is not None:
            server.stop()
    print(f"checks: {', '.join(getattr(check, '__name__', str(check)) for check in CHECKS)}")
    report(total)
    sys.exit(1 if total.failures else 0)


def fuzz(url: str, key: str, *, minutes: float, examples: int, seed: int) -> Outcome:
    schema = schemathesis.openapi.from_url(f"{url}/api/v1/schema/")
    operations = [result.ok() for result in schema.get_all_operations()]
    headers = {"Authorization": f"Bearer {key}"}
    total = Outcome()
    deadline = time.monotonic() + minutes * 60
    rounds = 0
    print(f"Fuzzing {len(operations)} operations at {url} for {minutes:g} minutes…", flush=True)
    while time.monotonic() < deadline:
        for operation in operations:
            if time.monotonic() >= deadline:
                break
            outcome = fuzz_operation(
                operation,
                lambda case: case.call(base_url=url, headers=headers, timeout=30),
                headers=headers,
                examples=examples,
                seed=seed + rounds,
            )
            for failure in outcome.failures:
                print("FAIL", failure, flush=True)
            total.add(outcome)
        rounds += 1
        print(f"round {rounds}: {total.cases} cases, {len(total.failures)} failures", flush=True)
    return total


def report(total: Outcome) -> None:
    statuses = Counter(total.statuses)
    print(f"\ncases tried: {total.cases}")
    print("statuses: " + ", ".join(f"{status}: {n}" for status, n in sorted(statuses.items())))
    server_errors = sum(n for status, n in statuses.items() if status >= 500)
    print(f"5xx: {server_errors}")
    print(f"failures: {len(total.failures)}")
    for failure in total.failures[:50]:
        print("  " + failure)


if __name__ == "__main__":
    main()
