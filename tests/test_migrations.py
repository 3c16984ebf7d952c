"""Migrations: the models match them, no merge-only migration is left, and an installation that
applied the migrations as they were before the squash (memoryhub 0001-0011 and 0012-0018 became
one migration each, retrieval 0001-0007 and scheduling 0001-0005 one each) is recognised as
migrated.

A fresh database migrates in every test run (the test database is built by `migrate`), and once
more below into a scratch database of its own.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.loader import MigrationLoader

from tests.processes import ROOT, base_env, database_url

# What an installation from before the squash has recorded in django_migrations: every migration
# of these apps as the files were named then.
BEFORE_THE_SQUASH = {
    "accounts": ["0001_initial", "0002_api_key_user", "0003_channel_description_default"],
    "memoryhub": [
        "0001_initial",
        "0002_memory_primitives",
        "0003_maintenance_schedules",
        "0004_api_usage",
        "0005_background_lanes",
        "0005_pinned_on_the_source",
        "0006_event_tool_calls",
        "0006_merge_0005_background_lanes_0005_pinned_on_the_source",
        "0006_metric_samples",
        "0007_session_summary_budget",
        "0008_session_ended_at",
        "0009_scratchpad_json_values",
        "0010_merge_20261123_1911",
        "0011_merge_0006_metric_samples_0010_merge_20261123_1911",
        "0012_facts_per_owner_with_history",
        "0013_summary_node_time_span_and_model",
        "0014_tool_call_sentences",
        "0015_arrivals_counted_as_they_happen",
        "0015_event_consolidated_at",
        "0015_event_message",
        "0016_end_users_view",
        "0016_merge_0015_event_consolidated_at_0015_event_message",
        "0017_event_append_only_covers_the_kept_message",
        "0018_merge_arrivals_end_users_and_event_changes",
        "0019_lanes_worker_counters",
        "0020_authdata_client_ids_and_current_versions",
    ],
    "retrieval": [
        "0001_initial",
        "0002_scope_indexes",
        "0003_weighted_search_vector",
        "0004_document_user",
        "0005_rebuild_event_chunks",
        "0006_document_identity_per_workspace",
        "0006_index_identifier_parts",
        "0007_merge_20261123_1911",
        "0008_search_statistics",
        "0009_chunk_message",
        "0010_message_chunks",
        "0011_chunk_keys_in_composite_indexes",
        "0012_chunk_vectors_kept_in_the_row",
        "0013_chunk_access_in_a_narrow_table",
        "0014_chunk_sentence_vectors",
        "0015_superseded_fact_chunks",
        "0016_termstat_tail",
        "0017_rank_summary_chunk_dates",
        "0018_lanes_pending_index",
    ],
    "scheduling": [
        "0001_initial",
        "0002_dispatcher_schedule",
        "0003_cluster_schedules",
        "0004_lanes",
        "0004_webhooks_deliveries",
        "0005_merge_0004_lanes_0004_webhooks_deliveries",
        "0006_authsched_authority",
    ],
    "lifecycle": ["0001_initial", "0002_archive_and_deletion_texts"],
}
SQUASHED = [
    ("memoryhub", "0001_squashed_0011"),
    ("memoryhub", "0012_squashed_0018"),
    ("retrieval", "0001_squashed_0007"),
    ("scheduling", "0001_squashed_0005"),
]
OURS = tuple(BEFORE_THE_SQUASH)


def ours(loader: MigrationLoader) -> dict[tuple[str, str], Any]:
    return {key: migration for key, migration in loader.disk_migrations.items() if key[0] in OURS}


def test_every_name_an_installation_recorded_is_a_migration_or_replaced_by_one() -> None:
    loader = MigrationLoader(None, ignore_no_migrations=True)
    known = set(ours(loader)) | {name for m in ours(loader).values() for name in m.replaces}
    missing = [
        (app, name)
        for app, names in BEFORE_THE_SQUASH.items()
        for name in names
        if (app, name) not in known
    ]
    assert missing == []
    for app, name in SQUASHED:
        # kept, or old installations would migrate again
        assert loader.disk_migrations[app, name].replaces


def test_migrations_depend_only_on_files_that_exist() -> None:
    # Django would follow a dependency on a replaced name to its squashed migration, but only
    # while the `replaces` stays: point at the migration that is there.
    loader = MigrationLoader(None, ignore_no_migrations=True)
    dangling = [
        (key, dependency)
        for key, migration in ours(loader).items()
        for dependency in migration.dependencies
        if dependency[0] in OURS and dependency not in loader.disk_migrations
    ]
    assert dangling == []


def test_no_merge_only_migration_and_one_migration_per_number() -> None:
    loader = MigrationLoader(None, ignore_no_migrations=True)
    merges = [key for key, migration in ours(loader).items() if not migration.operations]
    assert merges == []
    numbers: dict[tuple[str, str], list[str]] = {}
    for app, name in ours(loader):
        numbers.setdefault((app, name[:4]), []).append(name)
    assert [names for names in numbers.values() if len(names) > 1] == []


def test_the_models_match_the_migrations(db) -> None:  # type: ignore[no-untyped-def]
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)  # SystemExit(1) on a change


@pytest.fixture
def scratch_database(django_db_setup) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """An empty database beside the test database, dropped afterwards."""
    name = f"{connection.settings_dict['NAME']}_before_squash"
    with connect("postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with connect("postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def connect(database: str, **options: Any) -> psycopg.Connection[Any]:
    """A connection to `database` on the test database's server."""
    db = connection.settings_dict
    return psycopg.connect(
        dbname=database,
        host=db.get("HOST") or None,
        port=db.get("PORT") or None,
        user=db.get("USER") or None,
        password=db.get("PASSWORD") or None,
        **options,
    )


def manage(database: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=base_env(DATABASE_URL=database_url(database)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_an_installation_migrated_before_the_squash_is_recognised_as_migrated(
    scratch_database: str,
) -> None:
    manage(scratch_database, "migrate", "--noinput", "-v0")  # a fresh database migrates
    # Now make it what an installation from before the squash is: the same schema (pg_dump
    # --schema-only compared, memoryhub/README.md) with the old names recorded. Rows of
    # migrations newer than the squash stay.
    with connect(scratch_database) as scratch:
        recorded = {
            tuple(row) for row in scratch.execute("SELECT app, name FROM django_migrations")
        }
        assert set(SQUASHED) <= recorded
        for app, names in BEFORE_THE_SQUASH.items():
            squashed = [name for squashed_app, name in SQUASHED if squashed_app == app]
            scratch.execute(
                "DELETE FROM django_migrations WHERE app = %s AND name = ANY(%s)",
                [app, names + squashed],
            )
            for name in names:
                scratch.execute(
                    "INSERT INTO django_migrations (app, name, applied) VALUES (%s, %s, now())",
                    [app, name],
                )

    assert "No planned migration operations." in manage(scratch_database, "migrate", "--plan")
    replaced = {
        (app, name): len([n for n in BEFORE_THE_SQUASH[app] if name[:4] <= n[:4] <= name[-4:]])
        for app, name in SQUASHED
    }
    shown = manage(scratch_database, "showmigrations", *OURS)
    assert "[ ]" not in shown
    for app, name in SQUASHED:  # applied, the squashed name not yet recorded
        assert f"[-] {name} ({replaced[app, name]} squashed migrations)" in shown
    assert "No migrations to apply." in manage(scratch_database, "migrate", "--noinput")
    shown = manage(scratch_database, "showmigrations", *OURS)
    assert "[ ]" not in shown and "[-]" not in shown
    for app, name in SQUASHED:
        assert f"[X] {name} ({replaced[app, name]} squashed migrations)" in shown


def test_the_hnsw_graph_parameter_changes_without_rebuilding_the_index(
    scratch_database: str,
) -> None:
    """retrieval 0019 sets ef_construction 128 for the vectors added from then on: the index keeps
    its file (no rebuild that would block writes on a big table), its options change."""
    manage(scratch_database, "migrate", "retrieval", "0018", "--noinput", "-v0")
    index = "SELECT relfilenode, reloptions FROM pg_class WHERE relname = 'chunk_embedding_hnsw'"
    with connect(scratch_database, autocommit=True) as scratch:
        [(file_before, options_before)] = scratch.execute(index).fetchall()
        assert options_before == ["m=16", "ef_construction=64"]
        manage(scratch_database, "migrate", "retrieval", "--noinput", "-v0")
        [(file_after, options_after)] = scratch.execute(index).fetchall()
    assert options_after == ["m=16", "ef_construction=128"]
    assert file_after == file_before
