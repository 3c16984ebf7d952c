"""Fact extractors (docs/event-log.md#fact-extraction): none by default; the OpenAI-compatible HTTP
one against a local fake."""

from __future__ import annotations

import json

import pytest

from memoryhub.extractors import (
    LINES_PROMPT,
    ExtractorReplyError,
    HttpExtractor,
    NoExtractor,
    extract_and_store,
    get_extractor,
    parse_facts,
    parse_reply,
)
from memoryhub.models import Fact, Session
from memoryhub.notes import importance_by_type
from retrieval.models import Chunk
from tests.base import post_events
from tests.memoryhub.test_summarisers import completion, fake_llm

# The fake model server listens on 127.0.0.1, refused unless allowed.
pytestmark = pytest.mark.usefixtures("allow_local_llm")

FACTS = {
    "facts": [
        {
            "content": "The user's dog is called Biscuit",
            "category": "profile",
            "key": "dog_name",
            "importance": 0.7,
            "tags": ["Pets"],
        },
        {"content": "", "category": "junk"},  # empty: skipped
        "not an object",  # skipped
        # defaults applied
        {"content": "Prefers answers in French", "importance": "very", "scope": "galaxy"},
    ]
}


def test_default_extracts_nothing(alice, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    assert isinstance(get_extractor(), NoExtractor)
    with django_capture_on_commit_callbacks(execute=True):
        post_events(alice, "s1", {"role": "user", "content": "My dog is called Biscuit"})
    assert not Fact.objects.exists()


def test_parse_facts_validates() -> None:
    parsed = parse_facts(FACTS)
    assert [f.content for f in parsed] == [
        "The user's dog is called Biscuit",
        "Prefers answers in French",
    ]
    assert parsed[0].tags == ("pets",) and parsed[0].key == "dog_name"
    # "very" is no number: the importance is left to the category's default, as if none was given
    assert (
        parsed[1].importance is None
        and parsed[1].scope == "workspace"
        and parsed[1].category == "general"
    )


def test_http_extractor_request_and_storage(alice) -> None:  # type: ignore[no-untyped-def]
    post_events(
        alice,
        "s1",
        {"role": "user", "content": "My dog is called Biscuit"},
        {"role": "assistant", "content": "Noted!"},
    )
    session = Session.objects.get(external_id="s1")
    ids = list(session.events.values_list("pk", flat=True))
    with fake_llm(lambda body: (200, completion(json.dumps(FACTS)))) as llm:
        extractor = HttpExtractor(url=llm.url, model="extract-m", api_key="k", timeout=5)
        stored = extract_and_store(session, ids, extractor)
    body = llm.requests[0]["body"]
    assert body["model"] == "extract-m" and body["response_format"] == {"type": "json_object"}
    assert "Biscuit" in body["messages"][1]["content"]
    assert len(stored) == 2
    dog = Fact.objects.get(key="dog_name")
    assert (
        dog.source == "extraction"
        and dog.source_session_id == session.pk
        and dog.tier == "workspace"
    )
    assert dog.metadata["sequences"] == [1, 2]
    assert Chunk.objects.filter(kind="fact", source_id=str(dog.pk)).count() == 1
    # a second extraction of the same key updates the fact instead of adding one
    again = {
        "facts": [
            {
                "content": "The user's dog is called Biscuit II",
                "category": "profile",
                "key": "dog_name",
            }
        ]
    }
    with fake_llm(lambda body: (200, completion(json.dumps(again)))) as llm:
        extract_and_store(session, ids, HttpExtractor(url=llm.url, model="m", timeout=5))
    assert Fact.objects.filter(key="dog_name").count() == 1
    assert Fact.objects.get(key="dog_name").content.endswith("II")


def test_bad_replies_store_nothing(alice) -> None:  # type: ignore[no-untyped-def]
    post_events(alice, "s1", {"role": "user", "content": "hello"})
    session = Session.objects.get(external_id="s1")
    ids = list(session.events.values_list("pk", flat=True))
    for status, payload in [
        (200, completion("this is not json")),
        (500, {"error": "x"}),
        (200, completion(json.dumps({"items": []}))),
    ]:
        with fake_llm(lambda body, s=status, p=payload: (s, p)) as llm:
            assert (
                extract_and_store(session, ids, HttpExtractor(url=llm.url, model="m", timeout=5))
                == []
            )
    assert not Fact.objects.exists()


def test_configured_extractor_runs_after_appends(
    alice, settings, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    with fake_llm(lambda body: (200, completion(json.dumps(FACTS)))) as llm:
        settings.MEMORYHUB_FACT_EXTRACTOR = "http"
        settings.MEMORYHUB_FACT_EXTRACTOR_URL = llm.url
        settings.MEMORYHUB_FACT_EXTRACTOR_MODEL = "m"
        with django_capture_on_commit_callbacks(execute=True):
            post_events(alice, "s1", {"role": "user", "content": "My dog is called Biscuit"})
    assert len(llm.requests) == 1
    assert sorted(Fact.objects.values_list("content", flat=True)) == [
        "Prefers answers in French",
        "The user's dog is called Biscuit",
    ]
    assert alice.get("/api/v1/facts/?category=profile").json()["count"] == 1


# --- the plain lines (a model without a JSON mode) ------------------------------------------


@pytest.mark.parametrize(
    "reply", ["NONE", "none", "NONE.", "**NONE**", "  NONE\n", "None\nNothing durable here."]
)
def test_none_means_no_facts(reply: str) -> None:
    assert parse_reply(reply) == []


def test_bullet_lines_are_facts_keyed_or_sentences() -> None:
    reply = (
        "Here are the facts:\n"
        "- preferred_language: French\n"
        "* The user lives in Lisbon.\n"
        "• Has a beagle called Biscuit\n"
        "2) Home-Office: Tuesdays\n"
        "- Deadline is https://x.io/deploy: friday\n"
    )
    facts = parse_reply(reply)
    assert [(f.key, f.content) for f in facts] == [
        ("preferred_language", "preferred language: French"),
        ("", "The user lives in Lisbon."),
        ("", "Has a beagle called Biscuit"),
        ("home_office", "home office: Tuesdays"),
        ("", "Deadline is https://x.io/deploy: friday"),  # "Deadline is …" is no key
    ]
    # no importance given: the category's default applies when stored (importance by type)
    assert all(
        f.importance is None and f.category == "general" and f.scope == "workspace" for f in facts
    )


def test_json_inside_a_code_fence_is_json() -> None:
    reply = (
        "```json\n" + json.dumps({"facts": [{"content": "Likes tea", "key": "drink"}]}) + "\n```"
    )
    assert [(f.key, f.content) for f in parse_reply(reply)] == [("drink", "Likes tea")]


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "I am sorry, I cannot help with that.",
        "{not json",
        "[1, 2",
        json.dumps({"items": []}),
        "The user likes tea.",
    ],
)
def test_a_reply_that_is_no_facts_is_an_error(reply: str) -> None:
    with pytest.raises(ExtractorReplyError):
        parse_reply(reply)


def test_lines_format_asks_seed_003s_question_without_json_mode(alice) -> None:  # type: ignore[no-untyped-def]
    post_events(alice, "s1", {"role": "user", "content": "I prefer French, and my dog is Biscuit"})
    session = Session.objects.get(external_id="s1")
    ids = list(session.events.values_list("pk", flat=True))
    reply = "- preferred_language: French\n- The user's dog is called Biscuit"
    with fake_llm(lambda body: (200, completion(reply))) as llm:
        extractor = HttpExtractor(url=llm.url, model="m", timeout=5, reply_format="lines")
        stored = extract_and_store(session, ids, extractor)
    body = llm.requests[0]["body"]
    assert "response_format" not in body and body["messages"][0]["content"] == LINES_PROMPT
    assert 'return "NONE"' in LINES_PROMPT
    assert sorted((f.key, f.content) for f in stored) == [
        ("", "The user's dog is called Biscuit"),
        ("preferred_language", "preferred language: French"),
    ]
    fact = Fact.objects.get(key="preferred_language")
    assert fact.importance == importance_by_type(["general"])  # none given: the type's default
