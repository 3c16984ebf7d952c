"""Examples of the API documentation: a tenant's data as a whole (export, import, forget a user) and
health. See memoryhub/api/examples/base.py."""

from memoryhub.api.examples.base import example

FORGET_USER = [
    *example(
        "Forget a user",
        "",
        status=200,
        response={
            "user_id": "user-123",
            "deleted": {
                "memoryhub.Event": 2,
                "memoryhub.Fact": 1,
                "memoryhub.Note": 1,
                "memoryhub.Scratchpad": 1,
                "memoryhub.ScratchpadItem": 1,
                "memoryhub.Session": 1,
                "memoryhub.SummaryNode": 2,
                "retrieval.Chunk": 4,
            },
            "total": 13,
            "redacted": {
                "lifecycle.ConsolidationReport": 1,
                "scheduling.Delivery": 0,
                "scheduling.Run": 1,
            },
        },
    )
]

KEY_GET = [
    *example(
        "Describe this key",
        "A tenant-wide key with every scope.",
        status=200,
        response={
            "tenant": "travel",
            "workspace": None,
            "user_id": None,
            "scopes": ["admin", "read", "write"],
        },
    )
]

USER_LIST = [
    *example(
        "List end users",
        "",
        status=200,
        response={
            "count": 1,
            "next": None,
            "previous": None,
            "results": [
                {
                    "user_id": "user-123",
                    "sessions": 1,
                    "facts": 1,
                    "notes": 1,
                    "last_activity": "2026-11-23T18:19:18.272816Z",
                }
            ],
        },
    )
]

EXPORT = [
    *example(
        "Export a session",
        "Long lists shortened to one item, vectors to four numbers.",
        status=200,
        request={"session": "chat-42"},
        response={
            "format": "memoryhub-export",
            "schema_version": 1,
            "scope": {"type": "session", "session": "chat-42"},
            "workspaces": [{"name": "default", "channels": [{"name": "general"}]}],
            "sessions": [
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
                    "created_at": "2026-11-23T18:19:18.006320Z",
                    "updated_at": "2026-11-23T18:19:18.052982Z",
                    "events": [
                        {
                            "sequence": 1,
                            "role": "user",
                            "content": "I'm flying to Lisbon on May 3rd. I prefer aisle seats.",
                            "tool_name": "",
                            "tool_args": None,
                            "tool_result": None,
                            "metadata": {},
                            "importance": 0.5,
                            "idempotency_key": None,
                            "created_at": "2026-11-23T18:19:18.052982Z",
                        },
                        {
                            "sequence": 2,
                            "role": "assistant",
                            "content": "Noted: Lisbon on May 3rd, and an aisle seat.",
                            "tool_name": "",
                            "tool_args": None,
                            "tool_result": None,
                            "metadata": {},
                            "importance": 0.5,
                            "idempotency_key": None,
                            "created_at": "2026-11-23T18:19:18.052982Z",
                        },
                    ],
                    "rolling_summary": None,
                }
            ],
            "documents": [],
            "records": {
                "memoryhub.Scratchpad": [
                    {
                        "key": 0,
                        "fields": {
                            "session": "chat-42",
                            "version": 1,
                            "updated_at": "2026-11-23T18:19:18.272816Z",
                        },
                    }
                ],
                "memoryhub.ScratchpadItem": [
                    {
                        "key": 0,
                        "fields": {
                            "scratchpad": {"key": 0},
                            "position": 0,
                            "key": "goal",
                            "value": "Book the Lisbon flight",
                        },
                    }
                ],
                "memoryhub.SummaryNode": [
                    {
                        "key": 0,
                        "fields": {
                            "workspace": "default",
                            "channel": ["default", "general"],
                            "session": "chat-42",
                            "parent": None,
                            "user_id": "user-123",
                            "level": "root",
                            "depth": 1,
                            "text": "The user plans a trip to Lisbon on May 3rd.",
                            "sequence_start": 1,
                            "sequence_end": 2,
                            "source_count": 1,
                            "token_count": 0,
                            "summariser": "",
                            "model": "",
                            "earliest_at": None,
                            "latest_at": None,
                            "metadata": {},
                            "created_at": "2026-11-23T18:19:18.283993Z",
                        },
                    },
                    {
                        "key": 1,
                        "fields": {
                            "workspace": "default",
                            "channel": ["default", "general"],
                            "session": "chat-42",
                            "parent": {"key": 0},
                            "user_id": "user-123",
                            "level": "leaf",
                            "depth": 0,
                            "text": "User flies to Lisbon on May 3rd; wants an aisle seat.",
                            "sequence_start": 1,
                            "sequence_end": 2,
                            "source_count": 2,
                            "token_count": 0,
                            "summariser": "",
                            "model": "",
                            "earliest_at": None,
                            "latest_at": None,
                            "metadata": {},
                            "created_at": "2026-11-23T18:19:18.288670Z",
                        },
                    },
                ],
            },
            "chunks": [
                {
                    "kind": "event",
                    "source": None,
                    "session": "chat-42",
                    "event": 1,
                    "workspace": "default",
                    "channel": ["default", "general"],
                    "tier": "conversation",
                    "lifetime": "conversation",
                    "user_id": "user-123",
                    "role": "user",
                    "agent": "travel-agent",
                    "tags": [],
                    "sequence_start": 1,
                    "sequence_end": 1,
                    "text": "I'm flying to Lisbon on May 3rd. I prefer aisle seats.",
                    "context": "",
                    "content_hash": (
                        "91e3cd9781bfbee480acf829ae1e81f8ca91fd7551786e1eede1d7c76c2ef7d0"
                    ),
                    "metadata": {
                        "role": "user",
                        "session": "chat-42",
                        "created_at": "2026-11-23T18:19:18.052982+00:00",
                        "schema_version": 1,
                    },
                    "importance": 0.5,
                    "access_count": 0,
                    "accessed_at": None,
                    "created_at": "2026-11-23T18:19:18.052982Z",
                    "indexed_at": "2026-11-23T18:19:23.304382Z",
                    "embedding": [0.0964, -0.0069, 0.013, 0.0074],
                    "embedding_model": "all-MiniLM-L6-v2",
                },
                {
                    "kind": "event",
                    "source": None,
                    "session": "chat-42",
                    "event": 2,
                    "workspace": "default",
                    "channel": ["default", "general"],
                    "tier": "conversation",
                    "lifetime": "conversation",
                    "user_id": "user-123",
                    "role": "assistant",
                    "agent": "travel-agent",
                    "tags": [],
                    "sequence_start": 2,
                    "sequence_end": 2,
                    "text": "Noted: Lisbon on May 3rd, and an aisle seat.",
                    "context": "I'm flying to Lisbon on May 3rd. I prefer aisle seats.",
                    "content_hash": (
                        "78935bfb6c64f0710ff529cd7e3fd26ad1e6f02b1677c86a9d049fb0522a70b7"
                    ),
                    "metadata": {
                        "role": "assistant",
                        "session": "chat-42",
                        "created_at": "2026-11-23T18:19:18.052982+00:00",
                        "schema_version": 1,
                    },
                    "importance": 0.5,
                    "access_count": 0,
                    "accessed_at": None,
                    "created_at": "2026-11-23T18:19:18.052982Z",
                    "indexed_at": "2026-11-23T18:19:23.304382Z",
                    "embedding": [0.0924, -0.018, 0.0137, -0.0014],
                    "embedding_model": "all-MiniLM-L6-v2",
                },
            ],
        },
    )
]

IMPORT = [
    *example(
        "Import a session",
        "An export with one session; without chunks, its events are indexed again.",
        status=201,
        request={
            "format": "memoryhub-export",
            "schema_version": 1,
            "scope": {"type": "session", "session": "chat-7"},
            "workspaces": [{"name": "default", "channels": [{"name": "general"}]}],
            "sessions": [
                {
                    "id": "chat-7",
                    "user_id": "",
                    "persistence_key": "",
                    "agent": "",
                    "workspace": "default",
                    "channel": "general",
                    "title": "",
                    "metadata": {},
                    "status": "active",
                    "created_at": "2026-11-23T18:16:56.018716Z",
                    "updated_at": "2026-11-23T18:16:56.028156Z",
                    "events": [
                        {
                            "sequence": 1,
                            "role": "user",
                            "content": "Remind me to renew my passport.",
                            "tool_name": "",
                            "tool_args": None,
                            "tool_result": None,
                            "metadata": {},
                            "importance": 0.5,
                            "idempotency_key": None,
                            "created_at": "2026-03-01T09:30:00Z",
                        }
                    ],
                    "rolling_summary": None,
                }
            ],
            "documents": [],
            "records": {},
        },
        response={
            "on_conflict": "fail",
            "imported": {"events": 1, "sessions": 1},
            "skipped": {},
            "merged": {},
            "skipped_sessions": [],
            "merged_sessions": [],
        },
    )
]

HEALTH = [
    *example(
        "Healthy",
        "",
        status=200,
        response={
            "status": "ok",
            "details": {
                "restarts": 1,
                "restarted": {"embed and summarise lanes": 1},
                "search": "ONNX Runtime (model-int8.onnx)",
            },
        },
    )
]

READY = [
    *example(
        "Ready",
        "",
        status=200,
        response={"status": "ready", "checks": {"database": "ok", "migrations": "ok"}},
    )
]

WORKSPACE_DELETE = [
    *example(
        "Delete a workspace",
        "The workspace and everything in it, counted by model.",
        status=200,
        response={
            "workspace": "default",
            "dry_run": False,
            "deleted": {
                "accounts.Channel": 1,
                "accounts.Workspace": 1,
                "memoryhub.Event": 2,
                "memoryhub.Session": 1,
                "retrieval.Chunk": 4,
            },
            "total": 9,
        },
    )
]
