"""Input and output shapes of the schedules API (the field names the REST API documents)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from memoryhub.api.common import StrictSerializer
from memoryhub.api.placement import user_field, workspace_field
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


@extend_schema_field({"oneOf": [{"type": "string"}, {"type": "number"}]})
class CadenceValueField(serializers.JSONField):
    """A cron expression or a time (strings), or an interval (seconds, or a string like '1h30m')."""


@extend_schema_field({"type": "string", "enum": sorted(REGISTRY)})
class ActionField(serializers.CharField):
    """An action of the registry (checked by actions.check_params, which names an unknown one)."""


@extend_schema_field({"type": "object", "additionalProperties": True})
class ParamsField(serializers.JSONField):
    """The action's parameters: an object (actions.check_params checks them against the action)."""


class CadenceInput(StrictSerializer):
    type = serializers.ChoiceField(
        choices=cadence_maths.TYPES,
        help_text=(
            "cron (a cron expression), once (one ISO 8601 time) or interval (seconds between runs)."
        ),
    )
    value = CadenceValueField(
        help_text=(
            "The cron expression ('0 3 * * *'), the time "
            "('2026-12-24T18:00:00+00:00') or the interval in seconds (3600)."
        )
    )
    timezone = serializers.CharField(
        max_length=64,
        required=False,
        allow_blank=True,
        help_text="The IANA time zone cron times are read in (default UTC).",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # A PATCH validates partially, and DRF passes that on to nested serializers: a new cadence
        # still needs its type and value (a cadence is replaced whole, never merged).
        missing = [name for name in ("type", "value") if name not in attrs]
        if missing:
            raise serializers.ValidationError(
                {
                    name: [serializers.ErrorDetail("This field is required.", code="required")]
                    for name in missing
                }
            )
        return attrs


ACTION_HELP = "What to run, one of: " + ", ".join(sorted(REGISTRY)) + "."


class ScheduleInput(StrictSerializer):
    name = serializers.CharField(max_length=200, help_text="A name for people.")
    goal = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=100_000,
        default="",
        help_text="What the schedule is for, in words (shown with its runs).",
    )
    # Checked against the registry by the service (400 unknown_action).
    action = ActionField(max_length=50, help_text=ACTION_HELP)
    params = ParamsField(
        required=False,
        default=dict,
        help_text='The action\'s parameters (e.g. {"limit": 500} for embed_backfill).',
    )
    cadence = CadenceInput(help_text="When it runs.")
    user_id = user_field(
        "place",
        fallback="none",
        required=False,
        allow_blank=True,
        default="",
    )
    notification_policy = serializers.ChoiceField(
        choices=NotificationPolicy.choices,
        required=False,
        default=NotificationPolicy.ALWAYS,
        help_text="Which finished runs send a notification.",
    )
    # A schedule's channel is where its notifications go, not where the schedule lives: not one of
    # the placement fields (memoryhub/api/placement.py), so it keeps its own wording.
    channel = serializers.CharField(
        max_length=100,
        required=False,
        allow_blank=True,
        default="",
        help_text="The channel notifications go to, if any.",
    )
    workspace = workspace_field("place", required=False, allow_blank=True)
    channel_context_id = serializers.CharField(
        max_length=200,
        required=False,
        allow_blank=True,
        default="",
        help_text=(
            "Where in the channel it was made (a thread, a chat); sent with its notifications."
        ),
    )


class SchedulePatchInput(StrictSerializer):
    name = serializers.CharField(max_length=200, required=False, help_text="A new name.")
    goal = serializers.CharField(
        required=False, allow_blank=True, max_length=100_000, help_text="A new goal."
    )
    action = ActionField(max_length=50, required=False, help_text=ACTION_HELP)
    params = ParamsField(required=False, help_text="New action parameters.")
    cadence = CadenceInput(required=False, help_text="A new cadence (the next run is recomputed).")
    user_id = user_field("change", required=False, allow_blank=True)
    notification_policy = serializers.ChoiceField(
        choices=NotificationPolicy.choices, required=False, help_text="A new notification policy."
    )
    channel = serializers.CharField(
        max_length=100, required=False, allow_blank=True, help_text="A new channel."
    )
    channel_context_id = serializers.CharField(
        max_length=200,
        required=False,
        allow_blank=True,
        help_text="A new place in the channel (thread, chat).",
    )


class ScheduleListParams(serializers.Serializer):
    q = serializers.CharField(required=False, max_length=200, help_text="Text in the name or goal.")
    status = serializers.ChoiceField(
        choices=ScheduleStatus.choices, required=False, help_text="Only schedules of this status."
    )
    action = serializers.ChoiceField(
        choices=sorted(REGISTRY), required=False, help_text="Only this action's."
    )
    cadence_type = serializers.ChoiceField(
        choices=cadence_maths.TYPES, required=False, help_text="Only this cadence type's."
    )
    user_id = user_field("filter", of="schedules", required=False, max_length=200)
    channel = serializers.CharField(
        required=False, max_length=100, help_text="Only this channel's."
    )
    workspace = workspace_field("filter", of="schedules", required=False, max_length=100)
    name = serializers.CharField(
        required=False, max_length=200, help_text="Only schedules of this exact name."
    )
    channel_context_id = serializers.CharField(
        required=False, max_length=200, help_text="Only schedules made in this thread or chat."
    )


class RunListParams(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=["queued", "running", "succeeded", "failed"],
        required=False,
        help_text="Only runs of this status.",
    )


class CadenceOutput(serializers.Serializer):
    type = serializers.CharField(help_text="cron, once or interval.")
    value = serializers.JSONField(help_text="The expression, time or seconds.")
    timezone = serializers.CharField(help_text="The time zone times are read in.")
    description = serializers.CharField(help_text="The cadence in words.")


class ScheduleOutput(serializers.ModelSerializer):
    id = serializers.CharField(read_only=True, help_text="The schedule's id.")
    cadence = serializers.SerializerMethodField(help_text="When it runs.")
    workspace = serializers.SerializerMethodField(help_text=workspace_field("show").help_text)
    next_run_local = serializers.SerializerMethodField(
        help_text="next_run_at in the cadence's time zone, in words."
    )
    last_run_local = serializers.SerializerMethodField(
        help_text="last_run_at in the cadence's time zone, in words."
    )

    class Meta:
        model = Schedule
        fields = [
            "id",
            "name",
            "goal",
            "action",
            "params",
            "cadence",
            "user_id",
            "notification_policy",
            "channel",
            "channel_context_id",
            "workspace",
            "status",
            "next_run_at",
            "next_run_local",
            "last_run_at",
            "last_run_local",
            "last_run_status",
            "consecutive_failures",
            "created_at",
            "updated_at",
        ]
        extra_kwargs = {
            "name": {"help_text": "Its name."},
            "goal": {"help_text": "What it is for."},
            "action": {"help_text": "What it runs."},
            "params": {"help_text": "The action's parameters."},
            "user_id": {"help_text": user_field("show").help_text},
            "notification_policy": {"help_text": "Which finished runs send a notification."},
            "channel": {"help_text": "The channel notifications go to (empty: none)."},
            "channel_context_id": {
                "help_text": (
                    "Where in the channel it was made (a thread, a chat; empty: "
                    "nowhere in particular)."
                )
            },
            "status": {
                "help_text": (
                    "active, paused, completed (a once schedule that ran) or failed (paused "
                    "after too many failures)."
                )
            },
            "next_run_at": {"help_text": "When it runs next (null: not scheduled)."},
            "last_run_at": {"help_text": "When it last ran."},
            "last_run_status": {"help_text": "How its last run ended."},
            "consecutive_failures": {"help_text": "Failed runs in a row."},
            "created_at": {"help_text": "When it was created."},
            "updated_at": {"help_text": "When it last changed."},
        }

    @extend_schema_field(CadenceOutput)
    def get_cadence(self, obj: Schedule) -> dict[str, Any]:
        return {
            "type": obj.cadence_type,
            "value": obj.cadence_value,
            "timezone": obj.timezone,
            "description": cadence_maths.describe(obj.cadence()),
        }

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_workspace(self, obj: Schedule) -> str | None:
        return obj.workspace.name if obj.workspace_id else None

    def get_next_run_local(self, obj: Schedule) -> str:
        return cadence_maths.format_in_timezone(obj.next_run_at, obj.timezone)

    def get_last_run_local(self, obj: Schedule) -> str:
        return cadence_maths.format_in_timezone(obj.last_run_at, obj.timezone)


class DeliveryOutput(serializers.ModelSerializer):
    class Meta:
        model = Delivery
        fields = [
            "status",
            "attempts",
            "max_attempts",
            "last_error",
            "last_status_code",
            "next_attempt_at",
            "delivered_at",
            "created_at",
        ]
        extra_kwargs = {
            "status": {"help_text": "pending, delivered, failed or no_webhook."},
            "attempts": {"help_text": "Deliveries tried so far."},
            "max_attempts": {"help_text": "Tries before it is failed."},
            "last_error": {"help_text": "Why the last try failed (empty: it did not)."},
            "last_status_code": {
                "help_text": "The webhook's HTTP status on the last try (null: no answer)."
            },
            "next_attempt_at": {"help_text": "When it is tried next (null: no further try)."},
            "delivered_at": {"help_text": "When the webhook accepted it (null: not yet)."},
            "created_at": {"help_text": "When the notification was made."},
        }


class RunOutput(serializers.ModelSerializer):
    id = serializers.CharField(read_only=True, help_text="The run's id.")
    run_id = serializers.CharField(
        source="id", read_only=True, help_text="The run's id (the same as id)."
    )
    schedule = serializers.CharField(
        source="schedule_id", read_only=True, help_text="The schedule's id."
    )
    delivery = serializers.SerializerMethodField(
        help_text=(
            "The notification of this run (null when the policy asked for none): status pending, "
            "delivered, failed or no_webhook, attempts, last error, delivered_at."
        )
    )

    class Meta:
        model = Run
        fields = [
            "id",
            "run_id",
            "schedule",
            "manual",
            "due_at",
            "started_at",
            "finished_at",
            "status",
            "error",
            "output_summary",
            "output",
            "turn_count",
            "cost",
            "notified",
            "delivery",
        ]
        extra_kwargs = {
            "manual": {"help_text": "True for a run started with POST …/run/."},
            "due_at": {"help_text": "The due time it ran for (null: manual)."},
            "started_at": {"help_text": "When it started (null: still queued)."},
            "finished_at": {"help_text": "When it ended (null: not yet)."},
            "status": {"help_text": "queued, running, succeeded or failed."},
            "error": {"help_text": "Why it failed (empty: it did not)."},
            "output_summary": {"help_text": "The output's beginning."},
            "output": {"help_text": "What the action returned."},
            "turn_count": {"help_text": "Model turns it took (agentic actions)."},
            "cost": {"help_text": "What it cost (agentic actions)."},
            "notified": {"help_text": "Whether a notification was sent for it."},
        }

    @extend_schema_field(DeliveryOutput(allow_null=True))
    def get_delivery(self, obj: Run) -> dict[str, Any] | None:
        try:
            return DeliveryOutput(obj.delivery).data  # select_related("delivery") by the views
        except Delivery.DoesNotExist:
            return None


class WebhookInput(StrictSerializer):
    kind = serializers.ChoiceField(
        choices=WebhookKind.choices,
        help_text=(
            "agent: agent_goal runs POST their goal here and record the reply; "
            "notification: finished runs are announced here, as their policy "
            "asks. A tenant has one webhook of each kind."
        ),
    )
    url = serializers.CharField(
        max_length=2000, help_text="Where notifications are POSTed (http or https)."
    )
    secret = serializers.CharField(
        max_length=200,
        required=False,
        allow_blank=True,
        default="",
        help_text="At least 16 characters; generated when left out. Shown only now.",
    )
    description = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default="", help_text="A note for people."
    )


class WebhookOutput(serializers.ModelSerializer):
    id = serializers.CharField(read_only=True, help_text="The webhook's id.")

    class Meta:
        model = Webhook
        fields = ["id", "kind", "url", "description", "created_at"]  # never the secret
        extra_kwargs = {
            "kind": {"help_text": "agent or notification."},
            "url": {"help_text": "Where notifications are POSTed."},
            "description": {"help_text": "A note for people."},
            "created_at": {"help_text": "When it was registered."},
        }


class WebhookCreatedOutput(WebhookOutput):
    class Meta(WebhookOutput.Meta):
        fields = [*WebhookOutput.Meta.fields, "secret"]  # the one time it is shown
        extra_kwargs = {
            **WebhookOutput.Meta.extra_kwargs,
            "secret": {"help_text": "The signing secret: shown only in this answer."},
        }
