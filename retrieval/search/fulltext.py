"""Full text: the query's terms, their BM25 weights in scope, and the text candidates (the
query's scoring SQL is TextQuery's, textquery.py).

Full text ranks with BM25-style IDF weights over an OR of the query's lexemes: Postgres' own
ranking has no IDF, and an AND of every word of a natural-language question rarely matches
anything. Query text is never parsed as tsquery syntax, so no input can make it fail. Scope sizes
and document frequencies are read from the statistics indexing keeps (statistics.py), in
the same statement that splits the query into lexemes: a search never counts.
"""

from __future__ import annotations

import math
import re
from typing import Any

from retrieval.search import fuzzy, weights
from retrieval.search.request import SearchPlan, SearchRequest
from retrieval.search.sql import Source, row_tested, scans_scope
from retrieval.search.statistics import TermStatistics, term_statistics
from retrieval.search.textquery import TextQuery

MATCH_BUDGET = 500  # chunks whose own words match, summed over the terms that select candidates
# A hybrid search whose rarest word more than this many chunks of its read say takes as text
# candidates the chunks saying its two rarest words together (pair_terms).
PAIR_ABOVE = 5_000
_WEBSEARCH_OPERATORS = re.compile(r'"|(^|\s)-\w|\sor\s', re.IGNORECASE)


def tsquery_literal(lexeme: str) -> str:
    """A lexeme quoted as a tsquery literal: query text is never parsed as tsquery syntax."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def build_text_query(
    req: SearchRequest, plan: SearchPlan, *, with_vectors: bool = False
) -> TextQuery:
    """The query's terms weighted by their IDF in scope (from the kept term statistics), and the
    closest words of the scope for those it does not say (typo tolerance: fuzzy.py; they must be
    visible under the plan's WHERE clause). `with_vectors`: the nearest vectors are candidates
    too (hybrid search with its query vector), so the text side may select by two words together
    (pair_terms)."""
    where, params = plan.where
    stats = term_statistics(req, plan)
    lexemes, frequencies, size, read_size, _ = stats
    if not lexemes:
        return TextQuery([], False)
    literals = [tsquery_literal(x) for x in lexemes]
    by_literal = {tsquery_literal(x): frequencies[x] for x in lexemes}
    total = max(size, *by_literal.values(), 1)
    terms = weigh_terms(literals, by_literal, total)
    said = len(terms)  # the query's own words; typo alternatives follow
    if req.mode == "fuzzy" or weights.FUZZY:
        terms += alternative_terms(
            fuzzy.alternatives(
                req, frequencies, where, params, every_word=req.mode == "fuzzy", scope_size=size
            ),
            {t for t, _, _ in terms},
            total,
        )
    in_range = {tsquery_literal(x): n for x, n in (stats.range_counts or {}).items()}
    counted = [(t, idf, matches_in_read(df, in_range.get(t), stats)) for t, idf, df in terms]
    strict = bool(_WEBSEARCH_OPERATORS.search(req.query))
    # Two guesses at one mistyped word are never required together: only words it says pair. A
    # query with operators ("a phrase", -word) says which words must be there itself.
    paired = pair_terms(counted[:said], read_size) if with_vectors and not strict else []
    return TextQuery(
        [(t, idf) for t, idf, _ in terms],
        strict,
        paired or select_match_terms(counted),
        size,
        read_size,
        match_all=bool(paired),
    )


def alternative_terms(
    found: dict[str, list[fuzzy.Alternative]], present: set[str], total: int
) -> list[tuple[str, float, int]]:
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


def weigh_terms(
    literals: list[str], frequencies: dict[str, int], total: int
) -> list[tuple[str, float, int]]:
    """(literal, BM25 IDF, document frequency) of each term that some chunk in scope says, in
    query order; `total` is the number of chunks in scope."""
    terms: list[tuple[str, float, int]] = []
    for literal in literals:
        df = frequencies[literal]
        if df:
            terms.append((literal, math.log(1 + (total - df + 0.5) / (df + 0.5)), df))
    return terms


def matches_in_read(df: int, range_df: int | None, stats: TermStatistics) -> int:
    """About how many chunks of what the search reads say a term that `df` chunks of the
    statistics' scope say: the count the match budget spends (select_match_terms).

    A session's default read weighs its words by its channel's statistics but reads its owner's
    whole memory (TermStatistics.read_size), where a word rare in the channel may be common: the
    term's frequency in the whole range (`range_df`, TermStatistics.range_counts) counts instead;
    for a typo's alternative, known in the scope only, its frequency scaled to the read. Only where
    the read goes through the full-text index (sql.scans_scope false): a smaller read tests each
    of its rows anyway, and keeps the terms its statistics choose.
    """
    if stats.range_counts is None or scans_scope(stats.read_size):
        return df
    if range_df is not None:
        # never fewer than the scope counts: the range's buckets may leave out the account's
        # shared memories, which the scope's include
        return max(range_df, df)
    return math.ceil(df * stats.read_size / max(stats.size, 1))


def select_match_terms(terms: list[tuple[str, float, int]]) -> list[str]:
    """The rarest terms, up to a budget of matching chunks, select the candidates; `terms` are
    (literal, IDF, chunks of the read that say it: matches_in_read).

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


def pair_terms(terms: list[tuple[str, float, int]], read_size: int) -> list[str]:
    """The two rarest terms, which a hybrid search's text candidates must then both say, when the
    rarest alone is said by more than PAIR_ABOVE chunks of a read bigger than that and, were the
    two said independently of each other, at least weights.CANDIDATES chunks would say both;
    otherwise none (select_match_terms chooses). `terms` as select_match_terms takes them.

    Every chunk that says the rarest word is read and scored: at one user's million chunks, where
    18,000 said one question's rarest word, the text statement's p95 was 27 ms (bench/README.md).
    Among chunks saying one common word, BM25 tells them apart by length alone; the chunks that
    say two of the query's words rank above them anyway, and the vector side brings the rest. A text
    search (no vector side) still reads every chunk that says its rarest word.
    """
    if len(terms) < 2 or read_size <= PAIR_ABOVE:  # a small read: each row tested, no index read
        return []
    (first, _, most), (second, _, then) = sorted(terms, key=lambda t: t[2])[:2]
    if most <= PAIR_ABOVE or most * then / read_size < weights.CANDIDATES:
        return []
    return [first, second]


def text_source(
    req: SearchRequest,
    tq: TextQuery,
    where: str,
    params: list[Any],
    limit: int,
    owner_parts: list[Source] | None = None,
) -> Source | None:
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
    # every row the search reads must be few, not only the scope its statistics describe
    if scans_scope(max(tq.scope_size, tq.read_size)):
        match = row_tested(match)
    if owner_parts is None:
        sql = (
            f"SELECT c.id FROM retrieval_chunk c WHERE {where} AND {match} "
            f"ORDER BY {score} DESC, c.created_at DESC LIMIT %s"
        )
        return sql, [*params, *match_params, *score_params, limit]
    halves = [
        (
            (
                f"(SELECT c.id, {score} AS s, c.created_at AS t FROM retrieval_chunk c WHERE {part}"
                f" AND {match} ORDER BY 2 DESC, 3 DESC LIMIT %s)"
            ),
            [*score_params, *part_params, *match_params, limit],
        )
        for part, part_params in owner_parts
    ]
    sql = (
        f"SELECT h.id FROM ({' UNION ALL '.join(sql for sql, _ in halves)}) AS h "
        "ORDER BY h.s DESC, h.t DESC LIMIT %s"
    )
    return sql, [*(value for _, values in halves for value in values), limit]
