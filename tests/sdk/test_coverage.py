"""The Python client covers every REST operation: the operations come from the service's
OpenAPI document, the client's from its request builders, so that an endpoint added without a
client method fails here."""

from __future__ import annotations

import inspect
import re
from typing import Any

from drf_spectacular.generators import SchemaGenerator
from memoryhub_client._binding import Operations, op, pages
from memoryhub_client._core import Call

METHODS = {"get", "post", "put", "patch", "delete"}
# Operations the client leaves out on purpose, with why.
NOT_IN_CLIENT: dict[str, str] = {}
# Arguments a builder needs that a placeholder string or number does not satisfy.
SAMPLE_ARGUMENTS: dict[str, Any] = {
    "cadence": {"type": "interval", "value": "15m"},
    "data": b"{}",
    "items": [],
    "events": [{"role": "user", "content": "x7"}],
    "memory": "fact:7",
}


def operations() -> dict[tuple[str, str], str]:
    """(HTTP method, path under /api/v1/ as a pattern) → operationId, from the OpenAPI document."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    found = {}
    for path, item in schema["paths"].items():
        pattern = re.sub(r"\{[^}]+\}", "[^/]+", path.removeprefix("/api/v1/"))
        for method, operation in item.items():
            if method in METHODS:
                found[(method.upper(), pattern)] = operation["operationId"]
    return found


def placeholder(parameter: inspect.Parameter) -> Any:
    if parameter.name in SAMPLE_ARGUMENTS:
        return SAMPLE_ARGUMENTS[parameter.name]
    return (
        7 if "int" in str(parameter.annotation) and "str" not in str(parameter.annotation) else "x7"
    )


def client_requests() -> dict[str, tuple[str, str]]:
    """Each single-request client method → the (HTTP method, path) it sends, from its builder
    called with placeholder arguments."""
    sent = {}
    for name, binding in vars(Operations).items():
        if not isinstance(binding, op | pages):
            continue
        required = [
            p
            for p in inspect.signature(binding.build).parameters.values()
            if p.default is inspect.Parameter.empty and p.kind is not p.VAR_KEYWORD
        ]
        call = binding.build(
            *[placeholder(p) for p in required if p.kind is not p.KEYWORD_ONLY],
            **{p.name: placeholder(p) for p in required if p.kind is p.KEYWORD_ONLY},
        )
        assert isinstance(call, Call), name
        sent[name] = (call.method, call.path.split("?")[0])
    return sent


def test_every_operation_of_the_api_has_a_client_method() -> None:
    sent = client_requests()
    missing = []
    for (method, pattern), operation_id in sorted(operations().items()):
        if operation_id in NOT_IN_CLIENT:
            continue
        if not any(m == method and re.fullmatch(pattern, p) for m, p in sent.values()):
            missing.append(f"{operation_id} ({method} /api/v1/{pattern})")
    assert missing == []


def test_the_operations_left_out_exist_and_say_why() -> None:
    known = set(operations().values())
    assert {
        name: why for name, why in NOT_IN_CLIENT.items() if name not in known or not why.strip()
    } == {}
