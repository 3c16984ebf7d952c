"""Every operation listed once, bound to the sync or the async client by descriptors.

`op(build)` turns a request builder (args -> Call[R]) into a method returning R on a
`SyncOperations` (MemoryHub) and a coroutine of R on an `AsyncOperations` (AsyncMemoryHub);
`pages(build)` into an iterator (or async iterator) over every item of every page; `flow(build)`
does the same for multi-request flows. The overloads of `__get__` give type checkers the exact
signature of each method on each kind of client; the clients (client.py) only say which kind
they are, by their base class.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from memoryhub_client import (
    _agent,
    _ops_admin,
    _ops_mem0,
    _ops_memory,
    _ops_retrieval,
    _ops_sessions,
)
from memoryhub_client._agent import ClientState
from memoryhub_client._core import Call, Flow, exchange
from memoryhub_client.types import Page

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


def _public_signature(build: Callable[..., Any], *, drop_first: bool = False) -> inspect.Signature:
    """The builder's parameters, for help() and IDEs; the return type is the client's, not a
    Call."""
    sig = inspect.signature(build)
    params = list(sig.parameters.values())[1 if drop_first else 0 :]
    return sig.replace(parameters=params, return_annotation=inspect.Signature.empty)


class _Binding:
    def __init__(self, build: Callable[..., Any], *, drop_first: bool = False) -> None:
        self.build = build
        self.signature = _public_signature(build, drop_first=drop_first)
        self.name = build.__name__
        self.doc = build.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def dress(self, method: Any) -> Any:
        method.__name__ = method.__qualname__ = self.name
        method.__doc__ = self.doc
        method.__signature__ = self.signature
        return method


class op(_Binding, Generic[P, R]):
    """A single request."""

    def __init__(self, build: Callable[P, Call[R]]) -> None:
        super().__init__(build)

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> op[P, R]: ...
    @overload
    def __get__(self, obj: SyncOperations, owner: type | None = None) -> Callable[P, R]: ...
    @overload
    def __get__(
        self, obj: AsyncOperations, owner: type | None = None
    ) -> Callable[P, Coroutine[Any, Any, R]]: ...

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        build, policy = self.build, obj._state.policy
        return self.dress(obj._bind(lambda *a, **k: exchange(build(*a, **k), policy)))


class flow(_Binding, Generic[P, R]):
    """Several requests (e.g. get-or-create the session, then append), written once as a flow."""

    def __init__(self, build: Callable[Concatenate[ClientState, P], Flow[R]]) -> None:
        super().__init__(build, drop_first=True)

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> flow[P, R]: ...
    @overload
    def __get__(self, obj: SyncOperations, owner: type | None = None) -> Callable[P, R]: ...
    @overload
    def __get__(
        self, obj: AsyncOperations, owner: type | None = None
    ) -> Callable[P, Coroutine[Any, Any, R]]: ...

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        build, state = self.build, obj._state
        return self.dress(obj._bind(lambda *a, **k: build(state, *a, **k)))


class pages(_Binding, Generic[P, T]):
    """Every item of a list endpoint, page after page (`limit` is the page size)."""

    def __init__(self, build: Callable[P, Call[Page[T]]]) -> None:
        super().__init__(build)

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> pages[P, T]: ...
    @overload
    def __get__(
        self, obj: SyncOperations, owner: type | None = None
    ) -> Callable[P, Iterator[T]]: ...
    @overload
    def __get__(
        self, obj: AsyncOperations, owner: type | None = None
    ) -> Callable[P, AsyncIterator[T]]: ...

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return self.dress(obj._bind_pages(self.build))


_s, _m, _mem0, _r, _a = _ops_sessions, _ops_memory, _ops_mem0, _ops_retrieval, _ops_admin


class Operations:
    """The API, once for both clients. Names follow the REST resources (see the README table)."""

    _state: ClientState

    # the two calls most agents need
    remember = flow(_agent.remember)
    recall = op(_r.recall)

    # sessions and events
    create_session = op(_s.create_session)
    list_sessions = op(_s.list_sessions)
    iter_sessions = pages(_s.list_sessions)
    get_session = op(_s.get_session)
    update_session = op(_s.update_session)
    delete_session = op(_s.delete_session)
    append_event = op(_s.append_event)
    append_events = op(_s.append_events)
    list_events = op(_s.list_events)
    delete_events = op(_s.delete_events)
    iter_events = pages(_s.event_pages)
    restore = op(_s.restore)

    # scratchpad and summaries
    get_scratchpad = op(_s.get_scratchpad)
    put_scratchpad = op(_s.put_scratchpad)
    update_scratchpad = op(_s.update_scratchpad)
    clear_scratchpad = op(_s.clear_scratchpad)
    get_summary = op(_s.get_summary)
    put_summary = op(_s.put_summary)
    summarise = op(_s.summarise)
    build_summary_tree = op(_s.build_summary_tree)
    list_summaries = op(_s.list_summaries)
    iter_summaries = pages(_s.list_summaries)
    expand_summary = op(_s.expand_summary)

    # retrieval
    search = op(_r.search)
    context = op(_r.context)
    browse = op(_r.browse)
    iter_browse = pages(_r.browse)
    stats = op(_r.stats)

    # notes, facts, documents
    create_note = op(_m.create_note)
    put_note = op(_m.put_note)
    update_note = op(_m.update_note)
    list_notes = op(_m.list_notes)
    iter_notes = pages(_m.list_notes)
    get_note = op(_m.get_note)
    delete_note = op(_m.delete_note)
    upsert_fact = op(_m.upsert_fact)
    list_facts = op(_m.list_facts)
    iter_facts = pages(_m.list_facts)
    get_fact = op(_m.get_fact)
    update_fact = op(_m.update_fact)
    delete_fact = op(_m.delete_fact)
    get_fact_by_external_id = op(_m.get_fact_by_external_id)
    update_fact_by_external_id = op(_m.update_fact_by_external_id)
    delete_fact_by_external_id = op(_m.delete_fact_by_external_id)
    fact_history = op(_m.fact_history)
    add_document = op(_m.add_document)
    list_documents = op(_m.list_documents)
    iter_documents = pages(_m.list_documents)
    get_document = op(_m.get_document)
    delete_document = op(_m.delete_document)

    # mem0-style: notes and facts as one kind of memory ("note:<id>", "fact:<id>")
    get_all = flow(_mem0.get_all)
    get = op(_mem0.get)
    update = op(_mem0.update)
    delete = op(_mem0.delete)
    history = op(_mem0.history)

    # channels and webhooks
    list_channels = op(_a.list_channels)
    iter_channels = pages(_a.list_channels)
    create_channel = op(_a.create_channel)
    get_channel = op(_a.get_channel)
    update_channel = op(_a.update_channel)
    list_webhooks = op(_a.list_webhooks)
    create_webhook = op(_a.create_webhook)
    get_webhook = op(_a.get_webhook)
    delete_webhook = op(_a.delete_webhook)

    # schedules and runs
    create_schedule = op(_a.create_schedule)
    list_schedules = op(_a.list_schedules)
    iter_schedules = pages(_a.list_schedules)
    get_schedule = op(_a.get_schedule)
    update_schedule = op(_a.update_schedule)
    delete_schedule = op(_a.delete_schedule)
    pause_schedule = op(_a.pause_schedule)
    resume_schedule = op(_a.resume_schedule)
    run_schedule = op(_a.run_schedule)
    list_runs = op(_a.list_runs)
    iter_runs = pages(_a.list_runs)
    get_run = op(_a.get_run)

    # lifecycle and service
    export_memory = op(_a.export_memory)
    import_memory = op(_a.import_memory)
    consolidate = op(_a.consolidate)
    list_users = op(_a.list_users)
    iter_users = pages(_a.list_users)
    forget_user = op(_a.forget_user)
    delete_workspace = op(_a.delete_workspace)
    health = op(_a.health)
    describe_key = op(_a.describe_key)
    ready = op(_a.ready)
    openapi = op(_a.openapi)

    def _bind(self, make_flow: Callable[..., Flow[Any]]) -> Callable[..., Any]:
        raise NotImplementedError

    def _bind_pages(self, build: Callable[..., Call[Page[Any]]]) -> Callable[..., Any]:
        raise NotImplementedError


class SyncOperations(Operations):
    """The operations as plain methods: `_bind` returns a function that runs the flow to its end."""


class AsyncOperations(Operations):
    """The operations as coroutines (`iter_*` as async iterators): `_bind` returns a coroutine
    function."""
