"""Signals other apps hook into, so that memoryhub never imports them (data flows one way)."""

from django.dispatch import Signal

# Sent inside the appending transaction with session=Session, events=list[Event] (newly stored only).
# Receivers that start background work must defer it with transaction.on_commit.
events_appended = Signal()
# Sent inside the transaction that gave a session another user_id, with session=Session: what was
# derived from it (search chunks) changes owner too.
session_owner_changed = Signal()
# Sent before a session and everything derived from it are deleted, with session=Session.
session_forgotten = Signal()
# Sent inside the transaction that deletes a workspace, before it is deleted, with
# workspace=Workspace, session_ids=list[int] (its sessions'): receivers delete what refers to it
# without a cascading foreign key and return {model label: rows deleted}.
workspace_forgotten = Signal()

# Searchable memories other than events (notes, facts, summaries, documents) announce themselves
# so that retrieval can (re)index them. Sent inside the writing transaction.
#   memory_saved: kind=str ("note" | "fact" | "summary" | "document"), instance=<model instance>
#   memory_deleted: kind=str, tenant_id=int, source_id=str (the instance's searchable id)
memory_saved = Signal()
memory_deleted = Signal()

# Sent by `manage.py run` after migrating, before any child process (web, clusters, lanes) starts:
# one-time preparation that children rely on (retrieval makes its ONNX model here).
service_starting = Signal()
# Sent by `manage.py run` after migrating, before it starts the task cluster (not with --no-cluster):
# the cluster's own schedules follow the settings of this start (scheduling connects to it).
cluster_starting = Signal()

# Sent inside the writing transaction when what is searchable of some events changed although the
# events did not (a tool call's sentence was written), with session=Session, events=list[Event].
events_text_changed = Signal()
