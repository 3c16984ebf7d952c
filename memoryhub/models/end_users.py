"""End users as the operator console lists them: every user id that owns something in a tenant,
with what they own and when they were last active. A database view (migration 0016), not a
table: nothing to keep in step, and a tenant filter or a search by user id reaches each table's
own index."""

from __future__ import annotations

from django.db import models

from accounts.models import Tenant


class EndUser(models.Model):
    """One end user of one tenant (the same user id in two tenants is two rows). Read-only."""

    # "<tenant id>:<user id>": a user id is unique only within its tenant.
    id = models.CharField(primary_key=True, max_length=220)
    tenant = models.ForeignKey(
        Tenant, on_delete=models.DO_NOTHING, related_name="+", db_constraint=False
    )
    user_id = models.CharField("end user", max_length=200)
    sessions = models.IntegerField()
    facts = models.IntegerField()
    notes = models.IntegerField()
    last_seen = models.DateTimeField(
        help_text="The latest change of one of their sessions, facts or notes."
    )

    exportable = False  # a view of other rows: exported with them

    class Meta:
        managed = False
        db_table = "memoryhub_enduser"
        verbose_name = "end user"
        ordering = ["-last_seen"]

    def __str__(self) -> str:
        return self.user_id
