"""Schemathesis against MemoryHub's own OpenAPI schema: what the seeded run in the suite
(tests/test_fuzz.py) and the long run (bench/fuzz.py) share.

A case passes every check schemathesis 4 has: no 5xx, every 4xx in the error envelope
({"error": {"code", "message", "details"}}), only statuses, content types, headers and bodies the
schema documents, schema-valid requests accepted (but for the named rules in SEMANTIC_CODES),
schema-invalid ones refused, and the key enforced (probes without it and with a wrong one).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import hypothesis
import hypothesis.errors
from hypothesis import HealthCheck, Phase
from schemathesis.checks import CHECKS as REGISTERED_CHECKS
from schemathesis.core.failures import Failure
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

MODES = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)


def error_envelope(ctx: Any, response: Any, case: Any) -> bool | None:
    """Every 4xx is JSON in the one envelope (schemathesis check signature)."""
    if not 400 <= response.status_code < 500:
        return None
    try:
        body = json.loads(response.content)
    except ValueError:
        raise AssertionError(
            f"{response.status_code} is not JSON: {response.content[:200]!r}"
        ) from None
    error = body.get("error") if isinstance(body, dict) else None
    if (
        set(body) != {"error"}
        or not isinstance(error, dict)
        or not {"code", "message", "details"} <= set(error)
    ):
        raise AssertionError(f"{response.status_code} outside the error envelope: {body!r:.300}")
    return True


# Rules a JSON Schema cannot state (one field's meaning, or several fields together): a schema-valid
# request the server refuses with one of these codes is right to be refused, and the code says why.
# Anything else a positive case gets refused for (validation_error, unknown_field,
# invalid_parameter, …) is a schema that promises too much.
SEMANTIC_CODES = frozenset(
    {
        "query_required",  # search: query text or a query_embedding
        # context/search: a scope needs the session, channel or workspace it names
        "invalid_scope",
        "as_of_filter_unsupported",  # facts: as_of combines with some filters only
        # a schedule's cadence is parsed as its type says
        "invalid_cron",
        "invalid_timezone",
        "invalid_cadence_value",
        "invalid_interval",
        "invalid_once_time",
        "invalid_url",
        "destination_not_allowed",  # webhooks: an http(s) address, not a private one
        "secret_too_short",  # a webhook secret: empty (generated) or at least 16 characters
        "invalid_embedding",  # a query vector: finite components within halfvec's range
        "created_at_out_of_range",  # an event's time: from 1970 to a little past the server's clock
        "empty_event",  # an event needs content, a tool call or a tool result
        "session_required",  # a conversation-scoped memory needs its session
        "workspace_required",  # a workspace export names its workspace
        # a user export names its user, and nothing else to export
        "user_required",
        "user_export_alone",
        # a schedule that notifies or calls an agent needs that webhook stored
        "webhook_required",
        "id_mismatch",  # a note's id and note_id, when both are given, agree
        "scope_mismatch",  # a memory's scope and the workspace/channel/session it names agree
        "group_by_required",  # search: hits_per_session goes with group_by
        "invalid_time_range",  # since before until
        "invalid_params",
        "goal_required",  # a schedule's params and goal, as its action declares them
        # a tool call: name/arguments or function, one of them
        "ambiguous_tool_call",
        "tool_call_name_required",
        "invalid_import",  # an import file is checked against the export format as a whole
        "item_too_long",
        "too_many_items",
        "duplicate_key",  # scratchpad limits, by compact JSON size
        "invalid_item",  # a scratchpad key is a non-empty string (also as an object's key)
        # a chat message's content parts: each of a known type with its own fields, one API's shape
        # at a time
        "invalid_content_part",
        "unknown_content_part",
        "mixed_message_shape",
        "duplicate_tool_call_id",
        "llm_not_configured",  # search synthesize: only where the operator configured a model
    }
)


def positive_data_acceptance_beyond_schema(ctx: Any, response: Any, case: Any) -> bool | None:
    """schemathesis' positive_data_acceptance, except for a refusal named in SEMANTIC_CODES, and
    for a NUL character in an object's key: the schema refuses NUL in every string and every value
    of free-form JSON, but OpenAPI 3.0 has no propertyNames to say it of keys (its descriptions
    do)."""
    code = _error(response).get("code") if response.status_code == 400 else None
    if code in SEMANTIC_CODES:
        return None
    if code == "null_characters_not_allowed" and _nul_only_in_keys(getattr(case, "body", None)):
        return None
    return positive_data_acceptance(ctx, response, case)


def _nul_only_in_keys(value: Any) -> bool:
    """Whether a NUL sits in some object key of `value` and in none of its strings."""
    in_key = False
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str) and "\x00" in item:
            return False
        if isinstance(item, dict):
            in_key = in_key or any(isinstance(k, str) and "\x00" in k for k in item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return in_key


# Every check schemathesis registers (its `--checks all`), positive_data_acceptance as above, and
# the error envelope. Some act only on cases other phases make (missing_required_header,
# unsupported_method and allow_header_conformance on the coverage phase's; use_after_free,
# ensure_resource_availability and object_level_authorization on stateful scenarios): with the
# generate phase run here they pass without looking, and check whatever a wider run gives them.
# (max_response_time is a setting, not a registered check: no test asserts a duration.)
CHECKS = [
    error_envelope,
    *(
        positive_data_acceptance_beyond_schema if check is positive_data_acceptance else check
        for check in REGISTERED_CHECKS.get_all()
    ),
]


@dataclass
class Outcome:
    cases: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def add(self, other: Outcome) -> None:
        self.cases += other.cases
        for status, n in other.statuses.items():
            self.statuses[status] = self.statuses.get(status, 0) + n
        self.failures += other.failures


def fuzz_operation(
    operation: Any, call: Callable[[Any], Any], *, headers: dict[str, str], examples: int, seed: int
) -> Outcome:
    """`examples` positive and `examples` negative cases of one operation, seeded. `call` sends a
    case with `headers` (the API key): the checks are told, so that ignored_auth knows the key was
    given, not generated, and probes the operation without it and with a wrong one."""
    outcome = Outcome()
    for mode in MODES:
        strategy = operation.as_strategy(generation_mode=mode)

        @hypothesis.settings(
            max_examples=examples,
            deadline=None,
            database=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
            print_blob=False,
        )
        @hypothesis.seed(seed)
        @hypothesis.given(case=strategy)
        def run(case: Any) -> None:
            outcome.cases += 1
            # The key is always sent: say so in the case, so that a negative case whose only flaw
            # was a missing Authorization header is judged by what was sent.
            if case.headers is None or isinstance(case.headers, Mapping):
                case.headers = {**(case.headers or {}), **headers}
            response = call(case)
            outcome.statuses[response.status_code] = (
                outcome.statuses.get(response.status_code, 0) + 1
            )
            try:
                case.validate_response(response, checks=CHECKS, headers=headers)
            except (Failure, BaseExceptionGroup, AssertionError) as exc:
                outcome.failures.append(describe(operation, case, response, exc))

        try:
            run()
        except hypothesis.errors.Unsatisfiable:
            pass  # nothing to get wrong (a negative case of an operation without parameters)
    return outcome


def describe(operation: Any, case: Any, response: Any, exc: BaseException) -> str:
    reasons = [f"[{type(e).__name__}] {_reason(e)}" for e in getattr(exc, "exceptions", [exc])]
    sent = {k: v for k, v in (("path", case.path_parameters), ("query", case.query)) if v}
    body = getattr(case, "body", None)
    if body is not None and type(body).__name__ != "NotSet":
        sent["body"] = body
    return (
        f"{operation.label} -> {response.status_code}{_error_code(response)}:"
        f" {'; '.join(reasons)[:300]} | sent {json.dumps(sent, default=str)[:300]}"
    )


def _reason(exc: BaseException) -> str:
    """The failure's title, and the part of the input schemathesis broke on purpose, if it says."""
    lines = str(exc).splitlines()
    broken = [line for line in lines if line.startswith(("Invalid component", "  - "))]
    return " ".join([lines[0] if lines else "", *broken])


def _error(response: Any) -> dict[str, Any]:
    try:
        error = json.loads(response.content)["error"]
    except (ValueError, KeyError, TypeError):
        return {}
    return error if isinstance(error, dict) else {}


def _error_code(response: Any) -> str:
    """(the envelope's code and message), to tell why the server refused."""
    error = _error(response)
    return f" ({error.get('code')}: {str(error.get('message'))[:120]})" if error else ""
