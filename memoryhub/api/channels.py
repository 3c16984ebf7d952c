"""Channels (docs/memory-model.md#sharing): GET/POST /channels/, GET/PATCH /channels/{id}/."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import Channel
from memoryhub import channels
from memoryhub.api import examples as ex
from memoryhub.api.common import StrictSerializer, api_key, paginate, parse_input, query_params
from memoryhub.api.fields import PAGE_PARAMS, StrictCharField, page_of
from memoryhub.api.placement import workspace_field

DESCRIPTION_CHARS = 2000


class ChannelInput(StrictSerializer):
    name = StrictCharField(max_length=100, help_text="Unique within the workspace.")
    description = StrictCharField(
        max_length=DESCRIPTION_CHARS,
        required=False,
        allow_blank=True,
        default="",
        help_text="What the channel is about.",
    )
    workspace = workspace_field("place", required=False, allow_null=True, default=None)
    is_default = serializers.BooleanField(
        required=False, default=False, help_text="Make it the workspace's default channel."
    )


class ChannelPatchInput(StrictSerializer):
    name = StrictCharField(
        max_length=100, required=False, help_text="Sessions keep their channel under its new name."
    )
    description = StrictCharField(
        max_length=DESCRIPTION_CHARS,
        required=False,
        allow_blank=True,
        help_text="A new description.",
    )
    is_default = serializers.BooleanField(
        required=False,
        help_text=(
            "true makes it the workspace's default (the previous one stops being it); "
            "false on the default channel is refused."
        ),
    )


class ChannelOutput(serializers.ModelSerializer):
    workspace = workspace_field("show", source="workspace.name")

    class Meta:
        model = Channel
        fields = ["id", "name", "description", "workspace", "is_default", "created_at"]
        extra_kwargs = {
            "id": {"help_text": "The channel's id."},
            "name": {
                "help_text": (
                    "Its name, unique within the workspace (sessions, notes and facts name it)."
                )
            },
            "description": {"help_text": "What the channel is about."},
            "is_default": {
                "help_text": (
                    "True for the workspace's default channel (sessions go there unless "
                    "they name one)."
                )
            },
            "created_at": {"help_text": "When it was created."},
        }


class ChannelListParams(serializers.Serializer):
    workspace = workspace_field("filter", of="channels", required=False)
    name = serializers.CharField(required=False, help_text="Only channels of this name.")
    # Not allow_null: a query cannot say null, and DRF would read `is_default=` as null (no filter).
    is_default = serializers.BooleanField(
        required=False, default=None, help_text="Only default (true) or other (false) channels."
    )


class ChannelListView(APIView):
    @extend_schema(
        summary="List channels",
        operation_id="channels_list",
        description="The channels of the key's workspaces, filtered and paged.",
        parameters=[ChannelListParams, *PAGE_PARAMS],
        responses=page_of(
            "ChannelPage", ChannelOutput(many=True, help_text="This page's channels.")
        ),
        examples=ex.CHANNEL_LIST,
    )
    def get(self, request: Request) -> Response:
        filters = query_params(request, ChannelListParams)
        rows, meta = paginate(request, channels.channels_filter(api_key(request), filters))
        return Response({**meta, "results": ChannelOutput(rows, many=True).data})

    @extend_schema(
        summary="Create a channel",
        description=(
            "A channel in a workspace; a name the workspace already has is a 409 channel_exists."
        ),
        request=ChannelInput,
        responses={201: ChannelOutput},
        examples=ex.CHANNEL_CREATE,
    )
    def post(self, request: Request) -> Response:
        data = parse_input(ChannelInput, request.data)
        channel = channels.create_channel(api_key(request), **data)
        return Response(ChannelOutput(channel).data, status=status.HTTP_201_CREATED)


class ChannelDetailView(APIView):
    @extend_schema(
        summary="Get a channel",
        description="One channel of your tenant, by id.",
        responses=ChannelOutput,
        examples=ex.CHANNEL_GET,
    )
    def get(self, request: Request, channel_id: int) -> Response:
        return Response(ChannelOutput(channels.get_channel(api_key(request), channel_id)).data)

    @extend_schema(
        summary="Change a channel",
        description="Only the fields given change.",
        request=ChannelPatchInput,
        responses=ChannelOutput,
        examples=ex.CHANNEL_PATCH,
    )
    def patch(self, request: Request, channel_id: int) -> Response:
        changes = parse_input(ChannelPatchInput, request.data, partial=True)
        return Response(
            ChannelOutput(channels.update_channel(api_key(request), channel_id, changes)).data
        )
