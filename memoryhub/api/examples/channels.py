"""Examples of the API documentation: channels. See memoryhub/api/examples/base.py."""

from memoryhub.api.examples.base import example

CHANNEL_LIST = [
    *example(
        "List channels",
        "The workspace's channels: general, made with the workspace.",
        status=200,
        response={
            "count": 1,
            "next": None,
            "previous": None,
            "results": [
                {
                    "id": 3,
                    "name": "general",
                    "description": "",
                    "workspace": "default",
                    "is_default": True,
                    "created_at": "2026-11-23T21:27:58.653993Z",
                }
            ],
        },
    )
]

CHANNEL_CREATE = [
    *example(
        "Create a channel",
        "A channel for the support team in the default workspace.",
        status=201,
        request={"name": "support", "description": "Questions from customers."},
        response={
            "id": 5,
            "name": "support",
            "description": "Questions from customers.",
            "workspace": "default",
            "is_default": False,
            "created_at": "2026-11-23T21:28:00.253909Z",
        },
    )
]

CHANNEL_GET = [
    *example(
        "Get a channel",
        "",
        status=200,
        response={
            "id": 6,
            "name": "general",
            "description": "",
            "workspace": "default",
            "is_default": True,
            "created_at": "2026-11-23T21:28:00.416441Z",
        },
    )
]

CHANNEL_PATCH = [
    *example(
        "Describe a channel",
        "Only the fields given change.",
        status=200,
        request={"description": "Conversations with the travel agent."},
        response={
            "id": 7,
            "name": "general",
            "description": "Conversations with the travel agent.",
            "workspace": "default",
            "is_default": True,
            "created_at": "2026-11-23T21:28:01.745620Z",
        },
    )
]
