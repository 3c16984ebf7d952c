"""Full text: the query's terms, their BM25 weights in scope, and the text candidates.

Full text ranks with BM25-style IDF weights over an OR of the query's lexemes: Postgres' own
ranking has no IDF, and an AND of every word of a natural-language question rarely matches
anything. Query text is never parsed as tsquery syntax, so no input can make it fail. Scope sizes
and document frequencies are read from the statistics indexing keeps (retrieval.termstats), in
the same statement that splits the query into lexemes: a search never counts.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from retrieval.search import fuzzy, weights
from retrieval.search.request import SearchRequest
from retrieval.search.sql import Source, row_tested, scans_scope
from retrieval.termstats import term_statistics

_OWN_LENGTH = "length(ts_filter(c.search_vector, '{a}'))"  # distinct lexemes of the chunk's own words
# Chunks of one message read to score it whole (per candidate): a pasted log of hundreds of chunks
# is scored on this many of them, so that its candidates cannot make a search read it all each.
MESSAGE_CHUNKS = 32
MATCH_BUDGET = 500  # chunks whose own words match, summed over the terms that select candidates
# Terms a candidate's said_sql reports (bits of a bigint); further terms of a long query still score.
SAID_BITS = 62
BM25_K1 = 1.2
BM25_B = 0.5
_WEBSEARCH_OPERATORS = re.compile(r'"|(^|\s)-\w|\sor\s', re.IGNORECASE)


def tsquery_literal(lexeme: str) -> str:
    """A lexeme quoted as a tsquery literal: query text is never parsed as tsquery syntax."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


@dataclass
class TextQuery:
    terms: list[tuple[str, float]]  # (tsquery literal, idf)
    strict: bool  # the query used websearch operators: require websearch_to_tsquery to match
    match_terms: list[str] = field(default_factory=list)  # the rarer terms that select candidates
    scope_size: int = 0  # chunks in scope (the kept statistics; every owner's)

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
        parts = " + ".join(f"(CASE WHEN {x} THEN %s::float8 WHEN c.search_vector @@ %s::tsquery THEN %s::float8 "
                           "ELSE 0::float8 END)" for x in said)
        params: list[Any] = [
            v for literal, idf in self.terms for v in (literal + ":A", idf, literal, idf * discount)
        ]
        norm = (f"({BM25_K1 + 1}::float8 / (1 + {BM25_K1}::float8 * (1 - {BM25_B}::float8 + {BM25_B}::float8 * "
                f"{length} / 12.0::float8)))")
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
        parts = " + ".join(f"(CASE WHEN {x} THEN {1 << i} ELSE 0 END)"
                           for i, x in enumerate(self._said(per_message)[:SAID_BITS]))
        return f"({parts})::bigint", [literal + ":A" for literal, _ in self.terms[:SAID_BITS]]

    def _said(self, per_message: bool) -> list[str]:
        """Per term, whether the chunk's own words say it (or its message's, `per_message`: the
        columns of `message_sql`, joined as m); each takes the term's literal with weight A."""
        if per_message:
            return [f"(coalesce(m.p{i}, false) OR c.search_vector @@ %s::tsquery)" for i in range(len(self.terms))]
        return ["c.search_vector @@ %s::tsquery"] * len(self.terms)

    def message_sql(self) -> tuple[str, list[Any]]:
        """A LATERAL join (m) over the message a candidate chunk is text of (every chunk of its
        event): the message's length in own lexemes (m.len) and, per term, whether any of its
        chunks says it (m.p0, m.p1, …), over at most MESSAGE_CHUNKS of them. NULLs for a chunk of
        anything but an event, and for the one chunk of a message (its own words are its message's:
        no sibling is looked up)."""
        said = ", ".join(f"bool_or(s.search_vector @@ %s::tsquery) AS p{i}" for i in range(len(self.terms)))
        sql = (f"LEFT JOIN LATERAL (SELECT sum(length(ts_filter(s.search_vector, '{{a}}'))) AS len, {said} "
               "FROM (SELECT s.search_vector FROM retrieval_chunk s WHERE c.kind = 'event' AND c.message_chunks > 1 "
               "AND s.session_id = c.session_id "
               f"AND s.kind = 'event' AND s.sequence_start = c.sequence_start LIMIT {MESSAGE_CHUNKS}) s) m ON true")
        return sql, [literal + ":A" for literal, _ in self.terms]

    def match_sql(self, query: str) -> tuple[str, list[Any]]:
        own_words_only = weights.TEXT_CONTEXT_WEIGHT <= 0.0
        literals = [literal + (":A" if own_words_only else "") for literal in self.match_terms]
        sql = "c.search_vector @@ %s::tsquery"
        params: list[Any] = [" | ".join(literals)]
        if self.strict:
            # Phrases and exclusions are about the chunk's own words, not its context.
            sql += " AND ts_filter(c.search_vector, '{a}') @@ websearch_to_tsquery('pg_catalog.english', %s)"
            params.append(query)
        return sql, params


def build_text_query(req: SearchRequest, where: str, params: list[Any]) -> TextQuery:
    """The query's terms weighted by their IDF in scope (from the kept term statistics), and the
    closest words of the scope for those it does not say (typo tolerance: fuzzy.py; `where` is the
    search's WHERE clause, which those words must be visible under)."""
    lexemes, frequencies, size = term_statistics(req)
    if not lexemes:
        return TextQuery([], False)
    literals = [tsquery_literal(x) for x in lexemes]
    by_literal = {tsquery_literal(x): frequencies[x] for x in lexemes}
    total = max(size, *by_literal.values(), 1)
    terms = weigh_terms(literals, by_literal, total)
    if req.mode == "fuzzy" or weights.FUZZY:
        terms += alternative_terms(fuzzy.alternatives(req, frequencies, where, params, every_word=req.mode == "fuzzy",
                                                     scope_size=size),
                                   {t for t, _, _ in terms}, total)
    return TextQuery([(t, idf) for t, idf, _ in terms], bool(_WEBSEARCH_OPERATORS.search(req.query)),
                     select_match_terms(terms), size)


def alternative_terms(found: dict[str, list[fuzzy.Alternative]], present: set[str],
                      total: int) -> list[tuple[str, float, int]]:
    """The alternatives as terms: each its own IDF times its similarity to the word it stands
    for (a guessed word weighs less than a word the query says), once each."""
    terms: list[tuple[str, float, int]] = []
    for alternatives in found.values():
        for alt in alternatives:
            literal = tsquery_literal(alt.lexeme)
            if literal in present:
                continue
            present.add(literal)
            idf = math.log(1 + (total - alt.df + 0.5) / (alt.df + 0.5))
            terms.append((literal, idf * alt.similarity, alt.df))
    return terms


def weigh_terms(literals: list[str], frequencies: dict[str, int], total: int) -> list[tuple[str, float, int]]:
    """(literal, BM25 IDF, document frequency) of each term that some chunk in scope says, in
    query order; `total` is the number of chunks in scope."""
    terms: list[tuple[str, float, int]] = []
    for literal in literals:
        df = frequencies[literal]
        if df:
            terms.append((literal, math.log(1 + (total - df + 0.5) / (df + 0.5)), df))
    return terms


def select_match_terms(terms: list[tuple[str, float, int]]) -> list[str]:
    """The rarest terms, up to a budget of matching chunks, select the candidates.

    Scoring every chunk that contains a common word costs more than it finds: a chunk holding
    only common words rarely outranks one that holds a rare word. Candidates are still scored on
    every term, and the vector side brings its own.
    """
    chosen: list[str] = []
    matched = 0
    for literal, _, df in sorted(terms, key=lambda t: t[2]):
        if chosen and matched + df > MATCH_BUDGET:
            break
        chosen.append(literal)
        matched += df
    return chosen


def text_source(req: SearchRequest, tq: TextQuery, where: str, params: list[Any], limit: int,
                owner_parts: list[Source] | None = None) -> Source | None:
    """The best `limit` text matches in scope, by BM25 score, then the newer first.

    The full-text index finds a term's chunks in the whole table, every tenant's, before the
    scope narrows them: for a common word that is most of the statement's time. A scope under
    sql.TEXT_SCAN_BELOW chunks (a channel, a small tenant) is read through its own indexes
    instead and each of its rows tested, the match written so that the full-text index cannot
    serve it (`IS TRUE`).

    A user's view comes as `owner_parts` (engine.owner_parts: their memories, and the shared ones
    when the scope has any): each half is searched on its own and the best of both kept, the same
    rows as one search over their OR. The planner reads a user's own rows through the (tenant,
    user) index; their OR it estimates from the table-wide share of shared rows and reads the
    whole tenant's (bench/README.md, stop 28: 3.3 of 9 ms for a user among a 50k tenant).
    """
    if not tq.terms:
        return None
    score, score_params = tq.score_sql()
    match, match_params = tq.match_sql(req.query)
    if scans_scope(tq.scope_size):
        match = row_tested(match)
    if owner_parts is None:
        sql = (
            f"SELECT c.id FROM retrieval_chunk c WHERE {where} AND {match} "
            f"ORDER BY {score} DESC, c.created_at DESC LIMIT %s"
        )
        return sql, [*params, *match_params, *score_params, limit]
    halves = [
        (f"(SELECT c.id, {score} AS s, c.created_at AS t FROM retrieval_chunk c WHERE {part} AND {match} "
         "ORDER BY 2 DESC, 3 DESC LIMIT %s)", [*score_params, *part_params, *match_params, limit])
        for part, part_params in owner_parts
    ]
    sql = (f"SELECT h.id FROM ({' UNION ALL '.join(sql for sql, _ in halves)}) AS h "
           "ORDER BY h.s DESC, h.t DESC LIMIT %s")
    return sql, [*(value for _, values in halves for value in values), limit]
