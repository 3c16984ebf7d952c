"""Admin helpers shared by every app: a paginator that never counts a big table."""

from __future__ import annotations

from functools import cached_property

from django.core.paginator import Paginator
from django.db import connection

COUNT_CAP = 10_000


class EstimatedCountPaginator(Paginator):
    """Unfiltered lists use the planner's row estimate; filtered ones count up to a cap.

    A full COUNT(*) over millions of events would make every admin page slow.
    """

    @cached_property
    def count(self) -> int:  # type: ignore[override]
        queryset = self.object_list
        query = getattr(queryset, "query", None)
        if query is None:
            return super().count
        if not query.where:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass",
                    [queryset.model._meta.db_table],
                )
                row = cursor.fetchone()
            estimate = int(row[0]) if row and row[0] is not None else -1
            if estimate >= COUNT_CAP:
                return estimate
        return queryset[: COUNT_CAP + 1].count() if hasattr(queryset, "count") else len(queryset)
