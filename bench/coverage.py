"""How the last places of a hybrid search are given to conversations: a grid over one ranking.

Conversation coverage (retrieval.search.rerank.cover_conversations) decides only which results
fill the places after the head; everything before it is fixed by the time it runs. So this script
asks each question of a benchmark once through the product's search (the default settings, on a
database kept by `bench/locomo.py --keepdb` or `bench/longmemeval.py --keepdb`), keeps the full
ranking coverage would start from, and re-runs coverage over it in Python for every combination of
head share, floor and conversation order asked for. Dedup (which drops near-identical results
before coverage) is not re-run: a row's figures can differ from a full run's by a few thousandths;
the defaults chosen here were confirmed with full runs (bench/README.md, stop 26).

    .venv/bin/python bench/coverage.py locomo
    .venv/bin/python bench/coverage.py longmemeval --shares 0.6,0.7 --floors 0.8 --norms 0,4

`--norms`: 0 orders the unlisted conversations by their best result (the order before stop 26);
p > 0 by the p-norm of their messages' scores (retrieval.search.rerank.conversation_evidence).
`--words`: the weights at which that evidence is blended with the query words each conversation's
messages say (rerank.conversation_words; retrieval.search.weights.COVERAGE_WORDS, stop 33).
Prints turn and session recall@10 overall, per half and for the multi-hop questions (LoCoMo).
`--ceiling`: instead of the grid, what any coverage of this ranking could reach (stop 35).
`--signals`: instead of the grid, coverage with the conversations ordered by signals read from
each whole session rather than from the candidates: MiniLM over its messages (the cosine to their
mean vector, their best cosine, the mean of their best three), its longest summary node's cosine,
and the query words said anywhere in it (distinct, IDF-summed; BM25 over its messages) (stop 37).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import common, recall  # noqa: E402

Row = tuple[int, int | None, float]  # candidate id, conversation (session pk), score


class Captured(NamedTuple):
    questions: list[recall.Question]
    rankings: list[list[Row]]
    words: list[dict[int, float]]  # rerank.conversation_words of each question's candidates
    # candidate id -> (evidence turns, LoCoMo session)
    finds: dict[int, tuple[set[str], str | None]]
    vectors: list[list[float]]  # each question's query vector
    terms: list[list[tuple[str, float]]]  # each question's full-text terms (tsquery literal, IDF)
    channels: list[int]  # each question's channel


def capture(bench: Any) -> Captured:
    """Each question's ranking as coverage receives it, and what each candidate finds."""
    from django.db import connection

    from accounts.models import Channel
    from memoryhub.models import Session
    from retrieval.indexing import CONTEXT_MESSAGES
    from retrieval.query_embedding import embed_queries
    from retrieval.search import engine, hybrid_search, ranking
    from retrieval.search.rerank import conversation_words

    conversations = common.load(bench.data, None)
    connection.creation.create_test_db(verbosity=0, autoclobber=False, keepdb=True)
    ingested = common.ingest(conversations, f"{bench.name}-minilm-ctx{CONTEXT_MESSAGES}")
    questions = recall.questions_of(conversations, bench.categories)
    # as a server embeds a query
    vectors = embed_queries([q.question["question"] for q in questions])
    tenant_id = ingested.key.tenant_id
    external = dict(Session.objects.filter(tenant_id=tenant_id).values_list("pk", "external_id"))
    channels = {c.name: c for c in Channel.objects.filter(tenant_id=tenant_id)}
    seen: dict[str, Any] = {}
    rank, make_plan = ranking.rank, engine._plan

    def keep_plan(*args: Any) -> Any:
        plan = make_plan(*args)
        seen["terms"] = list(plan.text_query.terms) if plan.text_query is not None else []
        return plan

    def keep(*args: Any) -> Any:
        seen["order"], seen["ranked"], similarities = rank(*args)
        seen["said"] = args[3].said  # rank(req, vector, hints, pool, vec, trace)
        return seen["order"], seen["ranked"], similarities

    engine._plan, ranking.rank = keep_plan, keep
    rankings: list[list[Row]] = []
    words: list[dict[int, float]] = []
    terms: list[list[tuple[str, float]]] = []
    finds: dict[int, tuple[set[str], str | None]] = {}
    try:
        for q, vector in zip(questions, vectors, strict=True):
            channel = channels[q.conversation_id]
            hybrid_search(
                tenant_id=tenant_id,
                query=q.question["question"],
                query_embedding=vector,
                scope="channel",
                channel_ids=[channel.pk],
                workspace_ids=[channel.workspace_id],
                top_k=10,
                user_id=common.owner(q.conversation_id) or None,
                counts_as_use=False,
            )
            rankings.append([(c.pk, c.session_id, seen["order"][c.pk]) for c in seen["ranked"]])
            words.append(
                conversation_words(seen["ranked"], seen["said"], [idf for _, idf in seen["terms"]])
            )
            terms.append(seen["terms"])
            for c in seen["ranked"]:
                session = external.get(c.session_id) if c.session_id is not None else None
                turns = (
                    {ingested.turn_at.get((session, s)) for s in (c.sequence_start, c.sequence_end)}
                    if session is not None and c.kind == "event"
                    else set()
                )
                finds[c.pk] = (
                    {t for t in turns if t},
                    ingested.session_of.get(session) if session else None,
                )
    finally:
        engine._plan, ranking.rank = make_plan, rank
    return Captured(
        questions,
        rankings,
        words,
        finds,
        vectors,
        terms,
        [channels[q.conversation_id].pk for q in questions],
    )


def covered(
    ranking: list[Row],
    share: float,
    floor: float,
    norm: float,
    k: int = 10,
    words: dict[int, float] | None = None,
    weight: float = 0.0,
) -> list[int]:
    """The product's cover_conversations over plain rows; `words` (conversation_words) blended
    into the evidence at `weight` as the search blends them."""
    from retrieval.search.rerank import cover_conversations

    candidates, scores, evidence = ranked_evidence(ranking, norm, words, weight)
    return [c.pk for c in cover_conversations(candidates, k, share, scores, floor, evidence)]


def ranked_evidence(
    ranking: list[Row], norm: float, words: dict[int, float] | None, weight: float
) -> tuple[list[Any], dict[int, float], dict[int, float] | None]:
    """The ranking as candidates, their scores, and each conversation's evidence as the search
    weighs it (None when `norm` is 0: by their best result)."""
    from retrieval.search.request import Candidate
    from retrieval.search.rerank import conversation_evidence, with_words

    candidates = [
        Candidate(
            pk=pk,
            session_id=sid,
            text="",
            contextual=False,
            created_ts=0.0,
            sequence_end=None,
            importance=0.5,
        )
        for pk, sid, _ in ranking
    ]
    scores = {pk: score for pk, _, score in ranking}
    evidence = conversation_evidence(candidates, scores, norm) if norm > 0 else None
    if evidence is not None and words and weight > 0:
        evidence = with_words(evidence, words, weight)
    return candidates, scores, evidence


def figures(
    questions: list[recall.Question],
    lists: list[list[int]],
    finds: dict[int, tuple[set[str], str | None]],
) -> dict[str, tuple[float, float]]:
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for q, ids in zip(questions, lists, strict=True):
        turns = set().union(*[finds[i][0] for i in ids[:10]]) if ids else set()
        sessions = {finds[i][1] for i in ids[:10]}
        evidence, wanted = (
            set(q.question["evidence_turn_ids"]),
            set(q.question["evidence_session_ids"]),
        )
        for bucket in q.buckets:
            s = sums[bucket]
            s[0] += 1
            s[1] += len(evidence & turns) / len(evidence)
            s[2] += len(wanted & sessions) / len(wanted)
    return {b: (s[1] / s[0], s[2] / s[0]) for b, s in sums.items()}


def best_per_conversation(ranking: list[Row]) -> dict[int, int]:
    """Each conversation's best-ranked candidate, conversations in the order of those candidates."""
    best: dict[int, int] = {}
    for pk, sid, _ in ranking:
        if sid is not None:
            best.setdefault(sid, pk)
    return best


def ceiling(
    questions: list[recall.Question],
    rankings: list[list[Row]],
    words: list[dict[int, float]],
    finds: dict[int, tuple[set[str], str | None]],
) -> None:
    """What the ranking's conversations allow, whatever the places: how many evidence sessions
    have a candidate at all, and the recall when all ten places go to ten distinct conversations
    (each its best result), in rank order or in coverage's order (evidence, p = 4, words 0.5)."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0] * 6)
    for q, ranking, said in zip(questions, rankings, words, strict=True):
        wanted, turns = (
            set(q.question["evidence_session_ids"]),
            set(q.question["evidence_turn_ids"]),
        )
        evidence = ranked_evidence(ranking, 4.0, said, 0.5)[2] or {}
        best = best_per_conversation(ranking)
        by_rank = list(best.values())[:10]
        by_evidence = [
            pk for sid, pk in sorted(best.items(), key=lambda item: -evidence.get(item[0], 0.0))
        ][:10]
        anywhere = {finds[pk][1] for pk in best.values()}
        for bucket in q.buckets:
            s = sums[bucket]
            s[0] += 1
            s[1] += len(wanted & anywhere) / len(wanted)
            for at, ids in ((2, by_rank), (4, by_evidence)):
                s[at] += len(turns & set().union(*[finds[pk][0] for pk in ids])) / len(turns)
                s[at + 1] += len(wanted & {finds[pk][1] for pk in ids}) / len(wanted)
    print(
        "| bucket | sessions with a candidate | 10 distinct, rank order: turn@10 / session@10 "
        "| 10 distinct, coverage's order |"
    )
    print("| --- | ---: | ---: | ---: |")
    for bucket, s in sums.items():
        n = s[0]
        print(
            f"| {bucket} | {s[1] / n:.3f} | {s[2] / n:.3f} / {s[3] / n:.3f} | {s[4] / n:.3f} /"
            f" {s[5] / n:.3f} |"
        )


Signals = dict[str, dict[int, float]]  # signal name -> session pk -> value


def session_signals(cap: Captured) -> list[Signals]:
    """Each question's sessions (those of its channel) scored by what the whole session says,
    not by its candidates: MiniLM over all its messages, its longest summary node, and the
    query's full-text terms over all its messages."""
    from django.db import connection

    from retrieval.search.vectors import decode_halfvec

    messages: dict[int, dict[int, list[np.ndarray]]] = defaultdict(lambda: defaultdict(list))
    summaries: dict[int, tuple[int, np.ndarray]] = {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT channel_id, session_id, kind, length(text), halfvec_send(embedding) "
            "FROM retrieval_chunk WHERE channel_id = ANY(%s) AND session_id IS NOT NULL "
            "AND embedding IS NOT NULL AND kind IN ('event', 'summary')",
            [sorted(set(cap.channels))],
        )
        for channel, session, kind, length, raw in cursor.fetchall():
            vector = decode_halfvec(bytes(raw))
            vector /= np.linalg.norm(vector) or 1.0
            if kind == "event":
                messages[channel][session].append(vector)
            elif length > summaries.get(session, (-1, None))[0]:
                summaries[session] = (length, vector)
    matrices = {
        channel: {session: np.stack(vs) for session, vs in by_session.items()}
        for channel, by_session in messages.items()
    }
    out: list[Signals] = []
    with connection.cursor() as cursor:
        for vector, terms, channel in zip(cap.vectors, cap.terms, cap.channels, strict=True):
            query = np.asarray(vector, dtype=np.float32)
            query /= np.linalg.norm(query) or 1.0
            signals: Signals = {
                "mean vector": {},
                "best message": {},
                "best three messages": {},
                "summary": {},
            }
            for session, matrix in matrices[channel].items():
                mean = matrix.mean(axis=0)
                cosines = np.sort(matrix @ query)[::-1]
                signals["mean vector"][session] = max(
                    float(mean @ query) / (np.linalg.norm(mean) or 1.0), 0.0
                )
                signals["best message"][session] = max(float(cosines[0]), 0.0)
                signals["best three messages"][session] = max(float(cosines[:3].mean()), 0.0)
                if session in summaries:
                    signals["summary"][session] = max(float(summaries[session][1] @ query), 0.0)
            signals.update(_word_signals(cursor, terms, channel))
            out.append(signals)
    return out


def _word_signals(cursor: Any, terms: list[tuple[str, float]], channel: int) -> Signals:
    """The query's terms over each session's messages: the IDF of the distinct terms it says,
    and BM25 with a message counted as a term occurrence and a session's length in messages."""
    words: dict[int, float] = {}
    bm25: dict[int, float] = {}
    if not terms:
        return {"words said": words, "BM25 of the session": bm25}
    says = ", ".join("sum((search_vector @@ %s::tsquery)::int)" for _ in terms)
    cursor.execute(
        f"SELECT session_id, count(*), {says} FROM retrieval_chunk "
        "WHERE channel_id = %s AND kind = 'event' GROUP BY session_id",
        [literal for literal, _ in terms] + [channel],
    )
    rows = cursor.fetchall()
    average = sum(row[1] for row in rows) / max(len(rows), 1)
    for session, length, *counts in rows:
        idfs = [(idf, n) for (_, idf), n in zip(terms, counts, strict=True) if n]
        words[session] = sum(idf for idf, _ in idfs)
        bm25[session] = sum(
            idf * n * 2.2 / (n + 1.2 * (0.25 + 0.75 * length / average)) for idf, n in idfs
        )
    return {"words said": words, "BM25 of the session": bm25}


def signal_table(cap: Captured, weights: list[float]) -> None:
    """Coverage (share 0.7, floor 0.8: the defaults) with each session signal blended into its
    evidence at each weight (rerank.with_words' blend: each side divided by its highest), and all
    ten places given to ten distinct sessions in the signal's order alone."""
    from retrieval.search.rerank import cover_conversations, with_words

    signals = session_signals(cap)
    print(f"{len(cap.questions)} questions; turn@10 / session@10\n")
    print("| session order | weight | overall | half 1 | half 2 | multi-hop |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    runs: list[tuple[str | None, float, bool]] = [(None, 0.0, False), (None, 1.0, True)]
    runs += [(name, weight, False) for name in signals[0] for weight in weights]
    runs += [(name, 1.0, True) for name in signals[0]]
    for name, weight, distinct in runs:
        lists = []
        for ranking, said, signal in zip(cap.rankings, cap.words, signals, strict=True):
            candidates, scores, evidence = ranked_evidence(ranking, 4.0, said, 0.5)
            order = evidence or {}
            if name is not None:
                order = with_words(order, signal[name], weight)
            if distinct:
                best = best_per_conversation(ranking)
                lists.append(
                    [
                        pk
                        for sid, pk in sorted(
                            best.items(), key=lambda item: -order.get(item[0], 0.0)
                        )
                    ]
                )
            else:
                lists.append(
                    [c.pk for c in cover_conversations(candidates, 10, 0.7, scores, 0.8, order)]
                )
        got = figures(cap.questions, lists, cap.finds)
        cells = " | ".join(
            f"{got[b][0]:.3f} / {got[b][1]:.3f}" if b in got else ""
            for b in ("overall", "half 1", "half 2", "multi-hop")
        )
        label = (name or "coverage's evidence (the default)") + (
            ", 10 distinct sessions" if distinct else ""
        )
        print(
            f"| {label} | {weight:g} | {cells} |" if name else f"| {label} | | {cells} |",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("bench", choices=["locomo", "longmemeval"])
    parser.add_argument("--shares", default="0.6,0.7,0.8")
    parser.add_argument("--floors", default="0.8")
    parser.add_argument("--norms", default="0,2,3,4,6,8")
    parser.add_argument(
        "--words",
        default="0",
        help="comma-separated weights of the query words (0 = evidence alone)",
    )
    parser.add_argument(
        "--ceiling",
        action="store_true",
        help="print what ten distinct conversations would give instead of the grid",
    )
    parser.add_argument(
        "--signals",
        default="",
        help=(
            "comma-separated weights: instead of the grid, coverage with session signals blended in"
        ),
    )
    args = parser.parse_args()
    if args.bench == "locomo":
        from bench.locomo import LOCOMO as bench
    else:
        from bench.longmemeval import LONGMEMEVAL as bench
    common.setup_django(bench.db_name, "minilm")
    cap = capture(bench)
    questions, rankings, words, finds = cap.questions, cap.rankings, cap.words, cap.finds
    if args.ceiling:
        ceiling(questions, rankings, words, finds)
        return
    if args.signals:
        signal_table(cap, [float(w) for w in args.signals.split(",")])
        return
    print(f"{len(questions)} questions; turn@10 / session@10\n")
    print("| share | floor | conversation order | words | overall | half 1 | half 2 | multi-hop |")
    print("| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    grid = [
        (float(share), float(floor), float(norm), float(weight))
        for share in args.shares.split(",")
        for floor in args.floors.split(",")
        for norm in args.norms.split(",")
        for weight in args.words.split(",")
    ]
    for share, floor, norm, weight in grid:
        if norm <= 0 and weight > 0:
            continue  # words blend into the evidence only
        got = figures(
            questions,
            [
                covered(r, share, floor, norm, words=w, weight=weight)
                for r, w in zip(rankings, words, strict=True)
            ],
            finds,
        )
        cells = [
            f"{got[b][0]:.3f} / {got[b][1]:.3f}" if b in got else ""
            for b in ("overall", "half 1", "half 2", "multi-hop")
        ]
        order = "best result" if norm <= 0 else f"evidence, p = {norm:g}"
        print(
            f"| {share:g} | {floor:g} | {order} | {weight:g} | " + " | ".join(cells) + " |",
            flush=True,
        )


if __name__ == "__main__":
    main()
