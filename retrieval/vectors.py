"""Which vectors the halfvec columns can hold and cosine distance can rank.

halfvec stores IEEE half precision: a magnitude above 65504 does not fit (pgvector raises an
overflow), and one below 2^-25 rounds to zero. A vector whose every component rounds to zero has
no direction: its cosine to anything is NaN, which sorts first in PostgreSQL and cannot be rendered
as JSON. Vectors from the client (a search's query_embedding, an import file) are checked here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

HALF_MAX = 65504.0
# The smallest half-precision subnormal is 2^-24; anything at or below half of it rounds to zero.
HALF_ZERO = 2.0**-25


def out_of_range(values: Sequence[float]) -> bool:
    return not all(math.isfinite(v) and abs(v) <= HALF_MAX for v in values)


def is_zero(values: Sequence[float]) -> bool:
    return not any(abs(v) > HALF_ZERO for v in values)


def vector_problem(values: Sequence[float]) -> str | None:
    """Why `values` cannot be stored or ranked as a halfvec, or None when it can."""
    if out_of_range(values):
        return f"every component must be a finite number of magnitude at most {HALF_MAX:g}"
    if is_zero(values):
        return "the vector is zero (in half precision): it has no direction to compare"
    return None
