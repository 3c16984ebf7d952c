"""Turn an API request's names (session, channel, workspace, scope) into a tenant-confined
search."""

from __future__ import annotations

from typing import Any

from accounts.models import ApiKey, Channel
from memoryhub.errors import Invalid, NotFound
from memoryhub.models import Session
from memoryhub.sessions import get_session, resolve_user, resolve_workspace
from retrieval.search import SearchRequest
from retrieval.search.statements import select_rows

SCOPE_ALIASES = {"session": "conversation"}
# What a request anchored to a session reads when it names no scope (the one definition, for
# search, context, MCP, mem0's API and the console, through read_as_session): the whole memory of
# the session's owner, every conversation of theirs, with the notes, facts and documents that apply
# to the session by the scope ladder, nearer rows first (retrieval.search.nearness). A scope narrows
# it to that range, without the preference.
SESSION_DEFAULT_SCOPE = "account"


def build_search_request(key: ApiKey, data: dict[str, Any]) -> SearchRequest:
    """Validated API input → SearchRequest; unknown session/channel/workspace → 404."""
    data = dict(data)
    session_name = data.pop("session", None)
    channel_name = data.pop("channel", None)
    workspace_name = data.pop("workspace", None)
    raw_scope = data.pop("scope", None) or ""
    scope = SCOPE_ALIASES.get(raw_scope, raw_scope)
    data["user_id"] = resolve_user(key, data.get("user_id"))
    # Weights the caller sends are used exactly as sent; adaptive ones only without.
    weights = {
        name: data.pop(name)
        for name in ("vector_weight", "text_weight")
        if data.get(name) is not None
    }
    data.pop("vector_weight", None), data.pop("text_weight", None)
    req = SearchRequest(
        tenant_id=key.tenant_id,
        key_workspace_id=key.workspace_id,
        **data,
        **weights,
        exact_weights=bool(weights),
    )
    workspace_ids: list[int] | None = None
    if workspace_name:
        workspace = resolve_workspace(key, workspace_name, create=False)
        if workspace is None:
            raise NotFound("workspace_not_found", f"Workspace {workspace_name!r} does not exist.")
        workspace_ids = [workspace.pk]
    if session_name:
        read_as_session(req, get_session(key, session_name), scope)
        return req
    if channel_name:
        found = _channels(key, channel_name, workspace_ids)
        if not found:
            raise NotFound("channel_not_found", f"Channel {channel_name!r} does not exist.")
        req.channel_ids = [pk for pk, _ in found]
        req.workspace_ids = sorted({ws for _, ws in found})
        req.scope = scope or "channel"
    elif workspace_ids is not None:
        req.workspace_ids = workspace_ids
        req.scope = scope or "workspace"
    else:
        req.scope = scope or "account"
    _check_scope(req)
    return req


def read_as_session(req: SearchRequest, session: Session, scope: str) -> None:
    """Anchor `req` to `session`: read as its owner, and with no `scope` over their whole memory,
    nearest first (SESSION_DEFAULT_SCOPE). A conversation nobody owns is the tenant's: it reads the
    tenant's unowned conversations and shared knowledge (sql.owner_clause), never a user's."""
    if req.user_id is None:
        req.user_id = session.user_id
    elif session.user_id and req.user_id != session.user_id:
        raise Invalid("scope_mismatch", "'user_id' differs from the session's user.")
    req.session_id = session.pk
    req.session_channel_id = session.channel_id
    req.session_workspace_id = session.workspace_id
    req.channel_ids = [session.channel_id]
    req.workspace_ids = [session.workspace_id]
    req.scope = scope or SESSION_DEFAULT_SCOPE
    req.nearest_first = not scope


def _channels(key: ApiKey, name: str, workspace_ids: list[int] | None) -> list[tuple[int, int]]:
    """(id, workspace id) of each channel of this name the key may search: in its tenant, in its
    workspace when it is limited to one, in `workspace_ids` when given. One plain statement: the
    ORM's filter chain cost more to build than to run (paired over HTTP: -1.6 ms a channel-scoped
    search, bench/README.md stop 39)."""
    sql = (
        f"SELECT id, workspace_id FROM {Channel._meta.db_table} WHERE tenant_id = %s AND name = %s"
    )
    params: list[Any] = [key.tenant_id, name]
    if key.workspace_id is not None:
        sql += " AND workspace_id = %s"
        params.append(key.workspace_id)
    if workspace_ids is not None:
        sql += " AND workspace_id = ANY(%s)"
        params.append(workspace_ids)
    return select_rows(sql + " ORDER BY workspace_id, id", params)  # type: ignore[return-value]


def _check_scope(req: SearchRequest) -> None:
    if req.scope == "conversation":
        raise Invalid("invalid_scope", "scope 'conversation' needs a session.")
    if req.scope == "channel" and req.channel_ids is None:
        raise Invalid("invalid_scope", "scope 'channel' needs a session or a channel.")
    if req.scope == "workspace" and req.workspace_ids is None:
        if req.key_workspace_id is None:
            raise Invalid(
                "invalid_scope", "scope 'workspace' needs a session, a channel or a workspace."
            )
        req.workspace_ids = [req.key_workspace_id]
