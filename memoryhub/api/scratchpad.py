"""A session's scratchpad (docs/memory-model.md#scratchpad)."""

from __future__ import annotations

from drf_spectacular.utils import (
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub import scratchpad
from memoryhub.api import examples as ex
from memoryhub.api.common import (
    StrictSerializer,
    api_key,
    parse_input,
)
from memoryhub.api.fields import ItemsField


class ScratchpadInput(StrictSerializer):
    # A list of {"key", "value"} objects (order kept; plain strings get keys "1", "2", …) or one
    # {key: value} object.
    items = ItemsField(
        help_text=(
            'The whole new scratchpad: [{key, value}, …] (order kept), plain strings (keys "1",'
            ' "2", …) or one {key: value} object. At most 32 items (by default; the answer\'s'
            " max_items says); a key is a string; a value is any JSON value: a string of at most"
            " 240 characters (max_chars), or another value whose compact JSON has at most 240. A"
            " bad item changes nothing."
        )
    )
    expected_version = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=2**31 - 1,
        default=None,
        help_text=(
            "Write only if the scratchpad is still at this version (as last read); else 409"
            " stale_version and nothing changes."
        ),
    )


class ScratchpadPatchInput(StrictSerializer):
    set = ItemsField(
        required=False,
        default=None,
        help_text=(
            "Items to set, by key ({key: value} or [{key, value}, …]): an existing key keeps its"
            " place, a new one goes last. The other items stay."
        ),
    )
    remove = serializers.ListField(
        child=serializers.CharField(max_length=240),
        required=False,
        default=list,
        max_length=32,
        help_text="Keys to remove (a missing key is no error).",
    )
    expected_version = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=2**31 - 1,
        default=None,
        help_text="Write only if the scratchpad is still at this version; else 409 stale_version.",
    )


class ScratchpadItem(serializers.Serializer):
    key = serializers.CharField(help_text="The item's name.")
    value = serializers.JSONField(help_text="The item's value: any JSON value, as written.")


def _pad_fields() -> dict[str, serializers.Field]:
    return {
        "session": serializers.CharField(help_text="The session's id."),
        "items": ScratchpadItem(many=True, help_text="The items, in order."),
        "count": serializers.IntegerField(help_text="How many items there are."),
        "max_items": serializers.IntegerField(help_text="The most items a scratchpad holds."),
        "max_chars": serializers.IntegerField(
            help_text=(
                "The most characters of a key or of a value (its compact JSON unless a string)."
            )
        ),
        "version": serializers.IntegerField(
            help_text="Grows by one with every write (0: never written)."
        ),
        "updated_at": serializers.DateTimeField(
            allow_null=True, help_text="When it was last written."
        ),
    }


ScratchpadOutput = inline_serializer("Scratchpad", _pad_fields())
ScratchpadCleared = inline_serializer(
    "ScratchpadCleared",
    {
        **_pad_fields(),
        "cleared": serializers.IntegerField(help_text="How many items were removed."),
    },
)


class ScratchpadView(APIView):
    @extend_schema(
        summary="Read the scratchpad",
        description="The session's working state: a short ordered list of key/value items.",
        responses=ScratchpadOutput,
        examples=ex.SCRATCHPAD_GET,
    )
    def get(self, request: Request, session_id: str) -> Response:
        return Response(scratchpad.read(api_key(request), session_id))

    @extend_schema(
        summary="Replace the scratchpad",
        description='Replaces the whole scratchpad: {"items": [{"key", "value"}, …]}.',
        request=ScratchpadInput,
        responses=ScratchpadOutput,
        examples=ex.SCRATCHPAD_PUT,
    )
    def put(self, request: Request, session_id: str) -> Response:
        data = parse_input(ScratchpadInput, request.data)
        return Response(
            scratchpad.write(api_key(request), session_id, data["items"], data["expected_version"])
        )

    @extend_schema(
        summary="Change scratchpad items",
        description=(
            "Per-key writes: set some keys, remove others; the rest stays. With "
            "expected_version, a stale writer gets 409 stale_version and changes nothing."
        ),
        request=ScratchpadPatchInput,
        responses=ScratchpadOutput,
        examples=ex.SCRATCHPAD_PATCH,
    )
    def patch(self, request: Request, session_id: str) -> Response:
        data = parse_input(ScratchpadPatchInput, request.data)
        return Response(
            scratchpad.update(
                api_key(request), session_id, data["set"], data["remove"], data["expected_version"]
            )
        )

    @extend_schema(
        summary="Clear the scratchpad",
        description="Removes every item of the session's scratchpad (the version goes up).",
        responses={200: ScratchpadCleared},
        examples=ex.SCRATCHPAD_DELETE,
    )
    def delete(self, request: Request, session_id: str) -> Response:
        return Response(scratchpad.clear(api_key(request), session_id))
