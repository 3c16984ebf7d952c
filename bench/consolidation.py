"""Consolidation over the LoCoMo conversations, in a throwaway database (figures, not a test).

    .venv/bin/python -m bench.consolidation [--embedder hash|minilm] [--questions N]

Loads every LoCoMo turn through the real pipeline (bench/locomo.py's ingest: append_events →
indexing → embedding), asks the questions with the "memory" search profile so that returned
memories gain access counts, then runs consolidation as a dry run and for real, at two moments:
one day after the last LoCoMo session, and three years later (every conversation idle: compressed).
Prints counts per step and times. The database (bench_lifecycle) is dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from datetime import UTC, datetime, timedelta


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--embedder", default="hash", choices=["hash", "minilm"])
    parser.add_argument(
        "--questions", type=int, default=None, help="ask at most this many questions"
    )
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument(
        "--one-scope",
        action="store_true",
        help=(
            "re-tier every chunk to the workspace tier: one scope of all turns (worst case "
            "for the merge self-join and the cap)"
        ),
    )
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    os.environ["TEST_DB_NAME"] = "bench_lifecycle"
    os.environ["MEMORYHUB_EMBEDDER"] = args.embedder
    os.environ["MEMORYHUB_TASKS_EAGER"] = "true"
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    from memoryhub.plumbing.embedded_pg import ensure_running

    ensure_running()
    django.setup()
    import time_machine
    from django.db import connection

    from bench.common import DATA_DIR, ingest, load
    from retrieval.lifecycle.consolidation import run_consolidation
    from retrieval.models import Chunk
    from retrieval.search import hybrid_search

    conversations = load(DATA_DIR / "locomo10.jsonl", args.limit_conversations)
    last = max(
        datetime.fromisoformat(s["started_at"]).replace(tzinfo=UTC)
        for c in conversations
        for s in c["sessions"]
    )
    soon = last + timedelta(days=1)
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        with time_machine.travel(soon, tick=True):
            ingested = ingest(conversations, "locomo")
            key, turn_at, ingest_s = ingested.key, ingested.turn_at, ingested.seconds
            print(
                f"ingested {len(turn_at)} turns in {ingest_s:.1f} s; chunks {Chunk.objects.count()}"
            )
            questions = [q["question"] for c in conversations for q in c["questions"]][
                : args.questions
            ]
            started = time.perf_counter()
            for question in questions:
                hybrid_search(
                    tenant_id=key.tenant_id,
                    query=question,
                    scope="account",
                    top_k=5,
                    profile="memory",
                )
            print(
                f"asked {len(questions)} questions (memory profile) in"
                f" {time.perf_counter() - started:.1f} s"
            )
        if args.one_scope:
            Chunk.objects.filter(tenant_id=key.tenant_id).update(tier="workspace")
        export_round_trip(key.tenant)
        for label, now, real in (
            ("last session + 1 day", soon, True),
            ("+3 years", soon + timedelta(days=3 * 365), True),
        ):
            started = time.perf_counter()
            dry = run_consolidation(tenant_id=key.tenant_id, dry_run=True, now=now)
            dry_s = time.perf_counter() - started
            print(f"\n[{label}] dry run {dry_s:.2f} s: {json.dumps(dry['counts'])}")
            if real:
                started = time.perf_counter()
                result = run_consolidation(tenant_id=key.tenant_id, now=now)
                real_s = time.perf_counter() - started
                print(f"[{label}] real run {real_s:.2f} s: {json.dumps(result['counts'])}")
                print(
                    f"same counts as the dry run: {result['counts'] == dry['counts']}; "
                    f"chunks left {Chunk.objects.filter(tenant_id=key.tenant_id).count()}"
                )
    finally:
        connection.creation.destroy_test_db("bench_lifecycle", verbosity=0)


def export_round_trip(tenant: object) -> None:
    from accounts.models import Tenant
    from memoryhub.transfer import ExportScope, export_memory, import_memory

    started = time.perf_counter()
    first = export_memory(tenant=tenant, scope=ExportScope("tenant"))
    size = len(json.dumps(first))
    export_s = time.perf_counter() - started
    copy, _ = Tenant.get_or_create_named("locomo-copy")
    started = time.perf_counter()
    counts = import_memory(tenant=copy, data=json.loads(json.dumps(first))).imported
    import_s = time.perf_counter() - started
    same = export_memory(tenant=copy, scope=ExportScope("tenant")) == first
    print(
        f"export {export_s:.1f} s ({size / 1e6:.1f} MB JSON), import {import_s:.1f} s {counts}, "
        f"re-export identical: {same}"
    )
    # Forget-user at scale: the copy's every session and chunk belongs to one user, transcript
    # immutable.
    from memoryhub.forget import forget_user
    from memoryhub.models import Session
    from retrieval.models import Chunk

    Tenant.objects.filter(pk=copy.pk).update(immutable_transcript=True)
    Session.objects.filter(tenant=copy).update(user_id="everyone")
    Chunk.objects.filter(tenant=copy).update(user_id="everyone")
    started = time.perf_counter()
    deleted = forget_user(tenant_id=copy.pk, user_id="everyone")
    print(
        f"forget_user over the copy (immutable transcript) {time.perf_counter() - started:.1f} s:"
        f" {deleted}"
    )


if __name__ == "__main__":
    main()
