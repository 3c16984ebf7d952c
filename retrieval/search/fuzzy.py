"""Typo tolerance for full text, over the vocabulary the term statistics keep.

pg_trgm and fuzzystrmatch are not in the embedded PostgreSQL, and the kept statistics
(retrieval.termstats) already hold every lexeme a scope says, with its document frequency. A
query lexeme that the scope never says ("lisbn") is looked up among the scope's own lexemes:
those of about its length that start with its first letter, and, as pg_trgm has no favourite
letter (docs/ranking.md#typo-tolerance), those whose later letters start as the word's do after a
wrong or missing first letter ("kisbon", "isbon": "lisbon"); each a range of an index of the
statistics, bounded (MAX_CANDIDATES, MAX_TAIL_CANDIDATES rows). They are ranked by trigram
similarity as pg_trgm defines it (the shared share of the padded words' three-letter pieces). The
closest few join the query as alternatives to the word, each weighted by its own IDF times its
similarity, so an exact match of another query word still outranks a guessed one.

Only the scope's buckets are read (the same buckets as its document frequencies: the tenant's,
its workspaces' or channels'). The statistics do not know owners, and a bucket is wider than the
search's filters: so the closest lexemes are then checked against the search's own WHERE clause
(tenant, scope, ownership, filters), and only a lexeme that a chunk the searcher may see says in
its own words becomes an alternative. A typo never surfaces another tenant's or user's words,
nor pushes the searcher's own out of the few places.

A word is left alone when both of its first two letters are typos (no range reaches it), when
it is shorter than MIN_LENGTH (short words have too few pieces to compare), and, outside mode
"fuzzy", when the scope says it (df > 0): a correctly spelled query is searched exactly as before,
without the extra statement. Mode "fuzzy" also widens words the scope does say.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connection

from retrieval.search.request import SearchRequest
from retrieval.search.sql import row_tested, scans_scope
from retrieval.search.statistics import bucket_clause

MIN_LENGTH = 4  # shorter query lexemes are not corrected
MAX_WORDS = 8  # query lexemes looked up per search
LENGTH_SLACK = 2  # candidates are at most this many letters shorter or longer
VERIFIED = 8  # closest lexemes per word checked against the search's WHERE clause
# statistics rows read per word, in lexeme order (a bound on the cost, not a ranking)
MAX_CANDIDATES = 5000
# the same for each range of a wrong or missing first letter (two letters: narrower)
MAX_TAIL_CANDIDATES = 1000
SIMILARITY = 0.34  # the least trigram similarity of an alternative (pg_trgm's default is 0.3)
ALTERNATIVES = 3  # alternatives per word, the closest first


@dataclass(frozen=True)
class Alternative:
    lexeme: str
    similarity: float
    df: int  # document frequency in scope


def trigrams(word: str) -> set[str]:
    """pg_trgm's pieces of a word: two spaces before it, one after, every three letters."""
    padded = f"  {word} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


def similarity(a: str, b: str) -> float:
    """pg_trgm's similarity: shared pieces over all pieces of the two words."""
    return _similarity(trigrams(a), trigrams(b))


def _similarity(ta: set[str], tb: set[str]) -> float:
    shared = len(ta & tb)
    return shared / (len(ta) + len(tb) - shared) if ta and tb else 0.0


def correctable(lexeme: str) -> bool:
    return len(lexeme) >= MIN_LENGTH and lexeme[0].isalpha()


def _next_prefix(prefix: str) -> str:
    """The least string above every string starting with `prefix` (the range's end)."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def vocabulary_candidates(req: SearchRequest, words: list[str]) -> dict[str, dict[str, int]]:
    """Per word, the scope's lexemes of about its length that could be it misspelt, with their
    document frequencies in scope: one statement of bounded range scans per word (see ranges)."""
    buckets, bucket_params = bucket_clause(req)
    parts, params = [], []
    for word in words:
        for column, low, exclude, limit in ranges(word):
            # A range of an index of the statistics ((tenant, lexeme, ...) or (tenant, the lexeme
            # after its first letter)), rows past the bound unread; the ranges of a word are
            # disjoint (`exclude`: the first letter the first range covers), so no row counts twice.
            skip = "AND left(s.lexeme, 1) <> %s " if exclude else ""
            parts.append(
                "(SELECT %s::text, s.lexeme, s.n FROM retrieval_termstat s WHERE s.tenant_id = %s"
                f" AND {column} >= %s AND {column} < %s {skip}AND length(s.lexeme) BETWEEN %s AND"
                f" %s AND {buckets} LIMIT {limit})"
            )
            params += [
                word,
                req.tenant_id,
                low,
                _next_prefix(low),
                *([exclude] if exclude else []),
                len(word) - LENGTH_SLACK,
                len(word) + LENGTH_SLACK,
                *bucket_params,
            ]
    sql = (
        f"SELECT w, lexeme, sum(n) FROM ({' UNION ALL '.join(parts)}) AS v(w, lexeme, n) "
        "GROUP BY w, lexeme HAVING sum(n) > 0"
    )
    out: dict[str, dict[str, int]] = {word: {} for word in words}
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for word, lexeme, n in cursor.fetchall():
            out[word][lexeme] = int(n)
    return out


_LEXEME = "s.lexeme"
_TAIL = 'substring(s.lexeme, 2) COLLATE "C"'  # the expression of the index termstat_tail


def ranges(word: str) -> list[tuple[str, str, str, int]]:
    """Where the misspellings of `word` are looked for: (column, prefix, first letter excluded,
    rows read at most). Lexemes starting with its first letter (a letter: that range holds in
    any collation); then, the first letter being the typo, those whose letters after the first
    start as the word's do after its first ("kisbon": "lisbon") or as the word itself does (a
    first letter missing, "isbon": "lisbon"): two letters, so a narrower range, read less far."""
    out = [(_LEXEME, word[0], "", MAX_CANDIDATES)]
    for tail in dict.fromkeys((word[1:3], word[0:2])):
        if len(tail) == 2 and tail.isalpha():
            out.append((_TAIL, tail, word[0], MAX_TAIL_CANDIDATES))
    return out


def closest(word: str, vocabulary: dict[str, int], limit: int = VERIFIED) -> list[Alternative]:
    """The closest lexemes of `vocabulary` to `word` (not `word` itself), best first; ties go
    to the more frequent lexeme, then alphabetically (a stable order)."""
    # once, not once per lexeme (a scope's vocabulary near a word: hundreds)
    pieces = trigrams(word)
    scored = [
        Alternative(lexeme, _similarity(pieces, trigrams(lexeme)), df)
        for lexeme, df in vocabulary.items()
        if lexeme != word
    ]
    scored = [a for a in scored if a.similarity >= SIMILARITY]
    scored.sort(key=lambda a: (-a.similarity, -a.df, a.lexeme))
    return scored[:limit]


def visible_lexemes(
    lexemes: list[str], where: str, params: list[Any], walk: bool = False
) -> set[str]:
    """Those of `lexemes` that some chunk matching `where` says in its own words: one statement,
    a probe per lexeme: through the full-text index, or with `walk` (walks_scope) down the
    scope's rows to the first that says the word, the match written so that the index cannot
    serve it, as full text does in a small scope (fulltext.text_source)."""
    # Each lexeme as a quoted tsquery literal of weight A (never parsed as query syntax).
    queries = ["'" + x.replace("\\", "\\\\").replace("'", "''") + "':A" for x in lexemes]
    match = "c.search_vector @@ t.q::tsquery"
    sql = (
        "SELECT t.l FROM unnest(%s::text[], %s::text[]) AS t(l, q) WHERE EXISTS (SELECT 1 FROM "
        f"retrieval_chunk c WHERE {where} AND {row_tested(match) if walk else match})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [lexemes, queries, *params])
        return {row[0] for row in cursor.fetchall()}


def walks_scope(req: SearchRequest, scope_size: int) -> bool:
    """Whether the visibility probe walks the scope's rows rather than read the full-text index.

    The index reads a word's postings in every tenant's rows before the scope narrows them: 38k
    rows for "see" in bench/tenants.py's 1.05M-row table, 13 ms of a 43 ms search by channel. A
    walk stops at the first row of the scope that says the word, and the alternatives come from
    the scope's own vocabulary, so it stops early, when the scope is small (fewer than
    sql.TEXT_SCAN_BELOW chunks, `scope_size` from the kept statistics) and is all of its
    statistics' buckets. A user, a filter or a conversation hides part of the buckets: a word
    they hide is walked to the end of the scope, once per word (bench/README.md, stop 28)."""
    narrowed = (
        req.user_id is not None
        or req.tags
        or req.roles
        or req.kinds
        or req.agent
        or req.since
        or req.until
        or req.scope == "conversation"
    )
    return not narrowed and scans_scope(scope_size)


def alternatives(
    req: SearchRequest,
    frequencies: dict[str, int],
    where: str,
    params: list[Any],
    *,
    every_word: bool,
    scope_size: int = 0,
) -> dict[str, list[Alternative]]:
    """The alternatives of the query's lexemes that the scope does not say (of every correctable
    lexeme with `every_word`: mode "fuzzy"). Empty, without a statement, when none needs any;
    two statements otherwise (the scope's vocabulary near the words, the check of visibility)."""
    words = [
        w for w in sorted(frequencies) if correctable(w) and (every_word or not frequencies[w])
    ][:MAX_WORDS]
    if not words:
        return {}
    vocabulary = vocabulary_candidates(req, words)
    near = {word: closest(word, vocabulary[word]) for word in words}
    lexemes = sorted({a.lexeme for alts in near.values() for a in alts})
    if not lexemes:
        return {}
    visible = visible_lexemes(lexemes, where, params, walks_scope(req, scope_size))
    found = {
        word: [a for a in alts if a.lexeme in visible][:ALTERNATIVES] for word, alts in near.items()
    }
    return {word: alts for word, alts in found.items() if alts}
