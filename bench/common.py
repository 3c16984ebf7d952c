"""What the recall benchmarks share: Django in a throwaway database, the embedding cache, loading a
benchmark file, ingesting it through the real pipeline, the summariser, and the prune check.

A benchmark file (../shared/bench-data/README.md) holds one JSON object per conversation:
sessions of dated turns and questions with their evidence turns and sessions. Each conversation
becomes a channel, each of its sessions a MemoryHub session, each turn an event `speaker: text`
dated with its session's start, appended through append_events in one transaction per session,
so that on commit the indexing task and then the embedding task run inline
(MEMORYHUB_TASKS_EAGER) with the configured embedder.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import pickle
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT.parent / "shared" / "bench-data"
CACHE = ROOT / "bench" / "results" / "cache"
SAVE_EVERY_S = 600.0  # a crash in an hour-long first ingest loses at most this much model time
ROLES = ("user", "assistant")
# BENCH_OWNED=1: each conversation belongs to one end user (user-<conversation id>) and every
# question is asked as that user: the ownership rule is then part of every search's SQL, which
# must not cost recall. Its own database, so that a kept one never mixes the two.
OWNED = os.environ.get("BENCH_OWNED") == "1"


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of these processes so far, with their waited-for children's (a
    process gone meanwhile counts 0)."""
    import psutil

    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += (
            times.user
            + times.system
            + getattr(times, "children_user", 0)
            + getattr(times, "children_system", 0)
        )
    return total


def process_tree(pid: int) -> list[int]:
    """This process and every descendant."""
    import psutil

    try:
        return [pid, *(c.pid for c in psutil.Process(pid).children(recursive=True))]
    except psutil.Error:
        return [pid]


def owner(conversation_id: str) -> str:
    # speakers kept as the event's role; any other speaker (a name) is "user"
    return f"user-{conversation_id}" if OWNED else ""


def setup_django(db_name: str, embedder: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    os.environ["TEST_DB_NAME"] = db_name + ("_owned" if OWNED else "")
    os.environ["MEMORYHUB_EMBEDDER"] = embedder
    os.environ["MEMORYHUB_TASKS_EAGER"] = "true"
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    from memoryhub.plumbing.embedded_pg import ensure_running

    ensure_running()
    django.setup()


class EmbeddingCache:
    """Wraps the process's embedder: vectors of texts seen before (same model) come from disk.

    Vectors are kept as float32 arrays (a 100k-text cache of Python float lists needs ~1.2 GB);
    files written by the earlier list-based cache load as they are. It also times the model.
    """

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.inner = embedder.embed
        self.path = (
            CACHE / f"embeddings-{hashlib.sha256(embedder.name.encode()).hexdigest()[:12]}.pkl"
        )
        self.vectors: dict[str, Any] = {}
        if self.path.exists():
            with self.path.open("rb") as fh:
                self.vectors = pickle.load(fh)  # noqa: S301 - our own cache file
        self.dirty = False
        self.saved_at = time.monotonic()
        self.model_s = 0.0
        self.model_texts = 0
        self.cached_texts = 0
        embedder.embed = self.embed

    def key(self, text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    def embed(self, texts: list[str]) -> list[list[float]]:
        keys = [self.key(t) for t in texts]
        missing = list(
            dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in self.vectors)
        )
        self.cached_texts += len(texts) - len(missing)
        if missing:
            started = time.perf_counter()
            vectors = self.inner(missing)
            self.model_s += time.perf_counter() - started
            self.model_texts += len(missing)
            for text, vector in zip(missing, vectors, strict=True):
                self.vectors[self.key(text)] = np.asarray(vector, dtype=np.float32)
            self.dirty = True
            if time.monotonic() - self.saved_at > SAVE_EVERY_S:
                self.save()
        return [np.asarray(self.vectors[k], dtype=np.float32).tolist() for k in keys]

    def save(self) -> None:
        self.saved_at = time.monotonic()
        if self.dirty:
            CACHE.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            with tmp.open("wb") as fh:
                pickle.dump(self.vectors, fh, protocol=pickle.HIGHEST_PROTOCOL)
            tmp.replace(self.path)
            self.dirty = False

    def stats(self) -> str:
        rate = self.model_texts / self.model_s if self.model_s else 0.0
        return (
            f"model {self.model_s:.1f} s for {self.model_texts} texts ({rate:.1f} texts/s), "
            f"{self.cached_texts} texts from the cache"
        )


def load(path: Path, limit: int | None) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        conversations = [json.loads(line) for line in fh if line.strip()]
    return conversations[:limit] if limit else conversations


def select(conversations: list[dict[str, Any]], categories: list[str]) -> list[dict[str, Any]]:
    """Only the questions of these categories (as stored: "knowledge-update", "2"), and only the
    conversations that ask one; all of them when `categories` is empty. The halves are then
    halves of what is left (LongMemEval: one conversation per question)."""
    if not categories:
        return conversations
    wanted = set(categories)
    out = []
    for conv in conversations:
        questions = [q for q in conv["questions"] if str(q["category"]) in wanted]
        if questions:
            out.append({**conv, "questions": questions})
    return out


def turn_content(turn: dict[str, Any]) -> str:
    """The event's content for a turn, as stored and as the plain baselines read it."""
    return f"{turn['speaker']}: {turn['text']}"


@dataclass
class Ingested:
    """Where the turns went: the key to search with and how to map a chunk back to turns."""

    key: Any
    # (session ext id, seq) -> turn id
    turn_at: dict[tuple[str, int], str] = field(default_factory=dict)
    # session ext id -> benchmark session id
    session_of: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    appended_sessions: int = 0
    appended_turns: int = 0


def _existing_sessions(tenant: Any) -> dict[str, int]:
    from memoryhub.models import Session

    return dict(Session.objects.filter(tenant=tenant).values_list("external_id", "last_sequence"))


def ingest(conversations: list[dict[str, Any]], tenant_name: str) -> Ingested:
    """Append every turn through the real pipeline, one transaction per session.

    Resumable with --keepdb: a session already stored with all its turns is skipped (a session
    is appended in one transaction, so it is there whole or not at all), and chunks left without
    an embedding by an interrupted run are embedded at the end.
    """
    from django.db import transaction

    from accounts.models import ApiKey, Tenant
    from memoryhub.event_log import EventInput, append_events
    from memoryhub.sessions import SessionInput, create_session

    tenant, _ = Tenant.get_or_create_named(tenant_name)
    key = ApiKey.create_key(tenant=tenant, scopes=("read", "write")).api_key
    out = Ingested(key=key)
    stored = _existing_sessions(tenant)
    started = time.perf_counter()
    for conv in conversations:
        for bsession in conv["sessions"]:
            session_id = f"{conv['conversation_id']}-{bsession['session_id']}"
            out.session_of[session_id] = bsession["session_id"]
            for seq, t in enumerate(bsession["turns"], start=1):
                out.turn_at[(session_id, seq)] = t["turn_id"]
            if stored.get(session_id, 0) >= len(bsession["turns"]):
                continue
            when = datetime.fromisoformat(bsession["started_at"]).replace(tzinfo=UTC)
            items = [
                EventInput(
                    role=t["speaker"] if t["speaker"] in ROLES else "user",
                    content=turn_content(t),
                    created_at=when,
                    metadata={"turn_id": t["turn_id"], "speaker": t["speaker"]},
                )
                for t in bsession["turns"]
            ]
            create_session(
                key=key,
                data=SessionInput(
                    id=session_id,
                    channel=conv["conversation_id"],
                    user_id=owner(conv["conversation_id"]),
                ),
                get_or_create=True,
            )
            # One transaction per session: on commit the indexing task runs, then the embedding
            # task.
            with transaction.atomic():
                append_events(key=key, session_id=session_id, items=items)
            out.appended_sessions += 1
            out.appended_turns += len(items)
    _embed_leftovers(tenant.pk)
    out.seconds = time.perf_counter() - started
    return out


def _embed_leftovers(tenant_id: int) -> None:
    from retrieval.embedding import backfill_embeddings, pending_embeddings

    if pending_embeddings(tenant_id=tenant_id).exists():
        report = backfill_embeddings(tenant_id=tenant_id)
        print(f"embedded chunks an earlier run had left: {report}", flush=True)


def summarise(tenant_id: int) -> tuple[dict[str, Any], float]:
    """What the cluster does once the sessions have gone idle: rolling summaries and closed
    trees."""
    from unittest import mock

    from memoryhub import summaries
    from memoryhub.session_work import summarise_due

    started = time.perf_counter()
    with mock.patch.object(summaries, "IDLE_MINUTES", 0):
        report = summarise_due(tenant_id=tenant_id)
    _embed_leftovers(tenant_id)  # the summary chunks: the embed lane's work in a server
    return report, time.perf_counter() - started


def chunk_census(tenant_id: int, turn_at: dict[tuple[str, int], str]) -> dict[str, int]:
    """How many event and summary chunks the tenant holds, and how many turns no event chunk
    starts or ends at: taken after ingest and again after the questions, it shows whether
    anything (consolidation, decay) pruned the data the bench searches."""
    from retrieval.models import Chunk

    rows = Chunk.objects.filter(tenant_id=tenant_id, kind="event").values_list(
        "session__external_id", "sequence_start", "sequence_end"
    )
    covered: set[tuple[str, int]] = set()
    events = 0
    for session, start, end in rows.iterator(chunk_size=5000):
        events += 1
        covered.update({(session, start), (session, end)})
    return {
        "event_chunks": events,
        "summary_chunks": Chunk.objects.filter(tenant_id=tenant_id, kind="summary").count(),
        "turns_without_chunk": sum(1 for k in turn_at if k not in covered),
    }
