"""Channels (docs/memory-model.md#sharing): topics inside a workspace that group its conversations.

Every workspace has one default channel (#general unless another is made the default): sessions
and memories that name no channel go there. Channels are shared by every user of a workspace, so
a key limited to one end user may read them but not create or change them.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from accounts.models import ApiKey, Channel
from memoryhub.errors import Conflict, Forbidden, Invalid, NotFound
from memoryhub.plumbing.listfilters import Rule, narrowed
from memoryhub.sessions import resolve_workspace


def channels_visible_to(key: ApiKey) -> QuerySet[Channel]:
    qs = Channel.objects.filter(tenant_id=key.tenant_id).select_related("workspace")
    if key.workspace_id is not None:
        qs = qs.filter(workspace_id=key.workspace_id)
    return qs


def get_channel(key: ApiKey, channel_id: int, *, for_update: bool = False) -> Channel:
    qs = channels_visible_to(key)
    if for_update:
        qs = qs.select_for_update(of=("self",))
    channel = qs.filter(pk=channel_id).first()
    if channel is None:
        raise NotFound("channel_not_found", f"Channel {channel_id} does not exist.")
    return channel


def _may_write(key: ApiKey) -> None:
    if key.user_id:
        raise Forbidden(
            "user_limited_key",
            "Channels are shared by every user of a workspace: changing them "
            "needs a key not limited to one user.",
        )


def _clean_name(name: str) -> str:
    name = name.strip()
    if not name:
        raise Invalid("invalid_channel_name", "A channel name must not be blank.")
    return name


@transaction.atomic
def create_channel(
    key: ApiKey,
    *,
    name: str,
    description: str = "",
    workspace: str | None = None,
    is_default: bool = False,
) -> Channel:
    _may_write(key)
    ws = resolve_workspace(key, workspace)
    assert ws is not None
    name = _clean_name(name)
    try:
        with transaction.atomic():
            channel = Channel.objects.create(
                tenant_id=key.tenant_id, workspace=ws, name=name, description=description
            )
    except IntegrityError:
        raise Conflict(
            "channel_exists", f"Workspace {ws.name!r} already has a channel {name!r}."
        ) from None
    if is_default:
        channel.make_default()
    return channel


@transaction.atomic
def update_channel(key: ApiKey, channel_id: int, changes: dict[str, Any]) -> Channel:
    _may_write(key)
    channel = get_channel(key, channel_id, for_update=True)
    if changes.get("is_default") is False and channel.is_default:
        raise Conflict(
            "default_channel_required",
            "A workspace always has a default channel: make another channel the default instead.",
        )
    if "name" in changes:
        channel.name = _clean_name(changes["name"])
    if "description" in changes:
        channel.description = changes["description"]
    try:
        with transaction.atomic():
            channel.save(update_fields=["name", "description"])
    except IntegrityError:
        raise Conflict(
            "channel_exists",
            f"Workspace {channel.workspace.name!r} already has a channel {channel.name!r}.",
        ) from None
    if changes.get("is_default") and not channel.is_default:
        channel.make_default()
    return channel


CHANNEL_FILTERS: dict[str, Rule] = {
    "workspace": "workspace__name",
    "name": "name",
    "is_default": "is_default",
}


def channels_filter(key: ApiKey, filters: dict[str, Any]) -> QuerySet[Channel]:
    qs = narrowed(channels_visible_to(key), filters, CHANNEL_FILTERS)
    return qs.order_by("workspace__name", "name", "id")
