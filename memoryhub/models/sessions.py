"""Sessions and the append-only event log (docs/event-log.md#append)."""

from __future__ import annotations

import json
import math
import secrets
import string
from datetime import UTC, datetime
from typing import Any

import pgtrigger
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models, transaction
from django.utils import timezone

from accounts.models import Channel, Tenant, Workspace
from accounts.querysets import ConversationQuerySet, SessionScopedQuerySet

BASE62 = string.digits + string.ascii_letters
# Client-chosen session ids: 1–200 URL-safe characters, not starting with a symbol.
SESSION_ID_REGEX = r"^[A-Za-z0-9][A-Za-z0-9._:@\-]{0,199}$"
REF_CODE_LEN = 11
SUMMARY_BUDGET_MIN, SUMMARY_BUDGET_MAX = 50, 1_000_000


def new_ref_code() -> str:
    return "".join(secrets.choice(BASE62) for _ in range(REF_CODE_LEN))


def iso(moment: datetime) -> str:
    """UTC ISO-8601 with a Z, the API's one time format."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def estimate_tokens(text: str) -> int:
    """A cheap, model-agnostic token estimate (≈4 characters a token)."""
    return math.ceil(len(text) / 4) if text else 0


class SessionStatus(models.TextChoices):
    ACTIVE = "active"
    IDLE = "idle"
    ARCHIVED = "archived"


# Allowed status moves. Archived is final: an archived session is read-only history.
STATUS_TRANSITIONS: dict[str, set[str]] = {
    SessionStatus.ACTIVE: {SessionStatus.IDLE, SessionStatus.ARCHIVED},
    SessionStatus.IDLE: {SessionStatus.ACTIVE, SessionStatus.ARCHIVED},
    SessionStatus.ARCHIVED: set(),
}


class SessionQuerySet(ConversationQuerySet):
    def for_tenant(self, tenant_id: int) -> SessionQuerySet:
        return self.filter(tenant_id=tenant_id)


class Session(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="sessions")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="sessions")
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="sessions")
    external_id = models.CharField(
        "id", max_length=200, help_text="Chosen by the client; unique per tenant."
    )
    user_id = models.CharField(max_length=200, blank=True, default="")
    persistence_key = models.CharField(max_length=500, blank=True, default="")
    agent = models.CharField(max_length=200, blank=True, default="")
    title = models.CharField(max_length=500, blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=10, choices=SessionStatus.choices, default=SessionStatus.ACTIVE
    )
    summary_budget = models.IntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(SUMMARY_BUDGET_MIN), MaxValueValidator(SUMMARY_BUDGET_MAX)],
        help_text=(
            "Tokens the rolling summary works to (trigger, target, its own share); empty: the"
            " server default."
        ),
    )
    ref_code = models.CharField(
        max_length=REF_CODE_LEN, unique=True, default=new_ref_code, editable=False
    )
    last_sequence = models.BigIntegerField(default=0, editable=False)
    event_count = models.IntegerField(default=0, editable=False)
    # Events up to this sequence have been through the fact extractor (memoryhub.session_work).
    facts_extracted_to = models.BigIntegerField(default=0, editable=False)
    # Events up to this sequence have their consolidated_at set (docs/lifecycle.md#compress): marks
    # are always a prefix of the log, so this number also versions the recent-window cache's
    # entries.
    consolidated_to = models.BigIntegerField(default=0, db_default=0, editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    ended_at = models.DateTimeField(
        null=True,
        blank=True,
        editable=False,
        help_text=(
            "When the conversation ended: set when it goes idle or is archived, cleared if it is"
            " active again."
        ),
    )

    objects = SessionQuerySet.as_manager()

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "external_id"], name="session_unique_external_id"
            ),
        ]
        indexes = [
            models.Index(fields=["tenant", "-updated_at"], name="session_tenant_updated"),
            models.Index(fields=["tenant", "persistence_key"], name="session_tenant_pkey"),
            models.Index(fields=["tenant", "user_id"], name="session_tenant_user"),
            models.Index(fields=["channel", "-updated_at"], name="session_channel_updated"),
            # The summary lane looks at the sessions written since its last pass (session_work).
            models.Index(fields=["updated_at"], name="session_updated"),
        ]

    def __str__(self) -> str:
        return self.external_id

    def mark_consolidated(self, up_to: int, *, at: datetime | None = None) -> int:
        """Set consolidated_at on the events up to `up_to` not marked yet (extraction or
        consolidation has covered them): one UPDATE of the new range, and the session's
        watermark. Returns the events marked."""
        if up_to <= 0:
            return 0
        at = at or timezone.now()
        with transaction.atomic():
            since = (
                Session.objects.filter(pk=self.pk).values_list("consolidated_to", flat=True).first()
                or 0
            )
            if up_to <= since:
                return 0
            marked = Event.objects.filter(
                session_id=self.pk,
                sequence__gt=since,
                sequence__lte=up_to,
                consolidated_at__isnull=True,
            ).update(consolidated_at=at)
            Session.objects.filter(pk=self.pk, consolidated_to__lt=up_to).update(
                consolidated_to=up_to
            )
        self.consolidated_to = up_to
        return marked

    def can_move_to(self, status: str) -> bool:
        # Repeating the current status is not a move (idling an idle conversation is an error).
        return status in STATUS_TRANSITIONS[self.status]

    def clean(self) -> None:
        # Forms (the admin) follow the same status moves as the API.
        if self.pk is None:
            return
        stored = Session.objects.filter(pk=self.pk).values_list("status", flat=True).first()
        if stored and self.status != stored and self.status not in STATUS_TRANSITIONS[stored]:
            raise ValidationError(
                {"status": f"A session cannot move from {stored!r} to {self.status!r}."}
            )


class Role(models.TextChoices):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    SYSTEM = "system"


class EventQuerySet(SessionScopedQuerySet):
    def for_tenant(self, tenant_id: int) -> EventQuerySet:
        return self.filter(tenant_id=tenant_id)


class Event(models.Model):
    """One message or tool call/result. Append-only: the database refuses updates."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="events")
    sequence = models.BigIntegerField()
    role = models.CharField(max_length=10, choices=Role.choices)
    content = models.TextField(blank=True, default="")
    tool_name = models.CharField(max_length=200, blank=True, default="")
    tool_args = models.JSONField(null=True, blank=True)
    tool_result = models.JSONField(null=True, blank=True)
    # Several calls in one message, as chat APIs send them: [{"id", "name", "arguments"}, …].
    tool_calls = models.JSONField(null=True, blank=True)
    # A tool result names the call it answers.
    tool_call_id = models.CharField(max_length=200, blank=True, default="")
    # The chat-API message as sent, when these fields cannot give it back exactly (content null or
    # a list of parts, a name, tool calls in the `function` form): memoryhub.chat.
    message = models.JSONField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    importance = models.FloatField(validators=[MinValueValidator(0.0), MaxValueValidator(1.0)])
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # When fact extraction or consolidation (a compressed conversation) covered this message
    # (docs/lifecycle.md#compress); null: not yet. The one column an update may change.
    consolidated_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = EventQuerySet.as_manager()

    class Meta:
        ordering = ["session_id", "sequence"]
        constraints = [
            models.UniqueConstraint(fields=["session", "sequence"], name="event_unique_sequence"),
            models.UniqueConstraint(
                fields=["session", "idempotency_key"],
                condition=models.Q(idempotency_key__isnull=False),
                name="event_unique_idempotency_key",
            ),
            models.CheckConstraint(
                condition=models.Q(importance__gte=0.0, importance__lte=1.0),
                name="event_importance_range",
            ),
            models.CheckConstraint(
                condition=models.Q(sequence__gte=1), name="event_sequence_positive"
            ),
        ]
        indexes = [
            models.Index(fields=["tenant", "created_at"], name="event_tenant_created"),
        ]
        triggers = [
            # Append-only: nothing of a stored event changes but its consolidation marker.
            pgtrigger.Protect(
                name="event_append_only",
                operation=pgtrigger.Update,
                condition=pgtrigger.AnyChange(exclude=["consolidated_at"]),
            ),
            # Whatever the caller, a session's sequence only grows (also for raw SQL and imports).
            pgtrigger.Trigger(
                name="event_sequence_monotonic",
                when=pgtrigger.Before,
                operation=pgtrigger.Insert,
                func="""
                    IF NEW.sequence <= COALESCE(
                        (SELECT max(sequence) FROM memoryhub_event WHERE session_id = NEW.session_id), 0
                    ) THEN
                        RAISE EXCEPTION 'sequence % is not greater than the last of session %',
                            NEW.sequence, NEW.session_id USING ERRCODE = 'unique_violation';
                    END IF;
                    RETURN NEW;
                """,  # noqa: E501
            ),
            # A tenant with an immutable transcript loses events only through forget-user,
            # which lifts this trigger with pgtrigger.ignore.
            pgtrigger.Trigger(
                name="event_immutable_transcript",
                when=pgtrigger.Before,
                operation=pgtrigger.Delete,
                func="""
                    IF EXISTS (SELECT 1 FROM accounts_tenant
                               WHERE id = OLD.tenant_id AND immutable_transcript) THEN
                        RAISE EXCEPTION 'tenant % keeps an immutable transcript', OLD.tenant_id
                            USING ERRCODE = 'insufficient_privilege';
                    END IF;
                    RETURN OLD;
                """,
            ),
        ]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.sequence} {self.role}"

    def as_dict(self) -> dict[str, Any]:
        """The event's API representation (also what the recent-window cache holds)."""
        return {
            "id": self.pk,
            "sequence": self.sequence,
            "role": self.role,
            "content": self.content,
            "tool_name": self.tool_name or None,
            "tool_args": self.tool_args,
            "tool_result": self.tool_result,
            "tool_calls": self.tool_calls,
            "tool_call_id": self.tool_call_id or None,
            "metadata": self.metadata,
            "importance": self.importance,
            "idempotency_key": self.idempotency_key,
            "created_at": iso(self.created_at),
            "consolidated_at": iso(self.consolidated_at) if self.consolidated_at else None,
        }

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> Event:
        """An unsaved event with the searchable fields of an as_dict() payload (the recent-window
        cache's entries), enough for its text (retrieval.indexing.extract_event_text)."""
        return cls(
            role=payload["role"],
            content=payload["content"],
            tool_name=payload["tool_name"] or "",
            tool_args=payload["tool_args"],
            tool_result=payload["tool_result"],
            tool_calls=payload["tool_calls"],
            tool_call_id=payload["tool_call_id"] or "",
            sequence=payload["sequence"],
        )

    def tool_call_sentences(self) -> list[str]:
        """`Called <tool> with <args>` for the single tool_name/tool_args call and each of
        tool_calls."""
        calls = [(self.tool_name, self.tool_args)] if self.tool_name else []
        calls += [
            (c.get("name", ""), c.get("arguments"))
            for c in self.tool_calls or []
            if isinstance(c, dict)
        ]
        return [f"Called {name} with {_args_text(args)}" for name, args in calls if name]

    @property
    def text(self) -> str:
        """The message as plain text, with its tool calls spelled out when content is empty."""
        if self.content:
            return self.content
        return "\n".join(self.tool_call_sentences())


def _args_text(args: Any) -> str:
    # Chat APIs send arguments as a JSON string: keep it as written rather than quoting it again.
    if isinstance(args, str):
        return args or "{}"
    return json.dumps(args, ensure_ascii=False, sort_keys=True) if args not in (None, {}) else "{}"


class ToolCallSentence(models.Model):
    """A model's one-sentence description of a tool-call event with empty content
    (docs/event-log.md#indexing; the tool-call synthesis), written in the background when a
    summariser model is configured. The event log is append-only, so the sentence lives beside it;
    search indexes it with the event (before the deterministic `Called <tool> with <args>`, which
    keeps the arguments verbatim)."""

    event = models.OneToOneField(
        Event, on_delete=models.CASCADE, primary_key=True, related_name="tool_sentence"
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    text = models.TextField()
    model = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.text[:80]

    @staticmethod
    def of(event: Event) -> str:
        """The event's sentence when it was loaded with it (select_related), else "": never a
        query."""
        rel = Event._meta.get_field("tool_sentence")
        if not rel.is_cached(event):  # type: ignore[union-attr]
            return ""
        sentence = rel.get_cached_value(event)  # type: ignore[union-attr]
        return sentence.text if sentence is not None else ""
