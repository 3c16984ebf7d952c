"""Near-duplicate memories and the merge plan: which memory survives and which it absorbs.

Two memories are duplicates only when they are of one kind, in one scope, of one owner (user_id)
and, for messages, of one role; their embeddings' cosine is above MERGE_COSINE; their own
words agree (MERGE_TEXT_SIMILARITY): an event's embedding carries the messages before it, so a
reply sits close to the question it answers without saying the same thing; and neither says a
number, a date or a name the other does not (same_details): "rule 2" and "rule 4" are two rules
however alike the rest reads. A fact addressed by its key is never merged: its key is how a client
finds it, and merging would lose it under another's key.
"""

from __future__ import annotations

import re

from django.db import connection

from retrieval.chunking import word_overlap, word_set
from retrieval.lifecycle.sql import fetch, scope_sql
from retrieval.models import Chunk

# Near-duplicates are found exactly (all pairs) in scopes of at most this many memories; in a
# larger scope each memory asks the HNSW index for its nearest NEIGHBOURS.
# Merge near-duplicates whose embeddings' cosine similarity is above this ...
MERGE_COSINE = 0.95
# ... and whose own words agree: the share of words two memories have in common (Jaccard of their
# word sets) at least this. Embeddings of messages carry the conversation around them, so a reply
# can sit very close to the question it answers.
MERGE_TEXT_SIMILARITY = 0.8
EXACT_MAX = 1000
NEIGHBOURS = 4
_TOKENS = re.compile(r"\w+", re.UNICODE)
# Words that name a quantity or a date: two texts that differ in one of them say different things.
_NUMBER_WORDS = frozenset(
    (
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
        " fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy"
        " eighty ninety hundred thousand million billion first second third fourth fifth sixth"
        " seventh eighth ninth tenth half twice once dozen"
    ).split()
)
_CALENDAR_WORDS = frozenset(
    (
        "january february march april may june july august september october november december jan"
        " feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday"
        " saturday sunday today tomorrow yesterday tonight morning afternoon evening night noon"
        " midnight am pm"
    ).split()
)


def _mergeable(a: str) -> str:
    """Condition on alias `a`: an embedded, unpinned, current memory of the tenant (not a fact's
    superseded version), of a deletable kind, not already gone in this run (parameters: tenant id,
    kinds, excluded ids)."""
    return (
        f"{a}.tenant_id = %s AND {a}.kind = ANY(%s) AND {a}.embedding IS NOT NULL AND {a}.valid_to"
        f" IS NULL AND NOT ({a}.metadata @> '{{\"pinned\": true}}'::jsonb) AND NOT ({a}.id ="
        f" ANY(%s)) AND coalesce({a}.metadata->>'key', '') = ''"
    )


def find_duplicates(
    tenant_id: int, kinds: list[str], exclude: set[int]
) -> list[tuple[int, int, float]]:
    """Pairs (a, b, cosine distance), a < b, of near-duplicates in one scope, kind and model.

    Small scopes (a session, a channel: the usual case) are compared exactly by a self-join;
    a scope with more than EXACT_MAX memories would cost n² distances (45 s for
    5,900 on these machines), so there each memory asks the HNSW index for its nearest
    neighbours instead (approximate, linear).
    """
    base = [tenant_id, kinds, sorted(exclude)]
    sizes = fetch(
        f"SELECT {scope_sql('a')}, count(*) FROM retrieval_chunk a WHERE {_mergeable('a')} "
        "GROUP BY 1",
        base,
    )
    big = sorted(scope for scope, count in sizes if count > EXACT_MAX)
    limit = 1.0 - MERGE_COSINE
    same = (
        "b.tenant_id = a.tenant_id AND b.kind = a.kind AND b.tier = a.tier "
        "AND b.user_id = a.user_id AND b.role = a.role "
        f"AND b.embedding_model = a.embedding_model AND {scope_sql('b')} = {scope_sql('a')}"
    )
    rows = fetch(
        f"""SELECT a.id, b.id, (a.embedding <=> b.embedding) AS d
            FROM retrieval_chunk a JOIN retrieval_chunk b ON {same} AND b.id > a.id
            WHERE {_mergeable("a")} AND {_mergeable("b")}
              AND NOT ({scope_sql("a")} = ANY(%s)) AND (a.embedding <=> b.embedding) < %s""",
        [*base, *base, big, limit],
    )
    pairs = {(a, b): float(d) for a, b, d in rows}
    if big:
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            cursor.execute(f"SET LOCAL hnsw.ef_search = {max(40, 2 * NEIGHBOURS)}")
            # Without this the planner (row estimates of freshly written chunks are tiny) sorts
            # the whole scope once per memory instead of walking the HNSW graph: 3 ms → 0.1 ms.
            cursor.execute("SET LOCAL enable_sort = off")
        near = fetch(
            f"""SELECT a.id, n.id, n.d FROM retrieval_chunk a CROSS JOIN LATERAL (
                    SELECT b.id, (b.embedding <=> a.embedding) AS d FROM retrieval_chunk b
                    WHERE {same} AND b.id <> a.id AND {_mergeable("b")}
                    ORDER BY b.embedding <=> a.embedding LIMIT %s) n
                WHERE {_mergeable("a")} AND {scope_sql("a")} = ANY(%s) AND n.d < %s""",
            [*base, NEIGHBOURS, *base, big, limit],
        )
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_sort = on")
        for a, b, d in near:
            pairs.setdefault((min(a, b), max(a, b)), float(d))
    pairs = _same_words(pairs)
    return [(a, b, d) for (a, b), d in sorted(pairs.items(), key=lambda item: (item[1], item[0]))]


def _same_words(pairs: dict[tuple[int, int], float]) -> dict[tuple[int, int], float]:
    """Keep the pairs whose own texts agree: their word sets overlap enough, and they say the same
    numbers, dates and names (same_details)."""
    if not pairs:
        return pairs
    ids = {i for pair in pairs for i in pair}
    texts = dict(Chunk.objects.filter(pk__in=ids).values_list("id", "text"))
    words = {pk: word_set(text) for pk, text in texts.items()}
    floor = MERGE_TEXT_SIMILARITY
    return {
        (a, b): d
        for (a, b), d in pairs.items()
        if word_overlap(words[a], words[b]) >= floor and same_details(texts[a], texts[b])
    }


def same_details(a: str, b: str) -> bool:
    """Whether two texts say the same numbers, dates and names: no word that one says and the
    other does not holds a digit, is a number or calendar word, or is written with a capital
    (a name, or a sentence that starts otherwise). Case and punctuation alone are no difference."""
    words_a, words_b = _details(a), _details(b)
    differing = set(words_a) ^ set(words_b)
    return not any(
        words_a.get(w, False) or words_b.get(w, False) or _is_quantity(w) for w in differing
    )


def _details(text: str) -> dict[str, bool]:
    """Each distinct word of `text`, case-folded, and whether it is ever written with a capital."""
    out: dict[str, bool] = {}
    for token in _TOKENS.findall(text):
        word = token.casefold()
        out[word] = out.get(word, False) or token != word
    return out


def _is_quantity(word: str) -> bool:
    return any(ch.isdigit() for ch in word) or word in _NUMBER_WORDS or word in _CALENDAR_WORDS


def plan_merges(
    pairs: list[tuple[int, int, float]], importance: dict[int, float]
) -> dict[int, list[int]]:
    """Greedy, closest pairs first: {survivor: [absorbed, …]}. A survivor absorbs only memories it
    is itself a near-duplicate of; the one with the higher importance (then the older) survives."""
    groups: dict[int, list[int]] = {}
    absorbed: set[int] = set()
    for a, b, _ in pairs:
        if a in absorbed or b in absorbed:
            continue
        if a in groups and b in groups:
            continue
        if a in groups or b in groups:
            survivor, other = (a, b) if a in groups else (b, a)
        else:
            survivor, other = sorted((a, b), key=lambda i: (-importance[i], i))
        groups.setdefault(survivor, []).append(other)
        absorbed.add(other)
    return groups
