"""Search by channel over long chunks, under the chunk table's two row layouts (migration 0012).

    .venv/bin/python bench/layout.py [--limit 60] [--queries 100] [--keepdb]

The synthetic tables of bench/search.py and bench/tenants.py hold LoCoMo's short turns without
conversation context: rows of ~1.4 kB, which TOAST leaves alone. What `make run` stores of long
conversations is larger: a 640-character chunk with the two earlier messages it is embedded with
(up to 400 characters each) and its tsvector. Here LongMemEval's haystacks (../shared/bench-data,
each question's haystack a channel of one tenant, every turn `speaker: text` chunked 640 / 96 as
the indexer chunks it, with its context as the indexer makes it) are written as the product
writes them: each chunk inserted without its vector (the full-text trigger firing), then its
vector written by an UPDATE, as the embed lane does. Vectors are real MiniLM vectors of a sample
of the chunks, blended for the rest (bench/scale.py), since a layout does not depend on what a
vector says.

Then each question is asked in its own channel (hybrid, text and vector, top 10, in process, its
vector computed beforehand) under the layout before migration 0012 (vector EXTERNAL, tsvector
EXTENDED) and after it (PLAIN, MAIN), each after a VACUUM FULL that rewrites every row under that
layout, alternating twice; printed: p50 / p95 per mode, the share of rows whose vector and
tsvector are stored apart, and the table's size.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench.common import DATA_DIR, load, turn_content  # noqa: E402

LAYOUTS = {
    "before 0012 (vector EXTERNAL, tsvector EXTENDED)": ("EXTERNAL", "EXTENDED"),
    "0012 (vector PLAIN, tsvector MAIN)": ("PLAIN", "MAIN"),
}
MODES = {"hybrid": {"mode": "hybrid"}, "text": {"mode": "text"}, "vector": {"mode": "vector"}}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--limit", type=int, default=60, help="haystacks (questions) to load")
    parser.add_argument(
        "--queries", type=int, default=60, help="questions asked per layout and mode"
    )
    parser.add_argument(
        "--sample", type=int, default=2000, help="chunks embedded with the real model"
    )
    parser.add_argument(
        "--rounds", type=int, default=2, help="times each layout is measured, alternating"
    )
    parser.add_argument("--keepdb", action="store_true")
    parser.add_argument("--db", default="bench_layout")
    return parser.parse_args()


def chunks_of(conversations: list[dict[str, Any]]) -> list[tuple[int, int, int, str, str]]:
    """(haystack, session, sequence, text, context) of every chunk, as retrieval.indexing makes
    them."""

    from retrieval.chunking import chunk_text, normalize_text
    from retrieval.indexing import CHUNK_CHARS, CHUNK_OVERLAP, CONTEXT_CHARS, CONTEXT_MESSAGES

    out = []
    for h, conv in enumerate(conversations):
        for s, session in enumerate(conv["sessions"]):
            earlier: list[str] = []
            for seq, turn in enumerate(session["turns"], start=1):
                text = turn_content(turn)
                context = "\n".join(earlier[-CONTEXT_MESSAGES:])
                for piece in chunk_text(text, max_chars=CHUNK_CHARS, overlap=CHUNK_OVERLAP):
                    out.append((h, s, seq, piece.text, context))
                earlier.append(normalize_text(text)[:CONTEXT_CHARS])
    return out


def build(conversations: list[dict[str, Any]], sample: int) -> tuple[Any, list[int]]:
    import scale
    from django.db import connection

    from accounts.models import Channel, Tenant, Workspace
    from memoryhub.models import Session
    from retrieval.embedders import get_embedder

    tenant, _ = Tenant.get_or_create_named("layout")
    workspace = Workspace.get_default(tenant)
    channels = [Channel.get_named(workspace, f"haystack-{h}") for h in range(len(conversations))]
    sessions = {
        (h, s): Session.objects.create(
            tenant=tenant, workspace=workspace, channel=channels[h], external_id=f"h{h}-s{s}"
        )
        for h, conv in enumerate(conversations)
        for s in range(len(conv["sessions"]))
    }
    rows = chunks_of(conversations)
    rng = np.random.default_rng(3)
    picked = sorted(rng.choice(len(rows), min(sample, len(rows)), replace=False).tolist())
    maker = scale.VectorMaker(scale.base_vectors([rows[i][3] for i in picked]), "blend")
    model = get_embedder().name
    started = time.perf_counter()
    with connection.cursor() as cursor:
        scale.drop_search_indexes(cursor)
        with cursor.cursor.copy(f"COPY retrieval_chunk ({scale.COLUMNS}) FROM STDIN") as copy:
            for i, (h, s, seq, text, context) in enumerate(rows):
                session = sessions[(h, s)]
                copy.write_row(
                    (
                        tenant.pk,
                        "event",
                        "",
                        session.pk,
                        workspace.pk,
                        channels[h].pk,
                        "conversation",
                        "conversation",
                        "",
                        "user",
                        "",
                        "{}",
                        seq,
                        seq,
                        text,
                        context,
                        f"{i:064x}",
                        '{"schema_version": 1}',
                        0.5,
                        0,
                        "2024-01-01T00:00:00Z",
                        "2024-01-01T00:00:00Z",
                        None,
                        "",
                        "",
                        0,
                    )
                )
        cursor.execute("CREATE TEMP TABLE vectors (n bigint, v halfvec(384))")
        with cursor.cursor.copy("COPY vectors (n, v) FROM STDIN") as copy:
            for start in range(0, len(rows), scale.BATCH):
                block = maker.block(start, min(scale.BATCH, len(rows) - start))
                for offset, vector in enumerate(block):
                    copy.write_row((start + offset, scale.vector_text(vector)))
        # The embed lane's write: the vector added to a row that was inserted without it.
        cursor.execute(
            "UPDATE retrieval_chunk c SET embedding = v.v, embedding_model = %s FROM vectors v "
            "WHERE c.tenant_id = %s AND c.content_hash = lpad(to_hex(v.n), 64, '0')",
            [model, tenant.pk],
        )
        print(
            f"{len(rows)} chunks in {len(channels)} channels written in"
            f" {time.perf_counter() - started:.1f} s"
        )
        scale.build_indexes(cursor)
    return tenant, [c.pk for c in channels]


def set_layout(vector: str, tsvector: str) -> dict[str, Any]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            f"ALTER TABLE retrieval_chunk ALTER COLUMN embedding SET STORAGE {vector}, "
            f"ALTER COLUMN search_vector SET STORAGE {tsvector}"
        )
        started = time.perf_counter()
        # every row written again, under this layout
        cursor.execute("VACUUM FULL ANALYZE retrieval_chunk")
        rewrite_s = time.perf_counter() - started
        cursor.execute(
            "SELECT count(*), count(pg_column_toast_chunk_id(embedding)), "
            "count(pg_column_toast_chunk_id(search_vector)), pg_table_size('retrieval_chunk'), "
            "pg_relation_size('retrieval_chunk') FROM retrieval_chunk"
        )
        rows, vectors_apart, tsvectors_apart, table, heap = cursor.fetchone()
    return {
        "vectors apart": f"{vectors_apart / rows:.0%}",
        "tsvectors apart": f"{tsvectors_apart / rows:.0%}",
        "heap MB": round(heap / 2**20),
        "heap + TOAST MB": round(table / 2**20),
        "rewrite s": round(rewrite_s, 1),
    }


def measure(
    tenant: Any, channel_ids: list[int], questions: list[tuple[int, str, list[float]]]
) -> dict[str, Any]:
    from accounts.models import Channel
    from retrieval.search import hybrid_search

    workspace_id = Channel.objects.get(pk=channel_ids[0]).workspace_id
    out = {}
    for name, options in MODES.items():
        for h, question, vector in questions[:5]:  # warm the caches the layout's rows go through
            hybrid_search(
                tenant_id=tenant.pk,
                query=question,
                query_embedding=vector,
                scope="channel",
                channel_ids=[channel_ids[h]],
                workspace_ids=[workspace_id],
                top_k=10,
                counts_as_use=False,
                **options,
            )
        times = []
        for h, question, vector in questions:
            started = time.perf_counter()
            hybrid_search(
                tenant_id=tenant.pk,
                query=question,
                query_embedding=vector,
                scope="channel",
                channel_ids=[channel_ids[h]],
                workspace_ids=[workspace_id],
                top_k=10,
                counts_as_use=False,
                **options,
            )
            times.append(1000 * (time.perf_counter() - started))
        times.sort()
        out[name] = (
            round(statistics.median(times), 1),
            round(times[int(0.95 * (len(times) - 1))], 1),
        )
    return out


def main() -> None:
    args = parse_args()
    from search import setup_django

    setup_django(args.db)
    from django.db import connection

    from retrieval.query_embedding import embed_query

    conversations = load(DATA_DIR / "longmemeval_s_dev60.jsonl.gz", args.limit)
    connection.creation.create_test_db(
        verbosity=0, autoclobber=not args.keepdb, keepdb=args.keepdb, serialize=False
    )
    from accounts.models import Channel, Tenant

    existing = Tenant.objects.filter(name="layout").first()
    if existing is not None and args.keepdb:
        tenant = existing
        channel_ids = list(
            Channel.objects.filter(workspace__tenant=tenant)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        print("reusing the kept table")
    else:
        tenant, channel_ids = build(conversations, args.sample)
    asked = [(h, q["question"]) for h, conv in enumerate(conversations) for q in conv["questions"]][
        : args.queries
    ]
    questions = [(h, text, embed_query(text)) for h, text in asked]
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in LAYOUTS}
    for _ in range(args.rounds):
        for name, (vector, tsvector) in LAYOUTS.items():
            layout = set_layout(vector, tsvector)
            results[name].append({**layout, **measure(tenant, channel_ids, questions)})
            print(name, results[name][-1], flush=True)
    # the migration's, as a kept database should be
    set_layout(*LAYOUTS["0012 (vector PLAIN, tsvector MAIN)"])
    print(
        f"\nin process, by channel, {len(questions)} questions, p50 / p95 ms (each round after a"
        " VACUUM FULL):"
    )
    print(
        "| layout | round | vectors apart | tsvectors apart | heap / with TOAST MB | hybrid | text"
        " | vector |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, rounds in results.items():
        for i, r in enumerate(rounds, start=1):
            print(
                f"| {name} | {i} | {r['vectors apart']} | {r['tsvectors apart']} | {r['heap MB']} /"
                f" {r['heap + TOAST MB']} | "
                + " | ".join(f"{r[m][0]} / {r[m][1]}" for m in MODES)
                + " |"
            )
    if not args.keepdb:
        connection.creation.destroy_test_db(connection.settings_dict["NAME"], verbosity=0)


if __name__ == "__main__":
    main()
