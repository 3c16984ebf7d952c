"""A day in the life of a running MemoryHub, shortened: load of every kind, one kill of each
process.

    nice -n 10 .venv/bin/python -m bench.soak [--minutes 20] [--tenants 3] [--users 3] [--haystacks 2]
                                              [--embedder minilm] [--data-dir DIR]

Starts `manage.py run` with its task clusters and lanes (tests/served.py: gunicorn with 2 web
workers, the embedded PostgreSQL, in a private data folder unless --data-dir) and for --minutes:

- tenants × users with colliding names (the same user ids and session ids in every tenant) append
  conversations, one to five messages at a time, each with an idempotency key (a refused request
  is sent again as it was);
- the first tenant bulk-imports LongMemEval haystacks (../shared/bench-data, 100 messages a
  request);
- users upsert a fact and correct it within a second or two (the write that once stalled the
  embed lane for everyone), create and edit notes, search and ask for context;
- every tenant has a schedule due every 10 s (the run's lateness is started_at - due_at);
- one process of each kind `run` supervises is killed once (kill -9): the web server, the
  schedules cluster, the maintenance cluster, the lanes (one process: dispatch, embed, summarise).

Then the load stops, one more haystack is imported, and the embed lane drains the backlog alone:
its throughput (chunks embedded / seconds until nothing waits) is compared with the model's own rate
on the same chunks (an even sample of them: their texts and sentences, embedded in batches in a
process of the same settings and niceness), and side by side: the share of the lane's busy time
spent inside the model (Worker.model_share), which a machine's changing load does not move. It
prints one table: events acknowledged and kept, lane throughput against the model, the longest time
a chunk waited for its vector, empty lane steps, schedule lateness p95, search p95 at the start and
at the end, restarts, 5xx. tests/test_supervision.py asserts its invariants (nothing lost, no stall,
no 5xx, each kind restarted) with a few dozen requests. The clients and what they send are
bench/soak_load.py.
"""  # noqa: E501

from __future__ import annotations

import json
import random
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse  # noqa: E402

import psutil  # noqa: E402

from bench.soak_load import (  # noqa: E402
    USERS,
    Api,
    Record,
    bulk_import,
    conversation,
    facts_and_notes,
    haystack_sessions,
    readers,
    schedule_every_10s,
)
from tests.served import Served, wait_until  # noqa: E402

# What `run` supervises, by the names it gives them (memoryhub.management.commands.run).
KINDS = (
    "lanes",
    "schedules cluster",
    "maintenance cluster",
    "web",
)
SERVER_ENV = {"MEMORYHUB_SCHEDULE_MIN_INTERVAL_SECONDS": "10"}


# --- the kills ---------------------------------------------------------------------------------


def child_of_kind(served: Served, kind: str) -> psutil.Process | None:
    """The process `run` supervises under this name."""
    for child in psutil.Process(served.process.pid).children():
        try:
            line = " ".join(child.cmdline())
            cluster = child.environ().get("Q_CLUSTER_NAME", "") if "qcluster" in line else ""
        except psutil.Error:
            continue
        found = {
            "web": "gunicorn" in line,
            "lanes": " work" in line,
            "schedules cluster": "qcluster" in line and not cluster,
            "maintenance cluster": "qcluster" in line and cluster == "maintenance",
        }[kind]
        if found:
            return child
    return None


def kill_and_wait_for_restart(
    served: Served, kind: str, record: Record, *, within: float = 120
) -> bool:
    """kill -9 the process of this kind; True once `run` reports it restarted."""
    victim = child_of_kind(served, kind)
    if victim is None:
        record.kills.append(f"{kind}: not found")
        return False
    before = served.output().count(f"Restarted {kind} ")
    victim.kill()
    try:
        victim.wait(10)
    except psutil.Error:
        pass
    # Down now (`run` waits out a backoff before it restarts it): does the API answer meanwhile?
    record.answered_while_down[kind] = health(served) == 200
    restarted = wait_until(
        lambda: served.output().count(f"Restarted {kind} ") > before, within, step=0.5
    )
    record.kills.append(
        f"{kind} (pid {victim.pid}): {'restarted' if restarted else 'NOT restarted'}"
    )
    return restarted


def health(served: Served) -> int:
    try:
        with urllib.request.urlopen(f"{served.url}/api/v1/health/", timeout=10) as answer:
            return answer.status
    except OSError:
        return 0


# --- what is left ------------------------------------------------------------------------------


def kept(apis: dict[str, Api], record: Record) -> dict[str, int]:
    """Every acknowledged message read back by its idempotency key: each stored exactly once. Facts
    and notes as last written."""
    lost = duplicated = stored = 0
    for (tenant, session), keys in record.acknowledged.items():
        found: Counter[str] = Counter()
        after = 0
        while True:
            status, page = apis[tenant].until_answered(
                "GET", f"/sessions/{session}/events/?after={after}&limit=1000"
            )
            assert status == 200, (status, page)
            found.update(str(e.get("idempotency_key")) for e in page["results"])
            if len(page["results"]) < 1000:
                break
            after = page["results"][-1]["sequence"]
        stored += sum(found.values())
        lost += sum(1 for key in set(keys) if not found[key])
        duplicated += sum(n - 1 for n in found.values() if n > 1)
    facts_wrong = 0
    for (tenant, user, key), content in record.facts.items():
        status, page = apis[tenant].until_answered("GET", f"/facts/?key={key}&user_id={user}")
        current = [f["content"] for f in (page or {}).get("results", [])]
        facts_wrong += int(current != [content])
    notes_wrong = 0
    for (tenant, note_id), content in record.notes.items():
        status, note = apis[tenant].until_answered("GET", f"/notes/{note_id}/")
        notes_wrong += int(status != 200 or note["content"] != content)
    return {
        "acknowledged": sum(len(set(k)) for k in record.acknowledged.values()),
        "stored": stored,
        "lost": lost,
        "duplicated": duplicated,
        "facts_wrong": facts_wrong,
        "notes_wrong": notes_wrong,
    }


def queue_status(served: Served) -> dict[str, Any]:
    return json.loads(served.manage("queue_status", "--json"))


def waiting(served: Served) -> int:
    return sum(row["waiting"] for row in queue_status(served)["embedding_backlog"])


def drain(served: Served, *, within: float) -> tuple[float, float, bool]:
    """(start, end, drained): epoch seconds from now until no chunk waits for the embed lane."""
    start = time.time()
    drained = wait_until(lambda: waiting(served) == 0, within, step=1.0)
    return start, time.time(), drained


# The model alone on the chunks the lane embedded while it drained (an even sample of at most
# MODEL_SAMPLE of them), as the lane embeds them: in batches, the chunks' texts with their context
# in one call and their sentences in the next, at the lane's niceness (`manage.py work` adds its
# NICE).
MODEL_SAMPLE = 600
MODEL_RATE = """
import json, os, time
from datetime import datetime, timezone
from memoryhub.management.commands.work import NICE
from retrieval.embedders import get_embedder
from retrieval.embedding import BACKFILL_BATCH
from retrieval.sentence_vectors import RULE_FIELDS, sentences_of
from retrieval.models import Chunk
os.nice(NICE)
start, end = (datetime.fromtimestamp(t, timezone.utc) for t in ({start}, {end}))
rows = list(Chunk.objects.filter(indexed_at__gte=start, indexed_at__lte=end, embedding__isnull=False).order_by("id")
            .only("id", "context", *RULE_FIELDS))
every = max(1, -(-len(rows) // {sample}))
sample = rows[::every]
embedder = get_embedder()
batch = BACKFILL_BATCH
began = time.perf_counter()
for at in range(0, len(sample), batch):
    part = sample[at:at + batch]
    embedder.embed([row.embedding_input for row in part])
    embedder.embed([s for pieces in sentences_of(part) for s in pieces])
seconds = time.perf_counter() - began
print(json.dumps({{"chunks": len(rows), "sampled": len(sample), "seconds": seconds, "embedder": embedder.name}}))
"""  # noqa: E501

LONGEST_WAIT = """
import json
from django.db.models import F, Max
from django.utils import timezone
from retrieval.models import Chunk
done = Chunk.objects.filter(embedding__isnull=False).aggregate(w=Max(F("indexed_at") - F("created_at")))["w"]
left = Chunk.objects.embedding_waiting().order_by("created_at").values_list("created_at", flat=True).first()
waits = [w.total_seconds() for w in (done, (timezone.now() - left) if left else None) if w is not None]
print(json.dumps({"longest_wait_seconds": max(waits, default=0.0)}))
"""  # noqa: E501


def shell(served: Served, code: str) -> dict[str, Any]:
    return json.loads(served.manage("shell", "-c", code).strip().splitlines()[-1])


def p95(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def lateness(apis: dict[str, Api], schedules: dict[str, str]) -> list[float]:
    late: list[float] = []
    for tenant, schedule in schedules.items():
        if not schedule:
            continue
        status, page = apis[tenant].until_answered("GET", f"/schedules/{schedule}/runs/?limit=1000")
        for run in (page or {}).get("results", []):
            if run.get("due_at") and run.get("started_at"):
                late.append(
                    (
                        datetime.fromisoformat(run["started_at"])
                        - datetime.fromisoformat(run["due_at"])
                    ).total_seconds()
                )
    return late


# --- the whole soak ----------------------------------------------------------------------------


def soak(
    served: Served,
    *,
    seconds: float,
    tenants: int,
    users: int,
    haystacks: int,
    pause: float = 1.0,
    kill: tuple[str, ...] = KINDS,
    drain_haystack: bool = True,
    seed: int = 7,
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    record = Record()
    names = [f"soak-{i}" for i in range(tenants)]
    apis = {
        name: Api(
            served.port,
            served.manage("create_api_key", "--tenant", name, "--scopes", "read,write,admin")
            .strip()
            .splitlines()[-1],
            record.statuses,
            record.lock,
        )
        for name in names
    }
    schedules = {name: schedule_every_10s(apis[name], name, record) for name in names}
    stop = threading.Event()
    threads: list[threading.Thread] = []
    for t, name in enumerate(names):
        for u, user in enumerate(USERS[:users]):
            rng = random.Random(seed * 1000 + t * 10 + u)
            for work in (conversation, facts_and_notes, readers):
                threads.append(
                    threading.Thread(
                        target=work,
                        args=(apis[name], name, user, record, stop, rng),
                        kwargs={"pause": pause},
                        daemon=True,
                    )
                )
    if haystacks:
        sessions = haystack_sessions(haystacks)
        threads.append(
            threading.Thread(
                target=bulk_import,
                args=(apis[names[0]], names[0], sessions, record),
                kwargs={"prefix": "haystack", "stop": stop},
                daemon=True,
            )
        )
    started = time.monotonic()
    for thread in threads:
        thread.start()
    say(
        f"soak: {len(threads)} clients on {tenants} tenants for {seconds:.0f} s; killing"
        f" {', '.join(kill)}"
    )
    for index, kind in enumerate(kill):  # spread over the middle of the run
        time.sleep(max(0.0, started + seconds * (index + 1) / (len(kill) + 1) - time.monotonic()))
        kill_and_wait_for_restart(served, kind, record)
        say(f"  {time.monotonic() - started:6.1f} s  {record.kills[-1]}")
    time.sleep(max(0.0, started + seconds - time.monotonic()))
    stop.set()
    for thread in threads:
        thread.join(180)
    say("soak: load stopped; draining the embed lane")
    if drain_haystack:  # a backlog of real texts for the lane alone, measured against the model
        bulk_import(
            apis[names[-1]], names[-1], haystack_sessions(1, skip=haystacks), record, prefix="drain"
        )
    begin, end, drained = drain(served, within=1800)
    rate: dict[str, Any] = {}
    if drain_haystack and drained:
        rate = shell(served, MODEL_RATE.format(start=begin, end=end, sample=MODEL_SAMPLE))
        rate.update(lane_seconds=end - begin, window=[begin, end])
    with urllib.request.urlopen(f"{served.url}/api/v1/health/", timeout=30) as answer:
        health = json.loads(answer.read())
    status = queue_status(served)
    searches = [ms for _, ms in sorted(record.searches)]
    fifth = max(1, len(searches) // 5)
    result = {
        **kept(apis, record),
        "drained": drained,
        "lane_chunks": rate.get("chunks"),
        "lane_seconds": rate.get("lane_seconds"),
        "model_seconds": rate.get("seconds"),
        "model_sampled": rate.get("sampled"),
        "embedder": rate.get("embedder"),
        "drain_window": rate.get("window"),
        "longest_wait_seconds": shell(served, LONGEST_WAIT)["longest_wait_seconds"],
        "empty_steps": sum(w["empty_steps"] for w in status["lanes"]),
        # Side by side: the share of the embed lane's busy time spent inside the model (since its
        # restart) is its throughput against the model's own rate on the very same batches.
        "lane_model_share": next(
            (w["model_share"] for w in status["lanes"] if w["lane"] == "embed"), None
        ),
        "schedule_runs": len(late := lateness(apis, schedules)),
        "schedule_lateness_p95": p95(late),
        "search_count": len(searches),
        "search_p95_start": p95(searches[:fifth]),
        "search_p95_end": p95(searches[-fifth:]),
        "restarts": health["details"]["restarts"],
        "restarted": health["details"]["restarted"],
        "kills": record.kills,
        "answered_while_down": record.answered_while_down,
        "statuses": dict(record.statuses),
        "http_5xx": sum(n for s, n in record.statuses.items() if s >= 500),
        "refused": record.statuses.get(0, 0),
        "unexpected": record.unexpected,
    }
    if result["lane_chunks"] and result["model_seconds"]:
        result["lane_rate"] = result["lane_chunks"] / result["lane_seconds"]
        result["model_rate"] = result["model_sampled"] / result["model_seconds"]
        result["lane_vs_model"] = result["lane_rate"] / result["model_rate"]
    return result


def table(result: dict[str, Any], *, minutes: float) -> str:
    def f(value: Any, unit: str = "", digits: int = 1) -> str:
        return (
            "—"
            if value is None
            else f"{value:.{digits}f}{unit}"
            if isinstance(value, float)
            else f"{value}{unit}"
        )

    rows = [
        ("duration", f"{minutes:g} min of load, then the drain"),
        (
            "events acknowledged / kept (lost, duplicated)",
            (
                f"{result['acknowledged']} / {result['stored']} ({result['lost']},"
                f" {result['duplicated']})"
            ),
        ),
        ("facts / notes not as last written", f"{result['facts_wrong']} / {result['notes_wrong']}"),
        (
            "lane throughput / model on the same texts, one after the other",
            (
                f"{f(result.get('lane_rate'), '/s')} / {f(result.get('model_rate'), '/s')} ="
                f" {f(result.get('lane_vs_model'), '', 2)} ({result.get('lane_chunks')} chunks, the"
                f" model timed on {result.get('model_sampled')} of them; {result.get('embedder')})"
            ),
        ),
        (
            "lane throughput / model, side by side (share of the lane's busy time in the model)",
            f(result.get("lane_model_share"), "", 2),
        ),
        ("longest wait of any chunk for its vector", f(result["longest_wait_seconds"], " s")),
        ("empty lane steps with work waiting", f(result["empty_steps"])),
        (
            "schedule lateness p95 (runs)",
            f"{f(result['schedule_lateness_p95'], ' s')} ({result['schedule_runs']})",
        ),
        (
            "search p95 at start / end (searches)",
            (
                f"{f(result['search_p95_start'], ' ms', 0)} /"
                f" {f(result['search_p95_end'], ' ms', 0)} ({result['search_count']})"
            ),
        ),
        ("restarts (kills)", f"{result['restarts']} ({len(result['kills'])})"),
        (
            "5xx / refused while the web server restarted",
            f"{result['http_5xx']} / {result['refused']}",
        ),
        ("other unexpected answers", f(len(result["unexpected"]))),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"| {name:<{width}} | {value} |" for name, value in rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--tenants", type=int, default=3)
    parser.add_argument("--users", type=int, default=3, help=f"per tenant, at most {len(USERS)}")
    parser.add_argument(
        "--haystacks", type=int, default=2, help="LongMemEval haystacks imported during the load"
    )
    parser.add_argument(
        "--pause", type=float, default=1.0, help="seconds each client waits between its requests"
    )
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument(
        "--data-dir", type=Path, default=None, help="reuse a data folder (its ONNX model made)"
    )
    args = parser.parse_args()
    served = Served(
        args.data_dir,
        cluster=True,
        web_workers=2,
        env={**SERVER_ENV, "MEMORYHUB_EMBEDDER": args.embedder},
    ).wait(600)
    try:
        result = soak(
            served,
            seconds=args.minutes * 60,
            tenants=args.tenants,
            users=min(args.users, len(USERS)),
            haystacks=args.haystacks,
            pause=args.pause,
        )
    finally:
        served.stop()
    print(
        json.dumps(
            {k: v for k, v in result.items() if k != "statuses"} | {"statuses": result["statuses"]},
            default=str,
            indent=1,
        )
    )
    print(table(result, minutes=args.minutes))


if __name__ == "__main__":
    main()
