"""A session's scratchpad (S5)."""

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
from memoryhub.api.common import (
    StrictSerializer,
    api_key,
    parse_input,
)


class ScratchpadInput(StrictSerializer):
    # A list of {"key", "value"} objects (order kept; plain strings get keys "1", "2", …) or one
    # {key: value} object.
    items = serializers.JSONField(help_text=(
        "The whole pad: [{key, value}, …] (order kept), plain strings (keys \"1\", \"2\", …) or one {key: value} "
        "object. At most 32 items; a key is a string; a value is any JSON value: a string of at most 240 "
        "characters, or another value whose compact JSON has at most 240."))


ScratchpadOutput = inline_serializer("Scratchpad", {
    "session": serializers.CharField(),
    "items": inline_serializer("ScratchpadItem", {
        "key": serializers.CharField(),
        "value": serializers.JSONField(help_text="Any JSON value, as written."),
    }, many=True),
    "count": serializers.IntegerField(), "version": serializers.IntegerField(),
    "updated_at": serializers.DateTimeField(allow_null=True),
})


class ScratchpadView(APIView):
    @extend_schema(responses=ScratchpadOutput)
    def get(self, request: Request, session_id: str) -> Response:
        return Response(scratchpad.read(api_key(request), session_id))

    @extend_schema(request=ScratchpadInput, responses=ScratchpadOutput,
                   description="Replaces the whole scratchpad: {\"items\": [{\"key\", \"value\"}, …]}.")
    def put(self, request: Request, session_id: str) -> Response:
        data = parse_input(ScratchpadInput, request.data)
        return Response(scratchpad.write(api_key(request), session_id, data["items"]))

    @extend_schema(responses=ScratchpadOutput)
    def delete(self, request: Request, session_id: str) -> Response:
        return Response(scratchpad.clear(api_key(request), session_id))
