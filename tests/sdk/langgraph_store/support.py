"""What LangGraph's store tests build their stores with, adapted to a MemoryHubStore bound to the
live test server (conftest.py's fixtures fill _MAKE)."""
# Part of LangGraph's store tests (libs/checkpoint-sqlite/tests/test_store.py), MIT licence, adapted
# where the store is built: see tests/sdk/langgraph_store/__init__.py.
import math
import random
from collections import Counter, defaultdict
from collections.abc import Generator, Iterable
from contextlib import contextmanager
from typing import Any, Literal

import pytest
from langchain_core.embeddings import Embeddings

pytest.importorskip("langgraph.store.base")
from memoryhub_client.langgraph import MemoryHubStore  # noqa: E402


# Local embeddings implementation for testing vector search
class CharacterEmbeddings(Embeddings):
    """Simple character-frequency based embeddings using random projections."""

    def __init__(self, dims: int = 50, seed: int = 42):
        """Initialize with embedding dimensions and random seed."""
        self._rng = random.Random(seed)
        self.dims = dims
        # Create projection vector for each character lazily
        self._char_projections: dict[str, list[float]] = defaultdict(
            lambda: [
                self._rng.gauss(0, 1 / math.sqrt(self.dims)) for _ in range(self.dims)
            ]
        )

    def _embed_one(self, text: str) -> list[float]:
        """Embed a single text."""
        counts = Counter(text)
        total = sum(counts.values())

        if total == 0:
            return [0.0] * self.dims

        embedding = [0.0] * self.dims
        for char, count in counts.items():
            weight = count / total
            char_proj = self._char_projections[char]
            for i, proj in enumerate(char_proj):
                embedding[i] += weight * proj

        norm = math.sqrt(sum(x * x for x in embedding))
        if norm > 0:
            embedding = [x / norm for x in embedding]

        return embedding

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed a list of documents."""
        return [self._embed_one(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        """Embed a query string."""
        return self._embed_one(text)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, CharacterEmbeddings) and self.dims == other.dims


_MAKE: dict[str, Any] = {}


class _ThroughAbatch(MemoryHubStore):
    """The async path under the sync tests: batch() runs abatch() with the AsyncMemoryHub."""

    runner: Any = None

    def batch(self, ops: Iterable[Any]) -> list[Any]:
        return self.runner.run(self.abatch(ops))


@contextmanager
def _memoryhub_store() -> Generator[MemoryHubStore, None, None]:
    yield _MAKE["store"]()


# Define vector types and distance types for parametrized tests
VECTOR_TYPES = ["cosine"]  # SQLite only supports cosine similarity


@contextmanager
def create_vector_store(
    fake_embeddings: CharacterEmbeddings,
    text_fields: list[str] | None = None,
    distance_type: str = "cosine",
    conn_type: Literal["memory", "file"] = "memory",
) -> Generator[MemoryHubStore, None, None]:
    """A MemoryHubStore (MemoryHub embeds on the server: the fake embeddings are not used)."""
    yield _MAKE["store"]()
