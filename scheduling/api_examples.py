"""Examples of the API documentation: schedules and runs.
See memoryhub/api/examples/base.py."""

from memoryhub.api.examples.base import example

SCHEDULE_LIST = [
    *example(
        "List schedules",
        "",
        status=200,
        response={
            "count": 1,
            "next": None,
            "previous": None,
            "results": [
                {
                    "id": "7d229b0f-cc90-49a2-9738-8622b5dd9701",
                    "name": "Nightly summaries",
                    "goal": "",
                    "action": "summarise",
                    "params": {},
                    "cadence": {
                        "type": "cron",
                        "value": "0 3 * * *",
                        "timezone": "Europe/Lisbon",
                        "description": "cron 0 3 * * * (Europe/Lisbon)",
                    },
                    "user_id": "",
                    "notification_policy": "always",
                    "channel": "",
                    "workspace": "default",
                    "status": "active",
                    "next_run_at": "2026-11-24T03:00:00Z",
                    "next_run_local": "Tue 24 Nov 2026, 03:00 WET (Europe/Lisbon)",
                    "last_run_at": "2026-11-23T18:20:05.798655Z",
                    "last_run_local": "Mon 23 Nov 2026, 18:20 WET (Europe/Lisbon)",
                    "last_run_status": "succeeded",
                    "consecutive_failures": 0,
                    "created_at": "2026-11-23T18:20:02.552385Z",
                    "updated_at": "2026-11-23T18:20:05.816027Z",
                }
            ],
        },
    )
]

SCHEDULE_CREATE = [
    *example(
        "Consolidate weekly",
        "",
        status=201,
        request={
            "name": "Weekly consolidation",
            "action": "consolidate",
            "goal": "Merge duplicate memories.",
            "cadence": {"type": "cron", "value": "0 4 * * 1", "timezone": "Europe/Lisbon"},
        },
        response={
            "id": "c15ae985-f106-4715-9065-f9dd55b226ee",
            "name": "Weekly consolidation",
            "goal": "Merge duplicate memories.",
            "action": "consolidate",
            "params": {},
            "cadence": {
                "type": "cron",
                "value": "0 4 * * 1",
                "timezone": "Europe/Lisbon",
                "description": "cron 0 4 * * 1 (Europe/Lisbon)",
            },
            "user_id": "",
            "notification_policy": "always",
            "channel": "",
            "workspace": "default",
            "status": "active",
            "next_run_at": "2026-11-30T04:00:00Z",
            "next_run_local": "Mon 30 Nov 2026, 04:00 WET (Europe/Lisbon)",
            "last_run_at": None,
            "last_run_local": "",
            "last_run_status": "",
            "consecutive_failures": 0,
            "created_at": "2026-11-23T18:20:12.134944Z",
            "updated_at": "2026-11-23T18:20:12.135245Z",
        },
    )
]

SCHEDULE_GET = [
    *example(
        "Get a schedule",
        "",
        status=200,
        response={
            "id": "57657486-1cfe-4ba3-a8b4-845ff6a08787",
            "name": "Nightly summaries",
            "goal": "",
            "action": "summarise",
            "params": {},
            "cadence": {
                "type": "cron",
                "value": "0 3 * * *",
                "timezone": "Europe/Lisbon",
                "description": "cron 0 3 * * * (Europe/Lisbon)",
            },
            "user_id": "",
            "notification_policy": "always",
            "channel": "",
            "workspace": "default",
            "status": "active",
            "next_run_at": "2026-11-24T03:00:00Z",
            "next_run_local": "Tue 24 Nov 2026, 03:00 WET (Europe/Lisbon)",
            "last_run_at": "2026-11-23T18:20:14.683963Z",
            "last_run_local": "Mon 23 Nov 2026, 18:20 WET (Europe/Lisbon)",
            "last_run_status": "succeeded",
            "consecutive_failures": 0,
            "created_at": "2026-11-23T18:20:12.526793Z",
            "updated_at": "2026-11-23T18:20:14.712631Z",
        },
    )
]

SCHEDULE_PATCH = [
    *example(
        "Move a schedule",
        "",
        status=200,
        request={"cadence": {"type": "cron", "value": "30 2 * * *", "timezone": "Europe/Lisbon"}},
        response={
            "id": "e62a2f5a-47a3-4058-a939-f1a60e4082f2",
            "name": "Nightly summaries",
            "goal": "",
            "action": "summarise",
            "params": {},
            "cadence": {
                "type": "cron",
                "value": "30 2 * * *",
                "timezone": "Europe/Lisbon",
                "description": "cron 30 2 * * * (Europe/Lisbon)",
            },
            "user_id": "",
            "notification_policy": "always",
            "channel": "",
            "workspace": "default",
            "status": "active",
            "next_run_at": "2026-11-24T02:30:00Z",
            "next_run_local": "Tue 24 Nov 2026, 02:30 WET (Europe/Lisbon)",
            "last_run_at": "2026-11-23T18:20:19.483134Z",
            "last_run_local": "Mon 23 Nov 2026, 18:20 WET (Europe/Lisbon)",
            "last_run_status": "succeeded",
            "consecutive_failures": 0,
            "created_at": "2026-11-23T18:20:17.241609Z",
            "updated_at": "2026-11-23T18:20:21.828693Z",
        },
    )
]

SCHEDULE_DELETE = [
    *example(
        "Delete a schedule",
        "",
        status=200,
        response={"id": "02fb2680-d1b5-4062-a630-d14a8ef3b3d7", "deleted": True},
    )
]

SCHEDULE_PAUSE = [
    *example(
        "Pause",
        "",
        status=200,
        response={
            "id": "08f41eb9-7b50-431b-816e-c3b95dcaf092",
            "name": "Nightly summaries",
            "goal": "",
            "action": "summarise",
            "params": {},
            "cadence": {
                "type": "cron",
                "value": "0 3 * * *",
                "timezone": "Europe/Lisbon",
                "description": "cron 0 3 * * * (Europe/Lisbon)",
            },
            "user_id": "",
            "notification_policy": "always",
            "channel": "",
            "workspace": "default",
            "status": "paused",
            "next_run_at": "2026-11-24T03:00:00Z",
            "next_run_local": "Tue 24 Nov 2026, 03:00 WET (Europe/Lisbon)",
            "last_run_at": "2026-11-23T18:20:31.319197Z",
            "last_run_local": "Mon 23 Nov 2026, 18:20 WET (Europe/Lisbon)",
            "last_run_status": "succeeded",
            "consecutive_failures": 0,
            "created_at": "2026-11-23T18:20:27.880883Z",
            "updated_at": "2026-11-23T18:20:32.728123Z",
        },
    )
]

SCHEDULE_RESUME = [
    *example(
        "Resume",
        "",
        status=200,
        response={
            "id": "c497211b-f961-4d0e-8843-e75ae6336197",
            "name": "Nightly summaries",
            "goal": "",
            "action": "summarise",
            "params": {},
            "cadence": {
                "type": "cron",
                "value": "0 3 * * *",
                "timezone": "Europe/Lisbon",
                "description": "cron 0 3 * * * (Europe/Lisbon)",
            },
            "user_id": "",
            "notification_policy": "always",
            "channel": "",
            "workspace": "default",
            "status": "active",
            "next_run_at": "2026-11-24T03:00:00Z",
            "next_run_local": "Tue 24 Nov 2026, 03:00 WET (Europe/Lisbon)",
            "last_run_at": "2026-11-23T18:20:34.772525Z",
            "last_run_local": "Mon 23 Nov 2026, 18:20 WET (Europe/Lisbon)",
            "last_run_status": "succeeded",
            "consecutive_failures": 0,
            "created_at": "2026-11-23T18:20:33.088388Z",
            "updated_at": "2026-11-23T18:20:34.778907Z",
        },
    )
]

SCHEDULE_RUN = [
    *example(
        "Run now",
        "",
        status=202,
        response={
            "id": "76c8d017-c116-4251-96f2-2a9122540845",
            "run_id": "76c8d017-c116-4251-96f2-2a9122540845",
            "schedule": "c26be914-b20d-4081-8da1-3acdb5e742a4",
            "manual": True,
            "due_at": None,
            "started_at": "2026-11-23T21:24:59.448378Z",
            "finished_at": None,
            "status": "queued",
            "error": "",
            "output_summary": "",
            "output": "",
            "turn_count": 0,
            "cost": 0.0,
            "notified": False,
            "delivery": None,
        },
    )
]

RUN_LIST = [
    *example(
        "List runs",
        "",
        status=200,
        response={
            "count": 1,
            "next": None,
            "previous": None,
            "schedule": "84ae94af-2335-4444-ae54-3786958aaf51",
            "results": [
                {
                    "id": "50062168-e96b-4566-8b7a-83a87ad050d4",
                    "run_id": "50062168-e96b-4566-8b7a-83a87ad050d4",
                    "schedule": "84ae94af-2335-4444-ae54-3786958aaf51",
                    "manual": True,
                    "due_at": None,
                    "started_at": "2026-11-23T21:24:59.784547Z",
                    "finished_at": "2026-11-23T21:24:59.804558Z",
                    "status": "succeeded",
                    "error": "",
                    "output_summary": (
                        '{"facts_extracted": 0, "sessions_busy": 0, "sessions_checked": 0, '
                        '"sessions_failed": 0, "sessions_summarised": 0, '
                        '"sessions_with_new_nodes": 0, "stale_summaries": 0, "tree_nodes_built": '
                        "0}"
                    ),
                    "output": (
                        '{"facts_extracted": 0, "sessions_busy": 0, "sessions_checked": 0,'
                        ' "sessions_failed": 0, "sessions_summarised": 0,'
                        ' "sessions_with_new_nodes": 0, "stale_summaries": 0,'
                        ' "tree_nodes_built": 0}'
                    ),
                    "turn_count": 0,
                    "cost": 0.0,
                    "notified": False,
                    "delivery": {
                        "status": "no_webhook",
                        "attempts": 0,
                        "max_attempts": 5,
                        "last_error": (
                            "No notification webhook is configured for this tenant (POST "
                            "/api/v1/webhooks/ with kind 'notification')."
                        ),
                        "last_status_code": None,
                        "next_attempt_at": None,
                        "delivered_at": None,
                        "created_at": "2026-11-23T21:24:59.804558Z",
                    },
                }
            ],
        },
    )
]

RUN_GET = [
    *example(
        "Get a run",
        "",
        status=200,
        response={
            "id": "d43b02b6-0e66-4cb3-8eec-5b2c789eea44",
            "run_id": "d43b02b6-0e66-4cb3-8eec-5b2c789eea44",
            "schedule": "448ad831-e1e8-4d67-8e10-f287eaeacd69",
            "manual": True,
            "due_at": None,
            "started_at": "2026-11-23T21:24:56.290075Z",
            "finished_at": "2026-11-23T21:24:56.316658Z",
            "status": "succeeded",
            "error": "",
            "output_summary": (
                '{"facts_extracted": 0, "sessions_busy": 0, "sessions_checked": 0,'
                ' "sessions_failed": 0, "sessions_summarised": 0, "sessions_with_new_nodes": 0,'
                ' "stale_summaries": 0, "tree_nodes_built": 0}'
            ),
            "output": (
                '{"facts_extracted": 0, "sessions_busy": 0, "sessions_checked": 0,'
                ' "sessions_failed": 0, "sessions_summarised": 0, "sessions_with_new_nodes": 0,'
                ' "stale_summaries": 0, "tree_nodes_built": 0}'
            ),
            "turn_count": 0,
            "cost": 0.0,
            "notified": False,
            "delivery": {
                "status": "no_webhook",
                "attempts": 0,
                "max_attempts": 5,
                "last_error": (
                    "No notification webhook is configured for this tenant (POST "
                    "/api/v1/webhooks/ with kind 'notification')."
                ),
                "last_status_code": None,
                "next_attempt_at": None,
                "delivered_at": None,
                "created_at": "2026-11-23T21:24:56.316658Z",
            },
        },
    )
]

WEBHOOK_LIST = [
    *example(
        "List webhooks",
        "The tenant's webhooks (never their secrets).",
        status=200,
        response={
            "results": [
                {
                    "id": "914b8979-8b81-4a30-97af-b5bd24332b31",
                    "kind": "agent",
                    "url": "https://agent.example.com/goal",
                    "description": "The travel agent",
                    "created_at": "2026-11-23T21:28:34.153108Z",
                }
            ]
        },
    )
]

WEBHOOK_CREATE = [
    *example(
        "Register a notification webhook",
        "Finished runs are announced here; the secret is shown only now.",
        status=201,
        request={
            "kind": "notification",
            "url": "https://hooks.example.com/memoryhub",
            "secret": "a-long-shared-secret-0001",
            "description": "Ops channel",
        },
        response={
            "id": "3af2f8cc-3201-4496-bc18-c8eb17d176e2",
            "kind": "notification",
            "url": "https://hooks.example.com/memoryhub",
            "description": "Ops channel",
            "created_at": "2026-11-23T21:28:34.976927Z",
            "secret": "a-long-shared-secret-0001",
        },
    )
]

WEBHOOK_GET = [
    *example(
        "Get a webhook",
        "",
        status=200,
        response={
            "id": "57da7584-8f58-4221-af1b-cbb1da87e5d5",
            "kind": "agent",
            "url": "https://agent.example.com/goal",
            "description": "The travel agent",
            "created_at": "2026-11-23T21:28:35.512703Z",
        },
    )
]

WEBHOOK_DELETE = [
    *example(
        "Delete a webhook",
        "",
        status=200,
        response={"id": "6e8d44ee-55ba-4a5f-9cd8-8c0ec39e759f", "deleted": True},
    )
]
