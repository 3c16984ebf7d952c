"""Examples of the API documentation: sessions, scratchpad and summaries (events and restore:
events.py). See memoryhub/api/examples/base.py."""

from memoryhub.api.examples.base import example

SESSION_LIST = [
    *example(
        "List sessions",
        "The key's sessions, newest first.",
        status=200,
        response={
            "count": 1,
            "next": None,
            "previous": None,
            "results": [
                {
                    "id": "chat-42",
                    "user_id": "user-123",
                    "persistence_key": "",
                    "agent": "travel-agent",
                    "workspace": "default",
                    "channel": "general",
                    "title": "Trip to Lisbon",
                    "metadata": {},
                    "status": "active",
                    "ref_code": "oKEjRyCyjpo",
                    "summary_budget": None,
                    "event_count": 2,
                    "last_sequence": 2,
                    "created_at": "2026-11-23T21:25:01.364966Z",
                    "updated_at": "2026-11-23T21:25:01.388161Z",
                    "ended_at": None,
                }
            ],
        },
    )
]

SESSION_CREATE = [
    *example(
        "Create a session",
        "A conversation of user-123 with the travel agent.",
        status=201,
        request={
            "id": "chat-43",
            "user_id": "user-123",
            "agent": "travel-agent",
            "title": "Hotel booking",
        },
        response={
            "id": "chat-43",
            "user_id": "user-123",
            "persistence_key": "",
            "agent": "travel-agent",
            "workspace": "default",
            "channel": "general",
            "title": "Hotel booking",
            "metadata": {},
            "status": "active",
            "ref_code": "uio5HtqpLDG",
            "summary_budget": None,
            "event_count": 0,
            "last_sequence": 0,
            "created_at": "2026-11-23T21:25:03.076088Z",
            "updated_at": "2026-11-23T21:25:03.076098Z",
            "ended_at": None,
        },
    ),
    *example(
        "Get or create",
        "The session exists: it is returned as it is (200).",
        status=200,
        request={"id": "chat-42", "user_id": "user-123", "get_or_create": True},
        response={
            "id": "chat-42",
            "user_id": "user-123",
            "persistence_key": "",
            "agent": "travel-agent",
            "workspace": "default",
            "channel": "general",
            "title": "Trip to Lisbon",
            "metadata": {},
            "status": "active",
            "ref_code": "cwngOHVwTJL",
            "summary_budget": None,
            "event_count": 2,
            "last_sequence": 2,
            "created_at": "2026-11-23T21:25:03.124201Z",
            "updated_at": "2026-11-23T21:25:03.142932Z",
            "ended_at": None,
        },
    ),
]

SESSION_GET = [
    *example(
        "Get a session",
        "",
        status=200,
        response={
            "id": "chat-42",
            "user_id": "user-123",
            "persistence_key": "",
            "agent": "travel-agent",
            "workspace": "default",
            "channel": "general",
            "title": "Trip to Lisbon",
            "metadata": {},
            "status": "active",
            "ref_code": "CZ13NmZmeRe",
            "summary_budget": None,
            "event_count": 2,
            "last_sequence": 2,
            "created_at": "2026-11-23T21:25:03.814856Z",
            "updated_at": "2026-11-23T21:25:03.845606Z",
            "ended_at": None,
        },
    )
]

SESSION_PATCH = [
    *example(
        "Rename a session",
        "",
        status=200,
        request={"title": "Trip to Lisbon and Porto"},
        response={
            "id": "chat-42",
            "user_id": "user-123",
            "persistence_key": "",
            "agent": "travel-agent",
            "workspace": "default",
            "channel": "general",
            "title": "Trip to Lisbon and Porto",
            "metadata": {},
            "status": "active",
            "ref_code": "BG7lkYUGt5Z",
            "summary_budget": None,
            "event_count": 2,
            "last_sequence": 2,
            "created_at": "2026-11-23T21:25:04.405526Z",
            "updated_at": "2026-11-23T21:25:04.808143Z",
            "ended_at": None,
        },
    )
]

SESSION_DELETE = [
    *example(
        "Delete a session",
        "Everything derived from it goes too.",
        status=200,
        response={
            "id": "chat-42",
            "deleted": {
                "memoryhub.ScratchpadItem": 1,
                "memoryhub.Event": 2,
                "retrieval.Chunk": 2,
                "memoryhub.Scratchpad": 1,
                "memoryhub.SummaryNode": 2,
                "memoryhub.Session": 1,
            },
        },
    )
]

SCRATCHPAD_GET = [
    *example(
        "Read the scratchpad",
        "",
        status=200,
        response={
            "session": "chat-42",
            "items": [{"key": "goal", "value": "Book the Lisbon flight"}],
            "count": 1,
            "max_items": 32,
            "max_chars": 240,
            "version": 1,
            "updated_at": "2026-11-23T18:18:44.196640Z",
        },
    )
]

SCRATCHPAD_PATCH = [
    *example(
        "Change scratchpad items",
        "Set one key, remove another; the rest stays.",
        status=200,
        request={
            "set": {"open": "Which part of town? Near the river."},
            "remove": ["done"],
            "expected_version": 1,
        },
        response={
            "session": "chat-42",
            "items": [
                {"key": "goal", "value": "Book the Lisbon flight"},
                {"key": "open", "value": "Which part of town? Near the river."},
            ],
            "count": 2,
            "max_items": 32,
            "max_chars": 240,
            "version": 2,
            "updated_at": "2026-11-23T18:18:49.828499Z",
        },
    )
]

SCRATCHPAD_PUT = [
    *example(
        "Replace the scratchpad",
        "",
        status=200,
        request={
            "items": [
                {"key": "goal", "value": "Book flight and hotel"},
                {"key": "open", "value": "Which part of town?"},
            ]
        },
        response={
            "session": "chat-42",
            "items": [
                {"key": "goal", "value": "Book flight and hotel"},
                {"key": "open", "value": "Which part of town?"},
            ],
            "count": 2,
            "max_items": 32,
            "max_chars": 240,
            "version": 2,
            "updated_at": "2026-11-23T18:18:49.828499Z",
        },
    )
]

SCRATCHPAD_DELETE = [
    *example(
        "Clear the scratchpad",
        "",
        status=200,
        response={
            "session": "chat-42",
            "items": [],
            "count": 0,
            "max_items": 32,
            "max_chars": 240,
            "version": 2,
            "updated_at": "2026-11-23T18:18:53.971934Z",
            "cleared": 1,
        },
    )
]

ROLLING_GET = [
    *example(
        "Get the rolling summary",
        "None written yet.",
        status=200,
        response={
            "session": "chat-42",
            "text": "",
            "epoch": 0,
            "upper_sequence": 0,
            "updated_at": None,
        },
    )
]

ROLLING_PUT = [
    *example(
        "Write the rolling summary",
        "Compare-and-swap on epoch 0.",
        status=200,
        request={
            "text": "The user is flying to Lisbon on May 3rd and wants an aisle seat.",
            "expected_epoch": 0,
        },
        response={
            "session": "chat-42",
            "text": "The user is flying to Lisbon on May 3rd and wants an aisle seat.",
            "epoch": 1,
            "upper_sequence": 0,
            "updated_at": "2026-11-23T18:19:00.484305Z",
        },
    )
]

SUMMARISE = [
    *example(
        "Summarise now",
        "Apply the trigger with a budget of 800 tokens: two short messages do not fire it.",
        status=200,
        request={"budget": 800},
        response={
            "summarised": False,
            "messages": 2,
            "tokens": 33,
            "budget": 800,
            "session": "chat-42",
            "text": "",
            "epoch": 0,
            "upper_sequence": 0,
            "updated_at": None,
        },
    )
]

SUMMARY_LIST = [
    *example(
        "List summary nodes",
        "",
        status=200,
        response={
            "count": 2,
            "next": None,
            "previous": None,
            "results": [
                {
                    "id": 53,
                    "level": "root",
                    "depth": 1,
                    "text": "The user plans a trip to Lisbon on May 3rd.",
                    "session": "chat-42",
                    "parent": None,
                    "sequence_start": 1,
                    "sequence_end": 2,
                    "source_count": 1,
                    "token_count": 0,
                    "summariser": "",
                    "model": "",
                    "earliest_at": "2025-05-01T09:00:00Z",
                    "latest_at": "2025-05-01T09:01:00Z",
                    "created_at": "2026-11-23T18:19:00.809475Z",
                },
                {
                    "id": 54,
                    "level": "leaf",
                    "depth": 0,
                    "text": "User flies to Lisbon on May 3rd; wants an aisle seat.",
                    "session": "chat-42",
                    "parent": 53,
                    "sequence_start": 1,
                    "sequence_end": 2,
                    "source_count": 2,
                    "token_count": 0,
                    "summariser": "",
                    "model": "",
                    "earliest_at": "2025-05-01T09:00:00Z",
                    "latest_at": "2025-05-01T09:01:00Z",
                    "created_at": "2026-11-23T18:19:00.810649Z",
                },
            ],
        },
    )
]

SUMMARY_EXPAND = [
    *example(
        "Expand a summary",
        "",
        status=200,
        response={
            "id": 55,
            "level": "root",
            "depth": 1,
            "text": "The user plans a trip to Lisbon on May 3rd.",
            "session": "chat-42",
            "parent": None,
            "sequence_start": 1,
            "sequence_end": 2,
            "source_count": 1,
            "token_count": 0,
            "summariser": "",
            "model": "",
            "earliest_at": "2025-05-01T09:00:00Z",
            "latest_at": "2025-05-01T09:01:00Z",
            "created_at": "2026-11-23T18:19:05.104337Z",
            "node": {
                "id": 55,
                "level": "root",
                "depth": 1,
                "text": "The user plans a trip to Lisbon on May 3rd.",
                "session": "chat-42",
                "parent": None,
                "sequence_start": 1,
                "sequence_end": 2,
                "source_count": 1,
                "token_count": 0,
                "summariser": "",
                "model": "",
                "earliest_at": "2025-05-01T09:00:00Z",
                "latest_at": "2025-05-01T09:01:00Z",
                "created_at": "2026-11-23T18:19:05.104337Z",
            },
            "children": [
                {
                    "id": 56,
                    "level": "leaf",
                    "depth": 0,
                    "text": "User flies to Lisbon on May 3rd; wants an aisle seat.",
                    "session": "chat-42",
                    "parent": 55,
                    "sequence_start": 1,
                    "sequence_end": 2,
                    "source_count": 2,
                    "token_count": 0,
                    "summariser": "",
                    "model": "",
                    "earliest_at": "2025-05-01T09:00:00Z",
                    "latest_at": "2025-05-01T09:01:00Z",
                    "created_at": "2026-11-23T18:19:05.105467Z",
                }
            ],
            "events": [
                {
                    "role": "user",
                    "content": "I'm flying to Lisbon on May 3rd. I prefer aisle seats.",
                    "sequence": 1,
                    "created_at": "2026-11-23T18:19:04.912293Z",
                },
                {
                    "role": "assistant",
                    "content": "Noted: Lisbon on May 3rd, and an aisle seat.",
                    "sequence": 2,
                    "created_at": "2026-11-23T18:19:04.912293Z",
                },
            ],
            "events_truncated": False,
        },
    )
]

SUMMARY_TREE = [
    *example(
        "Queue a tree build",
        "",
        status=202,
        response={"session": "chat-42", "queued": True},
    )
]
