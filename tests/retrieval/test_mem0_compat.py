"""mem0's own MemoryClient (the mem0ai package, unchanged) against a live MemoryHub: every call it
makes for ping, add, search, get_all, get, update, delete, delete_all, history and users, with
MemoryHub's ownership rules (two tenants and two users of the same ids)."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

# mem0 reads these at import: no usage events posted, its config file not in the home folder.
os.environ["MEM0_TELEMETRY"] = "False"
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="mem0-test-"))

from mem0 import MemoryClient  # noqa: E402
from mem0.exceptions import AuthenticationError, MemoryNotFoundError, ValidationError  # noqa: E402

from memoryhub.models import Event, Fact, Session, StepFailure  # noqa: E402
from memoryhub.session_work import FACTS_STEP  # noqa: E402
from tests.base import make_key, make_tenant  # noqa: E402
from tests.memoryhub.test_summarisers import completion, fake_llm  # noqa: E402

Connect = Callable[..., MemoryClient]


@pytest.fixture
def connect(live_server: Any, transactional_db: None) -> Iterator[Connect]:
    """connect(tenant name, user="") -> mem0's client with a new MemoryHub key of that tenant."""
    opened: list[MemoryClient] = []

    def make(
        tenant: str, *, user: str = "", scopes: tuple[str, ...] = ("read", "write", "admin")
    ) -> MemoryClient:
        client = MemoryClient(
            api_key=make_key(make_tenant(tenant), scopes=scopes, user=user), host=live_server.url
        )
        opened.append(client)
        return client

    yield make
    # an open keep-alive connection holds a live-server thread and its database session
    for client in opened:
        client.client.close()


def raw(live_server: Any, key: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.request(
        method, live_server.url + path, headers={"Authorization": f"Token {key}"}, **kwargs
    )


def test_ping_needs_a_valid_key(live_server: Any, connect: Connect) -> None:
    client = connect("alice")
    assert client.org_id == "alice" and client.project_id == "*"
    with pytest.raises(ValueError):
        MemoryClient(
            api_key="mh_nope_nothing",
            host=live_server.url,
            client=httpx.Client(headers={"Connection": "close"}),
        )


def test_add_verbatim_get_update_history_delete(connect: Connect) -> None:
    client = connect("alice")
    added = client.add(
        [
            {"role": "user", "content": "I prefer aisle seats."},
            {"role": "assistant", "content": "Noted: aisle seats."},
        ],
        user_id="ann",
        agent_id="Travel-Bot",
        metadata={"source": "chat"},
        infer=False,
    )
    assert [r["event"] for r in added["results"]] == ["ADD", "ADD"]
    first = added["results"][0]
    assert first["memory"] == "I prefer aisle seats." and first["user_id"] == "ann"
    assert first["agent_id"] == "Travel-Bot" and first["metadata"]["source"] == "chat"
    fact = Fact.objects.get(pk=int(first["id"].split(":")[1]))
    assert fact.user_id == "ann" and fact.source == "mem0" and "agent:travel-bot" in fact.tags

    got = client.get(first["id"])
    assert got["id"] == first["id"] and got["memory"] == "I prefer aisle seats."

    updated = client.update(first["id"], text="I prefer window seats.")
    assert updated["memory"] == "I prefer window seats." and updated["agent_id"] == "Travel-Bot"
    assert client.get(first["id"])["memory"] == "I prefer window seats."

    client.delete(first["id"])
    with pytest.raises(MemoryNotFoundError):
        client.get(first["id"])
    events = [(h["event"], h["old_memory"], h["new_memory"]) for h in client.history(first["id"])]
    assert events == [
        ("ADD", None, "I prefer aisle seats."),
        ("UPDATE", "I prefer aisle seats.", "I prefer window seats."),
        ("DELETE", "I prefer window seats.", None),
    ]


def test_search_filters_and_top_k(connect: Connect) -> None:
    client = connect("alice")
    client.add("Ann's cat is called Miso.", user_id="ann", infer=False)
    client.add("Ann's dog is called Biscuit.", user_id="ann", agent_id="pets", infer=False)
    client.add("Ann flies to Lisbon on May 3rd.", user_id="ann", run_id="trip-1", infer=False)
    client.add("Bob's cat is called Tofu.", user_id="bob", infer=False)

    found = client.search("cat called", filters={"user_id": "ann"})["results"]
    texts = [r["memory"] for r in found]
    assert "Ann's cat is called Miso." in texts and not any("Bob" in t for t in texts)
    assert all(isinstance(r["score"], float) for r in found)
    assert len(client.search("called", filters={"user_id": "ann"}, top_k=1)["results"]) == 1

    by_agent = client.search("called", filters={"user_id": "ann", "agent_id": "PETS"})["results"]
    assert [r["memory"] for r in by_agent] == ["Ann's dog is called Biscuit."]
    by_run = client.search("Lisbon", filters={"AND": [{"user_id": "ann"}, {"run_id": "trip-1"}]})[
        "results"
    ]
    assert [r["memory"] for r in by_run] == ["Ann flies to Lisbon on May 3rd."]
    assert by_run[0]["run_id"] == "trip-1"
    assert Session.objects.get(external_id="trip-1").user_id == "ann"


def test_get_all_pages_and_delete_all(connect: Connect) -> None:
    client = connect("alice")
    for n in range(3):
        client.add(f"Ann fact {n}", user_id="ann", infer=False)
    client.add("Bob fact", user_id="bob", infer=False)
    everything = client.get_all(filters={"user_id": "ann"})
    assert everything["count"] == 3 and {r["memory"] for r in everything["results"]} == {
        f"Ann fact {n}" for n in range(3)
    }
    first = client.get_all(filters={"user_id": "ann"}, page=1, page_size=2)
    second = client.get_all(filters={"user_id": "ann"}, page=2, page_size=2)
    assert (
        len(first["results"]) == 2
        and first["next"]
        and len(second["results"]) == 1
        and second["previous"]
    )
    assert {r["id"] for r in first["results"]}.isdisjoint({r["id"] for r in second["results"]})

    client.delete_all(user_id="ann")
    assert client.get_all(filters={"user_id": "ann"})["count"] == 0
    assert client.get_all(filters={"user_id": "bob"})["count"] == 1


def test_notes_are_memories_too(connect: Connect, live_server: Any) -> None:
    client = connect("alice")
    response = httpx.post(
        live_server.url + "/api/v1/notes/",
        headers={"Authorization": f"Bearer {client.api_key}"},
        json={"note_id": "tea", "content": "Ann drinks green tea.", "user_id": "ann"},
    )
    assert response.status_code == 201
    assert client.get("note:tea")["memory"] == "Ann drinks green tea."
    assert (
        client.update("note:tea", text="Ann drinks black tea.")["memory"] == "Ann drinks black tea."
    )
    assert [h["event"] for h in client.history("note:tea")] == ["ADD"]
    assert "note:tea" in {r["id"] for r in client.get_all(filters={"user_id": "ann"})["results"]}
    client.delete("note:tea")
    with pytest.raises(MemoryNotFoundError):
        client.get("note:tea")


def test_infer_uses_memoryhubs_extractor(connect: Connect, settings: Any) -> None:
    reply = {
        "facts": [
            {
                "content": "The user's dog is called Biscuit",
                "category": "profile",
                "key": "dog_name",
            }
        ]
    }
    with fake_llm(lambda body: (200, completion(json.dumps(reply)))) as llm:
        settings.MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS = ("127.0.0.1/32",)
        settings.MEMORYHUB_FACT_EXTRACTOR = "http"
        settings.MEMORYHUB_FACT_EXTRACTOR_URL = llm.url
        settings.MEMORYHUB_FACT_EXTRACTOR_MODEL = "extract-m"
        client = connect("alice")
        added = client.add(
            [{"role": "user", "content": "My dog is called Biscuit."}],
            user_id="ann",
            agent_id="pets",
        )
    assert len(llm.requests) == 1
    [memory] = added["results"]
    assert memory["memory"] == "The user's dog is called Biscuit" and memory["user_id"] == "ann"
    assert memory["agent_id"] == "pets"
    session = Session.objects.get(external_id="mem0:ann:pets")
    # the lane will not extract them again
    assert session.user_id == "ann" and session.facts_extracted_to == 1
    assert list(Event.objects.filter(session=session).values_list("content", flat=True)) == [
        "My dog is called Biscuit."
    ]
    # The events are marked consolidated as the lane marks the events it extracts.
    assert session.consolidated_to == 1
    assert not Event.objects.filter(session=session, consolidated_at__isnull=True).exists()
    assert client.search("dog", filters={"user_id": "ann"})["results"][0]["id"] == memory["id"]


def test_infer_with_an_unusable_reply_is_recorded_as_the_lane_records_it(
    connect: Connect, settings: Any
) -> None:
    with fake_llm(lambda body: (200, completion("Sure! I would be glad to help."))) as llm:
        settings.MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS = ("127.0.0.1/32",)
        settings.MEMORYHUB_FACT_EXTRACTOR = "http"
        settings.MEMORYHUB_FACT_EXTRACTOR_URL = llm.url
        settings.MEMORYHUB_FACT_EXTRACTOR_MODEL = "extract-m"
        client = connect("alice")
        assert (
            client.add([{"role": "user", "content": "Hello there."}], user_id="ann", run_id="r-1")[
                "results"
            ]
            == []
        )
    assert len(llm.requests) == 1  # the cursor moved: the lane does not ask the model again
    session = Session.objects.get(external_id="r-1")
    # The same model would reply the same again: recorded for the operator, the cursor goes on.
    [failure] = StepFailure.objects.filter(session=session)
    assert (
        failure.step == FACTS_STEP
        and "neither facts nor NONE" in failure.error
        and not failure.set_aside
    )
    assert session.facts_extracted_to == 1 and session.consolidated_to == 1
    assert not Event.objects.filter(session=session, consolidated_at__isnull=True).exists()


def test_infer_without_an_extractor_keeps_the_messages_verbatim(connect: Connect) -> None:
    client = connect("alice")
    [added] = client.add("I live in Porto.", user_id="ann", run_id="chat-1", infer=True)["results"]
    assert (added["event"], added["memory"], added["run_id"]) == (
        "ADD",
        "I live in Porto.",
        "chat-1",
    )
    assert Fact.objects.get().content == "I live in Porto." and not Event.objects.exists()


def test_users_lists_end_users(connect: Connect) -> None:
    client = connect("alice")
    client.add("Ann fact", user_id="ann", infer=False)
    client.add("Bob fact", user_id="bob", run_id="b-1", infer=False)
    connect("bob").add("Other tenant's ann", user_id="zed", infer=False)
    users = client.users()
    assert users["count"] == 2
    assert {(u["name"], u["type"], u["total_memories"]) for u in users["results"]} == {
        ("ann", "user", 1),
        ("bob", "user", 1),
    }
    limited = connect("alice", user="ann").users()
    assert [u["name"] for u in limited["results"]] == ["ann"]


def test_isolation_between_tenants_and_users(connect: Connect) -> None:
    alice, bob = connect("alice"), connect("bob")
    mine = alice.add("Ann's secret is 42.", user_id="ann", infer=False)["results"][0]["id"]
    # the same user id in another tenant
    bob.add("Ann's other secret is 7.", user_id="ann", infer=False)
    for call in (
        lambda: bob.get(mine),
        lambda: bob.update(mine, text="x"),
        lambda: bob.delete(mine),
        lambda: bob.history(mine),
    ):
        with pytest.raises(MemoryNotFoundError):
            call()
    assert [r["memory"] for r in bob.search("secret", filters={"user_id": "ann"})["results"]] == [
        "Ann's other secret is 7."
    ]
    assert bob.get_all(filters={"user_id": "ann"})["count"] == 1
    bob.delete_all(user_id="ann")
    assert alice.get(mine)["memory"] == "Ann's secret is 42."

    # A key limited to bob (same tenant) neither sees nor changes ann's memory, nor names ann.
    as_bob = connect("alice", user="bob")
    with pytest.raises(MemoryNotFoundError):
        as_bob.get(mine)
    with pytest.raises(MemoryNotFoundError):
        as_bob.delete(mine)
    with pytest.raises(AuthenticationError) as refused:  # mem0's class for a 403
        as_bob.search("secret", filters={"user_id": "ann"})
    assert refused.value.debug_info["status_code"] == 403
    with pytest.raises(AuthenticationError):
        as_bob.get_all(filters={"user_id": "ann"})
    assert as_bob.search("secret", filters={"user_id": "bob"})["results"] == []
    added = as_bob.add("Bob likes jazz.", user_id="bob", infer=False)["results"][0]
    assert added["user_id"] == "bob"
    # Without a user_id the key's user is meant: bob's memory, not one shared with ann's key.
    assert as_bob.add("Bob hums.", agent_id="radio")["results"][0]["user_id"] == "bob"
    assert (
        connect("alice", user="ann").add("Ann sings.", agent_id="radio")["results"][0]["user_id"]
        == "ann"
    )
    assert Fact.objects.get(content="Bob hums.").user_id == "bob"


def test_bad_input_is_a_4xx_with_a_code(live_server: Any, connect: Connect) -> None:
    client = connect("alice")
    with pytest.raises(ValidationError):
        client.add("no one", infer=False)  # no user_id, agent_id or run_id
    with pytest.raises(ValidationError):
        client.search("x", filters={"app_id": "a"})
    with pytest.raises(MemoryNotFoundError):
        client.get("fact:999999")
    with pytest.raises(MemoryNotFoundError):
        client.get("whatever")
    key = make_key(make_tenant("alice"))
    cases = [
        (
            "POST",
            "/v3/memories/add/",
            {
                "json": {
                    "messages": [{"role": "user", "content": "x"}],
                    "user_id": "a",
                    "infer": False,
                    "bogus": 1,
                }
            },
            "unknown_field",
        ),
        (
            "POST",
            "/v3/memories/add/",
            {"json": {"messages": [{"role": "user", "content": ["x"]}], "user_id": "a"}},
            "invalid_message",
        ),
        (
            "POST",
            "/v3/memories/add/",
            {"json": {"messages": [{"role": "x", "content": "x"}], "user_id": "a"}},
            "invalid_message",
        ),
        (
            "POST",
            "/v3/memories/add/",
            {"json": {"messages": [{"role": "user", "content": "x"}], "run_id": "not a valid id"}},
            "invalid_filters",
        ),
        ("POST", "/v3/memories/search/", {"json": {"query": "x", "top_k": 0}}, "min_value"),
        ("POST", "/v3/memories/", {"json": {"filters": {"OR": []}}}, "unsupported_filter"),
        ("POST", "/v3/memories/", {"json": {}, "params": {"page_size": 0}}, "invalid_parameter"),
        ("DELETE", "/v1/memories/", {}, "entity_required"),
        ("DELETE", "/v1/memories/", {"params": {"user": "ann"}}, "unknown_parameter"),
        ("PUT", "/v1/memories/fact:1/", {"json": {}}, "nothing_to_update"),
        ("POST", "/v3/memories/add/", {"json": []}, "not_an_object"),
        (
            "POST",
            "/v3/memories/add/",
            {"json": {"messages": ["hi"], "user_id": "a"}},
            "Expected an object",
        ),
        (
            "POST",
            "/v3/memories/add/",
            {
                "json": {
                    "messages": [
                        {"role": "user", "content": "kept?"},
                        {"role": "robot", "content": "x"},
                    ],
                    "user_id": "a",
                    "infer": False,
                }
            },
            "invalid_message",
        ),
        (
            "POST",
            "/v3/memories/add/",
            {
                "json": {
                    "messages": [{"role": "user", "content": "x"}],
                    "user_id": "a",
                    "filters": {"user_id": "b"},
                }
            },
            "invalid_filters",
        ),
        (
            "POST",
            "/v3/memories/search/",
            {"json": {"query": "x", "filters": {"AND": "user_id"}}},
            "invalid_filters",
        ),
        (
            "POST",
            "/v3/memories/search/",
            {"json": {"query": "x", "filters": {"user_id": 5}}},
            "invalid_filters",
        ),
        ("POST", "/v3/memories/search/", {"json": {"query": " "}}, "blank"),
        ("GET", "/v1/memories/fact:99999999999999999999999/", {}, "memory_not_found"),
        ("GET", "/v1/memories/fact:²/", {}, "memory_not_found"),
        ("GET", "/v1/memories/fact:²/history/", {}, "memory_not_found"),
        ("GET", "/v1/memories/note:nothing/history/", {}, "note_not_found"),
        ("GET", "/v1/entities/", {"params": {"page": "x"}}, "invalid_parameter"),
        (
            "DELETE",
            "/v1/memories/",
            {"params": {"user_id": "a\x00"}},
            "null_characters_not_allowed",
        ),
        ("GET", "/v1/memories/note:a%00/", {}, "null_characters_not_allowed"),
    ]
    for method, path, kwargs, code in cases:
        response = raw(live_server, key, method, path, **kwargs)
        assert 400 <= response.status_code < 500, (path, response.status_code, response.text)
        assert code in response.text, (path, response.text)
    assert not Fact.objects.exists()
    assert raw(live_server, "mh_bad_key", "GET", "/v1/ping/").status_code == 401
    read_only = make_key(make_tenant("alice"), scopes=("read",))
    response = raw(
        live_server,
        read_only,
        "POST",
        "/v3/memories/add/",
        json={"messages": [{"role": "user", "content": "x"}], "user_id": "a", "infer": False},
    )
    assert response.status_code == 403 and "insufficient_scope" in response.text


def readme_snippet(heading: str) -> str:
    """The first Python block under `heading` in docs/frameworks.md."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "frameworks.md").read_text()
    after = text[text.index(f"\n{heading}\n") :]
    return after[
        after.index("```python\n") + len("```python\n") : after.index(
            "\n```", after.index("```python\n")
        )
    ]


def test_the_readme_snippet_runs(live_server: Any, transactional_db: None, capsys: Any) -> None:
    snippet = readme_snippet("### mem0's client")
    assert 'host="http://127.0.0.1:8000"' in snippet
    scope: dict[str, Any] = {"KEY": make_key(make_tenant("alice"))}
    exec(
        compile(
            snippet.replace("http://127.0.0.1:8000", live_server.url), "docs/frameworks.md", "exec"
        ),
        scope,
    )
    scope["client"].client.close()
    assert capsys.readouterr().out.strip().endswith("I prefer aisle seats.")


def test_a_run_of_another_user_is_refused_and_an_unknown_run_has_nothing(connect: Connect) -> None:
    client = connect("alice")
    client.add("Ann's run.", user_id="ann", run_id="run-a", infer=False)
    with pytest.raises(ValidationError) as refused:  # mem0's class for a 409
        client.add("Bob in ann's run.", user_id="bob", run_id="run-a", infer=False)
    assert "owner_mismatch" in str(refused.value.details)
    assert client.get_all(filters={"run_id": "run-a"})["count"] == 1
    assert client.search("run", filters={"run_id": "nowhere"})["results"] == []
    assert client.get_all(filters={"run_id": "nowhere"})["count"] == 0


def test_mem0s_async_client_too(live_server: Any, transactional_db: None) -> None:
    from mem0 import AsyncMemoryClient

    key = make_key(make_tenant("alice"))

    async def scenario() -> None:
        client = AsyncMemoryClient(api_key=key, host=live_server.url)
        try:
            added = await client.add("Ann collects stamps.", user_id="ann", infer=False)
            memory_id = added["results"][0]["id"]
            found = await client.search("stamps", filters={"user_id": "ann"})
            assert [r["id"] for r in found["results"]] == [memory_id]
            assert (await client.update(memory_id, text="Ann collects coins."))[
                "memory"
            ] == "Ann collects coins."
            assert [h["event"] for h in await client.history(memory_id)] == ["ADD", "UPDATE"]
            await client.delete(memory_id)
            assert (await client.get_all(filters={"user_id": "ann"}))["count"] == 0
        finally:
            await client.async_client.aclose()

    asyncio.run(scenario())
