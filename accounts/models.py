"""Tenants, workspaces, channels and API keys (docs/memory-model.md#sharing)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.utils import timezone
from django.utils.text import slugify

SCOPES = ("read", "write", "admin")
DEFAULT_WORKSPACE = "default"
DEFAULT_CHANNEL = "general"
KEY_PREFIX_LEN = 8


class Tenant(models.Model):
    """An account: an organisation or a person. No data ever crosses tenants."""

    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=100, unique=True)
    immutable_transcript = models.BooleanField(
        default=False, help_text="Forbid deleting events except through forget-user."
    )
    review_deletions = models.BooleanField(
        default=False, help_text="Consolidation deletions wait for an operator's approval."
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        if not self.slug:
            base = slugify(self.name)[:90] or secrets.token_hex(4)
            slug = base
            # "Acme Corp" and "acme corp" are two tenants: the second gets a suffixed slug.
            while Tenant.objects.filter(slug=slug).exclude(pk=self.pk).exists():
                slug = f"{base}-{secrets.token_hex(3)}"
            self.slug = slug
        super().save(*args, **kwargs)

    @classmethod
    @transaction.atomic
    def get_or_create_named(cls, name: str) -> tuple[Tenant, bool]:
        tenant, created = cls.objects.get_or_create(name=name)
        Workspace.get_default(tenant)
        return tenant, created


class Workspace(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="workspaces")
    name = models.CharField(max_length=100)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["tenant_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="workspace_unique_name")
        ]

    def __str__(self) -> str:
        return self.name

    @classmethod
    def get_named(cls, tenant: Tenant, name: str) -> Workspace:
        workspace, created = cls.objects.get_or_create(tenant=tenant, name=name)
        if created:
            Channel.get_default(workspace)
        return workspace

    @classmethod
    def get_default(cls, tenant: Tenant) -> Workspace:
        return cls.get_named(tenant, DEFAULT_WORKSPACE)


class Channel(models.Model):
    """A topic inside a workspace (docs/memory-model.md#channels); each workspace has one default
    channel (#general)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="channels")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="channels")
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True, default="", help_text="What the channel is about.")
    is_default = models.BooleanField(
        default=False,
        editable=False,
        help_text=(
            "Sessions that name no channel go here; one per workspace (the admin action moves it)."
        ),
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["workspace_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "name"], name="channel_unique_name"),
            models.UniqueConstraint(
                fields=["workspace"],
                condition=models.Q(is_default=True),
                name="channel_one_default",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @classmethod
    def get_default(cls, workspace: Workspace) -> Channel:
        """The workspace's default channel; #general, made the default, when it has none."""
        channel = cls.objects.filter(workspace=workspace, is_default=True).first()
        if channel is not None:
            return channel
        channel, _ = cls.objects.get_or_create(
            tenant_id=workspace.tenant_id, workspace=workspace, name=DEFAULT_CHANNEL
        )
        channel.make_default()
        return channel

    @classmethod
    def get_named(cls, workspace: Workspace, name: str | None) -> Channel:
        if not name:
            return cls.get_default(workspace)
        channel, _ = cls.objects.get_or_create(
            tenant_id=workspace.tenant_id, workspace=workspace, name=name
        )
        return channel

    @transaction.atomic
    def make_default(self) -> None:
        """Make this the workspace's default channel (the previous default stops being it)."""
        # Unset first: the partial unique constraint allows one default per workspace at any moment.
        Channel.objects.filter(workspace_id=self.workspace_id, is_default=True).exclude(
            pk=self.pk
        ).update(is_default=False)
        Channel.objects.filter(pk=self.pk).update(is_default=True)
        self.is_default = True


def hash_key(raw: str) -> str:
    # API keys carry 190+ bits of randomness, so a fast hash is enough (no password stretching).
    return hashlib.sha256(raw.encode()).hexdigest()


@dataclass(frozen=True)
class NewKey:
    api_key: ApiKey
    raw: str


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def active(self) -> ApiKeyQuerySet:
        return self.filter(revoked_at__isnull=True)


class ApiKey(models.Model):
    """A bearer key: `mh_<prefix>_<secret>`; only the prefix and a hash are stored."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    workspace = models.ForeignKey(
        Workspace,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="api_keys",
        help_text="Limit the key to one workspace (optional).",
    )
    user_id = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text=(
            "Limit the key to one end user (optional): it sees that user's memories and shared"
            " ones."
        ),
    )
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=KEY_PREFIX_LEN, unique=True, editable=False)
    key_hash = models.CharField(max_length=64, editable=False)
    scopes = ArrayField(
        models.CharField(max_length=10, choices=[(s, s) for s in SCOPES]), default=list
    )
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        verbose_name = "API key"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name or self.tenant})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def clean(self) -> None:
        if (
            self.workspace_id is not None
            and self.tenant_id is not None
            and self.workspace.tenant_id != self.tenant_id
        ):
            raise ValidationError({"workspace": "The workspace belongs to another tenant."})

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes or "admin" in self.scopes

    def matches(self, raw: str) -> bool:
        return hmac.compare_digest(self.key_hash, hash_key(raw))

    def revoke(self) -> None:
        if self.revoked_at is None:
            self.revoked_at = timezone.now()
            self.save(update_fields=["revoked_at"])

    @staticmethod
    def generate() -> tuple[str, str]:
        prefix = secrets.token_hex(KEY_PREFIX_LEN // 2)
        return prefix, f"mh_{prefix}_{secrets.token_urlsafe(32)}"

    @staticmethod
    def parse_prefix(raw: str) -> str | None:
        parts = raw.split("_", 2)
        if len(parts) != 3 or parts[0] != "mh" or len(parts[1]) != KEY_PREFIX_LEN:
            return None
        return parts[1]

    @classmethod
    def create_key(
        cls,
        *,
        tenant: Tenant,
        scopes: list[str] | tuple[str, ...] = SCOPES,
        workspace: Workspace | None = None,
        name: str = "",
        user_id: str = "",
    ) -> NewKey:
        unknown = set(scopes) - set(SCOPES)
        if unknown or not scopes:
            raise ValueError(f"scopes must be a non-empty subset of {SCOPES}, got {list(scopes)}")
        prefix, raw = cls.generate()
        api_key = cls.objects.create(
            tenant=tenant,
            workspace=workspace,
            user_id=user_id,
            name=name,
            prefix=prefix,
            key_hash=hash_key(raw),
            scopes=sorted(set(scopes), key=SCOPES.index),
        )
        return NewKey(api_key=api_key, raw=raw)
