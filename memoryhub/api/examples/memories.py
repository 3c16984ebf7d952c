"""Examples of the API documentation: notes and facts.
See memoryhub/api/examples/base.py."""

from memoryhub.api.examples.base import example

NOTE_LIST = [
    *example(
        "List notes",
        "",
        status=200,
        response={
            "count": 1,
            "next": None,
            "previous": None,
            "results": [
                {
                    "id": "note-tea",
                    "note_id": "note-tea",
                    "content": "The user drinks green tea, no sugar.",
                    "source": "",
                    "tags": ["preferences"],
                    "metadata": {},
                    "session": None,
                    "workspace": "default",
                    "channel": None,
                    "scope": "workspace",
                    "user_id": "user-123",
                    "importance": 0.5,
                    "created_at": "2026-11-23T18:17:53.376861Z",
                    "updated_at": "2026-11-23T18:17:53.376869Z",
                }
            ],
        },
    )
]

NOTE_CREATE = [
    *example(
        "Create a note",
        "A note for one user.",
        status=201,
        request={
            "note_id": "note-hotel",
            "content": "Prefers hotels near the river, check-in after 3pm.",
            "tags": ["travel"],
            "user_id": "user-123",
        },
        response={
            "id": "note-hotel",
            "note_id": "note-hotel",
            "content": "Prefers hotels near the river, check-in after 3pm.",
            "source": "",
            "tags": ["travel"],
            "metadata": {},
            "session": None,
            "workspace": "default",
            "channel": None,
            "scope": "workspace",
            "user_id": "user-123",
            "importance": 0.5,
            "created_at": "2026-11-23T18:17:58.787980Z",
            "updated_at": "2026-11-23T18:17:58.787993Z",
        },
    )
]

NOTE_GET = [
    *example(
        "Get a note",
        "",
        status=200,
        response={
            "id": "note-tea",
            "note_id": "note-tea",
            "content": "The user drinks green tea, no sugar.",
            "source": "",
            "tags": ["preferences"],
            "metadata": {},
            "session": None,
            "workspace": "default",
            "channel": None,
            "scope": "workspace",
            "user_id": "user-123",
            "importance": 0.5,
            "created_at": "2026-11-23T18:18:00.573230Z",
            "updated_at": "2026-11-23T18:18:00.573242Z",
        },
    )
]

NOTE_PUT = [
    *example(
        "Replace a note",
        "",
        status=200,
        request={
            "content": "The user drinks oolong tea now, no sugar.",
            "tags": ["preferences"],
            "user_id": "user-123",
        },
        response={
            "id": "note-tea",
            "note_id": "note-tea",
            "content": "The user drinks oolong tea now, no sugar.",
            "source": "",
            "tags": ["preferences"],
            "metadata": {},
            "session": None,
            "workspace": "default",
            "channel": None,
            "scope": "workspace",
            "user_id": "user-123",
            "importance": 0.5,
            "created_at": "2026-11-23T18:18:03.655732Z",
            "updated_at": "2026-11-23T18:18:05.814512Z",
        },
    )
]

NOTE_PATCH = [
    *example(
        "Change a note",
        "Only the tags change; the text, session and owner stay.",
        status=200,
        request={"tags": ["preferences", "drinks"]},
        response={
            "id": "note-tea",
            "note_id": "note-tea",
            "content": "The user drinks green tea, no sugar.",
            "source": "",
            "tags": ["preferences", "drinks"],
            "metadata": {},
            "session": None,
            "workspace": "default",
            "channel": None,
            "scope": "workspace",
            "user_id": "user-123",
            "importance": 0.5,
            "created_at": "2026-11-23T18:18:03.655732Z",
            "updated_at": "2026-11-23T18:18:05.814512Z",
        },
    )
]

NOTE_DELETE = [
    *example(
        "Delete a note",
        "",
        status=200,
        response={"id": "note-tea", "deleted": True},
    )
]

FACT_LIST = [
    *example(
        "List facts",
        "",
        status=200,
        response={
            "count": 1,
            "next": None,
            "previous": None,
            "results": [
                {
                    "id": 14,
                    "external_id": "",
                    "content": "Prefers aisle seats.",
                    "category": "travel",
                    "key": "seat",
                    "scope": "workspace",
                    "lifetime": "long_term",
                    "source": "agent",
                    "importance": 0.5,
                    "pinned": False,
                    "access_count": 0,
                    "accessed_at": None,
                    "tags": [],
                    "metadata": {},
                    "session": None,
                    "source_session": None,
                    "workspace": "default",
                    "channel": None,
                    "user_id": "user-123",
                    "created_at": "2026-11-27T23:53:59.406906Z",
                    "updated_at": "2026-11-27T23:53:59.406913Z",
                    "valid_from": "2026-11-27T23:53:59.410746Z",
                    "valid_to": None,
                }
            ],
        },
    )
]

FACT_UPSERT = [
    *example(
        "Store a new fact",
        "No fact with this scope, category and key yet: created (201).",
        status=201,
        request={
            "content": "Lives in Porto.",
            "category": "profile",
            "key": "city",
            "user_id": "user-123",
        },
        response={
            "id": 16,
            "external_id": "",
            "content": "Lives in Porto.",
            "category": "profile",
            "key": "city",
            "scope": "workspace",
            "lifetime": "long_term",
            "source": "agent",
            "importance": 0.5,
            "pinned": False,
            "access_count": 0,
            "accessed_at": None,
            "tags": [],
            "metadata": {},
            "session": None,
            "source_session": None,
            "workspace": "default",
            "channel": None,
            "user_id": "user-123",
            "created_at": "2026-11-27T23:54:00.485380Z",
            "updated_at": "2026-11-27T23:54:00.485386Z",
            "valid_from": "2026-11-27T23:54:00.495139Z",
            "valid_to": None,
            "created": True,
        },
    ),
    *example(
        "Update a fact",
        "Same scope, category and key as a stored fact: updated (200).",
        status=200,
        request={
            "content": "Prefers window seats now.",
            "category": "travel",
            "key": "seat",
            "user_id": "user-123",
        },
        response={
            "id": 17,
            "external_id": "",
            "content": "Prefers window seats now.",
            "category": "travel",
            "key": "seat",
            "scope": "workspace",
            "lifetime": "long_term",
            "source": "agent",
            "importance": 0.5,
            "pinned": False,
            "access_count": 0,
            "accessed_at": None,
            "tags": [],
            "metadata": {},
            "session": None,
            "source_session": None,
            "workspace": "default",
            "channel": None,
            "user_id": "user-123",
            "created_at": "2026-11-27T23:54:00.697982Z",
            "updated_at": "2026-11-27T23:54:01.077836Z",
            "valid_from": "2026-11-27T23:54:01.077836Z",
            "valid_to": None,
            "created": False,
        },
    ),
]

# A fact as GET and PATCH answer it; the by-external-id operations answer the same with the
# client's id set.
_FACT = {
    "id": 18,
    "external_id": "",
    "content": "Prefers aisle seats.",
    "category": "travel",
    "key": "seat",
    "scope": "workspace",
    "lifetime": "long_term",
    "source": "agent",
    "importance": 0.5,
    "pinned": False,
    "access_count": 0,
    "accessed_at": None,
    "tags": [],
    "metadata": {},
    "session": None,
    "source_session": None,
    "workspace": "default",
    "channel": None,
    "user_id": "user-123",
    "created_at": "2026-11-27T23:54:01.408434Z",
    "updated_at": "2026-11-27T23:54:01.408440Z",
    "valid_from": "2026-11-27T23:54:01.415045Z",
    "valid_to": None,
}
_FACT_CHANGED = {
    "id": 19,
    "external_id": "",
    "content": "Prefers aisle seats.",
    "category": "travel",
    "key": "seat",
    "scope": "workspace",
    "lifetime": "long_term",
    "source": "agent",
    "importance": 0.9,
    "pinned": False,
    "access_count": 0,
    "accessed_at": None,
    "tags": [],
    "metadata": {},
    "session": None,
    "source_session": None,
    "workspace": "default",
    "channel": None,
    "user_id": "user-123",
    "created_at": "2026-11-27T23:54:02.119125Z",
    "updated_at": "2026-11-27T23:54:02.546814Z",
    "valid_from": "2026-11-27T23:54:02.127111Z",
    "valid_to": None,
}

FACT_GET = [
    *example(
        "Get a fact",
        "",
        status=200,
        response=_FACT,
    )
]

FACT_PATCH = [
    *example(
        "Change a fact",
        "",
        status=200,
        request={"importance": 0.9},
        response=_FACT_CHANGED,
    )
]

FACT_DELETE = [
    *example(
        "Delete a fact",
        "",
        status=200,
        response={"id": "22", "deleted": True},
    )
]

FACT_HISTORY = [
    *example(
        "A fact's history",
        "Every version of its content, oldest first.",
        status=200,
        response={
            "fact_id": 20,
            "versions": [
                {
                    "fact_id": 20,
                    "content": "Prefers window seats.",
                    "category": "travel",
                    "key": "seat",
                    "user_id": "user-123",
                    "source": "agent",
                    "change": "created",
                    "valid_from": "2026-03-02T10:00:00Z",
                    "valid_to": "2026-11-23T18:18:25.724002Z",
                    "closed_by": "updated",
                    "current": False,
                },
                {
                    "fact_id": 20,
                    "content": "Prefers aisle seats.",
                    "category": "travel",
                    "key": "seat",
                    "user_id": "user-123",
                    "source": "agent",
                    "change": "updated",
                    "valid_from": "2026-11-23T18:18:25.724002Z",
                    "valid_to": None,
                    "closed_by": "",
                    "current": True,
                },
            ],
        },
    )
]

FACT_BY_EXTERNAL_ID_GET = [
    *example(
        "Get a fact by your id",
        "The fact stored with external_id seat-pref.",
        status=200,
        response={**_FACT, "external_id": "seat-pref"},
    )
]

FACT_BY_EXTERNAL_ID_PATCH = [
    *example(
        "Change a fact by your id",
        "",
        status=200,
        request={"importance": 0.9},
        response={**_FACT_CHANGED, "external_id": "seat-pref"},
    )
]

FACT_BY_EXTERNAL_ID_DELETE = [
    *example(
        "Delete a fact by your id",
        "",
        status=200,
        response={"id": "22", "deleted": True},
    )
]
