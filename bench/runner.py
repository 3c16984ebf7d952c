"""The command line and the run of a recall benchmark (bench/locomo.py, bench/longmemeval.py)."""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import common, recall


@dataclass
class Bench:
    name: str  # tenant prefix
    data: Path
    db_name: str
    categories: dict[str, str]  # category as stored -> name printed
    unit: str  # what the halves count: "conversations", "questions"
    doc: str


def parse_args(bench: Bench) -> argparse.Namespace:
    return build_parser(bench).parse_args()


def build_parser(bench: Bench) -> argparse.ArgumentParser:
    """The recall benchmarks' options (bench/knowledge_updates.py adds its own to them)."""
    parser = argparse.ArgumentParser(
        description=bench.doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=bench.data)
    parser.add_argument(
        "--limit",
        "--limit-conversations",
        dest="limit",
        type=int,
        default=None,
        help="only the first N conversations of the file",
    )
    parser.add_argument(
        "--category",
        action="append",
        default=[],
        metavar="CATEGORY",
        help=(
            "only the questions of this category (as stored in the file, e.g. knowledge-update "
            "or 2; repeatable), and only the conversations that ask one: a partial ingest"
        ),
    )
    parser.add_argument(
        "--first",
        type=int,
        default=None,
        metavar="N",
        help="only the first N conversations left after --category (a partial ingest's)",
    )
    parser.add_argument(
        "--runs", default=",".join(recall.RUNS), help="comma-separated: " + ",".join(recall.RUNS)
    )
    parser.add_argument("--embedder", default="minilm", choices=["minilm", "hash"])
    parser.add_argument("--keepdb", action="store_true", help="keep (and reuse) the bench database")
    parser.add_argument(
        "--as-of",
        choices=["now", "last-session"],
        default="now",
        help=(
            "the moment relative dates in a question are read against: the search's now (the "
            "product's default), or the conversation's last session start (neither file has "
            "question dates)"
        ),
    )
    parser.add_argument(
        "--from-new-session",
        action="store_true",
        help=(
            "also ask every question from a new, empty session of its conversation's user (in "
            "its channel) with default parameters (no scope), beside the channel-scoped runs"
        ),
    )
    parser.add_argument(
        "--no-summaries", action="store_true", help="do not run the summariser after ingest"
    )
    parser.add_argument(
        "--no-plain", action="store_true", help="skip the plain BM25 / MiniLM baselines"
    )
    parser.add_argument(
        "--plain-pool",
        type=int,
        default=None,
        metavar="N",
        help="plain hybrid: min-max over the top N turns of each score, not over all turns",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help=(
            "override a numeric or true/false setting, a ranking constant as weights.NAME, or any"
            " module's constant as module.path.NAME (e.g. retrieval.search.sql.EXACT_BELOW), for"
            " the searches (experiments)"
        ),
    )
    parser.add_argument("--no-cache", action="store_true", help="do not cache embeddings by text")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument(
        "--per-question",
        type=Path,
        default=None,
        help="write each question's evidence and what each run found here (JSON)",
    )
    parser.add_argument(
        "--vector-weight", type=float, default=None, help="override for the weighted run"
    )
    parser.add_argument(
        "--text-weight", type=float, default=None, help="override for the weighted run"
    )
    return parser


def _report_ingest(
    bench: Bench,
    conversations: list[dict[str, Any]],
    ingested: common.Ingested,
    cache: common.EmbeddingCache | None,
) -> None:
    from django.conf import settings

    from retrieval.indexing import CONTEXT_MESSAGES

    turns = len(ingested.turn_at)
    if not ingested.appended_sessions:
        print(
            f"reused the ingested data of {len(conversations)} {bench.unit}, {turns} turns"
            " (--keepdb)"
        )
        return
    appended = ingested.appended_turns
    print(
        f"ingested {len(conversations)} {bench.unit}, {turns} turns: appended"
        f" {ingested.appended_sessions} sessions, {appended} turns in {ingested.seconds:.1f} s"
        f" ({appended / ingested.seconds:.1f} turns/s incl. embedding; embedder"
        f" {settings.MEMORYHUB_EMBEDDER}, context messages {CONTEXT_MESSAGES})",
        flush=True,
    )
    if cache is not None:
        print(f"  embedding during ingest: {cache.stats()}", flush=True)


def _summaries(
    args: argparse.Namespace, tenant_id: int, cache: common.EmbeddingCache | None, appended: bool
) -> None:
    """The summariser over sessions appended in this run (a resumed ingest's too) or never
    summarised."""
    from memoryhub.models import SummaryNode

    if not args.no_summaries and (
        appended or not SummaryNode.objects.filter(tenant_id=tenant_id).exists()
    ):
        model_s = cache.model_s if cache else 0.0
        report, seconds = common.summarise(tenant_id)
        spent = f", of which model {cache.model_s - model_s:.1f} s" if cache else ""
        print(f"summarised in {seconds:.1f} s{spent}: {report}", flush=True)
        if cache is not None:
            cache.save()
    print(f"summary nodes: {SummaryNode.objects.filter(tenant_id=tenant_id).count()}", flush=True)


def override_target(name: str) -> tuple[Any, str]:
    """Where `--set NAME=…` changes NAME: a ranking constant as weights.NAME
    (retrieval/search/weights.py), a module's constant as module.path.NAME, a setting otherwise."""
    import importlib

    from django.conf import settings

    module, dot, attr = name.rpartition(".")
    if not dot:
        return settings, name
    return (
        importlib.import_module("retrieval.search.weights" if module == "weights" else module),
        attr,
    )


def _apply_overrides(args: argparse.Namespace) -> None:
    from memoryhub.plumbing.env import parse_bool

    for item in args.set:
        name, value = item.split("=", 1)
        target, attr = override_target(name)
        current = getattr(target, attr, 0.0)
        if isinstance(current, bool):
            setattr(target, attr, parse_bool(name, value))
        else:
            setattr(target, attr, type(current)(value))
        print(f"setting {name} = {getattr(target, attr)}", flush=True)
    if args.vector_weight is not None:
        recall.RUNS["hybrid-weighted"]["vector_weight"] = args.vector_weight
    if args.text_weight is not None:
        recall.RUNS["hybrid-weighted"]["text_weight"] = args.text_weight


def _ask(
    bench: Bench,
    args: argparse.Namespace,
    conversations: list[dict[str, Any]],
    ingested: common.Ingested,
) -> tuple[dict[str, Any], dict[str, float]]:
    """The product's runs, then the plain baselines, on the same questions and query vectors.
    The questions are embedded as a server embeds a search's query (retrieval.query_embedding:
    the int8 ONNX model unless retrieval.query_embedding.INT8 is off)."""
    from retrieval.query_embedding import embed_queries, query_encoder

    questions = recall.questions_of(conversations, bench.categories)
    print(
        f"{len(questions)} questions with evidence;"
        f" {recall.halves_label(conversations, bench.unit)}"
    )
    print(
        f"query embedder: {getattr(query_encoder(), 'filename', None) or 'the configured embedder'}"
    )
    started = time.perf_counter()
    vectors = embed_queries([q.question["question"] for q in questions])
    timings = {
        "query_embedding_ms_per_question": (
            1000 * (time.perf_counter() - started) / max(len(questions), 1)
        )
    }
    runs = [r for r in args.runs.split(",") if r]
    # --no-summaries: the same data, searched over turns only.
    figures, run_timings = recall.evaluate(
        ingested,
        questions,
        vectors,
        runs,
        kinds=["event"] if args.no_summaries else None,
        as_of=_as_of(conversations) if args.as_of == "last-session" else None,
    )
    timings.update(run_timings)
    if args.from_new_session:
        sessions = recall.new_sessions(ingested, conversations)
        new_figures, new_timings = recall.evaluate(
            ingested,
            questions,
            vectors,
            runs,
            kinds=["event"] if args.no_summaries else None,
            as_of=_as_of(conversations) if args.as_of == "last-session" else None,
            sessions=sessions,
        )
        figures.update(new_figures)
        timings.update(new_timings)
    if not args.no_plain:
        plain, plain_timings = _plain(conversations, questions, vectors, args.plain_pool)
        figures.update(plain)
        timings.update(plain_timings)
    return figures, timings


def _sentences() -> None:
    """Sentence vectors for chunks still waiting for them (a database kept from before they
    existed), as the embed lane adds them after the chunks' own vectors."""
    from retrieval.sentence_vectors import embed_sentences

    started = time.perf_counter()
    split = embed_sentences()
    if split["chunks"]:
        print(
            f"sentence vectors for chunks embedded without them: {split['chunks']} chunks, "
            f"{split['sentences']} sentences in {time.perf_counter() - started:.1f} s",
            flush=True,
        )


def _as_of(conversations: list[dict[str, Any]]) -> dict[str, datetime]:
    """Each conversation's last session start: a stand-in for the question's date, which neither
    benchmark file carries (LongMemEval asks after its haystack's last session)."""
    return {
        c["conversation_id"]: (
            datetime.fromisoformat(max(s["started_at"] for s in c["sessions"])).replace(tzinfo=UTC)
        )
        for c in conversations
    }


def _plain(
    conversations: list[dict[str, Any]],
    questions: list[recall.Question],
    vectors: list[list[float]],
    pool: int | None,
) -> tuple[dict[str, Any], dict[str, float]]:
    from bench.plain import evaluate_plain

    figures, timings = evaluate_plain(conversations, questions, vectors, pool)
    over = f"the top {pool} turns of each score" if pool else "all the conversation's turns"
    print(
        f"\nplain baselines over whole turns, min-max over {over} (built in"
        f" {timings['plain_build_s']:.1f} s, whole-turn embeddings included)"
    )
    recall.print_table(figures, recall.bucket_order({}, figures), flush=True)
    return figures, timings


def prepare(
    bench: Bench, args: argparse.Namespace
) -> tuple[list[dict[str, Any]], common.Ingested, common.EmbeddingCache | None]:
    """Django on the bench database, the file's (selected) conversations ingested (or reused with
    --keepdb), the summariser, sentence vectors, and the --set overrides applied."""
    common.setup_django(bench.db_name, args.embedder)
    from django.db import connection

    from retrieval.embedders import get_embedder

    conversations = common.select(common.load(args.data, args.limit), args.category)[: args.first]
    connection.creation.create_test_db(verbosity=0, autoclobber=not args.keepdb, keepdb=args.keepdb)
    if args.embedder == "minilm":
        from retrieval.embedder_preparation import prepare_embedder

        # as `manage.py run` does: the ONNX models, the query encoder's among them
        prepare_embedder()
    cache = None if args.no_cache else common.EmbeddingCache(get_embedder())
    from retrieval.indexing import CONTEXT_MESSAGES

    tenant = f"{bench.name}-{args.embedder}-ctx{CONTEXT_MESSAGES}"
    ingested = common.ingest(conversations, tenant)
    _report_ingest(bench, conversations, ingested, cache)
    if cache is not None:
        cache.save()
    _summaries(args, ingested.key.tenant_id, cache, bool(ingested.appended_sessions))
    _sentences()
    _apply_overrides(args)
    return conversations, ingested, cache


def main(bench: Bench) -> None:
    args = parse_args(bench)
    try:
        conversations, ingested, cache = prepare(bench, args)
        tenant_id = ingested.key.tenant_id
        before = common.chunk_census(tenant_id, ingested.turn_at)
        print(f"chunks before the questions: {before}", flush=True)
        figures, timings = _ask(bench, args, conversations, ingested)
        after = common.chunk_census(tenant_id, ingested.turn_at)
        print(
            f"\nchunks after the questions: {after}"
            + ("" if after == before else "  ** CHANGED: something pruned **")
        )
        print(
            "\nall runs, overall and per half "
            + f"({recall.halves_label(conversations, bench.unit)})"
        )
        recall.print_comparison(figures)
        print("\nper category")
        recall.print_table(figures, recall.bucket_order(bench.categories, figures))
        if cache is not None:
            cache.save()
            print(f"\nembedding in this process: {cache.stats()}")
        print("\n" + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
        if args.per_question:
            args.per_question.write_text(json.dumps(recall.PER_QUESTION, indent=1))
        if args.json:
            args.json.write_text(
                json.dumps(
                    {
                        "figures": figures,
                        "timings": timings,
                        "ingest_s": ingested.seconds,
                        "chunks": after,
                    },
                    indent=2,
                )
            )
    finally:
        finish(bench, args)


def finish(bench: Bench, args: argparse.Namespace) -> None:
    """The searches' access counts written, then the database dropped unless --keepdb."""
    from django.db import connection

    from retrieval.search.sql import accesses

    accesses.flush()  # the searches' access counts, while their database is still there
    if not args.keepdb:
        connection.creation.destroy_test_db(bench.db_name, verbosity=0)
