"""bench/search.py's table: per mode, raw SQL, in-process, HTTP single and concurrent p50/p95 and
qps, the stack's overhead against embedding + SQL, and CPU per search against its floor (both ratios
are also written into the results)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from search import MODES  # noqa: E402


def report(results: dict[str, Any], clients: int) -> None:
    emb = results["in_process"]["embedding"]
    print(
        f"\n{results['chunks']} chunks ({results['vectors']}), {results['queries']} queries; query"
        f" embedding p50 {emb['p50']} p95 {emb['p95']} ms; load average"
        f" {results['load_average_start']} -> {results['load_average_end']}; web workers RSS"
        f" {results.get('web_worker_rss_mb')} MB"
    )
    if "http" not in results:
        for mode in MODES:
            print(mode, results["in_process"][mode])
        return
    print(
        f"{'mode':<11} {'rawSQL p50/p95':>15} {'in-proc p50/p95':>16} {'HTTP p50/p95':>14}"
        f" {'p99':>7} {f'{clients} clients p50/p95':>20} {'qps':>6} {'p95 ratio':>9}"
        f" {'CPU ms HTTP/floor':>18} {'CPU ratio':>9}"
    )
    for mode in MODES:
        raw = results["in_process"][mode]["raw_sql"]
        inproc = results["in_process"][mode]["in_process"]
        http = results["http"][mode]
        conc = http[f"{clients}_clients"]
        floor = raw["p95"] + (emb["p95"] if mode != "text" else 0.0)
        ratio = http["single"]["p95"] / floor if floor else float("nan")
        results["http"][mode]["p95_ratio_to_floor"] = round(ratio, 2)
        # CPU per search: the web worker and PostgreSQL serving it, against the query embedding and
        # the statements alone (this process and its backend)
        cpu_floor = results["in_process"][mode]["raw_sql_cpu_ms"] + (
            results["in_process"]["embedding_cpu_ms"] if mode != "text" else 0.0
        )
        cpu_ratio = http.get("cpu_ms", float("nan")) / cpu_floor if cpu_floor else float("nan")
        results["http"][mode]["cpu_ratio_to_floor"] = round(cpu_ratio, 2)
        print(
            f"{mode:<11} {raw['p50']:>7}/{raw['p95']:<7} {inproc['p50']:>8}/{inproc['p95']:<7}"
            f" {http['single']['p50']:>6}/{http['single']['p95']:<7} {http['single']['p99']:>7}"
            f" {conc['p50']:>10}/{conc['p95']:<9} {http['throughput_qps']:>6} {ratio:>9.2f}"
            f" {http.get('cpu_ms', float('nan')):>8}/{cpu_floor:<9.2f} {cpu_ratio:>9.2f}"
        )
