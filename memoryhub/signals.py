"""Signals other apps hook into, so that memoryhub never imports them (data flows one way)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

from django.dispatch import Signal

# Sent inside the appending transaction with session=Session, events=list[Event] (newly stored
# only). Receivers that start background work must defer it with transaction.on_commit.
events_appended = Signal()
# Sent inside the transaction that gave a session another user_id, with session=Session: what was
# derived from it (search chunks) changes owner too.
session_owner_changed = Signal()
# Sent before a session and everything derived from it are deleted, with session=Session.
session_forgotten = Signal()
# Sent inside the forget-user transaction once every row of the user is deleted, with
# tenant_id=int, user_id=str: receivers remove what still carries the user's words or id.
user_forgotten = Signal()
# Sent inside the transaction that deletes some of a session's events, once they are deleted, with
# session=Session, after=int (one less than the lowest deleted sequence): receivers delete what was
# derived from the events above `after`, re-derive it for those that remain, and return
# {model label: rows deleted}.
events_deleted = Signal()
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
# one-time preparation (retrieval makes its ONNX model here). With background=True a receiver may
# start slow work in a process of its own and return a BackgroundStep: `run` serves meanwhile, says
# what runs and for how long, watches the process and says when it is done. Without it (or with
# background=False) the receiver finishes its work before returning.
service_starting = Signal()
# Sent by `manage.py run` after migrating, before it starts the task cluster (not
# with --no-cluster): the cluster's own schedules follow the settings of this start (scheduling
# connects to it).
cluster_starting = Signal()
# Sent in the web master once it loaded the app, before it forks the workers (they share what the
# receivers load), and again in each worker before it accepts a request (gunicorn's when_ready and
# post_worker_init): receivers load what a first request would otherwise wait for, once per
# process. No arguments.
web_worker_starting = Signal()

# Sent inside the writing transaction when what is searchable of some events changed although the
# events did not (a tool call's sentence was written), with session=Session, events=list[Event].
events_text_changed = Signal()


@dataclass
class BackgroundStep:
    """Slow start-up work a service_starting receiver runs in a child process while `run` serves."""

    process: subprocess.Popen  # type: ignore[type-arg]  # started in a session of its own
    starting: str  # what it does, for whom it matters, about how long: printed when it starts
    finished: str  # printed when it exits 0
    failed: str  # printed (to stderr) when it exits otherwise
