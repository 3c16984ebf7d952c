"""The transcript stays searchable: chunks of events that earlier consolidations pruned (when event
chunks decayed like derived memories) are rebuilt from the event log.

This data migration runs today's indexing code (retrieval.indexing.rebuild_event_chunks), not a
frozen copy: it only adds chunks the schema of this migration already has. Should indexing ever
write fields a later migration adds, freeze a copy of the function here.
"""

from django.db import migrations


def rebuild(apps, schema_editor):  # type: ignore[no-untyped-def]
    from retrieval.indexing import rebuild_event_chunks

    rebuild_event_chunks()


class Migration(migrations.Migration):
    dependencies = [
        ("retrieval", "0004_document_user"),
        ("memoryhub", "0004_api_usage"),
    ]

    operations = [migrations.RunPython(rebuild, migrations.RunPython.noop)]
