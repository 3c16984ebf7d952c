"""Ranking constants of search and context: weights, thresholds and switches measured on the recall
benchmarks (bench/README.md), not settings an operator tunes. Read as `weights.NAME` at
call time, so that a test can patch one (monkeypatch.setattr(weights, "NAME", value))."""

# Hybrid search (weighted fusion): the share of the way the request's vector/text weights move, per
# query, toward the split the two candidate lists' peakedness gives them (0 = the request's weights
# as sent; retrieval.search.fusion.balanced_weights; bench/README.md, stop 28).
BALANCE = 0.25
# Search: a date the query names ("in June", "on 13 October 2023") lifts memories written then by
# this share of the best score (0 = off; a preference, never a filter).
TIME_WEIGHT = 0.3
# Hybrid search: pseudo-relevance feedback. The query vector moves toward the mean vector of the
# first pass's best FEEDBACK_DOCS results, by this weight (0 turns it off), and the candidates are
# ranked again on it.
FEEDBACK = 0.4
FEEDBACK_DOCS = 3
# Candidates fetched from each index before fusion (at least 3 × top_k).
CANDIDATES = 100
# Typo tolerance in text and hybrid search: a query word the scope never says also matches the
# scope's closest words by trigram similarity (retrieval.search.fuzzy). Mode "fuzzy" always does.
FUZZY = True
# Hybrid search: the first share of top_k places by rank, the rest first to the best results of
# conversations not among the results yet (1 turns it off). bench/README.md, stop 26.
COVERAGE = 0.7
# Hybrid search coverage (COVERAGE): the conversations not listed yet take
# their places in order of their evidence: the p-norm, with this p, of the scores of their messages
# among the candidates (several good matches outweigh one; 0 = in order of their best result
# alone). bench/README.md, stop 26.
COVERAGE_NORM = 4.0
# ... blended with the query words each says across its messages (the summed IDF of the distinct
# terms its candidates' own words say), at this weight against that evidence, each divided by its
# highest (0 = evidence alone). bench/README.md, stop 33.
COVERAGE_WORDS = 0.5
# ... but only a result scoring at least this share of the top_k-th result's score (0 = any): a
# conversation that barely matches does not take the place of a good match (bench/README.md).
COVERAGE_FLOOR = 0.8
# Full text: how much a query word found only in a chunk's conversation context counts (0–1).
TEXT_CONTEXT_WEIGHT = 0.3
# The relevance floor of search and context (docs/ranking.md#relevance-floor;
# retrieval.search.relevance says the rule; search lists only admitted memories unless they fill
# top_k, Floor.listed):
# a memory is admitted (and joins a context) when its cosine to the query is at least
# RELEVANCE_MIN_COSINE, or at least RELEVANCE_LOW_COSINE and RELEVANCE_GAP above the query's
# RELEVANCE_NEIGHBOURS-th nearest candidate, or its BM25 score is at least RELEVANCE_WORD_SHARE of
# a once-said word's IDF in scope, or its own words say RELEVANCE_WORDS_SAID of the query's summed
# IDF; and its fused score is at least RELEVANCE_SHARE_OF_BEST of the
# best candidate's. -1 (RELEVANCE_MIN_COSINE) lists everything fusion ranks. Calibrated on both
# benchmark files' questions asked of the memory that holds their answer and of one that does
# not: a foreign memory lists at most a quarter of what it did in every half of both files, turn
# recall@10 within 0.005 of no floor's, user-wide and in a conversation's own channel
# (bench/README.md, "Precision", says where a half's session recall moves).
RELEVANCE_MIN_COSINE = 0.42
RELEVANCE_LOW_COSINE = 0.3
RELEVANCE_GAP = 0.15
RELEVANCE_NEIGHBOURS = 10
RELEVANCE_WORD_SHARE = 0.7
RELEVANCE_WORDS_SAID = 0.75
RELEVANCE_SHARE_OF_BEST = 0.4
# ef_search grows with the chunk table: at least one per this many rows (0: always
# settings.HNSW_EF_SEARCH).
HNSW_ROWS_PER_EF = 1_000
# Hybrid search: maximal marginal relevance, relevance weight λ against redundancy with results
# already listed (1 = off; 0.5 is the usual default of MMR implementations). Off by default: chunk
# vectors carry their conversation context, so neighbouring messages look redundant to MMR, and
# on LongMemEval, where the evidence is often several messages of one conversation, 0.6 cost
# 0.033 of turn recall@10 on both halves (LoCoMo: +0.014 session recall; bench/README.md).
MMR = 1.0
# Hybrid search, knowledge updates: of two final results about the same subject (cosine at least
# NEWER_FIRST_COSINE) from different conversations whose scores are within this share of each
# other, the newer is listed first (retrieval.search.rerank.newer_first; 0 = off). A reorder of
# the final results: recall@10 cannot move. 0.1 on LoCoMo conversations 1-4: knowledge-update
# newest-first 0.450 -> 0.525, turn@5 0.702 -> 0.700, session@5 0.855 -> 0.858; 0.2 cost 0.022 of
# turn@5 (bench/README.md, "Knowledge updates").
NEWER_FIRST = 0.1
NEWER_FIRST_COSINE = 0.6
# Search: a summary that ranks gives its place to the best-ranked message it summarises
# (when that message is a candidate); a search limited to summaries still returns summaries.
EXPAND_SUMMARIES = True
# Search: each message once, at the place of its best chunk (a long message is several chunks).
ONE_PER_MESSAGE = True
# A candidate scores the higher of its own cosine and its best sentence's (retrieval.embedding
# EMBED_SENTENCES writes the sentence vectors). Off: its own cosine alone.
SENTENCES = True
# Hybrid search computes the query's embedding in a thread while the text side's candidates are
# fetched (two candidate statements instead of one; the same results). Off: one after the other.
EMBED_ALONGSIDE = True
