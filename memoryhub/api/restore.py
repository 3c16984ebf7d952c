"""Restore (docs/event-log.md#restore): GET /sessions/{id}/restore/, a session's history as messages
a model can be fed again (memoryhub/restore.py), and the restored message's schema (also the source
events of an expanded summary)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub import chat, restore, sessions
from memoryhub.api import examples as ex
from memoryhub.api.common import api_key, query_params
from memoryhub.api.events import CHAT_MESSAGE_SCHEMA
from memoryhub.api.placement import metadata_field, session_field
from memoryhub.models import Role
from memoryhub.restore import DEFAULT_BUDGET


class RestoreParams(serializers.Serializer):
    budget = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=1_000_000,
        help_text=f"Token budget of the restored messages (default {DEFAULT_BUDGET}).",
    )
    format = serializers.ChoiceField(
        choices=list(chat.FORMATS),
        required=False,
        default=chat.NATIVE,
        help_text=(
            "native (default): each message as its stored event, as below. openai / anthropic: each"
            " message exactly as that chat API takes it (as it was sent when it was sent in that"
            " shape), nothing added; a leading summary is a plain system message. anthropic: system"
            " messages (the summary among them) are lifted into the answer's `system`, as the"
            " Messages API takes them."
        ),
    )
    persistence = serializers.BooleanField(
        required=False,
        default=False,
        help_text=(
            "Restore every session sharing this session's persistence_key (and user) as one"
            " history, oldest session first; each message then names its session."
        ),
    )


class RestoredSummaryRef(serializers.Serializer):
    session = session_field("show")
    epoch = serializers.IntegerField(help_text="The summary's epoch.")
    upper_sequence = serializers.IntegerField(
        help_text="The last sequence of that session it covers."
    )


class RestoredMessage(serializers.Serializer):
    """A restored message: a stored event verbatim (restore.event_message), or the leading rolling
    summary (role system, with summary_epoch, upper_sequence and summaries instead of event
    fields)."""

    role = serializers.ChoiceField(
        choices=Role.choices, help_text="Who spoke (system: the summary)."
    )
    content = serializers.CharField(
        help_text="The text as written (the summary's text on the summary)."
    )
    sequence = serializers.IntegerField(
        required=False, help_text="The event's sequence (not on the summary)."
    )
    tool_name = serializers.CharField(
        required=False, allow_null=True, help_text="The tool called, if any."
    )
    tool_args = serializers.JSONField(
        required=False, allow_null=True, help_text="The tool call's arguments, if any."
    )
    tool_result = serializers.JSONField(
        required=False, allow_null=True, help_text="The tool's result, if any."
    )
    tool_calls = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        allow_null=True,
        help_text="[{id, name, arguments}] as stored, if any.",
    )
    tool_call_id = serializers.CharField(
        required=False, allow_null=True, help_text="The tool call this result answers, if any."
    )
    metadata = metadata_field("show", note="Not on the summary.", required=False)
    created_at = serializers.DateTimeField(
        required=False, help_text="When it was said (not on the summary)."
    )
    session = session_field("show", note="Only with persistence.", required=False)
    summary_epoch = serializers.IntegerField(
        required=False, help_text="On the summary: the newest one's epoch."
    )
    upper_sequence = serializers.IntegerField(
        required=False, help_text="On the summary: the last sequence it covers."
    )
    summaries = RestoredSummaryRef(
        many=True,
        required=False,
        help_text="On the summary: each session's summary it joins, oldest first.",
    )


# anyOf: a native message is also a valid chat message (role, content), so oneOf would refuse it.
@extend_schema_field(
    {"anyOf": [{"$ref": "#/components/schemas/RestoredMessage"}, CHAT_MESSAGE_SCHEMA]}
)
class RestoredOrMessage(serializers.JSONField):
    """A restored message (native) or a chat message (?format=openai|anthropic)."""


RestoredOutput = inline_serializer(
    "Restored",
    {
        "session": serializers.CharField(help_text="The session's id."),
        "budget": serializers.IntegerField(help_text="The token budget used."),
        "tokens": serializers.IntegerField(help_text="Tokens the messages take (estimated)."),
        "truncated": serializers.BooleanField(
            help_text=(
                "Some messages are not in `messages` verbatim: a summary stands for them or they"
                " did not fit."
            )
        ),
        "omitted": serializers.IntegerField(
            help_text="How many messages are not in `messages` verbatim."
        ),
        "summary_epoch": serializers.IntegerField(
            allow_null=True, help_text="Epoch of the leading summary, if any."
        ),
        "sessions": serializers.ListField(
            child=serializers.CharField(),
            help_text="The sessions restored, oldest first (several with persistence).",
        ),
        "system": serializers.CharField(
            required=False,
            allow_null=True,
            help_text=(
                "Only with ?format=anthropic: the system messages' text (the summary first), joined"
                " by blank lines; null when there are none."
            ),
        ),
        "messages": serializers.ListField(
            child=RestoredOrMessage(),
            help_text=(
                "Oldest first. Each is the stored event verbatim (and names its session with"
                " persistence). A leading system message with `summaries` is the rolling summary,"
                " present only when the whole history does not fit. With ?format=openai|anthropic:"
                " chat messages instead."
            ),
        ),
    },
)


class RestoreView(APIView):
    @extend_schema(
        summary="Restore a conversation",
        parameters=[RestoreParams],
        responses=RestoredOutput,
        description=(
            "The session's messages as stored, oldest first, within `budget` tokens: what to put"
            " back in a model's context window. The whole history when it fits; otherwise the"
            " rolling summary leads as a system message and the newest messages it does not cover"
            " follow."
        ),
        examples=ex.RESTORE,
    )
    def get(self, request: Request, session_id: str) -> Response:
        params = query_params(request, RestoreParams)
        budget = params.get("budget", DEFAULT_BUDGET)
        key = api_key(request)
        session = sessions.get_session(key, session_id)
        chain = restore.persistence_chain(key, session) if params["persistence"] else None
        restored = restore.restore_session(
            session, budget=budget, chain=chain, format=params["format"]
        )
        messages = restored.messages
        extra = {}
        if params["format"] == chat.ANTHROPIC:
            system = [m["content"] for m in messages if m["role"] == "system"]
            messages = [m for m in messages if m["role"] != "system"]
            extra["system"] = "\n\n".join(system) if system else None
        return Response(
            {
                "session": session.external_id,
                "budget": budget,
                "tokens": restored.tokens,
                "truncated": restored.truncated,
                "omitted": restored.omitted,
                "summary_epoch": restored.summaries[-1].epoch if restored.summaries else None,
                "sessions": [s.external_id for s in restored.sessions],
                **extra,
                "messages": messages,
            }
        )
