"""Many tenants, and one big tenant searched by channel and by user.

    .venv/bin/python bench/tenants.py --keepdb                  # 1,000 × 1k chunks + one 50k tenant
    .venv/bin/python bench/tenants.py --tenants 100 --big 10000 --queries 30

One table holds --tenants tenants of --per-tenant chunks each (account scope: a search filters one
tenant's 0.1 % of the rows) and one --big tenant of --channels channels and --users end users
(each chunk belongs to one user; a channel holds ~big/channels chunks, a user ~big/users). Texts
are LoCoMo turns, vectors "blend" (bench/scale.py). Measured per scenario, in process (query
embedding included) and over HTTP (single client and 8 clients): p50/p95 per mode, and the recall
of the search's vector candidates against exact search in the same scope. The big tenant's
filtered scopes run under each vector strategy: `exact below` (retrieval.search.sql.EXACT_BELOW, the
default), and a filtered HNSW walk with iterative scans (EXACT_BELOW=0).
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import search as base
import search_http

DB_NAME = "bench_tenants"
PER_SESSION = 100  # chunks a session holds
MODES = {"text": {"mode": "text"}, "vector": {"mode": "vector"}, "hybrid": {"mode": "hybrid"}}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tenants", type=int, default=1000)
    parser.add_argument("--per-tenant", type=int, default=1000)
    parser.add_argument("--big", type=int, default=50_000)
    parser.add_argument("--channels", type=int, default=36)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--keepdb", action="store_true")
    parser.add_argument("--only-build", action="store_true")
    parser.add_argument("--no-http", action="store_true")
    parser.add_argument("--db", default=DB_NAME)
    parser.add_argument("--json", type=Path, default=None)
    return parser.parse_args()


# --- data ------------------------------------------------------------------------------------


def build(args: argparse.Namespace, turns: list[str]) -> dict[str, Any]:
    """Tenants, workspaces, channels, sessions by bulk insert; chunks by COPY; indexes after."""
    import scale
    from django.db import connection

    from accounts.models import Channel, Tenant, Workspace
    from memoryhub.models import Session
    from retrieval.embedders import get_embedder

    tenants = Tenant.objects.bulk_create(
        [Tenant(name=f"t{i}", slug=f"t{i}") for i in range(args.tenants)]
        + [Tenant(name="big", slug="big")]
    )
    workspaces = Workspace.objects.bulk_create(
        [Workspace(tenant=t, name="default") for t in tenants]
    )
    small_channels = Channel.objects.bulk_create(
        [
            Channel(tenant=t, workspace=w, name="general")
            for t, w in zip(tenants[:-1], workspaces[:-1], strict=True)
        ]
    )
    big_channels = Channel.objects.bulk_create(
        [
            Channel(tenant=tenants[-1], workspace=workspaces[-1], name=f"c{i}")
            for i in range(args.channels)
        ]
    )
    per_session = PER_SESSION
    plan: list[tuple[int, int, int, str, int]] = []  # tenant, workspace, channel, user, chunks
    for t, w, c in zip(tenants[:-1], workspaces[:-1], small_channels, strict=True):
        plan += [(t.pk, w.pk, c.pk, "", per_session)] * (args.per_tenant // per_session)
    for i in range(args.big // per_session):
        plan.append(
            (
                tenants[-1].pk,
                workspaces[-1].pk,
                big_channels[i % args.channels].pk,
                f"u{i % args.users}",
                per_session,
            )
        )
    sessions = Session.objects.bulk_create(
        [
            Session(tenant_id=t, workspace_id=w, channel_id=c, user_id=u, external_id=f"s{i}")
            for i, (t, w, c, u, _) in enumerate(plan)
        ]
    )
    maker = scale.VectorMaker(scale.base_vectors(turns), "blend", seed=11)
    model = get_embedder().name
    rows: list[tuple[Any, ...]] = []
    started = time.perf_counter()
    with connection.cursor() as cursor:
        scale.drop_search_indexes(cursor)
        total = sum(p[4] for p in plan)
        row = 0
        for session, (t, w, c, u, count) in zip(sessions, plan, strict=True):
            # a session at a time: 1M vectors at once are gigabytes
            vectors = maker.block(row, count)
            for seq in range(count):
                rows.append(
                    scale.chunk_row(
                        tenant_id=t,
                        session_id=session.pk,
                        workspace_id=w,
                        channel_id=c,
                        user_id=u,
                        sequence=seq + 1,
                        text=turns[(row * 7) % len(turns)],
                        digest=f"{row:064x}",
                        vector=vectors[seq],
                        model=model,
                    )
                )
                row += 1
            if len(rows) >= scale.BATCH:
                scale.copy_rows(cursor, rows)
                rows = []
        scale.copy_rows(cursor, rows)
        load_s = round(time.perf_counter() - started, 1)
        print(f"copied {total} rows in {load_s} s")
        return {"rows": total, "load_s": load_s, **scale.build_indexes(cursor)}


# --- scenarios -------------------------------------------------------------------------------


def scenarios(args: argparse.Namespace, questions: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Per scenario, the request bodies (API names) with the tenant they run as."""
    rng = random.Random(5)
    small = [{"tenant": f"t{rng.randrange(args.tenants)}", "query": q} for q in questions]
    by_channel = [
        {"tenant": "big", "query": q, "channel": f"c{rng.randrange(args.channels)}"}
        for q in questions
    ]
    by_user = [
        {"tenant": "big", "query": q, "user_id": f"u{rng.randrange(args.users)}"} for q in questions
    ]
    # A channel and a user who wrote in it (session i of the big tenant is in channel i mod
    # channels, by user i mod users): a random pair is empty more often than not, and an empty scope
    # has no nearest neighbours to find.
    sessions = args.big // PER_SESSION
    picks = [rng.randrange(sessions) for _ in questions]
    both = [
        {
            "tenant": "big",
            "query": q,
            "channel": f"c{i % args.channels}",
            "user_id": f"u{i % args.users}",
        }
        for q, i in zip(questions, picks, strict=True)
    ]
    return {
        "small tenant, account": small,
        "big tenant, by channel": by_channel,
        "big tenant, by user": by_user,
        "big tenant, channel + user": both,
    }


def search_request(body: dict[str, Any], keys: dict[str, Any], **options: Any) -> Any:
    from retrieval.scoping import build_search_request

    data = {"query": body["query"], "top_k": 10, **options}
    for name in ("channel", "user_id"):
        if name in body:
            data[name] = body[name]
    return build_search_request(keys[body["tenant"]], data)


def in_process(bodies: list[dict[str, Any]], keys: dict[str, Any]) -> dict[str, Any]:
    from retrieval.search import run_search

    out = {}
    for mode, options in MODES.items():
        times = []
        for body in bodies:
            req = search_request(body, keys, **options)
            started = time.perf_counter()
            run_search(req)
            times.append(1000 * (time.perf_counter() - started))
        out[mode] = base.summary(times)
    return out


def candidate_recall(bodies: list[dict[str, Any]], keys: dict[str, Any]) -> dict[str, float]:
    """Recall@100 and @10 of the search's own vector candidates against exact search in scope."""
    import numpy as np
    import scale

    from retrieval.embedders import get_embedder
    from retrieval.query_embedding import embed_query
    from retrieval.search.engine import owner_parts
    from retrieval.search.plan import plan_search
    from retrieval.search.sql import vector_source
    from retrieval.search.statements import hnsw_settings, select_rows

    model = get_embedder().name
    at10, at100 = [], []
    for body in bodies:
        req = search_request(body, keys)
        plan = plan_search(req)
        where, params = plan.where
        text = scale.vector_text(np.asarray(embed_query(req.query), np.float32))
        sql, sql_params = vector_source(
            text, model, where, params, 100, plan.scope_size, owner_parts(plan)
        )
        with hnsw_settings(True):
            found = [r[0] for r in select_rows(sql, sql_params)]
        truth = [
            r[0]
            for r in select_rows(
                f"SELECT c.id FROM retrieval_chunk c WHERE {where} AND c.embedding IS NOT NULL AND"
                " c.embedding_model = %s ORDER BY (c.embedding <=> %s::halfvec) + 0 LIMIT 100",
                [*params, model, text],
            )
        ]
        if not truth:  # nothing in scope: no neighbours to find (not a miss)
            continue
        # Search re-scores every candidate exactly: what counts is whether the true nearest are
        # among them.
        at100.append(len(set(found) & set(truth)) / max(1, len(truth)))
        at10.append(len(set(found) & set(truth[:10])) / max(1, min(10, len(truth))))
    return {
        "recall@100": round(statistics.mean(at100), 4),
        "true top 10 among candidates": round(statistics.mean(at10), 4),
    }


def http(
    port: int, raw_keys: dict[str, str], bodies: list[dict[str, Any]], clients: int
) -> dict[str, Any]:
    post = search_http.search_client(port)

    def one(item: tuple[dict[str, Any], str]) -> float:
        body, mode = item
        payload = {k: v for k, v in body.items() if k != "tenant"} | {"mode": mode, "top_k": 10}
        return post(payload, raw_keys[body["tenant"]])

    list(map(one, [(b, "hybrid") for b in bodies[:20]]))  # warm: keys, connections, the query model
    plan = {mode: [(b, mode) for b in bodies] for mode in MODES}
    out: dict[str, Any] = {}
    for mode, (single, concurrent, qps) in search_http.single_then_concurrent(
        plan, one, clients
    ).items():
        out[mode] = {
            "single": base.summary(single),
            f"{clients}_clients": base.summary(concurrent),
            "qps": qps,
        }
    return out


def main() -> None:
    args = parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    base.setup_django(args.db)
    import scale
    from django.db import connection

    from accounts.models import ApiKey, Tenant
    from retrieval.search import sql as search_sql

    turns, questions = base.load_corpus()
    random.seed(11)
    questions = random.sample(questions, min(args.queries, len(questions)))
    # serialize=False: a test database is serialised into memory for test rollbacks; at 1M rows that
    # alone took every gigabyte of the machine.
    connection.creation.create_test_db(
        verbosity=0, autoclobber=not args.keepdb, keepdb=args.keepdb, serialize=False
    )
    results: dict[str, Any] = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "load_average_start": scale.load_average(),
    }
    server = None
    try:
        if not Tenant.objects.filter(name="big").exists():
            results["build"] = build(args, turns)
        if args.only_build:
            return
        plan = scenarios(args, questions)
        names = {b["tenant"] for bodies in plan.values() for b in bodies}
        created = {
            t.name: ApiKey.create_key(tenant=t, scopes=("read",))
            for t in Tenant.objects.filter(name__in=names)
        }
        keys = {name: new.api_key for name, new in created.items()}
        raw_keys = {name: new.raw for name, new in created.items()}
        for name, bodies in plan.items():
            strategies = {"exact below": search_sql.EXACT_BELOW, "filtered HNSW": 0}
            for strategy, threshold in strategies.items():
                search_sql.EXACT_BELOW = threshold
                entry = {"in_process": in_process(bodies, keys), **candidate_recall(bodies, keys)}
                results.setdefault(name, {})[strategy] = entry
                print(name, strategy, json.dumps(entry))
            search_sql.EXACT_BELOW = strategies["exact below"]
        connection.close()
        if not args.no_http:
            port = base.free_port()
            server = base.start_server(port, 2, args.db)
            for name, bodies in plan.items():
                results[name]["http"] = http(port, raw_keys, bodies, args.clients)
                print(name, "http", json.dumps(results[name]["http"]))
            results["web_worker_rss_mb"] = base.worker_rss_mb(server.pid)
        results["load_average_end"] = scale.load_average()
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(results, indent=2))
    finally:
        if server is not None:
            base.stop_server(server)
        if not args.keepdb:
            connection.creation.destroy_test_db(args.db, verbosity=0)


if __name__ == "__main__":
    main()
