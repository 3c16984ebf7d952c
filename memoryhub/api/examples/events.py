"""Examples of the API documentation: a session's events (list, append, delete) and its restore.
See memoryhub/api/examples/base.py."""

from memoryhub.api.examples.base import example

EVENT_LIST = [
    *example(
        "List events",
        "",
        status=200,
        response={
            "session": "chat-42",
            "count": 2,
            "last_sequence": 2,
            "next": None,
            "results": [
                {
                    "id": 98,
                    "sequence": 1,
                    "role": "user",
                    "content": "I'm flying to Lisbon on May 3rd. I prefer aisle seats.",
                    "tool_name": None,
                    "tool_args": None,
                    "tool_result": None,
                    "tool_calls": None,
                    "tool_call_id": None,
                    "metadata": {},
                    "importance": 0.5,
                    "idempotency_key": None,
                    "created_at": "2026-11-28T02:16:22.006859Z",
                    "consolidated_at": None,
                },
                {
                    "id": 99,
                    "sequence": 2,
                    "role": "assistant",
                    "content": "Noted: Lisbon on May 3rd, and an aisle seat.",
                    "tool_name": None,
                    "tool_args": None,
                    "tool_result": None,
                    "tool_calls": None,
                    "tool_call_id": None,
                    "metadata": {},
                    "importance": 0.5,
                    "idempotency_key": None,
                    "created_at": "2026-11-28T02:16:22.006859Z",
                    "consolidated_at": None,
                },
            ],
        },
    )
]

EVENT_DELETE = [
    *example(
        "Delete the newest event",
        "An agent framework pops the last message (limit=1): gone from every read.",
        status=200,
        response={
            "session": "chat-42",
            "deleted": {"memoryhub.Event": 1, "retrieval.Chunk": 1},
            "results": [
                {
                    "id": 99,
                    "sequence": 2,
                    "role": "assistant",
                    "content": "Noted: Lisbon on May 3rd, and an aisle seat.",
                    "tool_name": None,
                    "tool_args": None,
                    "tool_result": None,
                    "tool_calls": None,
                    "tool_call_id": None,
                    "metadata": {},
                    "importance": 0.5,
                    "idempotency_key": None,
                    "created_at": "2026-11-28T02:16:22.006859Z",
                    "consolidated_at": None,
                }
            ],
        },
    )
]

EVENT_APPEND = [
    *example(
        "Append one message",
        "",
        status=201,
        request={
            "role": "user",
            "content": "Can you also find a hotel near the river?",
            "idempotency_key": "msg-0003",
        },
        response={
            "id": 102,
            "sequence": 3,
            "role": "user",
            "content": "Can you also find a hotel near the river?",
            "tool_name": None,
            "tool_args": None,
            "tool_result": None,
            "tool_calls": None,
            "tool_call_id": None,
            "metadata": {},
            "importance": 0.5,
            "idempotency_key": "msg-0003",
            "created_at": "2026-11-28T02:16:23.755513Z",
            "consolidated_at": None,
            "session": "chat-42",
            "created": 1,
            "events": [
                {
                    "id": 102,
                    "sequence": 3,
                    "role": "user",
                    "content": "Can you also find a hotel near the river?",
                    "tool_name": None,
                    "tool_args": None,
                    "tool_result": None,
                    "tool_calls": None,
                    "tool_call_id": None,
                    "metadata": {},
                    "importance": 0.5,
                    "idempotency_key": "msg-0003",
                    "created_at": "2026-11-28T02:16:23.755513Z",
                    "consolidated_at": None,
                }
            ],
        },
    ),
    *example(
        "Append a turn",
        "Several events at once, all or none.",
        status=201,
        request={
            "events": [
                {
                    "role": "user",
                    "content": "Is breakfast included?",
                    "idempotency_key": "msg-0004",
                },
                {
                    "role": "assistant",
                    "content": "Yes, at both hotels I found.",
                    "idempotency_key": "msg-0005",
                },
            ]
        },
        response={
            "session": "chat-42",
            "created": 2,
            "events": [
                {
                    "id": 105,
                    "sequence": 3,
                    "role": "user",
                    "content": "Is breakfast included?",
                    "tool_name": None,
                    "tool_args": None,
                    "tool_result": None,
                    "tool_calls": None,
                    "tool_call_id": None,
                    "metadata": {},
                    "importance": 0.5,
                    "idempotency_key": "msg-0004",
                    "created_at": "2026-11-28T02:44:31.974196Z",
                    "consolidated_at": None,
                },
                {
                    "id": 106,
                    "sequence": 4,
                    "role": "assistant",
                    "content": "Yes, at both hotels I found.",
                    "tool_name": None,
                    "tool_args": None,
                    "tool_result": None,
                    "tool_calls": None,
                    "tool_call_id": None,
                    "metadata": {},
                    "importance": 0.5,
                    "idempotency_key": "msg-0005",
                    "created_at": "2026-11-28T02:44:31.974196Z",
                    "consolidated_at": None,
                },
            ],
        },
    ),
    *example(
        "Append chat-API messages as sent",
        "OpenAI- or Anthropic-shaped messages as the model returned them (content null, tool_calls,"
        " content parts); GET …/events/?format=openai gives them back equal.",
        status=201,
        request={
            "events": [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_7",
                            "type": "function",
                            "function": {"name": "find_hotels", "arguments": '{"near": "river"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "call_7", "content": "Hotel Tejo, Casa do Rio"},
            ]
        },
        response={
            "session": "chat-42",
            "created": 2,
            "events": [
                {
                    "id": 109,
                    "sequence": 3,
                    "role": "assistant",
                    "content": "",
                    "tool_name": None,
                    "tool_args": None,
                    "tool_result": None,
                    "tool_calls": [
                        {"id": "call_7", "name": "find_hotels", "arguments": '{"near": "river"}'}
                    ],
                    "tool_call_id": None,
                    "metadata": {},
                    "importance": 0.5,
                    "idempotency_key": None,
                    "created_at": "2026-11-28T02:44:32.844294Z",
                    "consolidated_at": None,
                },
                {
                    "id": 110,
                    "sequence": 4,
                    "role": "tool",
                    "content": "Hotel Tejo, Casa do Rio",
                    "tool_name": None,
                    "tool_args": None,
                    "tool_result": None,
                    "tool_calls": None,
                    "tool_call_id": "call_7",
                    "metadata": {},
                    "importance": 0.3,
                    "idempotency_key": None,
                    "created_at": "2026-11-28T02:44:32.844294Z",
                    "consolidated_at": None,
                },
            ],
        },
    ),
]

RESTORE = [
    *example(
        "Restore the conversation",
        "",
        status=200,
        response={
            "session": "chat-42",
            "budget": 4000,
            "tokens": 33,
            "truncated": False,
            "omitted": 0,
            "summary_epoch": None,
            "sessions": ["chat-42"],
            "messages": [
                {
                    "role": "user",
                    "content": "I'm flying to Lisbon on May 3rd. I prefer aisle seats.",
                    "sequence": 1,
                    "tool_name": None,
                    "tool_args": None,
                    "tool_result": None,
                    "tool_calls": None,
                    "tool_call_id": None,
                    "metadata": {},
                    "created_at": "2026-11-23T21:25:08.797984Z",
                },
                {
                    "role": "assistant",
                    "content": "Noted: Lisbon on May 3rd, and an aisle seat.",
                    "sequence": 2,
                    "tool_name": None,
                    "tool_args": None,
                    "tool_result": None,
                    "tool_calls": None,
                    "tool_call_id": None,
                    "metadata": {},
                    "created_at": "2026-11-23T21:25:08.797984Z",
                },
            ],
        },
    )
]
