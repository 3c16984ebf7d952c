"""Search, context and browse for one API key: the one implementation behind the REST views
(retrieval/views.py) and the MCP tools (retrieval/mcp_server/). Input is already validated by the
REST serializers; the result is the REST response body."""

from __future__ import annotations

from typing import Any

from accounts.models import ApiKey, Channel
from accounts.querysets import conversation_owned_by
from memoryhub import summaries
from memoryhub.api.summaries import node_dict
from memoryhub.errors import Invalid
from memoryhub.models import SummaryNode
from memoryhub.plumbing.listfilters import Rule, narrowed
from memoryhub.restore import event_message
from memoryhub.sessions import get_session, resolve_user, resolve_workspace
from retrieval import stats, synthesis
from retrieval.context import assemble_context
from retrieval.scoping import build_search_request
from retrieval.search import SearchError, SearchHit, run_search


def search(key: ApiKey, data: dict[str, Any]) -> dict[str, Any]:
    """POST /search/: `data` is SearchInput's validated data."""
    data = dict(data)
    expand = data.pop("expand", False)
    synthesize = data.pop("synthesize", False)
    if synthesize:
        synthesis.check_configured()
        if not data.get("query", "").strip():
            raise Invalid("query_required", "synthesize answers a question: give it as `query`.")
    req = build_search_request(key, data)
    try:
        hits = run_search(req)
    except SearchError as exc:
        raise Invalid(exc.code, exc.message, exc.details) from None
    results = [h.as_dict() for h in hits]
    if expand:
        expand_summaries(key, results)
    out: dict[str, Any] = {
        "mode": req.mode,
        "fusion": req.fusion,
        "scope": req.scope,
        "profile": req.profile,
    }
    if req.group_by == "session":
        out["group_by"] = req.group_by
        out["sessions"] = session_groups(hits)
    out["results"] = results
    if synthesize:
        out["synthesis"] = synthesis.synthesize(data["query"], results)
    return out


def session_groups(hits: list[SearchHit]) -> list[dict[str, Any]]:
    """A grouped search's conversations, best first (its hits come session by session): each
    with its score and how many of the results are its."""
    groups: list[dict[str, Any]] = []
    current = None
    for hit in hits:
        c = hit.chunk
        if not groups or c.session_id != current:
            current = c.session_id
            groups.append(
                {
                    "session": c.session_name,
                    "channel": c.channel_name,
                    "workspace": c.workspace_name,
                    "score": round(hit.session_score or 0.0, 6),
                    "hits": 0,
                }
            )
        groups[-1]["hits"] += 1
    return groups


EXPAND_MESSAGES = 20


def expand_summaries(key: ApiKey, results: list[dict[str, Any]]) -> None:
    """Give each summary hit its child summaries and the messages it condenses."""
    ids = [r["metadata"].get("summary_id") for r in results if r["kind"] == "summary"]
    nodes = {
        n.pk: n for n in SummaryNode.objects.visible_to(key).filter(pk__in=[i for i in ids if i])
    }
    for result in results:
        node = (
            nodes.get(result["metadata"].get("summary_id")) if result["kind"] == "summary" else None
        )
        if node is None:
            continue
        children = node.children.select_related("session").order_by("sequence_start")
        result["expanded"] = {
            "children": [node_dict(c) for c in children],
            "messages": [
                event_message(e) for e in summaries.source_events(node, limit=EXPAND_MESSAGES)
            ],
        }


def context(key: ApiKey, data: dict[str, Any]) -> dict[str, Any]:
    """POST /context/: `data` is ContextInput's validated data."""
    session = get_session(key, data["session"]) if data["session"] else None
    req = build_search_request(
        key,
        {
            "query": data["query"],
            "session": data["session"],
            "user_id": data["user_id"],
            "scope": data["scope"],  # none: search's default for the same request (scoping)
            "top_k": data["top_k"],
            "tags": data["tags"],
            "kinds": data["kinds"],
            "as_of": data["as_of"],
            "min_cosine": data.get("min_cosine"),
        },
    )
    assembled = assemble_context(session=session, req=req, budget=data["budget"])
    return {
        "session": session.external_id if session else None,
        "user_id": req.user_id,
        "budget": assembled.budget,
        "tokens": assembled.tokens,
        "items": [i.as_dict() for i in assembled.items],
        "markdown": assembled.markdown,
    }


BROWSE_FILTERS: dict[str, Rule] = {
    "agent": "session__agent",
    "role": "role",
    "since": "created_at__gte",
    "until": "created_at__lt",
}


def browse(key: ApiKey, params: dict[str, Any]) -> Any:
    """GET /browse/: the events `params` (BrowseParams' validated data) select, oldest first."""
    qs = stats.events_for_browse(key)
    if params.get("session"):
        qs = qs.filter(session=get_session(key, params["session"]))
    if params.get("workspace"):
        workspace = resolve_workspace(key, params["workspace"], create=False)
        qs = qs.filter(session__workspace=workspace) if workspace else qs.none()
    if params.get("channel"):
        qs = qs.filter(
            session__channel__in=Channel.objects.filter(
                tenant_id=key.tenant_id, name=params["channel"]
            )
        )
    user = resolve_user(key, params.get("user_id"))
    if user is not None:  # a user's read: their conversations only (an unowned one is the tenant's)
        qs = qs.filter(conversation_owned_by("session__user_id", user))
    return narrowed(qs, params, BROWSE_FILTERS).order_by("created_at", "session_id", "sequence")


def browsed(event: Any) -> dict[str, Any]:
    """One browse result: the event with its session and channel."""
    return {
        **event.as_dict(),
        "session": event.session.external_id,
        "channel": event.session.channel.name,
    }
