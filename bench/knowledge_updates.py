"""Knowledge updates: does the newest evidence rank above the older evidence it updates?

A question whose evidence turns lie in sessions of different dates (a value said, then said
again differently later) is answered right only if the reader sees the newest turn as the
current one; a ranking that lists the newer turn first makes that the easy reading. This script
asks such questions of a database kept by bench/locomo.py or bench/longmemeval.py (or ingests
what it needs itself, with the same helpers: bench/runner.prepare) through

- search: retrieval.search.hybrid_search with the defaults /search/ uses (hybrid, weighted
  fusion, top 10), in the question's own channel, as bench/recall.py asks it; and
- context: retrieval.context.assemble_context, what /context/ uses, with the same search
  request (the question's channel, top 10) and the default budget
  (retrieval.context.DEFAULT_BUDGET), no session (so no recent messages): its items in the order it
  returns them.

Questions. LongMemEval: the `knowledge-update` category (12 in dev 60, each with 2 evidence
turns in 2 sessions of different dates); only those haystacks are needed (--category, the
default here). LoCoMo has no such category: the questions whose evidence turns lie in sessions
of different start times (332 of 1,982, most of them multi-hop).

Definitions (each evidence turn is dated by its session's start, as the product stores it):

- rank of an evidence turn: the place of the first result that holds it (a result holds the
  turns its chunk starts and ends at; a summary holds none);
- **ordered**: at least two evidence turns of different dates are among the results (the top 10
  of search; the items of the context block). Only an ordered question can be newest-first;
- **newest-first rate**: among ordered questions, the share where the best-ranked evidence turn
  of the newest date retrieved ranks above every retrieved evidence turn of an older date
  (equivalently: the first evidence result is of the newest date retrieved);
- **newest retrieved**: the share of all the questions where an evidence turn of the question's
  newest evidence date (over all its evidence, retrieved or not) is among the results;
- turn recall@5 and @10 and session recall@10 of search as bench/recall.py counts them, over
  these questions (turn@5 shows what a reordering of the ten costs the head of the list);
  `ctx turns`: the share of evidence turns the context block holds;
- **newest@5**: the share of all the questions where an evidence turn of the newest evidence date
  is among search's first five results;
- **ctx dated**: the share whose context block shows every memory it lists from the conversation
  with that memory's own date (its session's date in the file, as `(…said YYYY-MM-DD) text`),
  never the day of the request or of the summariser's run; **newest@5 dated**: both at once,
  what an answering model needs to read the newest value as the current one.

Each figure overall and per half of the file (LoCoMo: conversations 1-5 / 6-10; LongMemEval:
the 12 questions, 1-6 / 7-12).

    nice -n 19 .venv/bin/python bench/knowledge_updates.py locomo --keepdb
    nice -n 19 .venv/bin/python bench/knowledge_updates.py longmemeval --keepdb
    nice -n 19 .venv/bin/python bench/knowledge_updates.py locomo --keepdb --variant weights.COVERAGE=1.0

`--variant NAME=VALUE[,NAME=VALUE]` (repeatable) asks the questions again with settings changed,
after the run with the settings as they are, and prints all the runs side by side. The other
options are bench/locomo.py's (--set, --no-summaries, --per-question FILE, --json FILE, ...).
Searches here do not count as use (counts_as_use False): re-asking does not change a kept
database's access counts (which the default ranking does not read anyway).
"""  # noqa: E501

from __future__ import annotations

import json
import re
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import common, recall, runner  # noqa: E402
from bench.locomo import LOCOMO  # noqa: E402
from bench.longmemeval import LONGMEMEVAL  # noqa: E402

BENCHES = {"locomo": LOCOMO, "longmemeval": LONGMEMEVAL}
DEFAULT_CATEGORY = {"longmemeval": ["knowledge-update"], "locomo": []}
Ranking = list[set[str]]  # per result, best first: the benchmark turn ids it holds


@dataclass
class Order:
    """What one ranking shows of one question's dated evidence."""

    ordered: bool  # at least two evidence turns of different dates retrieved
    newest_first: bool  # (only meaningful when ordered)
    newest_retrieved: bool  # a turn of the newest evidence date overall is retrieved
    turns_found: int


def newest_within(dates: dict[str, str], ranking: Ranking, k: int) -> bool:
    """Whether an evidence turn of the newest evidence date is among the first k results."""
    newest = max(dates.values())
    return any(dates.get(t) == newest for turns in ranking[:k] for t in turns)


def shows_own_dates(markdown: str, items: list[Any], day_of: dict[str, str]) -> bool:
    """Whether the block shows every listed memory of the conversation (not its recent messages)
    with the date of its own session (`day_of`: the product's session id -> YYYY-MM-DD), and its
    time of day ("2023-05-01 10:00)") where the block writes one."""
    for item in items:
        if item.source == "recent" or item.session not in day_of:
            continue
        line = (
            rf"{re.escape(day_of[item.session])}(?: \d\d:\d\d)?\)"
            rf" {re.escape(' '.join(item.text.split()))}"
        )
        if not re.search(line, markdown):
            return False
    return True


def evidence_order(dates: dict[str, str], ranking: Ranking) -> Order:
    """The newest-first reading of `ranking` for evidence turns dated `dates` (turn id -> the ISO
    start of its session; ISO strings of one format order as their dates). See the module doc."""
    rank: dict[str, int] = {}
    for place, turns in enumerate(ranking):
        for turn in turns:
            if turn in dates:
                rank.setdefault(turn, place)
    newest_overall = max(dates.values())
    found_dates = {dates[t] for t in rank}
    if len(found_dates) < 2:
        return Order(False, False, newest_overall in found_dates, len(rank))
    newest = max(found_dates)
    best_newest = min(r for t, r in rank.items() if dates[t] == newest)
    best_older = min(r for t, r in rank.items() if dates[t] != newest)
    return Order(True, best_newest < best_older, newest_overall in found_dates, len(rank))


def multi_date_questions(
    conversations: list[dict[str, Any]], categories: dict[str, str]
) -> list[tuple[recall.Question, dict[str, str]]]:
    """The questions whose evidence turns (those the file holds) lie in sessions of different
    start times, each with its evidence turns' dates. Halves as recall.questions_of splits them."""
    out = []
    by_id = {c["conversation_id"]: c for c in conversations}
    for q in recall.questions_of(conversations, categories):
        conv = by_id[q.conversation_id]
        date_of = {t["turn_id"]: s["started_at"] for s in conv["sessions"] for t in s["turns"]}
        dates = {t: date_of[t] for t in q.question["evidence_turn_ids"] if t in date_of}
        if len(set(dates.values())) >= 2:
            out.append((q, dates))
    return out


SUMS = (
    "n",
    "search ordered",
    "search newest-first",
    "search newest retrieved",
    "turn@5",
    "turn@10",
    "session@10",
    "ctx ordered",
    "ctx newest-first",
    "ctx newest retrieved",
    "ctx turns",
    "newest@5",
    "ctx dated",
    "newest@5 dated",
)


@dataclass
class Tally:
    sums: dict[str, dict[str, float]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(float))
    )

    def add(
        self,
        buckets: tuple[str, ...],
        search: Order,
        context: Order,
        turn10: float,
        session10: float,
        ctx_turns: float,
        turn5: float = 0.0,
        newest5: bool = False,
        dated: bool = False,
    ) -> None:
        for bucket in buckets:
            s = self.sums[bucket]
            s["n"] += 1
            for side, o in (("search", search), ("ctx", context)):
                s[f"{side} ordered"] += o.ordered
                s[f"{side} newest-first"] += o.ordered and o.newest_first
                s[f"{side} newest retrieved"] += o.newest_retrieved
            s["turn@5"] += turn5
            s["turn@10"] += turn10
            s["session@10"] += session10
            s["ctx turns"] += ctx_turns
            s["newest@5"] += newest5
            s["ctx dated"] += dated
            s["newest@5 dated"] += newest5 and dated

    def figures(self) -> dict[str, dict[str, float]]:
        out = {}
        for bucket, s in self.sums.items():
            n = s["n"]
            out[bucket] = {
                "n": int(n),
                "search ordered": int(s["search ordered"]),
                "search newest-first": _rate(s["search newest-first"], s["search ordered"]),
                "search newest retrieved": _rate(s["search newest retrieved"], n),
                "ctx ordered": int(s["ctx ordered"]),
                "ctx newest-first": _rate(s["ctx newest-first"], s["ctx ordered"]),
                "ctx newest retrieved": _rate(s["ctx newest retrieved"], n),
                "turn@5": _rate(s["turn@5"], n),
                "turn@10": _rate(s["turn@10"], n),
                "session@10": _rate(s["session@10"], n),
                "ctx turns": _rate(s["ctx turns"], n),
                "newest@5": _rate(s["newest@5"], n),
                "ctx dated": _rate(s["ctx dated"], n),
                "newest@5 dated": _rate(s["newest@5 dated"], n),
            }
        return out


def _rate(part: float, whole: float) -> float | None:
    return round(part / whole, 3) if whole else None


def print_figures(figures: dict[str, dict[str, float]]) -> None:
    print(
        "\n| bucket | n | search: ordered | newest-first | newest retrieved | context: ordered |"
        " newest-first | newest retrieved | turn@5 | turn@10 | session@10 | ctx turns | newest@5 |"
        " ctx dated | newest@5 dated |"
    )
    print(
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---:"
        " | ---: | ---: |"
    )
    for bucket in ("overall", "half 1", "half 2"):
        if bucket not in figures:
            continue
        v = figures[bucket]
        cells = [
            v["n"],
            v["search ordered"],
            v["search newest-first"],
            v["search newest retrieved"],
            v["ctx ordered"],
            v["ctx newest-first"],
            v["ctx newest retrieved"],
            v["turn@5"],
            v["turn@10"],
            v["session@10"],
            v["ctx turns"],
            v["newest@5"],
            v["ctx dated"],
            v["newest@5 dated"],
        ]
        print(
            f"| {bucket} | "
            + " | ".join(
                "-" if c is None else (f"{c:.3f}" if isinstance(c, float) else str(c))
                for c in cells
            )
            + " |",
            flush=True,
        )


def _context_ranking(items: list[Any], ingested: common.Ingested) -> Ranking:
    out: Ranking = []
    for item in items:
        if item.kind != "event" or item.session is None:
            out.append(set())
            continue
        turns = {
            ingested.turn_at.get((item.session, s))
            for s in {item.sequence_start, item.sequence_end}
        }
        out.append({t for t in turns if t})
    return out


def ask(
    questions: list[tuple[recall.Question, dict[str, str]]],
    ingested: common.Ingested,
    per_question: list[dict[str, Any]],
    conversations: list[dict[str, Any]],
) -> dict[str, dict[str, float]]:
    from accounts.models import Channel
    from retrieval.context import assemble_context
    from retrieval.query_embedding import embed_queries
    from retrieval.search import SearchRequest, hybrid_search

    key = ingested.key
    channels = {c.name: c for c in Channel.objects.filter(tenant_id=key.tenant_id)}
    day_of = {
        f"{conv['conversation_id']}-{s['session_id']}": s["started_at"][:10]
        for conv in conversations
        for s in conv["sessions"]
    }
    # as a server embeds a query
    vectors = embed_queries([q.question["question"] for q, _ in questions])
    tally = Tally()
    for (q, dates), vector in zip(questions, vectors, strict=True):
        channel = channels[q.conversation_id]
        scope = {
            "tenant_id": key.tenant_id,
            "query": q.question["question"],
            "query_embedding": vector,
            "scope": "channel",
            "channel_ids": [channel.pk],
            "workspace_ids": [channel.workspace_id],
            "top_k": 10,
            "user_id": common.owner(q.conversation_id) or None,
            "counts_as_use": False,
        }
        hits = hybrid_search(**scope)
        found, _ = recall._found(hits, ingested.turn_at, ingested.session_of)
        search_ranking = [turns for turns, _ in found[:10]]
        context = assemble_context(session=None, req=SearchRequest(**scope))
        ctx_ranking = _context_ranking(context.items, ingested)
        evidence = set(q.question["evidence_turn_ids"])
        sessions = set(q.question["evidence_session_ids"])
        turn10 = len(evidence & set().union(*search_ranking)) / len(evidence)
        turn5 = len(evidence & set().union(*search_ranking[:5])) / len(evidence)
        session10 = len(sessions & {s for _, s in found[:10]}) / len(sessions)
        ctx_turns = len(evidence & set().union(*ctx_ranking)) / len(evidence)
        s_order, c_order = evidence_order(dates, search_ranking), evidence_order(dates, ctx_ranking)
        newest5 = newest_within(dates, search_ranking, 5)
        dated = shows_own_dates(context.markdown, context.items, day_of)
        tally.add(q.buckets, s_order, c_order, turn10, session10, ctx_turns, turn5, newest5, dated)
        per_question.append(
            {
                "conversation": q.conversation_id,
                "buckets": list(q.buckets),
                "question": q.question["question"],
                "evidence": dates,
                "search": [sorted(t) for t in search_ranking],
                "context": [sorted(t) for t in ctx_ranking],
                "search_order": s_order.__dict__,
                "context_order": c_order.__dict__,
                "turn@5": turn5,
                "turn@10": turn10,
                "session@10": session10,
                "newest@5": newest5,
                "ctx dated": dated,
            }
        )
    return tally.figures()


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in BENCHES:
        print(__doc__)
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(BENCHES)}}} [options of bench/locomo.py]")
    name = sys.argv.pop(1)
    bench = BENCHES[name]
    parser = runner.build_parser(bench)
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=VALUE[,NAME=VALUE]",
        help=(
            "after the run with the settings as they are (--set applied), one more run with "
            "these settings changed (repeatable; each restored after its run)"
        ),
    )
    args = parser.parse_args()
    args.category = args.category or DEFAULT_CATEGORY[name]
    try:
        conversations, ingested, _ = runner.prepare(bench, args)
        questions = multi_date_questions(conversations, bench.categories)
        print(
            f"{len(questions)} questions with evidence in sessions of different dates "
            f"({recall.halves_label(conversations, bench.unit)})",
            flush=True,
        )
        results: dict[str, dict[str, dict[str, float]]] = {}
        per_question: dict[str, list[dict[str, Any]]] = {}
        for variant in ["", *args.variant]:
            label = variant or "settings as they are"
            per_question[label] = []
            started = time.perf_counter()
            with _settings(variant):
                results[label] = ask(questions, ingested, per_question[label], conversations)
            print(f"\n{label}: asked in {time.perf_counter() - started:.1f} s")
            print_figures(results[label])
        if args.variant:
            print_comparison(results)
        if args.per_question:
            args.per_question.write_text(json.dumps(per_question, indent=1))
        if args.json:
            args.json.write_text(json.dumps(results, indent=2))
    finally:
        runner.finish(bench, args)


@contextmanager
def _settings(variant: str) -> Iterator[None]:
    """Settings NAME=VALUE[,NAME=VALUE] changed for the duration (as --set changes them; a ranking
    constant as weights.NAME, a module's constant as module.path.NAME)."""
    from memoryhub.plumbing.env import parse_bool

    saved = []
    for item in filter(None, variant.split(",")):
        name, value = item.split("=", 1)
        target, attr = runner.override_target(name)
        current = getattr(target, attr)
        saved.append((target, attr, current))
        setattr(
            target,
            attr,
            parse_bool(name, value) if isinstance(current, bool) else type(current)(value),
        )
    try:
        yield
    finally:
        for target, attr, value in reversed(saved):
            setattr(target, attr, value)


def print_comparison(results: dict[str, dict[str, dict[str, float]]]) -> None:
    """Every run side by side, per half: newest-first of search and context, recall@10."""
    print(
        "\n| run | bucket | n | search ordered | search newest-first | ctx ordered | ctx"
        " newest-first | turn@5 | turn@10 | session@10 | newest@5 | newest@5 dated |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, figures in results.items():
        for bucket in ("overall", "half 1", "half 2"):
            v = figures.get(bucket)
            if v is None:
                continue
            cells = [
                v["n"],
                v["search ordered"],
                v["search newest-first"],
                v["ctx ordered"],
                v["ctx newest-first"],
                v["turn@5"],
                v["turn@10"],
                v["session@10"],
                v["newest@5"],
                v["newest@5 dated"],
            ]
            print(
                f"| {label} | {bucket} | "
                + " | ".join(
                    "-" if c is None else (f"{c:.3f}" if isinstance(c, float) else str(c))
                    for c in cells
                )
                + " |"
            )


if __name__ == "__main__":
    main()
