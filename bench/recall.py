"""Recall of the benchmarks' questions: scoring, the product's search runs, the printed tables.

Turn recall@k: share of a question's evidence turns among the turns of its top k results;
session recall@k: share of its evidence sessions among the sessions of the top k. A summary
hit counts toward session recall for the one session it summarises (the tree is built per
session) and toward turn recall for no turn. `uniq@10` is how many distinct turns the ten
results hold (several chunks of one long turn fill places without adding a turn).
**Strict session recall_all@k** (LongMemEval's own metric): the share of questions whose every
evidence session is among the sessions of the top k (for `group_by: session`, the first k
conversations listed); abstention questions (LongMemEval's `_abs` ids, whose evidence is what
was *not* said) are left out of it.
Every figure is kept per category, overall, and per half of the file (by conversation).
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script (see the end): the checkout's root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402

RUNS = {  # name: search options
    "text": {"mode": "text"},
    "vector": {"mode": "vector"},
    "hybrid-weighted": {"mode": "hybrid", "fusion": "weighted"},
    "hybrid-rrf": {"mode": "hybrid", "fusion": "rrf"},
    # Which conversations (group_by "session"): ten conversations, each with its best match; its
    # session@10 counts the conversations listed, a different list from the other runs' ten results.
    "hybrid-sessions": {
        "mode": "hybrid",
        "fusion": "weighted",
        "group_by": "session",
        "hits_per_session": 1,
    },
}
METRICS = ("turn@5", "turn@10", "session@5", "session@10", "uniq@10")
# strict session recall_all@k, over the questions that are not abstentions
STRICT = ("all@5", "all@10")
Found = list[tuple[set[str], str]]  # per result, best first: (turn ids it holds, session id)


@dataclass
class Question:
    conv_index: int  # position of its conversation in the file (0-based)
    conversation_id: str
    question: dict[str, Any]
    buckets: tuple[str, ...]  # category, "overall", "half N"


def questions_of(conversations: list[dict[str, Any]], categories: dict[str, str]) -> list[Question]:
    """Questions with evidence, each with the buckets it counts in."""
    split = (len(conversations) + 1) // 2
    out = []
    for i, conv in enumerate(conversations):
        half = "half 1" if i < split else "half 2"
        for q in conv["questions"]:
            if q["evidence_turn_ids"]:
                category = categories.get(str(q["category"]), str(q["category"]))
                out.append(Question(i, conv["conversation_id"], q, (category, "overall", half)))
    return out


def halves_label(conversations: list[dict[str, Any]], unit: str) -> str:
    split = (len(conversations) + 1) // 2
    return f"half 1 = {unit} 1-{split}, half 2 = {unit} {split + 1}-{len(conversations)}"


def abstention(question: dict[str, Any]) -> bool:
    """A LongMemEval abstention question (its id ends in `_abs`): the haystack does not hold its
    answer."""
    return str(question.get("question_id", "")).endswith("_abs")


class Scorer:
    def __init__(self) -> None:
        self.sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))

    def add(self, q: Question, found: Found) -> None:
        evidence = set(q.question["evidence_turn_ids"])
        sessions = set(q.question["evidence_session_ids"])
        for bucket in q.buckets:
            s = self.sums[bucket]
            s["n"] += 1
            for k in (5, 10):
                got_turns: set[str] = set().union(*[t for t, _ in found[:k]])
                got_sessions = {session for _, session in found[:k]}
                s[f"turn@{k}"] += len(evidence & got_turns) / len(evidence)
                s[f"session@{k}"] += len(sessions & got_sessions) / len(sessions)
                if not abstention(q.question):
                    s[f"all@{k}"] += float(sessions <= got_sessions)
            if not abstention(q.question):
                s["n_all"] += 1
            s["uniq@10"] += len(set().union(*[t for t, _ in found[:10]]))

    def figures(self) -> dict[str, dict[str, float]]:
        return {
            bucket: {
                "n": int(v["n"]),
                **{m: round(v[m] / v["n"], 3) for m in METRICS},
                **{m: round(v[m] / v["n_all"], 3) if v["n_all"] else 0.0 for m in STRICT},
            }
            for bucket, v in self.sums.items()
        }


def _found(
    hits: list[Any], turn_at: dict[tuple[str, int], str], session_of: dict[str, str]
) -> tuple[Found, int]:
    found: Found = []
    summaries = 0
    for hit in hits:
        session = hit.chunk.session.external_id
        if hit.chunk.kind == "summary":  # it finds its one session, no turn
            summaries += 1
            found.append((set(), session_of[session]))
            continue
        turns = {
            turn_at.get((session, s)) for s in {hit.chunk.sequence_start, hit.chunk.sequence_end}
        }
        found.append(({t for t in turns if t}, session_of[session]))
    return found, summaries


# Every question's evidence and what each run found, for --per-question.
PER_QUESTION: list[dict[str, Any]] = []


NEW_SESSION = "{conversation}-new"  # the new, empty conversation --from-new-session asks from


def new_sessions(ingested: Any, conversations: list[dict[str, Any]]) -> dict[str, str]:
    """A new, empty session for each conversation, of the conversation's user, in its channel (an
    agent's next conversation with that user): conversation id -> session id."""
    from memoryhub.sessions import SessionInput, create_session

    out = {}
    for conv in conversations:
        cid = conv["conversation_id"]
        out[cid] = NEW_SESSION.format(conversation=cid)
        create_session(
            key=ingested.key,
            data=SessionInput(id=out[cid], channel=cid, user_id=common.owner(cid)),
            get_or_create=True,
        )
    return out


def _in_channel(
    key: Any,
    channels: dict[str, Any],
    q: Question,
    vector: list[float],
    as_of: Any,
    options: dict[str, Any],
) -> list[Any]:
    """The question asked in its conversation's channel, as its user."""
    from retrieval.search import hybrid_search

    channel = channels[q.conversation_id]
    return hybrid_search(
        tenant_id=key.tenant_id,
        query=q.question["question"],
        query_embedding=vector,
        scope="channel",
        channel_ids=[channel.pk],
        workspace_ids=[channel.workspace_id],
        top_k=10,
        user_id=common.owner(q.conversation_id) or None,
        as_of=as_of,
        # The stand-in date is the last session's start: its later turns must stay in view.
        history=False,
        **options,
    )


def _from_session(
    key: Any, session: str, q: Question, vector: list[float], as_of: Any, options: dict[str, Any]
) -> list[Any]:
    """The question asked as POST /search/ asks it with only a session named (no scope, no user):
    the request the API builds (retrieval.scoping), run as the API runs it."""
    from retrieval.scoping import build_search_request
    from retrieval.search import run_search

    data: dict[str, Any] = {
        "query": q.question["question"],
        "query_embedding": vector,
        "session": session,
        "top_k": 10,
        **options,
    }
    if as_of is not None:
        data.update(as_of=as_of, history=False)
    return run_search(build_search_request(key, data))


def evaluate(
    ingested: Any,
    questions: list[Question],
    vectors: list[list[float]],
    runs: list[str],
    kinds: list[str] | None = None,
    as_of: dict[str, Any] | None = None,
    sessions: dict[str, str] | None = None,
) -> tuple[dict[str, Any], dict[str, float]]:
    """Ask every question through retrieval.search in its conversation's channel (`as_of`: the
    moment each conversation's questions are asked at; the search's now without), or with
    `sessions` (new_sessions) from that new session with default parameters: runs named
    "<run> new-session"."""
    from accounts.models import Channel

    key = ingested.key
    channels = {c.name: c for c in Channel.objects.filter(tenant_id=key.tenant_id)}
    figures: dict[str, Any] = {}
    timings: dict[str, float] = {}
    n = max(len(questions), 1)
    for base in runs:
        run = base if sessions is None else f"{base} new-session"
        scorer = Scorer()
        summary_hits = 0
        options = {**RUNS[base], **({"kinds": kinds} if kinds else {})}
        started = time.perf_counter()
        for q, vector in zip(questions, vectors, strict=True):
            when = (as_of or {}).get(q.conversation_id)
            if sessions is None:
                hits = _in_channel(key, channels, q, vector, when, options)
            else:
                hits = _from_session(key, sessions[q.conversation_id], q, vector, when, options)
            found, summaries = _found(hits, ingested.turn_at, ingested.session_of)
            summary_hits += summaries
            scorer.add(q, found)
            evidence = set(q.question["evidence_session_ids"])
            PER_QUESTION.append(
                {
                    "run": run,
                    "conversation": q.conversation_id,
                    "buckets": list(q.buckets),
                    "question": q.question["question"],
                    "evidence_sessions": sorted(evidence),
                    "found_sessions": [s for _, s in found[:10]],
                    "evidence_turns": sorted(q.question["evidence_turn_ids"]),
                    "found_turns": [sorted(t) for t, _ in found[:10]],
                }
            )
        timings[f"{run}_ms_per_query"] = 1000 * (time.perf_counter() - started) / n
        timings[f"{run}_summary_hits_per_query"] = summary_hits / n
        figures[run] = scorer.figures()
        print_table({run: figures[run]}, bucket_order({}, figures), flush=True)
    return figures, timings


def bucket_order(categories: dict[str, str], figures: dict[str, Any]) -> list[str]:
    seen = {b for per in figures.values() for b in per}
    named = ["overall", "half 1", "half 2", *categories.values()]
    return [b for b in named if b in seen] + sorted(seen - set(named))


def print_table(figures: dict[str, Any], buckets: list[str], flush: bool = False) -> None:
    """One markdown table: a row per run and bucket."""
    print(
        "\n| run | bucket | n | turn@5 | turn@10 | session@5 | session@10 | all@5 | all@10 |"
        " uniq@10 |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for run, per in figures.items():
        for b in buckets:
            if b in per:
                v = per[b]
                print(
                    f"| {run} | {b} | {v['n']} | {v['turn@5']:.3f} | {v['turn@10']:.3f} | "
                    f"{v['session@5']:.3f} | {v['session@10']:.3f} | {v.get('all@5', 0.0):.3f} | "
                    f"{v.get('all@10', 0.0):.3f} | {v['uniq@10']:.1f} |",
                    flush=flush,
                )


def print_comparison(figures: dict[str, Any]) -> None:
    """Every run side by side: overall and per half, turn@10, session@10 and strict all@5 /
    all@10."""
    print(
        "\n| run | turn@5 | turn@10 | session@5 | session@10 | all@5 | all@10 | half 1 turn@10 |"
        " half 1 session@10 | half 1 all@5 / @10 | half 2 turn@10 | half 2 session@10 | half 2"
        " all@5 / @10 | uniq@10 |"
    )
    print(
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---:"
        " | ---: |"
    )
    for run, per in figures.items():
        o, h1, h2 = per["overall"], per.get("half 1", {}), per.get("half 2", {})
        halves = " | ".join(
            (
                f"{h['turn@10']:.3f} | {h['session@10']:.3f} | {h.get('all@5', 0.0):.3f} /"
                f" {h.get('all@10', 0.0):.3f}"
                if h
                else "- | - | -"
            )
            for h in (h1, h2)
        )
        print(
            f"| {run} | {o['turn@5']:.3f} | {o['turn@10']:.3f} | {o['session@5']:.3f} |"
            f" {o['session@10']:.3f} | {o.get('all@5', 0.0):.3f} | {o.get('all@10', 0.0):.3f} |"
            f" {halves} | {o['uniq@10']:.1f} |"
        )


if __name__ == "__main__":
    # bench/recall.py locomo|longmemeval [options]: that benchmark's command line, e.g.
    # bench/recall.py longmemeval --first 4 --keepdb --from-new-session
    from bench.locomo import LOCOMO
    from bench.longmemeval import LONGMEMEVAL
    from bench.runner import main

    benches = {"locomo": LOCOMO, "longmemeval": LONGMEMEVAL}
    if len(sys.argv) < 2 or sys.argv[1] not in benches:
        sys.exit(
            "usage: bench/recall.py locomo|longmemeval [that benchmark's options, e.g."
            " --from-new-session]"
        )
    main(benches[sys.argv.pop(1)])
