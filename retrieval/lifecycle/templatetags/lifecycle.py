"""`{% pending_reviews as reviews %}`: the deletions consolidation holds for an operator's review,
for the admin index's badge (an automatic prune waits for review; say so
where the operator starts)."""

from __future__ import annotations

from typing import Any

from django import template
from django.db.models import Count

from retrieval.lifecycle.models import PendingDeletion

register = template.Library()


@register.simple_tag
def pending_reviews() -> dict[str, Any]:
    """{"reviews": n, "memories": m, "tenants": [(name, n), …]} of the reviews still pending."""
    rows = list(
        PendingDeletion.objects.filter(status=PendingDeletion.Status.PENDING)
        .order_by()
        .values("tenant__name")
        .annotate(n=Count("id"))
        .values_list("tenant__name", "n")
    )
    memories = sum(
        len(ids)
        for ids in PendingDeletion.objects.filter(
            status=PendingDeletion.Status.PENDING
        ).values_list("chunk_ids", flat=True)
    )
    return {"reviews": sum(n for _, n in rows), "memories": memories, "tenants": sorted(rows)}
