"""Summary chunks dated by the last message they summarise (SummaryNode.latest_at), as
SummaryNode.as_searchable now dates them, rather than by the summariser's run: the context block
shows each memory's own date, and a date the query names finds the summary of then."""

from django.db import migrations

FORWARD = """
UPDATE retrieval_chunk c SET created_at = s.latest_at
FROM memoryhub_summarynode s
WHERE c.kind = 'summary' AND c.tenant_id = s.tenant_id AND c.source_id = s.id::text
  AND s.latest_at IS NOT NULL AND c.created_at IS DISTINCT FROM s.latest_at
"""


class Migration(migrations.Migration):

    dependencies = [
        ('retrieval', '0016_termstat_tail'),
        ('memoryhub', '0012_squashed_0018'),
    ]

    operations = [migrations.RunSQL(FORWARD, migrations.RunSQL.noop)]
