"""Hybrid retrieval (docs/ranking.md): full text, vectors, fusion, the "memory" profile, dedup.

Every query is confined to one tenant (and the key's workspace, when it is limited) in SQL,
whatever the scope. Full text ranks with BM25-style IDF weights over an OR of the query's
lexemes: Postgres' own ranking has no IDF, and an AND of every word of a natural-language
question rarely matches anything. Query text is never parsed as tsquery syntax, so no input
can make it fail.

Ranking defaults (docs/ranking.md; constants in weights.py,
measured on LoCoMo in bench/README.md): a date the query names lifts memories written then
(retrieval.search.timehints); hybrid search ranks on a query vector moved toward its best
first-pass results (pseudo-relevance feedback), re-ranks by maximal marginal relevance and gives
the last places of top_k first to conversations not yet listed; a summary that ranks gives its
place to the message it summarises.

The package, in the order a search uses it:

- request.py: SearchRequest and its validation, SearchHit, Candidate, SearchError, option names;
- engine.py: run_search and hybrid_search, which run the stages below in order;
- statistics.py: the query's document frequencies and the scope's size, read from the term
  statistics indexing keeps (retrieval/termstats.py) in one statement;
- sql.py: the WHERE clause every query shares and the other statements (vector and exact
  candidates, the candidate query, the hits' rows, reinforcement);
- fulltext.py: the query's terms, their BM25 weights in scope, the text candidates;
- textquery.py: TextQuery, the terms and the SQL that scores a candidate on them (BM25);
- fuzzy.py: typo tolerance: the scope's closest words for query words it never says (mode "fuzzy":
  for every word), from the kept term statistics' vocabulary;
- regex.py: mode "regex", a bounded regular-expression match;
- timehints.py: dates named in the query, and the ranking stage that prefers them;
- fusion.py: one score per candidate (weighted, rrf, the memory profile);
- rerank.py: summary expansion, MMR, dedup, coverage;
- current.py, regex.py, vectors.py, explain.py, weights.py: the current fact first, mode "regex",
  the candidates' vectors in numpy, explain, the ranking constants (README.md lists every module).

fusion, rerank and the time-hint stage are pure functions of plain data (tested without a
database in tests/retrieval/test_fusion.py and test_ranking_stages.py).
"""

from retrieval.search.engine import hybrid_search, run_search
from retrieval.search.plan import plan_search
from retrieval.search.request import (
    FUSIONS,
    MODES,
    PROFILES,
    SCOPES,
    Candidate,
    SearchError,
    SearchHit,
    SearchPlan,
    SearchRequest,
)
from retrieval.search.rerank import cover_conversations, expand_summaries, mmr
from retrieval.search.sql import where_clause
from retrieval.search.timehints import with_time_hints

__all__ = [  # the names other modules import
    "FUSIONS",
    "MODES",
    "PROFILES",
    "SCOPES",
    "Candidate",
    "SearchError",
    "SearchHit",
    "SearchPlan",
    "SearchRequest",
    "cover_conversations",
    "expand_summaries",
    "hybrid_search",
    "mmr",
    "plan_search",
    "run_search",
    "where_clause",
    "with_time_hints",
]
