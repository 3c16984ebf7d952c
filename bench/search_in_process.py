"""bench/search.py's figures without the server: the query embedding and the statements one search
issues, re-run alone (the floor the HTTP figures are compared against), HNSW recall against exact
search, and background embedding throughput against the raw model."""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from search import MODES, summary  # noqa: E402

from bench.common import cpu_seconds  # noqa: E402


def measure_in_process(tenant: Any, questions: list[str]) -> dict[str, Any]:
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    from retrieval.query_embedding import embed_query, query_encoder
    from retrieval.search import hybrid_search
    from retrieval.search.statements import select_binary_rows

    encoder = query_encoder()
    print(
        "query embedder:",
        f"ONNX Runtime, {encoder.filename}"
        if encoder is not None  # type: ignore[attr-defined]
        else "the configured embedder (torch)",
    )
    embed_ms = []
    cpu_before = time.process_time()
    for q in questions:  # the query path the web workers use
        started = time.perf_counter()
        embed_query(q)
        embed_ms.append(1000 * (time.perf_counter() - started))
    embed_cpu_ms = 1000 * (time.process_time() - cpu_before) / len(questions)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    out: dict[str, Any] = {
        "embedding": summary(embed_ms),
        "embedding_cpu_ms": round(embed_cpu_ms, 2),
    }
    for name, options in MODES.items():
        raw_ms, call_ms = [], []
        # this process (the driver) and its PostgreSQL backend, over the statements alone
        raw_cpu = 0.0
        for q in questions:
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                hybrid_search(tenant_id=tenant.pk, query=q, top_k=10, **options)
                call_ms.append(1000 * (time.perf_counter() - started))
            statements = [
                (c["sql"], c.get("binary", False))
                for c in captured.captured_queries
                if not c["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT", "BEGIN", "COMMIT"))
            ]
            with transaction.atomic(), connection.cursor() as cursor:
                cpu_before = time.process_time() + cpu_seconds([backend])
                started = time.perf_counter()
                for sql, in_binary in statements:
                    if in_binary:  # as search fetches its candidates
                        select_binary_rows(sql, None)
                        continue
                    cursor.execute(sql)
                    if cursor.description:
                        cursor.fetchall()
                raw_ms.append(1000 * (time.perf_counter() - started))
                raw_cpu += time.process_time() + cpu_seconds([backend]) - cpu_before
        out[name] = {
            "raw_sql": summary(raw_ms),
            "in_process": summary(call_ms),
            "raw_sql_cpu_ms": round(1000 * raw_cpu / len(questions), 2),
        }
    return out


def measure_embedding_throughput(tenant: Any, turns: list[str], sample: int) -> dict[str, float]:
    from memoryhub.models import Session
    from retrieval.embedders import get_embedder
    from retrieval.embedding import backfill_embeddings
    from retrieval.models import Chunk

    random.seed(3)
    picks = random.sample(range(1, len(turns)), sample)
    texts = [turns[i] for i in picks]
    contexts = [turns[i - 1][:400] for i in picks]
    inputs = [f"{c}\n{t}" for c, t in zip(contexts, texts, strict=True)]
    from django.conf import settings

    from retrieval.embedding import BACKFILL_BATCH

    embedder = get_embedder()
    full = BACKFILL_BATCH  # the runtime the backfill's batches use, on every thread
    backend = embedder.backend(full)  # type: ignore[attr-defined]
    model = embedder._load(backend)  # type: ignore[attr-defined]
    started = time.perf_counter()
    if backend == "onnx":
        model.encode(inputs, workers=settings.MEMORYHUB_EMBED_THREADS)
    else:
        model.encode(inputs, normalize_embeddings=True, show_progress_bar=False)
    raw = sample / (time.perf_counter() - started)
    session = Session.objects.filter(tenant=tenant).first()
    rows = Chunk.objects.bulk_create(
        [
            Chunk(
                tenant=tenant,
                session=session,
                workspace_id=session.workspace_id,
                channel_id=session.channel_id,
                text=t,
                context=c,
                content_hash=f"tp{i}",
            )
            for i, (t, c) in enumerate(zip(texts, contexts, strict=True))
        ]
    )
    started = time.perf_counter()
    result = backfill_embeddings(tenant_id=tenant.pk, limit=sample)
    pipeline = result["embedded"] / (time.perf_counter() - started)
    Chunk.objects.filter(pk__in=[r.pk for r in rows]).delete()
    return {
        "raw_model_texts_per_s": round(raw, 1),
        "backfill_texts_per_s": round(pipeline, 1),
        "ratio": round(pipeline / raw, 3),
    }


def measure_recall(tenant: Any, questions: list[str], ef_values: tuple[int, ...]) -> dict[str, Any]:
    import numpy as np
    import scale
    from django.db import connection

    from retrieval.embedders import get_embedder
    from retrieval.query_embedding import embed_query

    vectors = [np.asarray(embed_query(q), dtype=np.float32) for q in questions]
    with connection.cursor() as cursor:
        return scale.recall(cursor, tenant.pk, get_embedder().name, vectors, ef_values=ef_values)
