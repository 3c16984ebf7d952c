"""The write half of the ownership rule (docs/memory-model.md#sharing), in one place for every write
path.

Reads are confined in SQL (accounts.querysets: a user's rows plus shared knowledge; a conversation
nobody owns is not shared, so a user-limited key never finds one). Writes add two rules: a key
limited to one user may read shared notes, facts and documents but not change them (403
`shared_read_only`), and a write made on behalf of one user (a `user_id`, the key's user) whose
target belongs to someone else, or to no one, is a 409 `owner_mismatch`. Both are checked before
anything is written, so a refused write stores nothing.
"""

from __future__ import annotations

from accounts.models import ApiKey
from memoryhub.errors import Conflict, Forbidden


def refuse_shared(key: ApiKey, owner: str, what: str) -> None:
    """A user-limited key may not change a row that belongs to no one: it is everyone's."""
    if key.user_id and not owner:
        raise Forbidden(
            "shared_read_only",
            f"{what} is shared (it has no owner): a key limited to one user may read it, not"
            " change it.",
        )


def check_owner(user: str | None, owner: str, what: str, *, acting: str = "written") -> None:
    """A write on behalf of `user` (None or "": no user named) may only touch `user`'s own rows
    (and a conversation read on behalf of `user` is only theirs: `acting="read"`)."""
    if user and user != owner:
        raise Conflict(
            "owner_mismatch",
            f"{what} belongs to {'another user' if owner else 'no user'}: it cannot be {acting} as"
            f" user {user!r}.",
            {"user_id": user},
        )


def require_tenant_wide(key: ApiKey, what: str) -> None:
    """Work over a whole tenant (its webhooks, its maintenance, forgetting a user) needs a key that
    is limited to neither a workspace nor a user."""
    if key.workspace_id is not None:
        raise Forbidden("workspace_limited_key", f"{what} needs a key not limited to a workspace.")
    if key.user_id:
        raise Forbidden("user_limited_key", f"{what} needs a key not limited to one user.")


def require_scope(key: ApiKey, scope: str, what: str) -> None:
    """The same refusal as a view's `required_scope` (403 insufficient_scope), for work whose
    scope depends on what it does rather than on the route."""
    if not key.has_scope(scope):
        raise Forbidden("insufficient_scope", f"{what} needs an API key with the '{scope}' scope.")
