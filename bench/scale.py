"""Building blocks of the scale benches (bench/search.py --chunks N, bench/tenants.py):
embedding-like vectors without a model per row, a bulk loader, index builds with their time and
size, and the recall of HNSW candidates against exact search.

Vectors. Every unique LoCoMo turn is embedded once with the real MiniLM (cached in
bench/results/cache/). Row r carries turn i = r mod U (U = 5,882 unique turns) and, for the first
copy of each turn, exactly its embedding. The other copies get, by --vectors:
- "blend" (the scale curve's): normalise(a·e_i + b·e_j + c·e_k + noise), j and k two random other
  turns, (a, b, c) Dirichlet(1, 1, 1) sorted so that a, the own turn's share, is the largest, and
  noise N(0, 0.01) per dimension. Vectors fill the span of real sentence embeddings (the cone
  MiniLM's outputs occupy, not random directions) without piling up around the 5,882 originals:
  at 1M rows a query's neighbourhood is not 170 near-copies of one sentence, which no real
  memory holds and which makes "the 100 nearest" a draw among near-ties;
- "mixed": normalise(e_i + w·e_j + noise), w uniform in [0.2, 0.5]: every copy close to its own
  turn (cosine ≈ 0.9–0.97), so 1M rows are 170 tight variants of each turn;
- "perturbed": run F's data, e_i + N(0, 0.01): tighter clusters of near-copies still.
Nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

CACHE = Path(__file__).resolve().parent / "results" / "cache"
BATCH = 50_000  # rows per COPY statement (each one fires the statistics triggers once)
COLUMNS = (
    "tenant_id, kind, source_id, session_id, workspace_id, channel_id, tier, lifetime, user_id,"
    " role, agent, tags, sequence_start, sequence_end, text, context, content_hash, metadata,"
    " importance, created_at, indexed_at, embedding, embedding_model, embedding_error,"
    " embedding_attempts"
)


def base_vectors(turns: list[str]) -> np.ndarray:
    """The real embedding of every unique turn (float32, unit length), cached by text."""
    from retrieval.embedders import get_embedder
    from retrieval.query_embedding import query_encoder

    embedder = get_embedder()
    digest = hashlib.sha256(("\n".join(turns) + embedder.name).encode()).hexdigest()[:12]
    path = CACHE / f"turns-{digest}.npy"
    if path.exists():
        return np.load(path)
    started = time.perf_counter()
    # ONNX when prepared: the same vectors as torch (cosine ≥ 0.999), faster
    encoder = query_encoder()
    vectors = (
        encoder.encode(turns)
        if encoder is not None
        else np.asarray(embedder.embed(turns), np.float32)
    )
    vectors = np.asarray(vectors, dtype=np.float32)
    print(f"embedded {len(turns)} unique texts in {time.perf_counter() - started:.1f} s")
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


class VectorMaker:
    """The vector of row r (see the module's docstring), reproducible from the seed."""

    def __init__(self, base: np.ndarray, kind: str = "mixed", seed: int = 7) -> None:
        self.base, self.kind = base, kind
        self.rng = np.random.default_rng(seed)

    def block(self, start: int, count: int) -> np.ndarray:
        n_base, dims = self.base.shape
        rows = np.arange(start, start + count)
        out = self.base[rows % n_base].copy()
        copies = rows >= n_base
        k = int(copies.sum())
        if k:
            noise = self.rng.normal(0, 0.01, (k, dims)).astype(np.float32)
            if self.kind == "blend":
                shares = -np.sort(
                    -self.rng.dirichlet((1.0, 1.0, 1.0), k).astype(np.float32), axis=1
                )
                others = self.base[self.rng.integers(0, n_base, (k, 2))]
                out[copies] = (
                    shares[:, :1] * out[copies]
                    + shares[:, 1:2] * others[:, 0]
                    + shares[:, 2:] * others[:, 1]
                    + noise
                )
            elif self.kind == "mixed":
                other = self.base[self.rng.integers(0, n_base, k)]
                weight = self.rng.uniform(0.2, 0.5, (k, 1)).astype(np.float32)
                out[copies] += weight * other + noise
            else:
                out[copies] += noise
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def vector_text(vector: np.ndarray) -> str:
    return "[" + ("%.5f," * len(vector))[:-1] % tuple(vector.tolist()) + "]"


def copy_rows(cursor: Any, rows: list[tuple[Any, ...]]) -> None:
    with cursor.cursor.copy(f"COPY retrieval_chunk ({COLUMNS}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def chunk_row(
    *,
    tenant_id: int,
    session_id: int | None,
    workspace_id: int,
    channel_id: int | None,
    user_id: str,
    sequence: int | None,
    text: str,
    digest: str,
    vector: np.ndarray,
    model: str,
    kind: str = "event",
    tier: str = "conversation",
) -> tuple[Any, ...]:
    """A message's chunk by default; `kind` "note" with `tier` "account" and no session or
    channel: shared knowledge."""
    return (
        tenant_id,
        kind,
        "" if kind == "event" else digest[-12:],
        session_id,
        workspace_id,
        channel_id,
        tier,
        "conversation" if kind == "event" else "long_term",
        user_id,
        "user" if kind == "event" else "",
        "",
        "{}",
        sequence,
        sequence,
        text,
        "",
        digest,
        '{"schema_version": 1}',
        0.5,
        "2024-01-01T00:00:00Z",
        "2024-01-01T00:00:00Z",
        vector_text(vector),
        model,
        "",
        1,
    )


def drop_search_indexes(cursor: Any) -> None:
    """Bulk loads go faster without the HNSW and GIN indexes; build_indexes makes them again."""
    cursor.execute("DROP INDEX IF EXISTS chunk_embedding_hnsw")
    cursor.execute("DROP INDEX IF EXISTS chunk_search_vector")


def build_indexes(cursor: Any, maintenance_mb: int = 2048) -> dict[str, Any]:
    """The HNSW and GIN indexes as the model defines them (retrieval.models.Chunk), built after
    loading; their build times and sizes, and the table's."""
    from django.db import connection

    from retrieval.models import Chunk

    indexes = {index.name: index for index in Chunk._meta.indexes}
    out: dict[str, Any] = {}
    cursor.execute(f"SET maintenance_work_mem = '{maintenance_mb}MB'")
    cursor.execute("SET max_parallel_maintenance_workers = 1")
    started = time.perf_counter()
    with connection.schema_editor(atomic=False) as editor:
        editor.add_index(Chunk, indexes["chunk_search_vector"])
    out["gin_build_s"] = round(time.perf_counter() - started, 1)
    started = time.perf_counter()
    with connection.schema_editor(atomic=False) as editor:
        editor.add_index(Chunk, indexes["chunk_embedding_hnsw"])
    out["hnsw_build_s"] = round(time.perf_counter() - started, 1)
    from retrieval.termstats import compact

    started = time.perf_counter()
    compact()  # what the running service does every 30 s: one statistics row per key
    out["statistics_compact_s"] = round(time.perf_counter() - started, 1)
    cursor.execute("VACUUM ANALYZE retrieval_chunk")
    cursor.execute("VACUUM FULL ANALYZE retrieval_termstat")  # the size a compacted table has
    cursor.execute("VACUUM FULL ANALYZE retrieval_scopesize")
    cursor.execute(
        "SELECT pg_table_size('retrieval_chunk'), pg_relation_size('chunk_embedding_hnsw'), "
        "pg_relation_size('chunk_search_vector'), pg_total_relation_size('retrieval_termstat') "
        "+ pg_total_relation_size('retrieval_scopesize')"
    )
    table, hnsw, gin, stats = cursor.fetchone()
    out.update(
        table_mb=round(table / 2**20),
        hnsw_mb=round(hnsw / 2**20),
        gin_mb=round(gin / 2**20),
        statistics_mb=round(stats / 2**20),
    )
    print("indexes:", out)
    return out


def recall(
    cursor: Any,
    tenant_id: int,
    model: str,
    queries: list[np.ndarray],
    where: str = "c.tenant_id = %s",
    params: list[Any] | None = None,
    ef_values: tuple[int, ...] = (40, 100, 200, 400),
    limit: int = 100,
) -> dict[str, Any]:
    """Recall@10 and @limit of the HNSW candidate query (ordered by the index, as search's HNSW
    branch) against exact search (the same query with the index made unusable), per ef_search,
    with the HNSW query's p50/p95 in ms."""
    from django.db import transaction

    params = [tenant_id] if params is None else params
    base = (
        f"SELECT c.id FROM retrieval_chunk c WHERE {where} AND c.embedding IS NOT NULL "
        "AND c.embedding_model = %s ORDER BY {order} LIMIT %s"
    )
    texts = [vector_text(q) for q in queries]
    exact = []
    for text in texts:  # "+ 0": the ORDER BY no longer matches the index, so every row is compared
        cursor.execute(
            base.format(order="(c.embedding <=> %s::halfvec) + 0"), [*params, model, text, limit]
        )
        exact.append([r[0] for r in cursor.fetchall()])
    out: dict[str, Any] = {}
    for ef in ef_values:
        hits10, hits_all, times = [], [], []
        for text, truth in zip(texts, exact, strict=True):
            with transaction.atomic():
                cursor.execute(f"SET LOCAL hnsw.ef_search = {ef}")
                started = time.perf_counter()
                cursor.execute(
                    base.format(order="c.embedding <=> %s::halfvec"), [*params, model, text, limit]
                )
                found = [r[0] for r in cursor.fetchall()]
                times.append(1000 * (time.perf_counter() - started))
            hits10.append(len(set(found[:10]) & set(truth[:10])) / max(1, min(10, len(truth))))
            hits_all.append(len(set(found) & set(truth)) / max(1, len(truth)))
        out[f"ef{ef}"] = {
            "recall@10": round(statistics.mean(hits10), 4),
            f"recall@{limit}": round(statistics.mean(hits_all), 4),
            "p50_ms": round(statistics.median(times), 2),
            "p95_ms": round(sorted(times)[int(0.95 * (len(times) - 1))], 2),
        }
    print("recall:", out)
    return out


def load_average() -> list[float]:
    """The machine's 1, 5 and 15 minute load averages (other work shares the two cores)."""
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
