"""Examples of the API documentation: documents (list, create, get, delete).
See memoryhub/api/examples/base.py."""

from memoryhub.api.examples.base import example

DOCUMENT_LIST = [
    *example(
        "List documents",
        "The key's documents, newest first.",
        status=200,
        response={
            "count": 1,
            "next": None,
            "previous": None,
            "results": [
                {
                    "id": 8,
                    "source_uri": "https://example.com/lisbon-guide",
                    "content_hash": (
                        "29936a71eea27dbbe6815c7059eabd0275269ed75bce4194566cfbda6facf516"
                    ),
                    "workspace": "default",
                    "session": None,
                    "user_id": "user-123",
                    "chunks": 1,
                    "metadata": {},
                    "created_at": "2026-11-23T21:28:03.867994Z",
                    "updated_at": "2026-11-23T21:28:03.873257Z",
                }
            ],
        },
    )
]

DOCUMENT_CREATE = [
    *example(
        "Ingest a document",
        "",
        status=201,
        request={
            "source_uri": "https://intranet.example.com/travel-policy",
            "tags": ["policy"],
            "text": (
                "Travel policy. Economy class for flights under six hours; business class above. "
                "Hotels up to 180 EUR a night in Lisbon."
            ),
        },
        response={
            "id": 10,
            "source_uri": "https://intranet.example.com/travel-policy",
            "content_hash": "fbb19778a70eb516c44da7e5f601ba42c67b8caf0ac983fe12f38f4924805b29",
            "workspace": "default",
            "session": None,
            "user_id": "",
            "chunks": 1,
            "metadata": {},
            "created_at": "2026-11-23T21:29:25.548370Z",
            "updated_at": "2026-11-23T21:29:25.549276Z",
            "indexed": True,
        },
    ),
    *example(
        "Ingest it again unchanged",
        "The same URI, owner and text: nothing is re-indexed (200, indexed false).",
        status=200,
        request={
            "source_uri": "https://example.com/lisbon-guide",
            "user_id": "user-123",
            "text": (
                "Lisbon guide. Trams: line 28 crosses the old town. Airport: the metro red line."
            ),
        },
        response={
            "id": 11,
            "source_uri": "https://example.com/lisbon-guide",
            "content_hash": "29936a71eea27dbbe6815c7059eabd0275269ed75bce4194566cfbda6facf516",
            "workspace": "default",
            "session": None,
            "user_id": "user-123",
            "chunks": 1,
            "metadata": {},
            "created_at": "2026-11-23T21:29:25.785807Z",
            "updated_at": "2026-11-23T21:29:25.786447Z",
            "indexed": False,
        },
    ),
]

DOCUMENT_GET = [
    *example(
        "Get a document",
        "",
        status=200,
        response={
            "id": 11,
            "source_uri": "https://example.com/lisbon-guide",
            "content_hash": "29936a71eea27dbbe6815c7059eabd0275269ed75bce4194566cfbda6facf516",
            "workspace": "default",
            "session": None,
            "user_id": "user-123",
            "chunks": 1,
            "metadata": {},
            "created_at": "2026-11-23T21:28:06.082597Z",
            "updated_at": "2026-11-23T21:28:06.086147Z",
        },
    )
]

DOCUMENT_DELETE = [
    *example(
        "Delete a document",
        "The document and its search chunks.",
        status=200,
        response={"id": 12, "deleted": True, "chunks_deleted": 1},
    )
]
