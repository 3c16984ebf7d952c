"""End users (GET /users/): the user ids the key's sessions, facts and notes belong to."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub import end_users
from memoryhub.api import examples as ex
from memoryhub.api.common import api_key, paginate
from memoryhub.api.fields import PAGE_PARAMS, page_of


class EndUserOutput(serializers.Serializer):
    user_id = serializers.CharField(
        help_text="The end user's id (as sessions, facts and notes carry it)."
    )
    sessions = serializers.IntegerField(help_text="Their sessions the key may see.")
    facts = serializers.IntegerField(help_text="Their facts the key may see.")
    notes = serializers.IntegerField(help_text="Their notes the key may see.")
    last_activity = serializers.DateTimeField(
        allow_null=True, help_text="The latest change of one of their sessions, facts or notes."
    )


class EndUserListView(APIView):
    required_scope = "read"

    @extend_schema(
        summary="List end users",
        operation_id="users_list",
        description="Every end user who owns a session, fact or note the key may see, by user id, "
        "with their counts and last activity. A key limited to one user sees only that "
        "user; a workspace's key that workspace's users and counts.",
        parameters=[*PAGE_PARAMS],
        responses=page_of("EndUserPage", EndUserOutput(many=True, help_text="This page's users.")),
        examples=ex.USER_LIST,
    )
    def get(self, request: Request) -> Response:
        key = api_key(request)
        rows, meta = paginate(request, end_users.end_user_ids(key))
        users = end_users.end_users(key, [row["user_id"] for row in rows])
        return Response({**meta, "results": EndUserOutput(users, many=True).data})
