"""The placement fields every serializer declares: where a row lives (`session`, `workspace`,
`channel`) and how far it applies (`scope`, its tier), whose it is (`user_id`, `agent`) and how it
is labelled (`tags`, `metadata`). One factory per field holds the field's wording for each role it
plays, so the reference says the same thing about a field wherever it appears:

- "place": a create body says where the new row goes;
- "change": a change body replaces what the row had;
- "filter": a list or a search keeps only the rows placed there (`of` names those rows);
- "show": an answer says where the row is;
- "recall": a search or a context reads as this conversation or end user;
- "on_behalf": a request on one session acts for this end user, who must own it.

What differs between endpoints is an argument: `of` (what a filter keeps), `fallback` (what a
create falls back to, in words), `note` (one more sentence, for a rule only that endpoint has), the
field class where a caller's validation differs (`cls`), and DRF's own options (required, default,
allow_null, allow_blank, source). A factory adds the column's length limit in a create or change
body; everywhere else the caller's options stand as they are, so validation is what each
serializer declared.
"""

from __future__ import annotations

from typing import Any, Literal

from rest_framework import serializers

from accounts.models import Channel, Workspace
from memoryhub.api.fields import MetadataField, StrictCharField, TagsField
from memoryhub.models import Session
from memoryhub.searchable import TIERS

Role = Literal["place", "change", "filter", "show", "recall", "on_behalf"]

# A body that writes a field is held to its column's length.
USER_ID_MAX = Session._meta.get_field("user_id").max_length
AGENT_MAX = Session._meta.get_field("agent").max_length
SESSION_ID_MAX = Session._meta.get_field("external_id").max_length
WORKSPACE_MAX = Workspace._meta.get_field("name").max_length
CHANNEL_MAX = Channel._meta.get_field("name").max_length

# A note or fact made without a scope (memoryhub.notes.default_tier), in words.
TIER_FALLBACK = (
    "with a session, account (long-term: its owner's in every conversation; workspace for a key"
    " limited to one workspace); with a channel, channel; else workspace"
)

_WRITES = ("place", "change")


def _sentence(text: str, note: str) -> str:
    return f"{text} {note}" if note else text


def _marked(field: Any, role: Role) -> Any:
    """The field, marked as made here (tests/memoryhub/test_placement_fields.py finds a placement
    field declared by hand through it)."""
    field.placement_role = role
    return field


def _char(
    role: Role, help_text: str, limit: int, cls: type[serializers.Field] | None, **options: Any
) -> Any:
    """A text field, strict (no number or boolean taken as text) in every role unless the caller
    names `cls`: a JSON body that says `"session": 5` is refused by a search as by a note (a query
    string's value is always text, and an answer's is never parsed)."""
    if cls is None:
        cls = StrictCharField
    if role in _WRITES:
        options.setdefault("max_length", limit)
    return _marked(cls(help_text=help_text, **options), role)


def session_field(
    role: Role, *, of: str = "", note: str = "", cls: type | None = None, **options: Any
) -> Any:
    """The session (conversation) a row belongs to, by its id."""
    null = options.get("allow_null", False)
    text = {
        "place": "The session (conversation) it belongs to, if any: it then takes that session's"
        " workspace, channel and end user.",
        "filter": f"Only {of} of this session.",
        "show": f"The session (conversation) it belongs to{', if any' if null else ''}.",
        "recall": "Recall as this conversation: its end user's memories, from every conversation"
        " of theirs, with this conversation, its channel and its workspace ranked first (scope"
        " narrows it).",
    }[role]
    return _char(role, _sentence(text, note), SESSION_ID_MAX, cls, **options)


def workspace_field(
    role: Role, *, of: str = "", note: str = "", cls: type | None = None, **options: Any
) -> Any:
    """The workspace a row belongs to, by its name."""
    null = options.get("allow_null", False)
    text = {
        "place": "The workspace it belongs to, created if new (default: the key's workspace, else"
        " the one named default).",
        "filter": f"Only {of} of this workspace.",
        "recall": "Recall this workspace's memories (see scope).",
        "show": f"The workspace it belongs to{' (null: account-wide)' if null else ''}.",
    }[role]
    return _char(role, _sentence(text, note), WORKSPACE_MAX, cls, **options)


def channel_field(
    role: Role,
    *,
    of: str = "",
    fallback: str = "",
    note: str = "",
    cls: type | None = None,
    **options: Any,
) -> Any:
    """The channel of its workspace a row belongs to, by its name."""
    null = options.get("allow_null", False)
    made = f"created if new; default: {fallback}" if fallback else "created if new"
    text = {
        "place": f"The channel of its workspace it belongs to ({made}).",
        "filter": f"Only {of} of this channel.",
        "recall": "Recall this channel's memories (see scope).",
        "show": f"The channel it belongs to{', if any' if null else ''}.",
    }[role]
    return _char(role, _sentence(text, note), CHANNEL_MAX, cls, **options)


def user_field(
    role: Role,
    *,
    of: str = "",
    fallback: str = "",
    note: str = "",
    cls: type | None = None,
    **options: Any,
) -> Any:
    """The end user a row belongs to, or the one a request acts as; empty or absent: none."""
    text = {
        "place": f"The end user it belongs to (default: {fallback}).",
        "change": "The end user it belongs to from now on.",
        "filter": f"Only {of} of this end user.",
        "show": "The end user it belongs to (empty: no one's; a note, fact or document of no one's"
        " is shared knowledge).",
        "recall": "Recall as this end user: their memories and shared knowledge (notes, facts and"
        " documents without an owner), never another user's nor a conversation nobody owns"
        " (default: the session's user).",
        "on_behalf": "Act on behalf of this end user: the session must be theirs (409"
        " owner_mismatch for another user's conversation or one nobody owns).",
    }[role]
    return _char(role, _sentence(text, note), USER_ID_MAX, cls, **options)


def agent_field(
    role: Role, *, of: str = "", note: str = "", cls: type | None = None, **options: Any
) -> Any:
    """The agent (bot, assistant) that holds a conversation, by its name."""
    text = {
        "place": "The agent (bot, assistant) that holds the conversation.",
        "change": "The agent (bot, assistant) that holds the conversation, replacing the old one.",
        "show": "The agent (bot, assistant) that holds the conversation.",
        "filter": f"Only {of} of this agent.",
    }[role]
    return _char(role, _sentence(text, note), AGENT_MAX, cls, **options)


def scope_field(
    role: Role, *, of: str = "", fallback: str = "", cls: type | None = None, **options: Any
) -> Any:
    """How widely a note or fact applies: its tier."""
    text = {
        "place": "How widely it applies: conversation (its session only, deleted when the session"
        " ends), channel, workspace or account (all the tenant's workspaces)."
        f" Default: {fallback}.",
        "filter": f"Only {of} of this scope.",
        "show": "How widely it applies: conversation, channel, workspace or account.",
    }[role]
    if cls is None:
        cls = serializers.CharField if role == "show" else serializers.ChoiceField
    if cls is serializers.ChoiceField:
        options.setdefault("choices", TIERS)
    return _marked(cls(help_text=text, **options), role)


def tags_field(role: Role, *, of: str = "", cls: type | None = None, **options: Any) -> Any:
    """A row's labels. A create or change body takes a list (TagsField normalises it); a list's
    query takes them comma-separated, a search's body as a list (`cls=serializers.ListField`)."""
    listed = cls is not None and issubclass(cls, serializers.ListField)
    text = {
        "place": "Labels, usable as search filters.",
        "change": "Labels, usable as search filters, replacing the old ones.",
        "filter": f"Only {of} with all these tags{'' if listed else ', comma-separated'}.",
        "show": "Its labels.",
    }[role]
    if cls is None:
        cls = serializers.CharField if role == "filter" else TagsField
    return _marked(cls(help_text=text, **options), role)


def metadata_field(role: Role, *, note: str = "", cls: type | None = None, **options: Any) -> Any:
    """The caller's own JSON object on a row."""
    text = {
        "place": "Any JSON object of the caller's.",
        "change": "Any JSON object of the caller's, replacing the old one.",
        "show": "The caller's JSON object.",
    }[role]
    if cls is None:
        cls = MetadataField if role in _WRITES else serializers.DictField
    return _marked(cls(help_text=_sentence(text, note), **options), role)
