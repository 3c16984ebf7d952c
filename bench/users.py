"""Many end users in one tenant, each searched with the default user-wide scope.

    nice -n 10 .venv/bin/python bench/users.py --users 1000 --per-user 1000 --keepdb   # 1M chunks
    nice -n 10 .venv/bin/python bench/users.py --users 10000 --per-user 100 --keepdb   # 1M chunks
    nice -n 10 .venv/bin/python bench/users.py --users 10 --per-user 1000 --keepdb     # 10k
    nice -n 10 .venv/bin/python bench/users.py --users 1 --per-user 1000000 --channels 400 \\
        --channels-per-user 400 --keepdb   # one user, 2,500 chunks in each of 400 channels

One tenant, one workspace, --channels channels; user u's chunks are in conversations (sessions of
at most 100 chunks) spread over --channels-per-user of them, and the tenant has --shared ownerless
account-wide notes (shared knowledge). Texts are LoCoMo turns, vectors "blend" (bench/scale.py).
Each query is asked as the API builds it from `{"query": ..., "session": ...}`: a session of a
random user, no scope, so the search reads that user's whole memory plus shared knowledge,
nearest conversation first (retrieval.scoping.read_as_session). Measured: p50/p95 in process
(query embedding included) and over HTTP against the server `manage.py run` starts; the recall of
the search's own vector candidates against exact search in the same range, per query (each query
is one user); and the access path PostgreSQL took for the vector candidates (EXPLAIN ANALYZE of
the statement, the indexes whose scans ran).
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import re
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import search as base
import search_http

PER_SESSION = 100  # at most this many chunks in one conversation
MODES = {"hybrid": {"mode": "hybrid"}, "vector": {"mode": "vector"}}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--per-user", type=int, default=1000)
    parser.add_argument("--channels", type=int, default=20)
    parser.add_argument("--channels-per-user", type=int, default=4)
    parser.add_argument("--shared", type=int, default=1000, help="ownerless account notes")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--keepdb", action="store_true")
    parser.add_argument("--only-build", action="store_true")
    parser.add_argument("--no-http", action="store_true")
    parser.add_argument("--no-recall", action="store_true", help="times only (no exact truth)")
    parser.add_argument("--db", default="", help="default bench_users_<users>x<per-user>")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--ranges",
        default="",
        metavar="K,K,...",
        help="also both vector strategies over the first K users' rows together",
    )
    return parser.parse_args()


# --- data ------------------------------------------------------------------------------------


def session_plan(args: argparse.Namespace) -> list[tuple[str, int, int]]:
    """(user, channel index, chunks) of every conversation: each user's chunks in sessions of at
    most PER_SESSION, round-robin over her --channels-per-user channels."""
    spread = max(1, min(args.channels_per_user, args.channels))
    size = max(1, min(PER_SESSION, args.per_user // spread))
    plan = []
    for u in range(args.users):
        left, k = args.per_user, 0
        while left > 0:
            count = min(size, left)
            plan.append((f"u{u}", (u + k % spread) % args.channels, count))
            left -= count
            k += 1
    return plan


def build(args: argparse.Namespace, turns: list[str]) -> dict[str, Any]:
    """The tenant, its channels and sessions by bulk insert; chunks by COPY; indexes after."""
    import scale
    from django.db import connection

    from accounts.models import Channel, Tenant, Workspace
    from memoryhub.models import Session
    from retrieval.embedders import get_embedder

    tenant = Tenant.objects.create(name="users", slug="users")
    workspace = Workspace.objects.create(tenant=tenant, name="default")
    channels = Channel.objects.bulk_create(
        [Channel(tenant=tenant, workspace=workspace, name=f"c{i}") for i in range(args.channels)]
    )
    plan = session_plan(args)
    sessions = Session.objects.bulk_create(
        [
            Session(
                tenant=tenant,
                workspace=workspace,
                channel=channels[c],
                user_id=user,
                external_id=f"s{i}",
            )
            for i, (user, c, _) in enumerate(plan)
        ],
        batch_size=5000,
    )
    maker = scale.VectorMaker(scale.base_vectors(turns), "blend", seed=13)
    model = get_embedder().name
    common = {"tenant_id": tenant.pk, "workspace_id": workspace.pk, "model": model}
    rows: list[tuple[Any, ...]] = []
    row = 0
    started = time.perf_counter()
    with connection.cursor() as cursor:
        scale.drop_search_indexes(cursor)
        for session, (user, c, count) in zip(sessions, plan, strict=True):
            vectors = maker.block(row, count)  # a session at a time: 1M vectors are gigabytes
            for seq in range(count):
                rows.append(
                    scale.chunk_row(
                        **common,
                        session_id=session.pk,
                        channel_id=channels[c].pk,
                        user_id=user,
                        sequence=seq + 1,
                        text=turns[(row * 7) % len(turns)],
                        digest=f"{row:064x}",
                        vector=vectors[seq],
                    )
                )
                row += 1
            if len(rows) >= scale.BATCH:
                scale.copy_rows(cursor, rows)
                rows = []
        vectors = maker.block(row, args.shared)
        for i in range(args.shared):  # shared knowledge: account-wide notes nobody owns
            rows.append(
                scale.chunk_row(
                    **common,
                    session_id=None,
                    channel_id=None,
                    user_id="",
                    sequence=None,
                    text=turns[(row * 7) % len(turns)],
                    digest=f"{row:064x}",
                    vector=vectors[i],
                    kind="note",
                    tier="account",
                )
            )
            row += 1
        scale.copy_rows(cursor, rows)
        load_s = round(time.perf_counter() - started, 1)
        print(f"copied {row} rows in {load_s} s")
        return {"rows": row, "load_s": load_s, **scale.build_indexes(cursor)}


# --- measurements ----------------------------------------------------------------------------


def bodies(args: argparse.Namespace, questions: list[str]) -> list[dict[str, Any]]:
    """Each question from a session of a random user, as the API gets it: no scope, no user."""
    rng = random.Random(5)
    plan = session_plan(args)
    return [{"query": q, "session": f"s{rng.randrange(len(plan))}"} for q in questions]


def in_process(items: list[dict[str, Any]], key: Any) -> dict[str, Any]:
    """p50/p95 ms per mode, and CPU ms a search: this process's and its PostgreSQL backend's (CPU
    is steadier than time on a machine other work shares)."""
    import os

    from django.db import connection

    from bench.common import cpu_seconds
    from retrieval.scoping import build_search_request
    from retrieval.search import run_search

    for body in items:  # warm: the pages these searches read in shared buffers, as when serving
        run_search(build_search_request(key, {**body, "top_k": 10}))
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pids = [os.getpid(), cursor.fetchone()[0]]
    out = {}
    for mode, options in MODES.items():
        times = []
        before = cpu_seconds(pids)
        for body in items:
            req = build_search_request(key, {**body, "top_k": 10, **options})
            started = time.perf_counter()
            run_search(req)
            times.append(1000 * (time.perf_counter() - started))
        cpu_ms = round(1000 * (cpu_seconds(pids) - before) / len(items), 2)
        out[mode] = {**base.summary(times), "cpu_ms": cpu_ms}
    return out


def candidate_statement(req: Any) -> tuple[str, list[Any], str, list[Any]]:
    """The search's vector-candidate statement for `req`, as the engine builds it, and the exact
    search over the same range (every row compared: the ORDER BY matches no index)."""
    import numpy as np
    import scale

    from retrieval.embedders import get_embedder
    from retrieval.query_embedding import embed_query
    from retrieval.search.engine import owner_parts
    from retrieval.search.plan import plan_search
    from retrieval.search.sql import vector_source

    model = get_embedder().name
    plan = plan_search(req)
    where, params = plan.where
    text = scale.vector_text(np.asarray(embed_query(req.query), np.float32))
    sql, sql_params = vector_source(
        text, model, where, params, 100, plan.scope_size, owner_parts(plan)
    )
    truth = (
        f"SELECT c.id FROM retrieval_chunk c WHERE {where} AND c.embedding IS NOT NULL AND"
        " c.embedding_model = %s ORDER BY (c.embedding <=> %s::halfvec) + 0 LIMIT 100"
    )
    return sql, sql_params, truth, [*params, model, text]


def candidate_recall(items: list[dict[str, Any]], key: Any) -> dict[str, Any]:
    """Per query (one user each), the share of the 100 nearest in her range, and of the 10
    nearest, among the search's vector candidates (search re-scores every candidate exactly)."""
    from retrieval.scoping import build_search_request
    from retrieval.search.statements import hnsw_settings, select_rows

    at10, at100 = [], []
    for body in items:
        sql, params, truth_sql, truth_params = candidate_statement(
            build_search_request(key, dict(body))
        )
        with hnsw_settings(True):
            found = {r[0] for r in select_rows(sql, params)}
        truth = [r[0] for r in select_rows(truth_sql, truth_params)]
        if truth:
            at100.append(len(found & set(truth)) / len(truth))
            at10.append(len(found & set(truth[:10])) / min(10, len(truth)))
    return {
        "recall@100": round(statistics.mean(at100), 4),
        "recall@100 min": round(min(at100), 4),
        "true top 10 among candidates": round(statistics.mean(at10), 4),
    }


_SCAN = re.compile(r"(?:Index Scan|Index Only Scan|Bitmap Index Scan) (?:using|on) (\w+)")


def access_paths(items: list[dict[str, Any]], key: Any) -> dict[str, int]:
    """How often each access path ran for the vector candidates (EXPLAIN ANALYZE; a branch the
    size gate switched off shows as never executed and is not counted)."""
    from django.db import connection

    from retrieval.scoping import build_search_request
    from retrieval.search.statements import hnsw_settings

    seen: collections.Counter[str] = collections.Counter()
    for body in items:
        sql, params, _, _ = candidate_statement(build_search_request(key, dict(body)))
        with hnsw_settings(True), connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + sql, params)
            lines = [r[0] for r in cursor.fetchall()]
        used = sorted(
            {
                m.group(1)
                for line in lines
                if "never executed" not in line
                for m in [_SCAN.search(line)]
                if m
            }
        )
        path = "HNSW walk" if "chunk_embedding_hnsw" in used else "exact"
        seen[f"{path} via {', '.join(used) or 'a sequential scan'}"] += 1
    return dict(seen)


def strategies(args: argparse.Namespace, questions: list[str], tenant_id: int) -> dict[str, Any]:
    """The two vector strategies side by side over ranges of growing size (the first k users'
    rows together), as search runs them: exact (every row of the range compared, through the
    owner index) and a filtered HNSW walk with search's ef_search and iterative scans. Per range:
    rows, the walk's recall@100 against exact, and each one's p50/p95 ms and backend CPU ms."""
    import numpy as np
    import psutil
    import scale
    from django.db import connection

    import retrieval.search.statistics as statistics_module
    from retrieval.embedders import get_embedder
    from retrieval.query_embedding import embed_query
    from retrieval.search.statements import ef_search, hnsw_settings, select_rows

    model = get_embedder().name
    texts = [scale.vector_text(np.asarray(embed_query(q), np.float32)) for q in questions]
    # the table size search reads for ef_search, as its term statistics would have set it
    statistics_module._table_rows = select_rows(
        "SELECT reltuples::bigint FROM pg_class WHERE oid = 'retrieval_chunk'::regclass", []
    )[0][0]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = psutil.Process(cursor.fetchone()[0])
    sql = (
        "SELECT c.id FROM retrieval_chunk c WHERE c.tenant_id = %s AND c.user_id = ANY(%s) AND"
        " c.embedding IS NOT NULL AND c.embedding_model = %s ORDER BY {} LIMIT 100"
    )
    out: dict[str, Any] = {"ef_search": ef_search()}
    for k in [int(x) for x in args.ranges.split(",") if x]:
        users = [f"u{i}" for i in range(min(k, args.users))]
        timing: dict[str, list[float]] = {"exact": [], "hnsw": []}
        cpu = {"exact": 0.0, "hnsw": 0.0}
        hits = []
        for text in texts:
            params = [tenant_id, users, model, text]
            found = {}
            for name, order in (
                ("exact", "(c.embedding <=> %s::halfvec) + 0"),
                ("hnsw", "c.embedding <=> %s::halfvec"),
            ):
                before = sum(backend.cpu_times()[:2])
                started = time.perf_counter()
                with hnsw_settings(name == "hnsw"):
                    found[name] = {r[0] for r in select_rows(sql.format(order), params)}
                timing[name].append(1000 * (time.perf_counter() - started))
                cpu[name] += sum(backend.cpu_times()[:2]) - before
            hits.append(len(found["exact"] & found["hnsw"]) / max(1, len(found["exact"])))
        entry = {"rows": len(users) * args.per_user, "hnsw_recall@100": round(min(hits), 4)}
        entry["hnsw_recall@100 mean"] = round(statistics.mean(hits), 4)
        for name, values in timing.items():
            entry[name] = {
                **base.summary(values),
                "cpu_ms": round(1000 * cpu[name] / len(texts), 2),
            }
        out[f"{k} users"] = entry
        print("strategies", k, json.dumps(entry))
    return out


def http(port: int, raw_key: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    post = search_http.search_client(port)
    for body in items[:20]:  # warm: the key, connections, the query model
        post({**body, "top_k": 10}, raw_key)
    time.sleep(search_http.FLUSHED_AFTER_S)
    out = {}
    for mode, options in MODES.items():
        out[mode] = base.summary(
            [post({**body, "top_k": 10, **options}, raw_key) for body in items]
        )
    return out


def main() -> None:
    args = parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    db = args.db or f"bench_users_{args.users}x{args.per_user}"
    base.setup_django(db)
    import scale
    from django.db import connection

    from accounts.models import ApiKey, Tenant

    turns, questions = base.load_corpus()
    random.seed(11)
    questions = random.sample(questions, min(args.queries, len(questions)))
    # serialize=False: serialising a 1M-row test database into memory takes every gigabyte
    connection.creation.create_test_db(
        verbosity=0, autoclobber=not args.keepdb, keepdb=args.keepdb, serialize=False
    )
    results: dict[str, Any] = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "load_average_start": scale.load_average(),
    }
    server = None
    try:
        if not Tenant.objects.filter(name="users").exists():
            results["build"] = build(args, turns)
        if args.only_build:
            return
        if args.ranges:
            tenant = Tenant.objects.get(name="users")
            results["strategies"] = strategies(args, questions, tenant.pk)
        created = ApiKey.create_key(tenant=Tenant.objects.get(name="users"), scopes=("read",))
        items = bodies(args, questions)
        results["in_process"] = in_process(items, created.api_key)
        print("in process", json.dumps(results["in_process"]))
        if not args.no_recall:
            results.update(candidate_recall(items, created.api_key))
            results["access_paths"] = access_paths(items, created.api_key)
            print("recall and paths", json.dumps({k: results[k] for k in list(results)[-4:]}))
        connection.close()
        if not args.no_http:
            port = base.free_port()
            server = base.start_server(port, 2, db)
            results["http"] = http(port, created.raw, items)
            print("http", json.dumps(results["http"]))
        results["load_average_end"] = scale.load_average()
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(results, indent=2))
    finally:
        if server is not None:
            base.stop_server(server)
        if not args.keepdb:
            connection.creation.destroy_test_db(db, verbosity=0)


if __name__ == "__main__":
    main()
