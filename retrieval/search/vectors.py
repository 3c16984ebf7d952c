"""The candidates' embeddings in Python: cosines to the query, pseudo-relevance feedback and the
pair similarities MMR and dedup use, from the vectors the candidate query already returned.

Each of these was a SQL statement of its own (1–2 ms each at 100k chunks); on ≤ 200 candidates
of 384 dimensions numpy does them in microseconds. The arithmetic follows pgvector's: vectors are
stored as halfvec (float16) and compared in float32, and the query and the feedback-moved query
are rounded to float16 as the `::halfvec` casts did.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from retrieval.search.rerank import DEDUP_COSINE, PairSimilarities

HALFVEC_HEADER = 4  # halfvec_send: int16 dimensions, int16 unused, then big-endian float16s


def decode_halfvec(raw: bytes | memoryview) -> np.ndarray:
    """A halfvec in its binary form (halfvec_send) as float32."""
    return np.frombuffer(raw, dtype=">f2", offset=HALFVEC_HEADER).astype(np.float32)


def decode_halfvecs(raws: list[bytes], dimensions: int) -> np.ndarray:
    """Many halfvecs of one width at once: one array, one conversion (a row per vector)."""
    if not raws:
        return np.zeros((0, dimensions), np.float32)
    width = HALFVEC_HEADER // 2 + dimensions  # in float16 slots, the header included
    packed = np.frombuffer(b"".join(raws), dtype=">f2").reshape(len(raws), width)
    return packed[:, HALFVEC_HEADER // 2 :].astype(np.float32)


def as_halfvec(vector: list[float] | np.ndarray) -> np.ndarray:
    """What `::halfvec` makes of a vector: float16 precision, computed on in float32."""
    return np.asarray(vector, dtype=np.float32).astype(np.float16).astype(np.float32)


class CandidateVectors:
    """The embedded candidates' vectors, one row per id (candidates without one are absent)."""

    def __init__(self, ids: list[int], matrix: np.ndarray) -> None:
        self.ids = ids
        # Each split candidate's best sentence's cosine to the query (sql.best_sentences): a
        # candidate scores the higher of it and its own (cosines).
        self.sentences: dict[int, float] = {}
        self.row = {pk: i for i, pk in enumerate(ids)}
        self.matrix = matrix

    @cached_property
    def unit(self) -> np.ndarray:
        """The vectors scaled to length 1, on first use: a hybrid search's two candidate pools are
        merged into a third before any cosine is taken."""
        norms = np.linalg.norm(self.matrix, axis=1, keepdims=True)
        # A zero vector has no direction: pgvector's cosine gives NaN, which never ranks; so does
        # this.
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.matrix / norms

    @classmethod
    def of(cls, vectors: dict[int, np.ndarray]) -> CandidateVectors:
        ids = list(vectors)
        matrix = np.stack([vectors[pk] for pk in ids]) if ids else np.zeros((0, 0), np.float32)
        return cls(ids, matrix)

    def cosines(self, query: np.ndarray) -> dict[int, float]:
        """Cosine similarity of every candidate with a vector to `query` (1 − pgvector's <=>),
        or its best sentence's to the search's query when that is higher (`sentences`; the same
        for the feedback-moved query: the sentences were compared with the query as asked)."""
        if not self.ids:
            return {}
        with np.errstate(invalid="ignore", divide="ignore"):
            sims = self.unit @ (query / np.linalg.norm(query))
        # s != s: NaN
        out = {pk: s for pk, s in zip(self.ids, sims.tolist(), strict=True) if s == s}
        for pk, best in self.sentences.items():
            if pk in out and best > out[pk]:
                out[pk] = best
        return out

    def feedback(self, query: np.ndarray, top_ids: list[int], weight: float) -> dict[int, float]:
        """Rocchio: cosines to the query moved `weight` × the mean vector of `top_ids` (those
        with a vector). Empty when none of them has one, as the SQL it replaces."""
        rows = [self.row[pk] for pk in top_ids if pk in self.row]
        if not rows:
            return {}
        moved = as_halfvec(query) + weight * self.matrix[rows].mean(axis=0)
        return self.cosines(as_halfvec(moved))

    def pairs(self, ids: list[int]) -> PairSimilarities:
        """Cosine of every pair (low id, high id) of `ids` that both have a vector."""
        present, sims = self.cosine_matrix(ids)
        if len(present) < 2:
            return {}
        upper_i, upper_j = np.triu_indices(len(present), k=1)
        values = sims[upper_i, upper_j].tolist()
        return {
            (present[i], present[j]): s
            for i, j, s in zip(upper_i.tolist(), upper_j.tolist(), values, strict=True)
            if s == s
        }

    def cosine_matrix(self, ids: list[int]) -> tuple[list[int], np.ndarray]:
        """The ids of `ids` that have a vector, ascending, and the matrix of their cosines."""
        present = sorted(pk for pk in set(ids) if pk in self.row)
        if len(present) < 2:
            return present, np.zeros((len(present), len(present)), np.float32)
        block = self.unit[[self.row[pk] for pk in present]]
        return present, block @ block.T


def near_duplicate_pairs(vectors: CandidateVectors, ids: list[int]) -> set[tuple[int, int]]:
    """Pairs (low id, high id) of `ids` whose vectors have cosine > DEDUP_COSINE (few: only those
    are made pairs of, not all of them)."""
    present, sims = vectors.cosine_matrix(ids)
    # NaN (a zero vector) is never above
    upper_i, upper_j = np.nonzero(np.triu(sims > DEDUP_COSINE, k=1))
    return {
        (present[i], present[j]) for i, j in zip(upper_i.tolist(), upper_j.tolist(), strict=True)
    }
