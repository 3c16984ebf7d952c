"""`synthesize: true` on search (optional: only with a model configured;
retrieval.synthesis): an answer from the results by the configured model, with citations checked
against the results, a 400 without a model, and results kept when the model fails."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.base import error_code, make_client, make_key
from tests.memoryhub.test_summarisers import completion, fake_llm

QUERY = "Which seat does the traveller prefer?"
EVENTS = (
    {"role": "user", "content": "I always take an aisle seat on flights."},
    {"role": "user", "content": "My flight to Lisbon leaves on May 3rd."},
)


@pytest.fixture
def llm(settings, monkeypatch) -> Any:  # type: ignore[no-untyped-def]
    """A configured model: the fake server on 127.0.0.1, which the operator allows."""
    settings.MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS = ("127.0.0.1/32",)
    settings.MEMORYHUB_SUMMARISER = "http"
    settings.MEMORYHUB_SUMMARISER_MODEL = "fake-7b"
    monkeypatch.setattr("memoryhub.plumbing.llm.RETRIES", 0)

    def serve(reply: Any) -> Any:
        server = fake_llm(reply)
        state = server.__enter__()
        settings.MEMORYHUB_SUMMARISER_URL = state.url
        servers.append(server)
        return state

    servers: list[Any] = []
    yield serve
    for server in servers:
        server.__exit__(None, None, None)


def answering(answer: str, citations: list[Any]) -> Any:
    return lambda body: (200, completion(json.dumps({"answer": answer, "citations": citations})))


def search(client: Any, **body: Any) -> Any:
    return client.post(
        "/api/v1/search/",
        {"query": QUERY, "scope": "account", "mode": "text", **body},
        format="json",
    )


def shown_to_model(request: dict[str, Any]) -> str:
    return request["body"]["messages"][1]["content"]


def test_the_answer_cites_results_that_exist(alice, index, llm) -> None:
    index(alice, "s1", *EVENTS)
    fake = llm(answering("They prefer an aisle seat.", [1, 1, 7, "2", 0, True, "x"]))
    response = search(alice, synthesize=True, query="aisle seat flights")
    assert response.status_code == 200, response.content
    body = response.json()
    results, synthesis = body["results"], body["synthesis"]
    assert len(results) == 2
    assert synthesis["answer"] == "They prefer an aisle seat." and synthesis["model"] == "fake-7b"
    # 7 (not shown), 0, True and "x" are dropped; 1 once; "2" as a number.
    assert synthesis["citations"] == [
        {"index": 0, "chunk_id": results[0]["chunk_id"]},
        {"index": 1, "chunk_id": results[1]["chunk_id"]},
    ]
    (request,) = fake.requests
    assert request["body"]["model"] == "fake-7b"
    prompt = shown_to_model(request)
    assert (
        prompt.startswith("Question: aisle seat flights")
        and "[1] " in prompt
        and results[0]["text"] in prompt
    )


def test_a_plain_text_reply_is_read_with_its_bracketed_citations(alice, index, llm) -> None:
    index(alice, "s1", *EVENTS)
    llm(lambda body: (200, completion("An aisle seat [1], see also [9].")))
    synthesis = search(alice, synthesize=True, query="aisle seat").json()["synthesis"]
    assert synthesis["answer"] == "An aisle seat [1], see also [9]."
    assert [c["index"] for c in synthesis["citations"]] == [0]


def test_without_synthesize_the_response_and_the_model_are_untouched(alice, index, llm) -> None:
    index(alice, "s1", *EVENTS)
    fake = llm(answering("x", [1]))
    body = search(alice, query="aisle seat").json()
    assert "synthesis" not in body and fake.requests == []


def test_no_results_no_model_call(alice, llm) -> None:
    fake = llm(answering("x", [1]))
    body = search(alice, synthesize=True, query="nothing stored here").json()
    assert body["results"] == [] and body["synthesis"] == {
        "answer": "",
        "citations": [],
        "model": "fake-7b",
    }
    assert fake.requests == []


def test_without_a_model_it_is_400_llm_not_configured(alice, index, settings) -> None:
    index(alice, "s1", *EVENTS)
    settings.MEMORYHUB_SUMMARISER = "extractive"
    response = search(alice, synthesize=True)
    assert response.status_code == 400 and error_code(response) == "llm_not_configured"
    settings.MEMORYHUB_SUMMARISER, settings.MEMORYHUB_SUMMARISER_URL = "http", ""
    assert error_code(search(alice, synthesize=True)) == "llm_not_configured"


@pytest.mark.parametrize(
    "body", [{"synthesize": "yes"}, {"synthesize": 1}, {"synthesize": True, "query": "  "}]
)
def test_bad_input_is_400(alice, llm, body: dict[str, Any]) -> None:
    fake = llm(answering("x", [1]))
    response = search(alice, **body)
    assert response.status_code == 400, response.content
    assert fake.requests == []


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (lambda body: (500, {"error": "boom"}), "llm_unavailable"),
        (lambda body: (400, {"error": "bad model"}), "llm_unavailable"),
        (lambda body: (200, {"choices": []}), "llm_bad_reply"),
        (lambda body: (200, completion("   ")), "llm_bad_reply"),
    ],
)
def test_a_failing_model_leaves_the_results_and_says_why(
    alice, index, llm, reply: Any, code: str
) -> None:
    index(alice, "s1", *EVENTS)
    fake = llm(reply)
    response = search(alice, synthesize=True, query="aisle seat")
    assert response.status_code == 200, response.content
    body = response.json()
    assert len(body["results"]) >= 1
    assert body["synthesis"]["error"]["code"] == code and "answer" not in body["synthesis"]
    # the endpoint is the operator's business
    assert "127.0.0.1" not in body["synthesis"]["error"]["message"]
    assert len(fake.requests) == 1  # a search request tries once


def test_a_slow_model_times_out_into_the_error_marker(alice, index, llm, settings) -> None:
    index(alice, "s1", *EVENTS)

    def slow(body: dict[str, Any]) -> tuple[int, Any]:
        time.sleep(1.0)
        return 200, completion("late")

    llm(slow)
    settings.MEMORYHUB_SUMMARISER_TIMEOUT = 0.2
    body = search(alice, synthesize=True, query="aisle seat").json()
    assert body["synthesis"]["error"]["code"] == "llm_timeout" and body["results"]


def test_an_address_the_operator_did_not_allow_is_refused(alice, index, llm, settings) -> None:
    index(alice, "s1", *EVENTS)
    fake = llm(answering("x", [1]))
    settings.MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS = ()
    body = search(alice, synthesize=True, query="aisle seat").json()
    assert body["synthesis"]["error"]["code"] == "llm_unavailable" and fake.requests == []


def test_the_model_sees_only_the_callers_results(cast, index, llm) -> None:
    """Two tenants and two users of one tenant say similar things: each synthesis is written from
    the caller's own (and shared) results only."""
    alice, bob = cast.alice, cast.bob
    for client, session, user, text in (
        (alice, "s1", "u1", "u1 takes an aisle seat, code ALPHA-1."),
        (alice, "s2", "u2", "u2 takes a window seat, code BRAVO-2."),
        (bob, "s1", "u1", "bob's u1 takes the middle seat, code CHARLIE-3."),
    ):
        assert (
            client.post(
                "/api/v1/sessions/", {"id": session, "user_id": user}, format="json"
            ).status_code
            == 201
        )
        index(client, session, {"role": "user", "content": text})
    fake = llm(answering("See the results.", [1, 2, 3]))
    u1 = make_client(make_key(cast.alice_tenant, user="u1"))
    body = u1.post(
        "/api/v1/search/",
        {"query": "which seat code", "mode": "text", "synthesize": True},
        format="json",
    ).json()
    assert [r["user_id"] for r in body["results"]] == ["u1"]
    assert [c["index"] for c in body["synthesis"]["citations"]] == [0]
    prompt = shown_to_model(fake.requests[-1])
    assert "ALPHA-1" in prompt and "BRAVO-2" not in prompt and "CHARLIE-3" not in prompt
    body = bob.post(
        "/api/v1/search/",
        {"query": "which seat code", "mode": "text", "scope": "account", "synthesize": True},
        format="json",
    ).json()
    prompt = shown_to_model(fake.requests[-1])
    assert "CHARLIE-3" in prompt and "ALPHA-1" not in prompt and "BRAVO-2" not in prompt
    # A tenant key acting for one user (user_id) is confined the same way.
    body = alice.post(
        "/api/v1/search/",
        {"query": "which seat code", "mode": "text", "user_id": "u2", "synthesize": True},
        format="json",
    ).json()
    prompt = shown_to_model(fake.requests[-1])
    assert "BRAVO-2" in prompt and "ALPHA-1" not in prompt and "CHARLIE-3" not in prompt
