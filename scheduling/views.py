"""REST views for schedules and runs (docs/lanes-and-schedules.md#schedules). Thin: parse, call,
serialise."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub.api.common import api_key, paginate, parse_input, query_params
from memoryhub.api.fields import PAGE_PARAMS, page_of
from scheduling import api_examples as ex
from scheduling import services, webhooks
from scheduling.dispatcher import run_now
from scheduling.serializers import (
    RunListParams,
    RunOutput,
    ScheduleInput,
    ScheduleListParams,
    ScheduleOutput,
    SchedulePatchInput,
    WebhookCreatedOutput,
    WebhookInput,
    WebhookOutput,
)


class ScheduleListView(APIView):
    @extend_schema(
        summary="List schedules",
        operation_id="schedules_list",
        description=(
            "The key's schedules, filtered and paged: those acting within the key's "
            "limits (a user-limited key lists only its user's own)."
        ),
        parameters=[ScheduleListParams, *PAGE_PARAMS],
        responses=page_of(
            "SchedulePage", ScheduleOutput(many=True, help_text="This page's schedules.")
        ),
        examples=ex.SCHEDULE_LIST,
    )
    def get(self, request: Request) -> Response:
        filters = query_params(request, ScheduleListParams)
        rows, meta = paginate(request, services.filter_schedules(api_key(request), filters))
        return Response({**meta, "results": ScheduleOutput(rows, many=True).data})

    @extend_schema(
        summary="Create a schedule",
        description=(
            "Run an action on a cadence. Its runs act with this key's authority (its "
            "workspace and user limits, its scopes), re-checked at every run: a revoked "
            "key's schedule stops. summarise, consolidate and embed_backfill work on the "
            "whole tenant and need the admin scope and a key limited to neither a "
            "workspace nor a user (403 otherwise, nothing stored); agent_goal and "
            "prune_runs act in the schedule's workspace, as its user."
        ),
        request=ScheduleInput,
        responses={201: ScheduleOutput},
        examples=ex.SCHEDULE_CREATE,
    )
    def post(self, request: Request) -> Response:
        data = parse_input(ScheduleInput, request.data)
        schedule = services.create_schedule(api_key(request), data)
        return Response(ScheduleOutput(schedule).data, status=status.HTTP_201_CREATED)


class ScheduleDetailView(APIView):
    @extend_schema(
        summary="Get a schedule",
        description="One schedule: what it does, when, and its state.",
        responses=ScheduleOutput,
        examples=ex.SCHEDULE_GET,
    )
    def get(self, request: Request, schedule_id: str) -> Response:
        return Response(ScheduleOutput(services.get_schedule(api_key(request), schedule_id)).data)

    @extend_schema(
        summary="Change a schedule",
        description="Only the fields given change.",
        request=SchedulePatchInput,
        responses=ScheduleOutput,
        examples=ex.SCHEDULE_PATCH,
    )
    def patch(self, request: Request, schedule_id: str) -> Response:
        changes = parse_input(SchedulePatchInput, request.data, partial=True)
        return Response(
            ScheduleOutput(services.update_schedule(api_key(request), schedule_id, changes)).data
        )

    @extend_schema(
        summary="Delete a schedule",
        description="Deletes the schedule and its runs.",
        responses={
            200: inline_serializer(
                "ScheduleDeleted",
                {
                    "id": serializers.CharField(help_text="The deleted schedule's id."),
                    "deleted": serializers.BooleanField(help_text="Always true."),
                },
            )
        },
        examples=ex.SCHEDULE_DELETE,
    )
    def delete(self, request: Request, schedule_id: str) -> Response:
        schedule = services.get_schedule_for_write(api_key(request), schedule_id)
        schedule.delete()
        return Response({"id": schedule_id, "deleted": True})


class SchedulePauseView(APIView):
    @extend_schema(
        summary="Pause a schedule",
        description="No run is started until it is resumed.",
        request=None,
        responses=ScheduleOutput,
        examples=ex.SCHEDULE_PAUSE,
    )
    def post(self, request: Request, schedule_id: str) -> Response:
        schedule = services.pause(services.get_schedule_for_write(api_key(request), schedule_id))
        return Response(ScheduleOutput(schedule).data)


class ScheduleResumeView(APIView):
    @extend_schema(
        summary="Resume a schedule",
        description="Runs again from its next due time on.",
        request=None,
        responses=ScheduleOutput,
        examples=ex.SCHEDULE_RESUME,
    )
    def post(self, request: Request, schedule_id: str) -> Response:
        key = api_key(request)
        schedule = services.resume(services.get_schedule_for_write(key, schedule_id), key)
        return Response(ScheduleOutput(schedule).data)


class ScheduleRunNowView(APIView):
    @extend_schema(
        summary="Run a schedule now",
        description="Queues a manual run at once (the next due time does not change).",
        request=None,
        responses={202: RunOutput},
        examples=ex.SCHEDULE_RUN,
    )
    def post(self, request: Request, schedule_id: str) -> Response:
        run = run_now(services.get_schedule_for_write(api_key(request), schedule_id))
        run.refresh_from_db()
        return Response(RunOutput(run).data, status=status.HTTP_202_ACCEPTED)


class ScheduleRunsView(APIView):
    @extend_schema(
        summary="List a schedule's runs",
        operation_id="schedules_runs_list",
        description="Newest first, paged.",
        parameters=[RunListParams, *PAGE_PARAMS],
        responses=page_of(
            "RunPage",
            RunOutput(many=True, help_text="This page's runs."),
            schedule=serializers.CharField(help_text="The schedule's id."),
        ),
        examples=ex.RUN_LIST,
    )
    def get(self, request: Request, schedule_id: str) -> Response:
        schedule = services.get_schedule(api_key(request), schedule_id)
        filters = query_params(request, RunListParams)
        qs = schedule.runs.select_related("delivery").order_by("-started_at", "pk")
        if "status" in filters:
            qs = qs.filter(status=filters["status"])
        rows, meta = paginate(request, qs)
        return Response(
            {**meta, "schedule": str(schedule.pk), "results": RunOutput(rows, many=True).data}
        )


class RunDetailView(APIView):
    @extend_schema(
        summary="Get a run",
        description=(
            "One run of a schedule: when it ran, its status, its output and how delivering it went."
        ),
        responses=RunOutput,
        examples=ex.RUN_GET,
    )
    def get(self, request: Request, run_id: str) -> Response:
        return Response(RunOutput(services.get_run(api_key(request), run_id)).data)


class WebhookListView(APIView):
    required_scope = "admin"  # a webhook receives every run of the tenant, signed with its secret

    @extend_schema(
        summary="List webhooks",
        operation_id="webhooks_list",
        description="The tenant's webhooks, at most one per kind (admin scope).",
        responses=inline_serializer(
            "WebhookList", {"results": WebhookOutput(many=True, help_text="The webhooks, by kind.")}
        ),
        examples=ex.WEBHOOK_LIST,
    )
    def get(self, request: Request) -> Response:
        rows = webhooks.list_webhooks(api_key(request))
        return Response({"results": WebhookOutput(rows, many=True).data})

    @extend_schema(
        summary="Register a webhook",
        request=WebhookInput,
        responses={201: WebhookCreatedOutput},
        examples=ex.WEBHOOK_CREATE,
        description=(
            "One webhook per kind (agent, notification) and tenant. The secret, given or "
            "generated, is in this answer only."
        ),
    )
    def post(self, request: Request) -> Response:
        data = parse_input(WebhookInput, request.data)
        hook = webhooks.create_webhook(api_key(request), **data)
        return Response(WebhookCreatedOutput(hook).data, status=status.HTTP_201_CREATED)


class WebhookDetailView(APIView):
    required_scope = "admin"

    @extend_schema(
        summary="Get a webhook",
        description="One registered webhook (without its secret).",
        responses=WebhookOutput,
        examples=ex.WEBHOOK_GET,
    )
    def get(self, request: Request, webhook_id: str) -> Response:
        return Response(WebhookOutput(webhooks.get_webhook(api_key(request), webhook_id)).data)

    @extend_schema(
        summary="Delete a webhook",
        description="Unregisters the webhook: MemoryHub calls its URL no more.",
        examples=ex.WEBHOOK_DELETE,
        responses={
            200: inline_serializer(
                "WebhookDeleted",
                {
                    "id": serializers.CharField(help_text="The deleted webhook's id."),
                    "deleted": serializers.BooleanField(
                        help_text="Always true: a missing webhook is a 404 instead."
                    ),
                },
            )
        },
    )
    def delete(self, request: Request, webhook_id: str) -> Response:
        webhooks.get_webhook(api_key(request), webhook_id).delete()
        return Response({"id": webhook_id, "deleted": True})
