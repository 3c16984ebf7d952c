"""Import an export into a tenant (docs/memory-model.md#export-and-import): all or nothing, in one
transaction.

A malformed, partial or conflicting file is refused with a 4xx code and nothing is stored.
The Importer resolves the names the file uses (workspaces, channels, sessions) and keeps what it
created, so that records and extensions can refer to it. What it does with sessions and records the
tenant already holds is `on_conflict` (fail, skip, merge: conflicts.py); rows the file names that
were stored before the import are "pre-existing": extensions leave what hangs off them alone.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.db import models
from django.db.models import F, Max

from accounts.models import Channel, Tenant, Workspace
from memoryhub.errors import Conflict, Forbidden, NotFound
from memoryhub.models import Event, RollingSummary, Session, SessionStatus
from memoryhub.sessions import session_not_found
from memoryhub.transfer.conflicts import ImportReport, check_on_conflict, counts, split_held
from memoryhub.transfer.format import InvalidImport, get_field, get_time


class Importer:
    def __init__(
        self,
        tenant: Tenant,
        limit_workspace: Workspace | None,
        on_conflict: str = "fail",
        limit_user: str = "",
    ) -> None:
        self.tenant = tenant
        self.limit_workspace = limit_workspace
        # a user-limited key's user: every row of the file must be theirs
        self.limit_user = limit_user
        self.on_conflict = check_on_conflict(on_conflict)
        self.workspaces: dict[str, Workspace] = {}
        self.channels: dict[tuple[str, str], Channel] = {}
        self.created_channels: set[int] = set()
        self.sessions: dict[str, Session] = {}
        self.events: dict[tuple[str, int], int] = {}  # (session id, sequence) → event pk
        # model label → rows in file order: created, stored (pre-existing) or None (left out with
        # its parent)
        self.records: dict[str, list[models.Model | None]] = {}
        self.counts: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.merged: Counter[str] = Counter()
        # model label → pks of stored rows the file named
        self.preexisting: dict[str, set[int]] = {}
        self.skipped_sessions: list[str] = []
        self.merged_sessions: list[str] = []
        self.appended: dict[str, list[Event]] = {}  # merged session id → the events appended to it

    # -- what was stored before the import

    def is_preexisting(self, obj: models.Model | None) -> bool:
        """A row the file names that the tenant held before (None: left out with its parent)."""
        return obj is None or obj.pk in self.preexisting.get(obj._meta.label, set())

    def mark_preexisting(self, obj: models.Model) -> None:
        self.preexisting.setdefault(obj._meta.label, set()).add(obj.pk)

    def created_records(self, label: str) -> list[models.Model]:
        """The rows of a record type this import created (not the stored ones it matched)."""
        return [obj for obj in self.records.get(label, []) if not self.is_preexisting(obj)]

    def report(self) -> ImportReport:
        return ImportReport(
            self.on_conflict,
            counts(self.counts),
            counts(self.skipped),
            counts(self.merged),
            self.skipped_sessions,
            self.merged_sessions,
        )

    # -- the key's limits (the same rules as the REST writes: notes.place, ownership)

    def check_placed(
        self,
        path: str,
        *,
        workspace_id: int | None,
        session: Session | None,
        user_id: str,
        tier: str | None = None,
    ) -> None:
        """A row of the file must land within the importing key's limits and beside its own
        owner's rows, or the whole import is refused naming it: a workspace-limited key writes no
        account-wide row (403 workspace_forbidden, as REST refuses an account-scoped write), and a
        row of a user's session belongs to that user (409 owner_mismatch), and a user-limited key
        imports only its user's rows (check_owner)."""
        if self.limit_workspace is not None and (
            (workspace_id is None and session is None) or tier == "account"
        ):
            raise Forbidden(
                "workspace_forbidden",
                f"The row at {path} is account-wide; this API key is limited to "
                f"workspace {self.limit_workspace.name!r}: nothing was imported.",
                {"path": path},
            )
        self.check_owner(path, user_id=user_id, session=session)
        if session is not None and session.user_id and user_id and user_id != session.user_id:
            raise Conflict(
                "owner_mismatch",
                f"The row at {path} belongs to user {user_id!r}, its session "
                f"{session.external_id!r} to another: nothing was imported.",
                {"path": path},
            )

    def check_visible(self, stored: models.Model, missing: NotFound) -> None:
        """A stored row the file names (a session, a note, any record) that another workspace
        holds is answered as a read of its id answers this key, `missing`, whatever on_conflict
        says: a workspace-limited key learns nothing of another workspace (as when it creates a
        row over REST). Ids stay unique per tenant, because tenant-wide keys, exports and runs
        address rows by id alone."""
        workspace_id = getattr(stored, "workspace_id", None)
        if self.limit_workspace is not None and workspace_id not in (None, self.limit_workspace.pk):
            raise missing

    def check_owner(self, path: str, *, user_id: str, session: Session | None) -> None:
        """A user-limited key imports its own user's rows only (as it writes them over REST): a row
        whose owner (its user, else its session's) is another user or no one (a shared row) refuses
        the whole import (403 user_limited_key, naming the row). No-op for other keys."""
        owner = user_id or (session.user_id if session is not None else "")
        if self.limit_user and owner != self.limit_user:
            raise Forbidden(
                "user_limited_key",
                f"The row at {path} is not user {self.limit_user!r}'s, and this API "
                "key is limited to that user: nothing was imported.",
                {"path": path},
            )

    # -- names the file uses

    def workspace(self, name: Any, path: str) -> Workspace:
        if not isinstance(name, str) or not name:
            raise InvalidImport("a workspace name is required", path)
        if name not in self.workspaces:
            if self.limit_workspace is not None and name != self.limit_workspace.name:
                raise Forbidden(
                    "workspace_forbidden",
                    f"This API key is limited to workspace "
                    f"{self.limit_workspace.name!r}; the file has {name!r} at {path}: nothing was "
                    "imported.",
                    {"path": path},
                )
            workspace, created = Workspace.objects.get_or_create(tenant=self.tenant, name=name)
            self.workspaces[name] = workspace
            self.counts["workspaces"] += int(created)
        return self.workspaces[name]

    def channel(self, ref: Any, path: str) -> Channel:
        if not (
            isinstance(ref, list) and len(ref) == 2 and all(isinstance(v, str) and v for v in ref)
        ):
            raise InvalidImport("a channel is [workspace, channel]", path)
        key = (ref[0], ref[1])
        if key not in self.channels:
            self.channels[key], created = Channel.objects.get_or_create(
                tenant=self.tenant, workspace=self.workspace(ref[0], path), name=ref[1]
            )
            if created:
                self.created_channels.add(self.channels[key].pk)
        return self.channels[key]

    def session(self, ref: Any, path: str) -> Session:
        if ref not in self.sessions:
            raise InvalidImport(f"session {ref!r} is not in the file", path)
        return self.sessions[ref]

    # -- rows

    def import_workspaces(self, rows: list[Any]) -> None:
        for i, row in enumerate(rows):
            path = f"workspaces[{i}]"
            workspace = self.workspace(get_field(row, "name", str, path), path)
            for j, channel_row in enumerate(get_field(row, "channels", list, path)):
                cpath = f"{path}.channels[{j}]"
                channel = self.channel(
                    [workspace.name, get_field(channel_row, "name", str, cpath)], cpath
                )
                self._describe_channel(channel, channel_row, cpath)

    def _describe_channel(self, channel: Channel, row: Any, path: str) -> None:
        # Files written before channels had a description and a default flag lack them.
        description = get_field(row, "description", str, path, required=False, default="")
        make_default = get_field(row, "is_default", bool, path, required=False, default=False)
        if self.limit_user:
            # channels are shared by a workspace's users: a user-limited key leaves them as they are
            return
        if self.on_conflict != "fail" and channel.pk not in self.created_channels:
            # Skip and merge keep a stored channel as it is; merge only fills in a missing
            # description.
            if self.on_conflict == "merge" and description and not channel.description:
                channel.description = description
                channel.save(update_fields=["description"])
            return
        if description and description != channel.description:
            channel.description = description
            channel.save(update_fields=["description"])
        if make_default and not channel.is_default:
            channel.make_default()

    def import_sessions(self, rows: list[Any]) -> None:
        for i, row in enumerate(rows):
            path = f"sessions[{i}]"
            self.check_owner(path, user_id=get_field(row, "user_id", str, path), session=None)
            stored = self._stored_session(row, path)
            if stored is not None:
                self._skip_or_merge_session(stored, row, path)
                continue
            session, events = self._create_session(row, path)
            last = self.import_events(session, events, f"{path}.events")
            Session.objects.filter(pk=session.pk).update(
                last_sequence=last, event_count=len(events)
            )
            summary = get_field(row, "rolling_summary", dict, path, nullable=True)
            if summary is not None:
                self._create_rolling_summary(session, summary, f"{path}.rolling_summary")
            self.counts["sessions"] += 1

    def _stored_session(self, row: Any, path: str) -> Session | None:
        """The tenant's session of this id, when skip or merge takes it; fail refuses the import."""
        external_id = get_field(row, "id", str, path)
        if not external_id or len(external_id) > 200:
            raise InvalidImport("a session id is 1 to 200 characters", f"{path}.id")
        if external_id in self.sessions:
            raise Conflict(
                "session_exists",
                f"Session {external_id!r} is in the file twice; nothing was imported.",
                {"session": external_id},
            )
        stored = Session.objects.filter(tenant=self.tenant, external_id=external_id).first()
        if stored is not None:
            # another user's id: not this key's
            self.check_owner(path, user_id=stored.user_id, session=None)
        if stored is not None:
            self.check_visible(stored, session_not_found(external_id))
        if stored is not None and self.on_conflict == "fail":
            raise Conflict(
                "session_exists",
                f"Session {external_id!r} already exists in this tenant; nothing "
                "was imported (import with on_conflict=skip or merge to keep it).",
                {"session": external_id, "on_conflict": ["skip", "merge"]},
            )
        return stored

    def _skip_or_merge_session(self, stored: Session, row: Any, path: str) -> None:
        """Keep a stored session (skip), or append the file's events it does not hold (merge).
        The row is checked either way: a bad file stores nothing, whatever the option."""
        self.sessions[stored.external_id] = stored
        self.mark_preexisting(stored)
        events = self._file_events(stored, get_field(row, "events", list, path), f"{path}.events")
        has_summary = get_field(row, "rolling_summary", dict, path, nullable=True) is not None
        self.skipped["rolling_summaries"] += int(has_summary)  # the stored session's own is kept
        user_id = get_field(row, "user_id", str, path)
        if self.on_conflict == "merge" and user_id != stored.user_id:
            # Merging appends the file's words to the stored conversation: only to its owner's own.
            raise Conflict(
                "owner_mismatch",
                f"Session {stored.external_id!r} of the file belongs to "
                f"{'user ' + repr(user_id) if user_id else 'no user'}, the stored one to "
                f"{'another user' if stored.user_id else 'no user'}: nothing was imported.",
                {"session": stored.external_id, "path": f"{path}.user_id"},
            )
        if self.on_conflict == "skip":
            self.skipped["sessions"] += 1
            self.skipped["events"] += len(events)
            self.skipped_sessions.append(stored.external_id)
            return
        new, matched = split_held(stored.pk, events)
        if new and stored.status == SessionStatus.ARCHIVED:  # read-only, as an append to it is
            raise Conflict(
                "session_archived",
                f"Session {stored.external_id!r} is archived and read-only: the file "
                f"holds {len(new)} events it does not; nothing was imported (import with "
                "on_conflict=skip to keep it as it is).",
                {"session": stored.external_id, "on_conflict": ["skip"]},
            )
        for sequence, event_id in matched.items():
            self.events[(stored.external_id, sequence)] = event_id
        last = max(
            stored.last_sequence,
            Event.objects.filter(session=stored).aggregate(m=Max("sequence"))["m"] or 0,
        )
        for offset, event in enumerate(new, start=1):  # after the stored ones, in the file's order
            event.sequence = last + offset
        self.appended[stored.external_id] = Event.objects.bulk_create(new)
        if new:
            Session.objects.filter(pk=stored.pk).update(
                last_sequence=last + len(new), event_count=F("event_count") + len(new)
            )
        self.counts["events"] += len(new)
        self.skipped["events"] += len(events) - len(new)
        self.merged["sessions"] += 1
        self.merged_sessions.append(stored.external_id)

    def _create_session(self, row: Any, path: str) -> tuple[Session, list[Any]]:
        """The session row (checked, created, registered by its id) and its events, still to
        store."""
        external_id = get_field(row, "id", str, path)
        status = get_field(row, "status", str, path)
        if status not in SessionStatus.values:
            raise InvalidImport(f"unknown status {status!r}", f"{path}.status")
        workspace = self.workspace(get_field(row, "workspace", str, path), f"{path}.workspace")
        events = get_field(row, "events", list, path)
        session = Session.objects.create(
            tenant=self.tenant,
            workspace=workspace,
            channel=self.channel(
                [workspace.name, get_field(row, "channel", str, path)], f"{path}.channel"
            ),
            external_id=external_id,
            user_id=get_field(row, "user_id", str, path),
            persistence_key=get_field(row, "persistence_key", str, path),
            agent=get_field(row, "agent", str, path),
            title=get_field(row, "title", str, path),
            metadata=get_field(row, "metadata", dict, path),
            status=status,
            created_at=get_time(row, "created_at", path),
            updated_at=get_time(row, "updated_at", path),
        )
        self.sessions[external_id] = session
        return session, events

    def _create_rolling_summary(self, session: Session, summary: dict[str, Any], path: str) -> None:
        RollingSummary.objects.create(
            session=session,
            tenant=self.tenant,
            text=get_field(summary, "text", str, path),
            epoch=get_field(summary, "epoch", int, path),
            upper_sequence=get_field(summary, "upper_sequence", int, path),
            updated_at=get_time(summary, "updated_at", path),
        )
        self.counts["rolling_summaries"] += 1

    def import_events(self, session: Session, rows: list[Any], path: str) -> int:
        """Store a session's events; returns the last sequence."""
        events = self._file_events(session, rows, path)
        for event in Event.objects.bulk_create(events):
            self.events[(session.external_id, event.sequence)] = event.pk
        self.counts["events"] += len(events)
        return events[-1].sequence if events else 0

    def _file_events(self, session: Session, rows: list[Any], path: str) -> list[Event]:
        """The file's events of a session, checked, not saved (sequences as the file has them)."""
        events: list[Event] = []
        last = 0
        for i, row in enumerate(rows):
            epath = f"{path}[{i}]"
            sequence = get_field(row, "sequence", int, epath)
            if sequence <= last:
                raise InvalidImport(
                    "event sequences must be positive and increasing", f"{epath}.sequence"
                )
            last = sequence
            events.append(self._event(session, sequence, row, epath))
        return events

    def _event(self, session: Session, sequence: int, row: Any, path: str) -> Event:
        role = get_field(row, "role", str, path)
        if role not in ("user", "assistant", "tool", "system"):
            raise InvalidImport(f"unknown role {role!r}", f"{path}.role")
        importance = get_field(row, "importance", (int, float), path)
        if not 0.0 <= importance <= 1.0:
            raise InvalidImport("importance must be within [0, 1]", f"{path}.importance")
        return Event(
            tenant=self.tenant,
            session=session,
            sequence=sequence,
            role=role,
            content=get_field(row, "content", str, path),
            tool_name=get_field(row, "tool_name", str, path),
            tool_args=row.get("tool_args"),
            tool_result=row.get("tool_result"),
            # Files written before events had several tool calls lack these two.
            tool_calls=get_field(row, "tool_calls", list, path, required=False, nullable=True),
            tool_call_id=get_field(row, "tool_call_id", str, path, required=False, default=""),
            # The chat message as sent (memoryhub.chat); older files lack it.
            message=get_field(row, "message", dict, path, required=False, nullable=True),
            metadata=get_field(row, "metadata", dict, path),
            importance=float(importance),
            idempotency_key=get_field(row, "idempotency_key", str, path, nullable=True),
            created_at=get_time(row, "created_at", path),
        )
