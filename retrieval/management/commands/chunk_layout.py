"""manage.py chunk_layout [--rewrite] [--batch N]: chunks whose vectors are still stored apart.

Migration 0012 keeps a chunk's vector and tsvector in its row (search reads them for every row a
scoped search tests), but rows written before it keep their old layout: in a long conversation
(chunks over TOAST's 2 kB with their context) most vectors and tsvectors are in the TOAST table,
and every scoped search pays a look-up for each. `VACUUM FULL retrieval_chunk` rewrites the whole
table under an exclusive lock; `--rewrite` writes only those rows again, a batch per transaction,
while the server runs. Each rewritten row is a new row version (its indexes get an entry each):
autovacuum reclaims the old ones.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

APART = (
    "pg_column_toast_chunk_id(c.embedding) IS NOT NULL",
    "pg_column_toast_chunk_id(c.search_vector) IS NOT NULL",
)

# The values are rebuilt from their text form (exact for both types): a new value is stored as
# the column's storage now says, in the row; a value left as it was keeps its TOAST pointer.
REWRITE = f"""
WITH batch AS (SELECT c.id FROM retrieval_chunk c WHERE c.id > %s ORDER BY c.id LIMIT %s),
rewritten AS (
    UPDATE retrieval_chunk c SET
        embedding = CASE WHEN {APART[0]} THEN c.embedding::text::halfvec ELSE c.embedding END,
        search_vector = CASE WHEN {APART[1]} THEN c.search_vector::text::tsvector ELSE c.search_vector END
    FROM batch b WHERE c.id = b.id AND ({APART[0]} OR {APART[1]})
    RETURNING c.id
)
SELECT (SELECT max(id) FROM batch), (SELECT count(*) FROM rewritten)
"""  # noqa: E501


def layout() -> dict[str, int]:
    """How many chunks there are, and how many have their vector / tsvector stored apart."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*), count(*) FILTER (WHERE {APART[0]}), count(*) FILTER (WHERE"
            f" {APART[1]}) FROM retrieval_chunk c"
        )
        chunks, vectors, tsvectors = cursor.fetchone()
    return {"chunks": chunks, "vectors_apart": vectors, "tsvectors_apart": tsvectors}


def rewrite(batch: int, progress: Any = None) -> int:
    """Write again every chunk whose vector or tsvector is stored apart, `batch` rows of the
    table per statement (each its own transaction). Returns how many were rewritten."""
    last, total = 0, 0
    while True:
        with connection.cursor() as cursor:
            cursor.execute(REWRITE, [last, batch])
            reached, rewritten = cursor.fetchone()
        if reached is None:
            return total
        last, total = reached, total + rewritten
        if progress is not None:
            progress(last, total)


class Command(BaseCommand):
    help = (
        "Report how many chunks still keep their vector or tsvector outside the row (written before"
        " migration 0012), and with --rewrite write those rows again in batches, without locking"
        " the table."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--rewrite", action="store_true", help="Write those rows again (default: report only)."
        )
        parser.add_argument(
            "--batch",
            type=int,
            default=1000,
            help="Rows of the table per transaction (default 1000).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch"] < 1:
            raise CommandError("--batch must be at least 1")
        report: dict[str, Any] = {"before": layout()}
        if options["rewrite"]:

            def progress(last_id: int, total: int) -> None:
                if options["verbosity"] > 1:
                    self.stderr.write(f"up to chunk {last_id}: {total} rewritten")

            report["rewritten"] = rewrite(options["batch"], progress)
            report["after"] = layout()
        self.stdout.write(json.dumps(report, indent=2))
