"""Schedules in export files: carried as records (memoryhub.transfer.records), and paused on import.

An imported schedule arrives paused: the importing tenant's operator decides when it runs (its
actions call this tenant's webhooks and change this tenant's memory). Runs the file says were still
queued or running never run here; they are closed as failed, so the dispatcher's timeout does not
finish (and notify) them later. Webhooks and deliveries are not exported (`exportable = False`).
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from memoryhub.transfer import Importer, TransferExtension
from scheduling.models import Run, RunStatus, Schedule, ScheduleStatus

IMPORTED_OPEN_RUN = "Imported while still open; it did not run in this tenant."


class SchedulingTransfer(TransferExtension):
    def import_derived(self, importer: Importer, data: dict[str, Any]) -> None:
        # Only the rows this import created: a stored schedule a skip or merge matched keeps its
        # status.
        schedules = [row.pk for row in importer.created_records(Schedule._meta.label)]
        paused = Schedule.objects.filter(pk__in=schedules, status=ScheduleStatus.ACTIVE).update(
            status=ScheduleStatus.PAUSED, updated_at=timezone.now()
        )
        if paused:
            importer.counts["schedules_paused"] += paused
        runs = [row.pk for row in importer.created_records(Run._meta.label)]
        Run.objects.filter(pk__in=runs, status__in=[RunStatus.QUEUED, RunStatus.RUNNING]).update(
            status=RunStatus.FAILED,
            error="imported",
            output=IMPORTED_OPEN_RUN,
            output_summary=IMPORTED_OPEN_RUN,
            finished_at=timezone.now(),
        )
