"""Many agents at once: N concurrent chat loops against `manage.py run` with its defaults.

    nice -n 10 .venv/bin/python -m bench.load [--agents 10 50 200] [--minutes 10] [--think 1 3]
                                              [--env NAME=VALUE ...] [--json PATH]

For each number of agents it starts `manage.py run` as `make run` does (web workers, task
clusters, lanes: run's defaults) in a private data folder with its own embedded PostgreSQL, and
runs that many agents (asyncio + httpx, one keep-alive connection each). An agent is one end user
with one session; every --users-per-workspace users share a workspace. Each turn: append the
user's message, ask the context for the session, every --every-th turn a search and a fact upsert,
append the assistant's reply, then think --think seconds (uniform). Messages are LoCoMo turns.

It prints, per level: acknowledged events/s; p50/p95/p99 per operation; 5xx and transport errors
(both must be 0); events in the database against those acknowledged; the time from an append's
acknowledgement until the event's chunk has its vector, i.e. is searchable by meaning (every
--sample-every-th acknowledged event, polled every 0.5 s, waited for up to --drain s after the
load); the chunks waiting for a vector and the memory (RSS, PSS: bench/memory.py's reading) of
MemoryHub's processes and of PostgreSQL's over time. At the end: each operation's p95 against the
first level's, and the first level where it doubled.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg

from bench.ingest import Server
from bench.memory import describe, roles
from memoryhub.plumbing.embedded_pg import embedded_database_url, postmaster

ROOT = Path(__file__).resolve().parent.parent
LOCOMO = ROOT.parent / "shared" / "bench-data" / "locomo10.jsonl"
OPERATIONS = ("append", "context", "search", "fact")
STEPS = ("session", *OPERATIONS)  # creating each agent's session first is timed apart
# the web server's own complaints on run's output (a worker killed for its timeout, restarted)
TROUBLE = re.compile(r"TIMEOUT|Booting worker|exited|Traceback|CRITICAL", re.IGNORECASE)
POLL_SECONDS = 0.5  # the resolution of the time-to-searchable figure
EMBEDDED = """SELECT e.id FROM memoryhub_event e WHERE e.id = ANY(%s) AND EXISTS (
    SELECT 1 FROM retrieval_chunk c WHERE c.session_id = e.session_id AND c.kind = 'event'
    AND e.sequence BETWEEN c.sequence_start AND c.sequence_end AND c.embedding IS NOT NULL)"""
WAITING = "SELECT count(*) FROM retrieval_chunk WHERE embedding IS NULL AND valid_to IS NULL"
KEPT = """SELECT count(*) FROM memoryhub_event e JOIN memoryhub_session s ON s.id = e.session_id
    WHERE s.external_id LIKE 'load-%'"""


@dataclass
class Tally:
    """What the agents saw: latencies and statuses per operation, acknowledged events, samples."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {o: [] for o in STEPS})
    statuses: dict[str, Counter[int]] = field(default_factory=lambda: {o: Counter() for o in STEPS})
    transport_errors: Counter[str] = field(default_factory=Counter)
    acknowledged: int = 0
    appended: int = 0  # append requests acknowledged, for the sample
    pending: dict[int, float] = field(default_factory=dict)  # event id -> acknowledged at
    searchable_s: list[float] = field(default_factory=list)
    odd: list[str] = field(default_factory=list)

    def note(self, line: str) -> None:
        if len(self.odd) < 30:  # the first ones say what happened; the counts say how often
            self.odd.append(line)


def load_turns() -> list[str]:
    with LOCOMO.open() as fh:
        conversations = [json.loads(line) for line in fh if line.strip()]
    return [
        t["text"]
        for c in conversations
        for s in c["sessions"]
        for t in s["turns"]
        if t["text"].strip()
    ]


class Agent:
    """One end user chatting in her own session, over one keep-alive connection."""

    def __init__(
        self, index: int, client: httpx.AsyncClient, tally: Tally, args: argparse.Namespace
    ) -> None:
        self.user = f"user-{index}"
        self.session = f"load-{index}"
        self.workspace = f"team-{index // args.users_per_workspace}"
        self.client, self.tally, self.args = client, tally, args
        self.rng = random.Random(index)
        self.answered = time.monotonic()  # when its connection last carried an answer

    async def call(self, operation: str, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        started = time.perf_counter()
        try:
            response = await self.client.post(path, json=body)
        except httpx.HTTPError as exc:
            self.tally.transport_errors[f"{operation}: {type(exc).__name__}"] += 1
            # how long the connection had been idle tells a keep-alive race from a server fault
            idle = started - self.answered
            self.tally.note(f"{operation} {exc!r} after {idle:.1f} s idle")
            return None
        self.answered = time.monotonic()
        self.tally.latencies[operation].append((time.perf_counter() - started) * 1000)
        self.tally.statuses[operation][response.status_code] += 1
        if response.status_code >= 300:
            self.tally.note(f"{operation} {response.status_code} {response.text[:200]}")
            return None
        return response.json()

    async def start(self) -> None:
        body = {"id": self.session, "user_id": self.user, "workspace": self.workspace}
        await self.call("session", "sessions/", {**body, "agent": "load", "get_or_create": True})

    async def append(self, role: str, text: str) -> None:
        key = f"{self.session}-{self.rng.getrandbits(64):x}"
        event = {"role": role, "content": text, "idempotency_key": key}
        answer = await self.call(
            "append",
            f"sessions/{self.session}/events/",
            {"events": [event], "user_id": self.user},
        )
        if answer is None:
            return
        tally = self.tally
        tally.acknowledged += len(answer["events"])
        tally.appended += 1
        if tally.appended % self.args.sample_every == 0:
            tally.pending[answer["events"][0]["id"]] = time.monotonic()

    async def chat(self, turns: list[str], stop: asyncio.Event) -> None:
        at = self.rng.randrange(len(turns) - 1)
        number = 0
        await self.think(stop, self.rng.uniform(0, self.args.think[1]))
        while not stop.is_set():
            number += 1
            message, reply = turns[at % len(turns)], turns[(at + 1) % len(turns)]
            at += 2
            await self.append("user", message)
            await self.call("context", "context/", {"session": self.session, "query": message})
            if number % self.args.every == 0:
                await self.call("search", "search/", {"query": message, "session": self.session})
                fact = {
                    "content": f"{self.user} mentioned: {message[:200]}",
                    "category": "preference",
                    "key": f"topic-{number % 3}",
                    "session": self.session,
                    "user_id": self.user,
                }
                await self.call("fact", "facts/", fact)
            await self.append("assistant", reply)
            await self.think(stop, self.rng.uniform(*self.args.think))

    @staticmethod
    async def think(stop: asyncio.Event, seconds: float) -> None:
        try:
            await asyncio.wait_for(stop.wait(), seconds)
        except TimeoutError:
            pass


# --- the installation's side: vectors, events kept, memory -----------------------------------


class Watch:
    """Polls the server's database for the sampled events' vectors (a thread: psycopg is sync) and
    reads memory and the waiting chunks every --memory-every seconds."""

    def __init__(self, server: Server, tally: Tally, memory_every: float) -> None:
        self.server, self.tally, self.memory_every = server, tally, memory_every
        self.url = embedded_database_url(server.data_dir)
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.began = time.monotonic()
        self.timeline: list[dict[str, Any]] = []

    def run(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            next_memory = time.monotonic()
            while not self.stopped.wait(POLL_SECONDS):
                self.poll(conn)
                if time.monotonic() >= next_memory:
                    next_memory += self.memory_every
                    try:
                        self.timeline.append(self.reading(conn))
                    except (OSError, psutil.Error) as exc:  # a process ended while it was read
                        self.tally.note(f"memory not read at {next_memory:.0f}: {exc!r}")

    def poll(self, conn: psycopg.Connection[Any]) -> None:
        pending = dict(self.tally.pending)  # the agents add to it meanwhile (another thread)
        if not pending:
            return
        found = [row[0] for row in conn.execute(EMBEDDED, (list(pending),)).fetchall()]
        now = time.monotonic()
        for event_id in found:
            self.tally.searchable_s.append(now - pending[event_id])
            self.tally.pending.pop(event_id, None)

    def reading(self, conn: psycopg.Connection[Any]) -> dict[str, Any]:
        # the embedded PostgreSQL is read apart (bench/memory.py leaves it out too)
        hub = readings(tree(self.server.process.pid))
        main = postmaster(self.server.data_dir)
        backends = [main.pid, *(c.pid for c in main.children())] if main else []
        pg = readings(dict.fromkeys(backends, "postgres"))
        return {
            "t_s": round(time.monotonic() - self.began),
            "load1": round(psutil.getloadavg()[0], 2),
            "processes": len(hub),
            "rss_mb": sum(r["rss_mb"] for r in hub),
            "pss_mb": sum(r["pss_mb"] for r in hub),
            "pg_rss_mb": sum(r["rss_mb"] for r in pg),
            "pg_pss_mb": sum(r["pss_mb"] for r in pg),
            "waiting_chunks": conn.execute(WAITING).fetchone()[0],
        }

    def kept(self) -> int:
        with psycopg.connect(self.url, autocommit=True) as conn:
            return int(conn.execute(KEPT).fetchone()[0])


def tree(pid: int) -> dict[int, str]:
    """bench/memory.py's roles (run and every MemoryHub process under it, PostgreSQL apart), read
    again when a thread or process ended while it read."""
    for _ in range(5):
        try:
            return roles(pid)
        except OSError:
            continue
    return {}


def readings(pids: dict[int, str]) -> list[dict[str, Any]]:
    """bench/memory.py's reading of each process (one that exited meanwhile is left out)."""
    out = []
    for pid, role in pids.items():
        try:
            out.append(describe(pid, role))
        except (OSError, StopIteration):
            continue
    return out


# --- one level -------------------------------------------------------------------------------


async def drive(
    url: str, key: str, agents: int, turns: list[str], tally: Tally, args: argparse.Namespace
) -> float:
    limits = httpx.Limits(max_connections=agents, max_keepalive_connections=agents)
    async with httpx.AsyncClient(
        base_url=f"{url}/api/v1/",
        headers={"Authorization": f"Bearer {key}"},
        limits=limits,
        timeout=args.timeout,
    ) as client:
        crew = [Agent(i, client, tally, args) for i in range(agents)]
        await asyncio.gather(*(a.start() for a in crew))
        stop = asyncio.Event()
        began = time.monotonic()
        chats = [asyncio.create_task(a.chat(turns, stop)) for a in crew]
        await asyncio.sleep(args.minutes * 60)
        stop.set()
        await asyncio.gather(*chats)  # each finishes its turn
        return time.monotonic() - began


def run_level(agents: int, turns: list[str], args: argparse.Namespace) -> dict[str, Any]:
    env = dict(item.split("=", 1) for item in args.env)
    server = Server(web_workers=None, with_cluster=True, keep_data=args.keep_data, extra_env=env)
    try:
        server.wait()
        tally = Tally()
        watch = Watch(server, tally, args.memory_every)
        poller = threading.Thread(target=watch.run, daemon=True)
        poller.start()
        cpu_before = time.process_time()
        seconds = asyncio.run(drive(server.url, server.key, agents, turns, tally, args))
        client_cpu = time.process_time() - cpu_before
        drain_until = time.monotonic() + args.drain
        while tally.pending and time.monotonic() < drain_until:
            time.sleep(POLL_SECONDS)
        watch.stopped.set()
        poller.join()
        level = summary(agents, seconds, client_cpu, tally, watch, watch.kept())
        level["server_log"] = (
            complaints(server.data_dir / "logs" / "memoryhub.log")
            + [line for line in server.log if TROUBLE.search(line)][-8:]
        )
        return level
    finally:
        server.stop()


def complaints(log: Path) -> list[str]:
    """The server's warnings and errors during the level, by logger and message, commonest first."""
    counts: Counter[str] = Counter()
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("level") in ("WARNING", "ERROR", "CRITICAL"):
            said = f"{record.get('logger')}: {record.get('message')} {record.get('error', '')}"
            counts[said.strip()[:200]] += 1
    return [f"{n} x {said}" for said, n in counts.most_common(8)]


def percentile(values: list[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def summary(
    agents: int, seconds: float, client_cpu: float, tally: Tally, watch: Watch, kept: int
) -> dict[str, Any]:
    operations = {
        op: {
            "n": len(values),
            **{f"p{int(q * 100)}_ms": percentile(values, q) for q in (0.5, 0.95, 0.99)},
            "statuses": dict(tally.statuses[op]),
        }
        for op, values in tally.latencies.items()
    }
    server_errors = sum(n for c in tally.statuses.values() for s, n in c.items() if s >= 500)
    return {
        "agents": agents,
        "seconds": round(seconds, 1),
        "client_cpu_s": round(client_cpu, 1),
        "events_per_s": round(tally.acknowledged / seconds, 2),
        "acknowledged": tally.acknowledged,
        "kept": kept,
        "server_errors": server_errors,
        "transport_errors": dict(tally.transport_errors),
        "operations": operations,
        "searchable": {
            "sampled": len(tally.searchable_s) + len(tally.pending),
            "never": len(tally.pending),
            "p50_s": percentile(tally.searchable_s, 0.5),
            "p95_s": percentile(tally.searchable_s, 0.95),
            "max_s": max(tally.searchable_s, default=None),
        },
        "timeline": watch.timeline,
        "odd": tally.odd,
    }


# --- printing --------------------------------------------------------------------------------


def show(level: dict[str, Any]) -> None:
    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.0f}"

    print(
        f"\n== {level['agents']} agents, {level['seconds']:.0f} s: "
        f"{level['events_per_s']} acknowledged events/s; kept {level['kept']} of "
        f"{level['acknowledged']} acknowledged; 5xx {level['server_errors']}, transport errors "
        f"{sum(level['transport_errors'].values())} {level['transport_errors'] or ''}; "
        f"this client's CPU {level['client_cpu_s']} s",
        flush=True,
    )
    for op, row in level["operations"].items():
        print(
            f"  {op:<8} n {row['n']:>6}  p50 {ms(row['p50_ms']):>6}  p95 {ms(row['p95_ms']):>6}"
            f"  p99 {ms(row['p99_ms']):>6} ms  statuses {row['statuses']}"
        )
    s = level["searchable"]

    def sec(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    print(
        f"  searchable by meaning after acknowledgement: p50 {sec(s['p50_s'])} s, p95 "
        f"{sec(s['p95_s'])} s, max {sec(s['max_s'])} s over {s['sampled']} sampled events, "
        f"{s['never']} not within the drain"
    )
    for row in level["timeline"]:
        print(
            f"  t {row['t_s']:>4} s  load {row['load1']:>5}  MemoryHub {row['processes']} "
            f"processes rss {row['rss_mb']} MB pss {row['pss_mb']} MB  PostgreSQL rss "
            f"{row['pg_rss_mb']} MB pss {row['pg_pss_mb']} MB  waiting chunks "
            f"{row['waiting_chunks']}"
        )
    for line in level["odd"]:
        print(f"  ! {line}")
    for line in level.get("server_log", []):
        print(f"  server log: {line}")


def show_doubling(levels: list[dict[str, Any]]) -> None:
    base = levels[0]
    print(f"\np95 against {base['agents']} agents:")
    for op in OPERATIONS:
        first = base["operations"][op]["p95_ms"]
        ratios = [
            (lvl["agents"], lvl["operations"][op]["p95_ms"] / first)
            for lvl in levels[1:]
            if first and lvl["operations"][op]["p95_ms"]
        ]
        doubled = next((n for n, r in ratios if r >= 2), None)
        cells = ", ".join(f"{n}: {r:.2f}x" for n, r in ratios)
        print(f"  {op:<8} {cells}; doubled at {doubled or 'none of these'}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--agents", type=int, nargs="+", default=[10, 50, 200])
    parser.add_argument("--minutes", type=float, default=10.0, help="the load per level")
    parser.add_argument("--think", type=float, nargs=2, default=[1.0, 3.0], metavar=("MIN", "MAX"))
    parser.add_argument("--every", type=int, default=5, help="a search and a fact every N turns")
    parser.add_argument("--users-per-workspace", type=int, default=5)
    parser.add_argument("--sample-every", type=int, default=5, help="appends per sampled event")
    parser.add_argument("--drain", type=float, default=180.0, help="s to wait for the samples")
    parser.add_argument("--memory-every", type=float, default=30.0)
    parser.add_argument("--timeout", type=float, default=120.0, help="a request's, in s")
    parser.add_argument(
        "--env", action="append", default=[], help="NAME=VALUE for the server (a setting to try)"
    )
    parser.add_argument("--keep-data", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    turns = load_turns()
    levels = []
    for agents in args.agents:
        levels.append(run_level(agents, turns, args))
        show(levels[-1])
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(levels, indent=2))
    if len(levels) > 1:
        show_doubling(levels)


if __name__ == "__main__":
    main()
