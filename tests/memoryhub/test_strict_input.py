"""StrictSerializer's fields: copied per serializer from per-class prototypes (not deep-copied from
the declarations each time), so each serializer still validates with fields of its own."""

from __future__ import annotations

import threading

from memoryhub.api.events_input import BulkEventInput, EventInput
from retrieval.serializers import SearchInput


def test_each_serializer_binds_fields_of_its_own() -> None:
    first, second = SearchInput(data={"query": "a"}), SearchInput(data={"query": "b"})
    assert first.fields["query"] is not second.fields["query"]
    assert first.fields["query"].parent is first and second.fields["query"].parent is second
    # Nested serializers are whole copies: a bulk's event serializer is never another bulk's.
    one, other = BulkEventInput(), BulkEventInput()
    assert one.fields["events"].child is not other.fields["events"].child


def test_validation_errors_are_per_serializer_and_per_field() -> None:
    good = EventInput(data={"role": "user", "content": "hello"})
    bad = EventInput(data={"role": "robot", "content": 5, "colour": "red"})
    assert good.is_valid(), good.errors
    assert not bad.is_valid()
    assert set(bad.errors) == {"colour"}  # unknown fields are refused first
    worse = EventInput(data={"role": "robot", "content": "x"})
    assert not worse.is_valid() and set(worse.errors) == {"role"}
    assert good.validated_data["content"] == "hello"  # untouched by the others


def test_concurrent_validations_keep_their_own_results() -> None:
    results: dict[int, object] = {}

    def validate(i: int) -> None:
        for _ in range(200):
            body = {"query": f"q{i}", "top_k": i + 1} if i % 2 else {"query": f"q{i}", "top_k": 0}
            s = SearchInput(data=body)
            ok = s.is_valid()
            results[i] = (ok, s.validated_data["top_k"] if ok else sorted(s.errors))

    threads = [threading.Thread(target=validate, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(8):
        assert results[i] == ((True, i + 1) if i % 2 else (False, ["top_k"])), results[i]


def test_an_unknown_field_names_the_field_meant(alice) -> None:  # type: ignore[no-untyped-def]
    """`messages` (OpenAI's and mem0's name) suggests `events`; a typo its near field."""
    from tests.base import error_code

    sent = alice.post(
        "/api/v1/sessions/s1/events/",
        {"messages": [{"role": "user", "content": "hi"}]},
        format="json",
    )
    assert error_code(sent) == "unknown_field"
    assert "Did you mean 'events'?" in str(sent.json()["error"])
    typo = alice.post("/api/v1/search/", {"query": "x", "top_kk": 3}, format="json")
    assert "Did you mean 'top_k'?" in str(typo.json()["error"])
    far = alice.post("/api/v1/search/", {"query": "x", "colour": "red"}, format="json")
    assert "Did you mean" not in str(far.json()["error"]) and error_code(far) == "unknown_field"
