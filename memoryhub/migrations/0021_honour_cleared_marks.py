"""Delete the messages that older Python clients only marked as cleared (session metadata
"transcript"), as DELETE /sessions/{id}/events/ deletes them, and remove the marks
(memoryhub/cleared_marks.py, docs/event-log.md#removing-messages).

It runs the domain's own deletion on the current models, so that one rule deletes what a cleared
message leaves behind (chunks, summaries, facts): it depends on the latest migration of every app
whose rows that deletion touches. A later migration that changes those tables must come after it;
on a database with no marks (every new installation) it changes nothing.
"""

from django.db import migrations


def honour_marks(apps, schema_editor):  # type: ignore[no-untyped-def]
    from memoryhub.cleared_marks import honour_every_cleared_mark

    honour_every_cleared_mark()


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0003_channel_description_default"),
        ("memoryhub", "0020_authdata_client_ids_and_current_versions"),
        ("retrieval", "0018_lanes_pending_index"),
        ("lifecycle", "0002_archive_and_deletion_texts"),
        ("scheduling", "0006_authsched_authority"),
    ]

    # The marks are gone once honoured: there is nothing to write back.
    operations = [migrations.RunPython(honour_marks, migrations.RunPython.noop)]
