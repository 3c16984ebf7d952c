"""Session and Event models: the rules the database enforces whatever the caller."""

from __future__ import annotations

import re

import pgtrigger
import pytest
from django.db import DatabaseError, IntegrityError, transaction

from accounts.models import Channel, Workspace
from memoryhub.models import (
    Event,
    Session,
    SessionStatus,
    estimate_tokens,
    iso,
    new_ref_code,
)
from memoryhub.models.sessions import REF_CODE_LEN
from tests.base import make_tenant

pytestmark = pytest.mark.django_db

IMMUTABLE_TRIGGER = "memoryhub.Event:event_immutable_transcript"


def make_session(tenant_name: str = "alice", external_id: str = "s1", **fields) -> Session:  # type: ignore[no-untyped-def]
    tenant = make_tenant(tenant_name)
    workspace = Workspace.get_default(tenant)
    channel = Channel.get_named(workspace, None)
    return Session.objects.create(
        tenant=tenant, workspace=workspace, channel=channel, external_id=external_id, **fields
    )


def make_event(session: Session, sequence: int, **fields) -> Event:  # type: ignore[no-untyped-def]
    fields.setdefault("role", "user")
    fields.setdefault("content", f"message {sequence}")
    fields.setdefault("importance", 0.5)
    return Event.objects.create(
        tenant_id=session.tenant_id, session=session, sequence=sequence, **fields
    )


def test_ref_code_is_11_base62_characters_and_stable() -> None:
    session = make_session()
    assert re.fullmatch(r"[0-9A-Za-z]{11}", session.ref_code)
    code = session.ref_code
    session.title = "renamed"
    session.save()
    session.refresh_from_db()
    assert session.ref_code == code
    assert len(new_ref_code()) == REF_CODE_LEN
    codes = {make_session(external_id=f"s{i}").ref_code for i in range(2, 12)}
    assert len(codes) == 10 and code not in codes


def test_session_id_is_unique_per_tenant_not_globally() -> None:
    make_session("alice", "same")
    make_session("bob", "same")  # another tenant may reuse the id
    with pytest.raises(IntegrityError), transaction.atomic():
        make_session("alice", "same")
    assert Session.objects.filter(external_id="same").count() == 2


@pytest.mark.parametrize(
    ("start", "target", "allowed"),
    [
        ("active", "idle", True),
        ("active", "archived", True),
        ("idle", "active", True),
        ("idle", "archived", True),
        ("archived", "active", False),
        ("archived", "idle", False),
        ("active", "active", False),  # repeating a status is not a move
        ("idle", "idle", False),
        ("archived", "archived", False),
    ],
)
def test_status_transitions(start: str, target: str, allowed: bool) -> None:
    session = make_session(status=start)
    assert session.can_move_to(target) is allowed


def test_new_session_defaults() -> None:
    session = make_session()
    assert session.status == SessionStatus.ACTIVE
    assert session.last_sequence == 0 and session.event_count == 0
    assert session.metadata == {}
    assert session.created_at is not None and session.updated_at is not None


def test_sequence_trigger_refuses_a_sequence_not_greater_than_the_last() -> None:
    session = make_session()
    make_event(session, 1)
    make_event(session, 5)  # gaps are allowed, going back is not
    for bad in (5, 3):
        with pytest.raises(IntegrityError), transaction.atomic():
            make_event(session, bad)
    assert list(session.events.values_list("sequence", flat=True)) == [1, 5]


def test_sequence_trigger_applies_within_one_multi_row_insert() -> None:
    session = make_session()
    rows = [
        Event(
            tenant_id=session.tenant_id,
            session=session,
            sequence=s,
            role="user",
            content="x",
            importance=0.5,
        )
        for s in (2, 1)
    ]
    with pytest.raises(IntegrityError), transaction.atomic():
        Event.objects.bulk_create(rows)
    assert not session.events.exists()


def test_sequences_are_per_session() -> None:
    first = make_session(external_id="a")
    second = make_session(external_id="b")
    make_event(first, 1)
    make_event(first, 2)
    make_event(second, 1)  # another session starts again at 1
    assert second.events.get().sequence == 1


def test_events_are_append_only_updates_are_refused() -> None:
    session = make_session()
    event = make_event(session, 1, content="original")
    with pytest.raises(DatabaseError), transaction.atomic():
        Event.objects.filter(pk=event.pk).update(content="rewritten")
    event.content = "rewritten via save"
    with pytest.raises(DatabaseError), transaction.atomic():
        event.save()
    event.refresh_from_db()
    assert event.content == "original"


def test_events_can_be_deleted_when_the_transcript_is_not_immutable() -> None:
    session = make_session()
    make_event(session, 1)
    assert Event.objects.filter(session=session).delete()[0] == 1


def test_immutable_transcript_forbids_deleting_events_except_with_the_trigger_lifted() -> None:
    session = make_session()
    make_event(session, 1)
    make_event(session, 2)
    session.tenant.immutable_transcript = True
    session.tenant.save()
    with pytest.raises(DatabaseError), transaction.atomic():
        Event.objects.filter(session=session).delete()
    with pytest.raises(DatabaseError), transaction.atomic():
        session.delete()  # the cascade hits the same trigger
    assert Event.objects.filter(session=session).count() == 2
    with pgtrigger.ignore(IMMUTABLE_TRIGGER):
        deleted, _ = session.delete()
    assert deleted == 3
    assert not Event.objects.filter(tenant=session.tenant).exists()


def test_other_tenants_keep_deleting_while_one_is_immutable() -> None:
    immutable = make_session("alice", "a")
    make_event(immutable, 1)
    immutable.tenant.immutable_transcript = True
    immutable.tenant.save()
    free = make_session("bob", "b")
    make_event(free, 1)
    free.delete()
    assert not Event.objects.filter(tenant=free.tenant).exists()
    assert Event.objects.filter(tenant=immutable.tenant).count() == 1


def test_importance_must_lie_in_zero_one() -> None:
    session = make_session()
    for bad in (-0.1, 1.5):
        with pytest.raises(IntegrityError), transaction.atomic():
            make_event(session, 1, importance=bad)
    assert not session.events.exists()


def test_idempotency_key_is_unique_per_session() -> None:
    session = make_session()
    other = make_session(external_id="other")
    make_event(session, 1, idempotency_key="k1")
    make_event(other, 1, idempotency_key="k1")  # another session may reuse a key
    make_event(session, 2, idempotency_key=None)
    make_event(session, 3, idempotency_key=None)  # many events without a key
    with pytest.raises(IntegrityError), transaction.atomic():
        make_event(session, 4, idempotency_key="k1")
    assert session.events.count() == 3


def test_event_text_spells_out_a_tool_call_without_content() -> None:
    session = make_session()
    call = make_event(
        session,
        1,
        role="tool",
        content="",
        tool_name="get_weather",
        tool_args={"city": "Oslo", "unit": "C"},
    )
    assert call.text == 'Called get_weather with {"city": "Oslo", "unit": "C"}'
    plain = make_event(session, 2, content="hello")
    assert plain.text == "hello"


def test_event_as_dict_is_the_api_shape() -> None:
    session = make_session()
    event = make_event(session, 1, content="hi", metadata={"a": 1})
    payload = event.as_dict()
    assert payload == {
        "id": event.pk,
        "sequence": 1,
        "role": "user",
        "content": "hi",
        "tool_name": None,
        "tool_args": None,
        "tool_result": None,
        "tool_calls": None,
        "tool_call_id": None,
        "metadata": {"a": 1},
        "importance": 0.5,
        "idempotency_key": None,
        "created_at": iso(event.created_at),
        "consolidated_at": None,
    }
    assert payload["created_at"].endswith("Z")


def test_estimate_tokens() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2


def test_clean_refuses_an_invalid_status_move() -> None:
    from django.core.exceptions import ValidationError

    session = make_session(status="archived")
    session.status = "active"
    with pytest.raises(ValidationError):
        session.clean()
    fresh = make_session(external_id="fresh")
    fresh.status = "idle"
    fresh.clean()
