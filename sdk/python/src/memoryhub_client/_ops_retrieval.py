"""Search, context, browse and stats (requests only)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from memoryhub_client._core import Call, as_is, body, page_of, query
from memoryhub_client.types import BrowsedEvent, Context, Page, Role, SearchResponse, Stats

SearchScope = Literal["conversation", "channel", "workspace", "account", "session"]
Kind = Literal["event", "note", "fact", "summary", "document"]


def search(
    query: str | None = None,
    *,
    query_embedding: Sequence[float] | None = None,
    session: str | None = None,
    channel: str | None = None,
    workspace: str | None = None,
    scope: SearchScope | None = None,
    tags: Sequence[str] | None = None,
    roles: Sequence[Role] | None = None,
    kinds: Sequence[Kind] | None = None,
    agent: str | None = None,
    user_id: str | None = None,
    since: datetime | str | None = None,
    until: datetime | str | None = None,
    as_of: datetime | str | None = None,
    top_k: int | None = None,
    mode: Literal["hybrid", "vector", "text", "exact"] | None = None,
    fusion: Literal["weighted", "rrf"] | None = None,
    vector_weight: float | None = None,
    text_weight: float | None = None,
    profile: Literal["default", "memory", "seed002"] | None = None,
    group_by: Literal["session"] | None = None,
    hits_per_session: int | None = None,
    synthesize: bool | None = None,
    decay_weight: float | None = None,
    min_cosine: float | None = None,
) -> Call[SearchResponse]:
    """Search memory (POST /search/): events, notes, facts, summaries and documents, ranked.

    `as_of`: when the question is asked (default: the server's now); "yesterday", "last week" or
    "three months ago" in the query are read against it (servers that predate it refuse the field).
    `group_by="session"`: which conversations are about the query; `top_k` then counts
    conversations, listed best first in `sessions`, and `results` holds each one's best
    `hits_per_session` matches (default 3), conversation by conversation. `profile="seed002"`:
    RivetOS's relevance formula (text rank, cosine, recency and importance in fixed shares);
    `decay_weight`: that share of the score from Inklings' decay (importance fading with time, kept
    up by use); `min_cosine`: only results at least that close in meaning (the SQLite state store's
    floor is
    0.655).
    `synthesize=True`: the response's `synthesis` is the server's language model's answer from the
    results, {answer, citations: [{index, chunk_id}], model}, or {error: {code, message}, model}
    when the model failed (the results still come back); a server without a model refuses it
    (BadRequestError llm_not_configured)."""
    return Call(
        "POST",
        "search/",
        as_is,
        json=body(
            query=query,
            query_embedding=query_embedding,
            session=session,
            channel=channel,
            workspace=workspace,
            scope=scope,
            tags=tags,
            roles=roles,
            kinds=kinds,
            agent=agent,
            user_id=user_id,
            since=since,
            until=until,
            as_of=as_of,
            top_k=top_k,
            mode=mode,
            fusion=fusion,
            vector_weight=vector_weight,
            text_weight=text_weight,
            profile=profile,
            group_by=group_by,
            hits_per_session=hits_per_session,
            synthesize=synthesize,
            decay_weight=decay_weight,
            min_cosine=min_cosine,
        ),
        idempotent=True,
    )


def context(
    session: str | None = None,
    query: str | None = None,
    *,
    budget: int | None = None,
    scope: SearchScope | None = None,
    top_k: int | None = None,
    tags: Sequence[str] | None = None,
    user_id: str | None = None,
    as_of: datetime | str | None = None,
    min_cosine: float | None = None,
) -> Call[Context]:
    """The context block for a prompt (POST /context/): the conversation's summary and recent
    messages, important and relevant memories within `budget` tokens, as items and as Markdown.
    `min_cosine`: relevant memories only at least that close in meaning, words or not (the SQLite
    state store's floor is 0.655)."""
    return Call(
        "POST",
        "context/",
        as_is,
        json=body(
            session=session,
            query=query,
            budget=budget,
            scope=scope,
            top_k=top_k,
            tags=tags,
            user_id=user_id,
            as_of=as_of,
            min_cosine=min_cosine,
        ),
        idempotent=True,
    )


def _markdown(context: Any) -> str:
    return str(context["markdown"])


def recall(
    query: str,
    *,
    user_id: str | None = None,
    session: str | None = None,
    budget: int | None = None,
    scope: SearchScope | None = None,
    tags: Sequence[str] | None = None,
    as_of: datetime | str | None = None,
) -> Call[str]:
    """The Markdown context block for `query` ("## Relevant Memory …"), ready for a prompt.

    `as_of`: the memory as it stood at that moment (facts as they were then, nothing written
    later). `user_id` and `as_of` are sent only when given (servers that predate them refuse
    them)."""
    return Call(
        "POST",
        "context/",
        _markdown,
        json=body(
            session=session,
            query=query,
            budget=budget,
            scope=scope,
            tags=tags,
            user_id=user_id,
            as_of=as_of,
        ),
        idempotent=True,
    )


def browse(
    *,
    session: str | None = None,
    channel: str | None = None,
    workspace: str | None = None,
    agent: str | None = None,
    user_id: str | None = None,
    role: Role | None = None,
    since: datetime | str | None = None,
    until: datetime | str | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> Call[Page[BrowsedEvent]]:
    """Events in time order across sessions (GET /browse/); `user_id`: that end user's
    conversations."""
    return Call(
        "GET",
        "browse/",
        page_of,
        params=query(
            session=session,
            channel=channel,
            workspace=workspace,
            agent=agent,
            user_id=user_id,
            role=role,
            since=since,
            until=until,
            limit=limit,
            offset=offset,
        ),
        idempotent=True,
    )


def stats() -> Call[Stats]:
    """Counts for the key's tenant (or workspace): sessions, events, chunks, notes, facts, …"""
    return Call("GET", "stats/", as_is, idempotent=True)
