"""What is about the query: the relevance floor search and context share, and the words of a query
that say nothing about which of a user's memories answers it.

The floor (nothing is listed or injected unless it is about the query) admits a memory
that is about the query on one of three legs:
- meaning: its cosine to the query is at least weights.RELEVANCE_MIN_COSINE, a floor calibrated on
  the benchmarks' questions asked of a memory that holds their answer and of one that does not
  (bench/README.md, "Precision"): MiniLM puts unrelated chit-chat up to about 0.4 from a question;
- standing out: its cosine is at least RELEVANCE_LOW_COSINE and stands RELEVANCE_GAP above the
  query's RELEVANCE_NEIGHBOURS-th nearest candidate: in a memory of a few sentences, the one that
  answers is far nearer than the rest even when the model puts it below the floor ("what food
  should I avoid?" and "I am allergic to peanuts.": 0.36), where in a memory that does not hold
  the answer the nearest few sit together;
- words: its BM25 score is at least RELEVANCE_WORD_SHARE of the IDF of a word said once in scope:
  it says a rare word of the query, or several less rare ones. A word most memories say weighs
  little, so sharing "go" or a name everyone's messages carry is not enough; but a memory whose
  own words say RELEVANCE_WORDS_SAID of the query's information (the summed IDF of its words) or
  more is about it however common those words are ("platypus" among notes on platypuses). A
  memory admitted on rare words alone must also stand within reach of the best candidate (its
  fused score at least RELEVANCE_SHARE_OF_BEST of the best's): in a memory of a few sentences
  every word is rare, and one that shares a minor word with the query ("called" and "call me
  Annie") does not join the one that answers it.
A memory whose vector is still to be computed passes on any word of the query.

Search lists what the floor admits, up to top_k, and context injects what search lists. When
the admitted fill the page, coverage's list stands whole, every memory on it admitted
(Floor.listed): the floor says how many results a memory holds about the query, not which ones
fusion puts first. A conversation searched in its own channel says its topic words in most of its
messages, so its answers score low on words there (BM25 3.7 against 7.3 when the statistics span
the tenant) while their cosines sit below the conversation's common level; dropping them for
admitted memories lower in fusion's order cost 0.030 of turn recall@10 (bench/README.md,
"Precision").
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import re
from dataclasses import dataclass, field

from retrieval.search import weights
from retrieval.search.request import Candidate, SearchRequest
from retrieval.search.textquery import SAID_BITS, TextQuery

_WORD = re.compile(r"\w+(?:'s)?", re.UNICODE)


@dataclass
class Floor:
    """One query's relevance floor over its candidates (floor_of)."""

    word_score: float  # the BM25 score the words leg asks for (0: no text side)
    # the cosine of the query's RELEVANCE_NEIGHBOURS-th nearest candidate (0 when fewer)
    nearest_kth: float
    reach: float  # the fused score a memory must reach (a share of the best's)
    order: dict[int, float]
    said: dict[int, int]  # which of the query's terms each candidate's own words say (bits)
    idfs: list[float]  # the terms' IDF, in bit order
    paged: set[int] = field(default_factory=set)  # admitted with the page they fill (listed)

    def said_share(self, pk: int) -> float:
        """The share of the query's information (its terms' summed IDF) the memory's own words
        say."""
        bits, total = self.said.get(pk, 0), sum(self.idfs)
        if not bits or total <= 0.0:
            return 0.0
        return sum(idf for i, idf in enumerate(self.idfs) if bits >> i & 1) / total

    def admits(self, pk: int, text_score: float | None, cosine: float | None) -> bool:
        if weights.RELEVANCE_MIN_COSINE <= -1.0 or pk in self.paged:  # off, or on a full page
            return True
        if cosine is None:  # still to be embedded: its words alone
            return (text_score or 0.0) > 0.0
        if cosine >= weights.RELEVANCE_MIN_COSINE:
            return True
        if (
            cosine >= weights.RELEVANCE_LOW_COSINE
            and cosine - self.nearest_kth >= weights.RELEVANCE_GAP
        ):
            return True
        if self.said_share(pk) >= weights.RELEVANCE_WORDS_SAID:
            return True
        return (
            self.word_score > 0.0
            and (text_score or 0.0) >= self.word_score
            and self.order.get(pk, 0.0) >= self.reach
        )

    def listed(self, covered: list[Candidate], floored: list[Candidate]) -> list[Candidate]:
        """What search lists: `floored` (what coverage chose that the floor admits, then other
        admitted candidates, up to the page) when the admitted are too few to fill the page that
        coverage chose; otherwise coverage's page whole, every memory on it admitted, so that
        context injects what search lists."""
        if len(floored) < len(covered):
            return floored
        self.paged = {c.pk for c in covered}
        return covered


def floor_of(
    tq: TextQuery | None, vec: dict[int, float], order: dict[int, float], said: dict[int, int]
) -> Floor:
    """The floor of one query: `vec` its candidates' cosines, `order` their fused scores, `said`
    which query terms each says (sql.CandidatePool.said)."""
    word_score = 0.0
    if tq is not None and tq.terms:
        size = max(tq.scope_size, 1)
        # BM25 IDF at df = 1
        word_score = weights.RELEVANCE_WORD_SHARE * math.log(1 + (size - 0.5) / 1.5)
    k = weights.RELEVANCE_NEIGHBOURS
    nearest = heapq.nlargest(k, vec.values())
    kth = nearest[-1] if len(nearest) >= k else 0.0
    reach = weights.RELEVANCE_SHARE_OF_BEST * max(order.values(), default=0.0)
    idfs = [idf for _, idf in tq.terms[:SAID_BITS]] if tq is not None else []
    return Floor(word_score, kth, reach, order, said, idfs)


def ranked_query(req: SearchRequest) -> str:
    """The query as hybrid search ranks it. In a read of one user's memory, the words that spell
    her user id ("dave", "dave's") are left out: every memory there is hers, so her name says
    nothing about which one answers, and a memory that merely names her would outrank one about
    the question ("what food should dave avoid?": "Dave likes hiking." before "I am allergic to
    peanuts."). The query stays whole when nothing else would be left."""
    if req.mode != "hybrid" or not req.user_id:
        return req.query
    names = {
        part
        for part in re.split(r"[^\w]+", req.user_id.casefold())
        if len(part) > 1 and not part.isdigit()
    }
    if not names:
        return req.query
    kept = [w for w in _WORD.findall(req.query) if w.casefold().removesuffix("'s") not in names]
    if not kept or len(kept) == len(_WORD.findall(req.query)):
        return req.query
    return " ".join(kept)


def with_ranked_query(req: SearchRequest) -> SearchRequest:
    query = ranked_query(req)
    return req if query == req.query else dataclasses.replace(req, query=query)
