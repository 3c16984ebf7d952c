"""Summary nodes record the time span they cover and the model that wrote them (seed 002, issue 41).

Existing nodes take their span from their events, and "extractive" or the HTTP summariser's
name as their model (the configured model at the time is not known any more)."""

from django.db import migrations, models

FILL_SPAN = """
UPDATE memoryhub_summarynode n SET earliest_at = s.earliest, latest_at = s.latest
FROM (SELECT n2.id, min(e.created_at) AS earliest, max(e.created_at) AS latest
      FROM memoryhub_summarynode n2 JOIN memoryhub_event e ON e.session_id = n2.session_id
       AND e.sequence BETWEEN n2.sequence_start AND n2.sequence_end GROUP BY n2.id) s
WHERE n.id = s.id
"""


class Migration(migrations.Migration):

    dependencies = [
        ("memoryhub", "0012_facts_per_owner_with_history"),
    ]

    operations = [
        migrations.AddField(
            model_name="summarynode",
            name="model",
            field=models.CharField(blank=True, default="", max_length=200,
                                   help_text='The model that wrote it: "extractive", or the HTTP summariser\'s model.'),
        ),
        migrations.AddField(
            model_name="summarynode",
            name="earliest_at",
            field=models.DateTimeField(blank=True, null=True, help_text="Time of the first event covered."),
        ),
        migrations.AddField(
            model_name="summarynode",
            name="latest_at",
            field=models.DateTimeField(blank=True, null=True, help_text="Time of the last event covered."),
        ),
        migrations.RunSQL(FILL_SPAN, migrations.RunSQL.noop),
        migrations.RunSQL("UPDATE memoryhub_summarynode SET model = summariser WHERE summariser <> ''",
                          migrations.RunSQL.noop),
    ]
