"""A text query: its terms with their BM25 weights, and the SQL that scores a candidate on them.

fulltext.py builds one from the query and the scope's term statistics and selects the text
candidates with it; the candidate statement (sql.fetch_candidates) scores every candidate on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from retrieval.search import weights

# distinct lexemes of the chunk's own words
_OWN_LENGTH = "length(ts_filter(c.search_vector, '{a}'))"
# Chunks of one message read to score it whole (per candidate): a pasted log of hundreds of chunks
# is scored on this many of them, so that its candidates cannot make a search read it all each.
MESSAGE_CHUNKS = 32
# Terms a candidate's said_sql reports (bits of a bigint); further terms of a long query still
# score.
SAID_BITS = 62
BM25_K1 = 1.2
BM25_B = 0.5


@dataclass
class TextQuery:
    terms: list[tuple[str, float]]  # (tsquery literal, idf)
    strict: bool  # the query used websearch operators: require websearch_to_tsquery to match
    match_terms: list[str] = field(default_factory=list)  # the rarer terms that select candidates
    scope_size: int = 0  # chunks in scope (the kept statistics; every owner's)
    read_size: int = 0  # chunks the search reads (statistics.TermStatistics.read_size)
    match_all: bool = False  # a candidate says every match term, not one (fulltext.pair_terms)

    def score_sql(self, *, per_message: bool = False) -> tuple[str, list[Any]]:
        """BM25 with tf = 1 (chunks are short): Σ idf · (k1+1) / (1 + k1·(1 − b + b·len/avg)).

        A word found only in the chunk's conversation context (weight D) counts at a discount.
        `per_message`: the words and length are those of the chunk's whole message (the columns of
        `message_sql`, joined as m), plus a thousandth of the chunk's own score, so that among the
        chunks of one message the one that says the words ranks first.
        """
        if not self.terms:
            return "0.0", []
        discount = float(weights.TEXT_CONTEXT_WEIGHT)
        said = self._said(per_message)
        length = f"coalesce(m.len, {_OWN_LENGTH})" if per_message else _OWN_LENGTH
        # float8 throughout: the weights as written were numeric, whose arithmetic cost ~1 ms more
        # a candidate statement at 100k chunks (bench/README.md, stop 35), for the same order.
        parts = " + ".join(
            f"(CASE WHEN {x} THEN %s::float8 WHEN c.search_vector @@ %s::tsquery THEN %s::float8 "
            "ELSE 0::float8 END)"
            for x in said
        )
        params: list[Any] = [
            v for literal, idf in self.terms for v in (literal + ":A", idf, literal, idf * discount)
        ]
        norm = (
            f"({BM25_K1 + 1}::float8 / (1 + {BM25_K1}::float8 * (1 - {BM25_B}::float8 +"
            f" {BM25_B}::float8 * {length} / 12.0::float8)))"
        )
        sql = f"(({parts}) * {norm})"
        if per_message:
            own, own_params = self.score_sql()
            sql, params = f"({sql} + 0.001 * {own})", [*params, *own_params]
        return sql, params

    def said_sql(self, *, per_message: bool = False) -> tuple[str, list[Any]]:
        """A bigint whose bit i is set when the candidate's own words (its whole message's, with
        `per_message`) say term i, for the first SAID_BITS terms: which of the query's words each
        conversation says, across its messages (rerank.conversation_words)."""
        if not self.terms:
            return "0", []
        parts = " + ".join(
            f"(CASE WHEN {x} THEN {1 << i} ELSE 0 END)"
            for i, x in enumerate(self._said(per_message)[:SAID_BITS])
        )
        return f"({parts})::bigint", [literal + ":A" for literal, _ in self.terms[:SAID_BITS]]

    def _said(self, per_message: bool) -> list[str]:
        """Per term, whether the chunk's own words say it (or its message's, `per_message`: the
        columns of `message_sql`, joined as m); each takes the term's literal with weight A."""
        if per_message:
            return [
                f"(coalesce(m.p{i}, false) OR c.search_vector @@ %s::tsquery)"
                for i in range(len(self.terms))
            ]
        return ["c.search_vector @@ %s::tsquery"] * len(self.terms)

    def message_sql(self) -> tuple[str, list[Any]]:
        """A LATERAL join (m) over the message a candidate chunk is text of (every chunk of its
        event): the message's length in own lexemes (m.len) and, per term, whether any of its
        chunks says it (m.p0, m.p1, …), over at most MESSAGE_CHUNKS of them. NULLs for a chunk of
        anything but an event, and for the one chunk of a message (its own words are its message's:
        no sibling is looked up)."""
        said = ", ".join(
            f"bool_or(s.search_vector @@ %s::tsquery) AS p{i}" for i in range(len(self.terms))
        )
        sql = (
            "LEFT JOIN LATERAL (SELECT sum(length(ts_filter(s.search_vector, '{a}'))) AS len,"
            f" {said} FROM (SELECT s.search_vector FROM retrieval_chunk s WHERE c.kind = 'event'"
            " AND c.message_chunks > 1 AND s.session_id = c.session_id AND s.kind = 'event' AND"
            f" s.sequence_start = c.sequence_start LIMIT {MESSAGE_CHUNKS}) s) m ON true"
        )
        return sql, [literal + ":A" for literal, _ in self.terms]

    def match_sql(self, query: str) -> tuple[str, list[Any]]:
        own_words_only = weights.TEXT_CONTEXT_WEIGHT <= 0.0
        literals = [literal + (":A" if own_words_only else "") for literal in self.match_terms]
        sql = "c.search_vector @@ %s::tsquery"
        params: list[Any] = [(" & " if self.match_all else " | ").join(literals)]
        if self.strict:
            # Phrases and exclusions are about the chunk's own words, not its context.
            sql += (
                " AND ts_filter(c.search_vector, '{a}') @@"
                " websearch_to_tsquery('pg_catalog.english', %s)"
            )
            params.append(query)
        return sql, params
