"""Two checkouts of this code, one server each, asked the same searches in turn (paired over HTTP).

    .venv/bin/python bench/paired.py --base ../wt-before                 # the 100k table (bench/search.py --keepdb)
    .venv/bin/python bench/paired.py --base ../wt-before --tenants "small tenant, account"   # bench/tenants.py's table

A change worth a millisecond or two is lost in this machine's drift between two runs of
bench/search.py (stops 35-37: several ms at p95 for the same code). Here both servers run at once on
the same database, and each search goes to both, in alternating order: the median of the
per-search differences is the change's. Each server asks with keys of its own, made here (with
--tenants one per tenant and server: a key's first request misses the per-process key cache in
both alike).

--base is a checkout of the code to compare with (`git worktree add ../wt-before <commit>`), with
`.venv` and `.memoryhub` linked to this checkout's (`ln -s`) so that it runs on the same database;
the servers are started as bench/search.py starts `make run`'s, one web worker each.
"""  # noqa: E501

from __future__ import annotations

import argparse
import importlib.util
import random
import statistics
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import search as base_bench
import search_http

ROOT = Path(__file__).resolve().parent.parent


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--base", type=Path, required=True, help="the checkout to compare this one with"
    )
    parser.add_argument(
        "--tenants",
        default=None,
        metavar="SCENARIO",
        help="a scenario of bench/tenants.py (its kept table) instead of the 100k table",
    )
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--mode", default="hybrid", choices=sorted(base_bench.MODES))
    parser.add_argument("--seed", type=int, default=11)
    return parser.parse_args()


def bench_module(root: Path) -> ModuleType:
    """That checkout's bench/search.py (its start_server starts its own code)."""
    spec = importlib.util.spec_from_file_location(
        f"search_{abs(hash(str(root)))}", root / "bench" / "search.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def requests_to_ask(args: argparse.Namespace) -> tuple[str, list[dict[str, Any]]]:
    """The database and the request bodies, each with the tenant it runs as."""
    _, questions = base_bench.load_corpus()
    random.seed(args.seed)
    questions = random.sample(questions, min(args.queries, len(questions)))
    if args.tenants is None:
        return base_bench.DB_NAME, [{"tenant": "bench", "query": q} for q in questions]
    import tenants

    sys.argv = sys.argv[:1]
    plan = tenants.scenarios(tenants.parse_args(), questions)
    if args.tenants not in plan:
        raise SystemExit(f"--tenants: one of {', '.join(plan)}")
    return tenants.DB_NAME, plan[args.tenants]


def main() -> None:
    args = parse_args()
    db_name, bodies = requests_to_ask(args)
    base_bench.setup_django(db_name)
    from django.db import connection

    from accounts.models import ApiKey, Tenant

    connection.creation.create_test_db(verbosity=0, autoclobber=False, keepdb=True, serialize=False)
    tenants = list(Tenant.objects.filter(name__in={b["tenant"] for b in bodies}))
    trees = [args.base.resolve(), ROOT]
    keys = [
        {t.name: ApiKey.create_key(tenant=t, scopes=("read",)).raw for t in tenants} for _ in trees
    ]
    # the warm-up's own keys: the measured ones stay unused
    warm = {b["tenant"] for b in bodies[:20]}
    warm_keys = [
        {
            t.name: ApiKey.create_key(tenant=t, scopes=("read",)).raw
            for t in tenants
            if t.name in warm
        }
        for _ in trees
    ]
    connection.close()
    modules = [bench_module(tree) for tree in trees]
    ports = [base_bench.free_port() for _ in trees]
    servers = [
        module.start_server(port, 1, db_name) for module, port in zip(modules, ports, strict=True)
    ]
    try:
        posts = [search_http.search_client(port) for port in ports]
        options = {**base_bench.MODES[args.mode], "top_k": 10}

        def ask(server: int, body: dict[str, Any], by: list[dict[str, str]] = keys) -> float:
            request = {k: v for k, v in body.items() if k != "tenant"} | options
            return posts[server](request, by[server][body["tenant"]])

        for body in bodies[:20]:
            for server in (0, 1):
                ask(server, body, warm_keys)
        times: list[list[float]] = [[], []]
        for i, body in enumerate(bodies):
            for server in (0, 1) if i % 2 else (1, 0):
                times[server].append(ask(server, body))
    finally:
        for module, server in zip(modules, servers, strict=True):
            module.stop_server(server)
    differences = [new - old for old, new in zip(*times, strict=True)]
    scenario = args.tenants or "100k chunks, account"
    print(f"{scenario}, {args.mode}, {len(bodies)} searches each")
    for name, values in zip(("base " + str(trees[0]), "this " + str(trees[1])), times, strict=True):
        print(
            f"  {name}: p50 {statistics.median(values):.2f} p95"
            f" {base_bench.pct(values, 0.95):.2f} ms"
        )
    print(
        f"  paired difference (this - base): median {statistics.median(differences):+.2f} "
        f"mean {statistics.mean(differences):+.2f} ms"
    )


if __name__ == "__main__":
    main()
