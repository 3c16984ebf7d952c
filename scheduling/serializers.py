"""Input and output shapes of the schedules API (SPEC S11 field names)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from memoryhub.api.common import StrictSerializer
from scheduling import cadence as cadence_maths
from scheduling.actions import REGISTRY
from scheduling.models import (
    Delivery,
    NotificationPolicy,
    Run,
    Schedule,
    ScheduleStatus,
    Webhook,
    WebhookKind,
)


class CadenceInput(StrictSerializer):
    type = serializers.ChoiceField(choices=cadence_maths.TYPES)
    value = serializers.JSONField()
    timezone = serializers.CharField(max_length=64, required=False, allow_blank=True)


class ScheduleInput(StrictSerializer):
    name = serializers.CharField(max_length=200)
    goal = serializers.CharField(required=False, allow_blank=True, max_length=100_000, default="")
    # Checked against the registry by the service (400 unknown_action).
    action = serializers.CharField(max_length=50, help_text="One of: " + ", ".join(sorted(REGISTRY)))
    params = serializers.JSONField(required=False, default=dict)
    cadence = CadenceInput()
    user_id = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    notification_policy = serializers.ChoiceField(choices=NotificationPolicy.choices, required=False,
                                                  default=NotificationPolicy.ALWAYS)
    channel = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    channel_context_id = serializers.CharField(max_length=200, required=False, allow_blank=True, default="",
                                               help_text="Where in the channel it was made (a thread, a chat); "
                                                         "sent with its notifications.")
    workspace = serializers.CharField(max_length=100, required=False, allow_blank=True)


class SchedulePatchInput(StrictSerializer):
    name = serializers.CharField(max_length=200, required=False)
    goal = serializers.CharField(required=False, allow_blank=True, max_length=100_000)
    action = serializers.CharField(max_length=50, required=False)
    params = serializers.JSONField(required=False)
    cadence = CadenceInput(required=False)
    user_id = serializers.CharField(max_length=200, required=False, allow_blank=True)
    notification_policy = serializers.ChoiceField(choices=NotificationPolicy.choices, required=False)
    channel = serializers.CharField(max_length=100, required=False, allow_blank=True)
    channel_context_id = serializers.CharField(max_length=200, required=False, allow_blank=True)


class ScheduleListParams(serializers.Serializer):
    q = serializers.CharField(required=False, max_length=200)
    status = serializers.ChoiceField(choices=ScheduleStatus.choices, required=False)
    action = serializers.ChoiceField(choices=sorted(REGISTRY), required=False)
    cadence_type = serializers.ChoiceField(choices=cadence_maths.TYPES, required=False)
    user_id = serializers.CharField(required=False, max_length=200)
    channel = serializers.CharField(required=False, max_length=100)
    channel_context_id = serializers.CharField(required=False, max_length=200)
    workspace = serializers.CharField(required=False, max_length=100)
    name = serializers.CharField(required=False, max_length=200)


class RunListParams(serializers.Serializer):
    status = serializers.ChoiceField(choices=["queued", "running", "succeeded", "failed"], required=False)


class ScheduleOutput(serializers.ModelSerializer):
    id = serializers.CharField(read_only=True)
    cadence = serializers.SerializerMethodField()
    workspace = serializers.SerializerMethodField()
    next_run_local = serializers.SerializerMethodField()
    last_run_local = serializers.SerializerMethodField()

    class Meta:
        model = Schedule
        fields = ["id", "name", "goal", "action", "params", "cadence", "user_id", "notification_policy", "channel",
                  "channel_context_id", "workspace", "status", "next_run_at", "next_run_local", "last_run_at", "last_run_local",
                  "last_run_status", "consecutive_failures", "created_at", "updated_at"]

    def get_cadence(self, obj: Schedule) -> dict[str, Any]:
        return {"type": obj.cadence_type, "value": obj.cadence_value, "timezone": obj.timezone,
                "description": cadence_maths.describe(obj.cadence())}

    def get_workspace(self, obj: Schedule) -> str | None:
        return obj.workspace.name if obj.workspace_id else None

    def get_next_run_local(self, obj: Schedule) -> str:
        return cadence_maths.format_in_timezone(obj.next_run_at, obj.timezone)

    def get_last_run_local(self, obj: Schedule) -> str:
        return cadence_maths.format_in_timezone(obj.last_run_at, obj.timezone)


class DeliveryOutput(serializers.ModelSerializer):
    class Meta:
        model = Delivery
        fields = ["status", "attempts", "max_attempts", "last_error", "last_status_code", "next_attempt_at",
                  "delivered_at", "created_at"]


class RunOutput(serializers.ModelSerializer):
    id = serializers.CharField(read_only=True)
    run_id = serializers.CharField(source="id", read_only=True)
    schedule = serializers.CharField(source="schedule_id", read_only=True)
    delivery = serializers.SerializerMethodField(
        help_text="The notification of this run (null when the policy asked for none): status pending, "
                  "delivered, failed or no_webhook, attempts, last error, delivered_at.")

    class Meta:
        model = Run
        fields = ["id", "run_id", "schedule", "manual", "due_at", "started_at", "finished_at", "status", "error",
                  "output_summary", "output", "turn_count", "cost", "notified", "delivery"]

    @extend_schema_field(DeliveryOutput(allow_null=True))
    def get_delivery(self, obj: Run) -> dict[str, Any] | None:
        try:
            return DeliveryOutput(obj.delivery).data  # select_related("delivery") by the views
        except Delivery.DoesNotExist:
            return None


class WebhookInput(StrictSerializer):
    kind = serializers.ChoiceField(choices=WebhookKind.choices)
    url = serializers.CharField(max_length=2000)
    secret = serializers.CharField(max_length=200, required=False, allow_blank=True, default="",
                                   help_text="At least 16 characters; generated when left out. Shown only now.")
    description = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


class WebhookOutput(serializers.ModelSerializer):
    id = serializers.CharField(read_only=True)

    class Meta:
        model = Webhook
        fields = ["id", "kind", "url", "description", "created_at"]  # never the secret


class WebhookCreatedOutput(WebhookOutput):
    class Meta(WebhookOutput.Meta):
        fields = [*WebhookOutput.Meta.fields, "secret"]  # the one time it is shown
