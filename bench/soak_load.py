"""The soak's load (bench/soak.py): a tenant's API client that counts every answer and sends a
refused request again, the record of what was acknowledged, and the clients themselves:
conversations, facts and notes corrected at once, searches and context, LongMemEval haystacks
imported in bulk, a schedule due every 10 s."""

from __future__ import annotations

import gzip
import http.client
import json
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HAYSTACKS = ROOT.parent / "shared" / "bench-data" / "longmemeval_s_dev60.jsonl.gz"
USERS = ("sam", "alex", "kim", "robin", "jo")


class Api:
    """One tenant's key; every status counted (0: the connection failed, e.g. the web server was
    being restarted)."""

    def __init__(self, port: int, key: str, statuses: Counter[int], lock: threading.Lock) -> None:
        self.port, self.key, self.statuses, self.lock = port, key, statuses, lock

    def call(
        self, method: str, path: str, body: Any = None, timeout: float = 60
    ) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(
                method,
                f"/api/v1{path}",
                json.dumps(body).encode() if body is not None else None,
                {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"},
            )
            response = conn.getresponse()
            raw = response.read()
            status, data = response.status, (json.loads(raw) if raw else None)
        except (OSError, http.client.HTTPException, ValueError):
            status, data = 0, None
        finally:
            conn.close()
        with self.lock:
            self.statuses[status] += 1
        return status, data

    def until_answered(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        stop: threading.Event | None = None,
        tries: int = 600,
    ) -> tuple[int, Any]:
        """Send again as it was while refused or 502/503 (a restart, the database coming back)."""
        for _ in range(tries):
            status, data = self.call(method, path, body)
            if status not in (0, 502, 503, 504):
                return status, data
            if stop is not None and stop.is_set() and tries < 600:
                break
            time.sleep(0.5)
        return status, data


@dataclass
class Record:
    statuses: Counter[int] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # (tenant, session) -> keys
    acknowledged: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    # (tenant, user, key) -> last content
    facts: dict[tuple[str, str, str], str] = field(default_factory=dict)
    # (tenant, note id) -> last content
    notes: dict[tuple[str, str], str] = field(default_factory=dict)
    searches: list[tuple[float, float]] = field(default_factory=list)  # (when, ms)
    unexpected: list[str] = field(default_factory=list)  # 4xx that should not happen, 5xx
    kills: list[str] = field(default_factory=list)
    # kind -> /health/ 200 just after its kill
    answered_while_down: dict[str, bool] = field(default_factory=dict)

    def ack(self, tenant: str, session: str, keys: list[str]) -> None:
        with self.lock:
            self.acknowledged.setdefault((tenant, session), []).extend(keys)

    def odd(self, what: str, status: int, data: Any) -> None:
        with self.lock:
            self.unexpected.append(f"{what}: {status} {str(data)[:200]}")


# --- the load ----------------------------------------------------------------------------------


def conversation(
    api: Api,
    tenant: str,
    user: str,
    record: Record,
    stop: threading.Event,
    rng: random.Random,
    *,
    pause: float,
) -> None:
    """A user of a tenant talking: batches of 1-5 messages to one of their two sessions."""
    number = 0
    while not stop.is_set():
        session = f"{user}-chat-{rng.randint(1, 2)}"  # the same ids in every tenant
        keys = [f"{tenant}-{session}-{number + i}" for i in range(rng.randint(1, 5))]
        events = [
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": f"{user} says {k}: " + rng.choice(TOPICS),
                "idempotency_key": k,
            }
            for i, k in enumerate(keys)
        ]
        status, data = api.until_answered(
            "POST", f"/sessions/{session}/events/", {"events": events, "user_id": user}
        )
        if status in (200, 201):
            record.ack(tenant, session, keys)
        else:
            record.odd(f"append {tenant}/{session}", status, data)
        number += len(keys)
        stop.wait(pause)


def facts_and_notes(
    api: Api,
    tenant: str,
    user: str,
    record: Record,
    stop: threading.Event,
    rng: random.Random,
    *,
    pause: float,
) -> None:
    """Upsert a fact and correct it within a second or two; create a note and edit it."""
    round_ = 0
    while not stop.is_set():
        round_ += 1
        key = f"city-{round_ % 3}"
        for city in (rng.choice(CITIES), rng.choice(CITIES)):
            content = f"{user} lives in {city} (round {round_})"
            status, data = api.until_answered(
                "POST",
                "/facts/",
                {"content": content, "category": "profile", "key": key, "user_id": user},
            )
            if status in (200, 201):
                with record.lock:
                    record.facts[(tenant, user, key)] = content
            else:
                record.odd(f"fact {tenant}/{user}", status, data)
            stop.wait(rng.uniform(0.2, 1.5))
        note_id = f"{user}-note-{round_ % 4}"
        content = f"{user}'s note, version {round_}: " + rng.choice(TOPICS)
        status, data = api.until_answered("PATCH", f"/notes/{note_id}/", {"content": content})
        if status == 404:
            status, data = api.until_answered(
                "POST", "/notes/", {"note_id": note_id, "content": content, "user_id": user}
            )
            # created by the first try of a request that was then refused: edit it
            if status == 409:
                status, data = api.until_answered(
                    "PATCH", f"/notes/{note_id}/", {"content": content}
                )
        if status in (200, 201):
            with record.lock:
                record.notes[(tenant, note_id)] = content
        else:
            record.odd(f"note {tenant}/{note_id}", status, data)
        stop.wait(pause)


def readers(
    api: Api,
    tenant: str,
    user: str,
    record: Record,
    stop: threading.Event,
    rng: random.Random,
    *,
    pause: float,
) -> None:
    """Search and ask for context, timed."""
    while not stop.is_set():
        query = rng.choice(QUERIES)
        started = time.monotonic()
        status, data = api.until_answered(
            "POST", "/search/", {"query": query, "top_k": 10, "user_id": user}
        )
        if status == 200:
            with record.lock:
                record.searches.append((time.monotonic(), 1000 * (time.monotonic() - started)))
        else:
            record.odd(f"search {tenant}", status, data)
        status, data = api.until_answered(
            "POST", "/context/", {"query": query, "session": f"{user}-chat-1"}
        )
        if status not in (200, 404):  # 404: that session has no message yet
            record.odd(f"context {tenant}", status, data)
        stop.wait(pause)


def haystack_sessions(count: int, skip: int = 0) -> list[list[str]]:
    """Sessions of LongMemEval haystacks, each a list of `role: text` messages."""
    sessions: list[list[str]] = []
    with gzip.open(HAYSTACKS, "rt") as fh:
        for index, line in enumerate(fh):
            if index < skip:
                continue
            if index >= skip + count:
                break
            for session in json.loads(line)["sessions"]:
                sessions.append([f"{t['speaker']}: {t['text']}" for t in session["turns"]])
    return sessions


def bulk_import(
    api: Api,
    tenant: str,
    sessions: list[list[str]],
    record: Record,
    *,
    prefix: str,
    stop: threading.Event | None = None,
) -> int:
    """Append each haystack session, 100 messages a request (as an import does); messages sent."""
    sent = 0
    for number, turns in enumerate(sessions):
        session = f"{prefix}-{number}"
        for start in range(0, len(turns), 100):
            if stop is not None and stop.is_set():
                return sent
            keys = [f"{tenant}-{session}-{i}" for i in range(start, min(start + 100, len(turns)))]
            events = [
                {
                    "role": "user" if text.startswith("user:") else "assistant",
                    "content": text,
                    "idempotency_key": key,
                }
                for key, text in zip(keys, turns[start : start + 100], strict=True)
            ]
            status, data = api.until_answered(
                "POST", f"/sessions/{session}/events/", {"events": events}
            )
            if status in (200, 201):
                record.ack(tenant, session, keys)
                sent += len(keys)
            else:
                record.odd(f"import {tenant}/{session}", status, data)
    return sent


def schedule_every_10s(api: Api, tenant: str, record: Record) -> str:
    status, data = api.until_answered(
        "POST",
        "/schedules/",
        {
            "name": "soak",
            "action": "prune_runs",
            "params": {"keep": 10_000},
            "cadence": {"type": "interval", "value": "10s"},
        },
    )
    if status != 201:
        record.odd(f"schedule {tenant}", status, data)
        return ""
    return str(data["id"])


TOPICS = [
    "I started training for a half marathon and my knee hurts after long runs.",
    "Can you suggest a vegetarian recipe with chickpeas and spinach for four people?",
    "My sister's wedding is in June; I still need to book the flights to Lisbon.",
    "The new espresso machine makes the coffee too bitter, what grind size should I use?",
    "Remind me that the car insurance renewal is due on the 14th.",
    "We adopted a rescue dog called Pepper, she is scared of the vacuum cleaner.",
    "I switched teams at work and now report to Dana, who prefers written updates.",
    "The tomato plants on the balcony got some kind of white mildew.",
]
QUERIES = [
    "half marathon knee",
    "vegetarian chickpea recipe",
    "wedding flights Lisbon",
    "espresso grind size",
    "car insurance renewal",
    "rescue dog Pepper",
    "who do I report to",
    "where does the user live",
]
CITIES = ["Oslo", "Bergen", "Lyon", "Porto", "Leeds", "Graz", "Turku", "Ghent"]
