"""The paths that act later, as a generated matrix: every action a schedule can run × {tenant key,
read-only, workspace-limited, user-limited, admin}, in one world of four sides {the key's own rows,
another workspace's, another user's, another tenant's}; a schedule placed on each side by each
key; and forget-user's residue × the same keys.

Every side holds the same names: fact profile/home_city, a schedule `digest` with a run history, a
session and a note, and a word of its own in each text, so that a leak says whose it was. Session
and note ids are unique per tenant (docs/memory-model.md#ids), so the other workspace and the
other user of the key's tenant hold `s1-beta`/`n1-beta` and `s1-bob`/`n1-bob`, and the other
tenant holds `s1` and `n1` exactly as the own side does. An attack names exactly the attacked
side's ids: a schedule placed on a side names that side's workspace and user (`beta`, `bob`), and
one that names the other tenant's (`alpha`, `ann`: the own side's very names) reaches the key's own
side and never the other tenant.

Why one world for the four sides, not a fresh one per attacked side in which that side alone holds
s1 and n1: a tenant-wide run (consolidate, summarise, embed_backfill) meets every side in one pass,
and the matrix shows that this one pass changes only the sides within its key's limits. In a world
per attacked side the own side could not hold s1 beside an attacked side of its own tenant, so a
cell would either lose the own side, and with it the proof that the run acts where it may, or give
it other ids: the same exception, moved. No cell addresses a session or a note by its id (a run
selects rows by tenant, workspace and user), so here those ids are names in the world, not targets.

Each case compares a database snapshot before and after: a refused create (403 with a code) changes
nothing, an allowed run changes only rows within the key's limits; and what the run wrote (output,
summary, notification) and what every key reads afterwards (schedules, runs) names no side outside
that reader's limits.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from accounts.models import Tenant, Workspace
from memoryhub.models import Fact, Note, Session
from retrieval.lifecycle.models import ConsolidationReport
from retrieval.models import Chunk
from scheduling.actions import REGISTRY
from scheduling.dispatcher import execute_run
from scheduling.models import Delivery, Run, Schedule, Webhook
from tests.base import make_client, make_key, make_tenant

pytestmark = pytest.mark.django_db

URL = "/api/v1/schedules/"
AGENT_REPLY = "agent did its rounds"


@dataclass(frozen=True)
class Side:
    name: str
    tenant: str  # "home" or "away"
    workspace: str
    user: str
    word: str  # in every text of this side, and nowhere else
    session: str  # its session's id and its note's: see the module's docstring
    note: str


SIDES = {
    "own": Side("own", "home", "alpha", "ann", "quokka", "s1", "n1"),
    "other_workspace": Side(
        "other_workspace", "home", "beta", "ann", "narwhal", "s1-beta", "n1-beta"
    ),
    "other_user": Side("other_user", "home", "alpha", "bob", "axolotl", "s1-bob", "n1-bob"),
    "other_tenant": Side("other_tenant", "away", "alpha", "ann", "pangolin", "s1", "n1"),
}

# Key kind -> (scopes, workspace limit, user limit). All in the home tenant.
KEYS = {
    "tenant": (("read", "write"), None, ""),
    "read_only": (("read",), None, ""),
    "workspace": (("read", "write", "admin"), "alpha", ""),
    "user": (("read", "write", "admin"), None, "ann"),
    "admin": (("read", "write", "admin"), None, ""),
}


def within(kind: str, side: Side) -> bool:
    """Whether a key of this kind may read (and, with write, change) the side's rows."""
    _, workspace, user = KEYS[kind]
    return (
        side.tenant == "home"
        and (workspace is None or workspace == side.workspace)
        and (not user or user == side.user)
    )


PARAMS = {
    "embed_backfill": {"limit": 10},
    "summarise": {},
    "consolidate": {"dry_run": False},
    "prune_runs": {"keep": 1},
    "agent_goal": {},
}


def expected_create(kind: str, action: str) -> tuple[int, str]:
    if kind == "read_only":
        return 403, "insufficient_scope"
    if not REGISTRY[action].tenant_wide:
        return 201, ""
    if kind == "tenant":
        return 403, "insufficient_scope"
    return {"workspace": (403, "workspace_limited_key"), "user": (403, "user_limited_key")}.get(
        kind, (201, "")
    )


def test_the_matrix_covers_every_action() -> None:
    assert set(PARAMS) == set(REGISTRY)


# --- the world ------------------------------------------------------------------------------------


@dataclass
class World:
    tenants: dict[str, Tenant]
    clients: dict[str, Any]
    agent: Any


def build_side(tenant: Tenant, side: Side) -> None:
    workspace = Workspace.get_named(tenant, side.workspace)
    channel = workspace.channels.first()
    where = {"tenant": tenant, "workspace": workspace, "channel": channel}
    session = Session.objects.create(**where, external_id=side.session, user_id=side.user)
    Note.objects.create(
        **where, note_id=side.note, user_id=side.user, content=f"note {side.note} of {side.word}"
    )
    Fact.objects.create(
        **where,
        user_id=side.user,
        category="profile",
        key="home_city",
        content=f"{side.word} lives in town",
    )
    # A conversation memory old enough for consolidation to prune (and name in its report).
    Chunk.objects.create(
        **where,
        session=session,
        user_id=side.user,
        text=f"{side.word} whispered a secret",
        content_hash=side.word,
        kind="event",
        tier="conversation",
        lifetime="conversation",
        importance=0.5,
        created_at=timezone.now() - timedelta(hours=720),
    )
    # A schedule of this side, made by a key of this side, with a run history that names it.
    schedule = Schedule.objects.create(
        tenant=tenant,
        workspace=workspace,
        user_id=side.user,
        name="digest",
        goal=f"digest for {side.word}",
        action="prune_runs",
        cadence_type="interval",
        cadence_value="3600",
        authority_workspace=workspace,
        authority_user_id=side.user,
        authority_scopes=["read", "write"],
    )
    for hours in (3, 2, 1):
        output = f"digest of {side.word}, {hours}h ago"
        Run.objects.create(
            tenant=tenant,
            schedule=schedule,
            status="succeeded",
            output=output,
            output_summary=output,
            started_at=timezone.now() - timedelta(hours=hours),
            finished_at=timezone.now() - timedelta(hours=hours),
        )


@pytest.fixture
def world(db, hook_server, settings, monkeypatch) -> World:  # type: ignore[no-untyped-def]
    # consolidation deletes, and reports it
    settings.MEMORYHUB_CONSOLIDATE_DELETE_KINDS = ("event",)
    monkeypatch.setattr("retrieval.lifecycle.steps.FIRST_REVIEW", False)
    tenants = {"home": make_tenant("home"), "away": make_tenant("away")}
    for side in SIDES.values():
        build_side(tenants[side.tenant], side)
    agent = hook_server()
    Webhook.objects.create(tenant=tenants["home"], kind="agent", url=agent.url, secret="s" * 32)
    clients = {
        kind: make_client(make_key(tenants["home"], scopes=scopes, workspace=workspace, user=user))
        for kind, (scopes, workspace, user) in KEYS.items()
    }
    return World(tenants, clients, agent)


def side_of(tenant_id: int, workspace_id: int | None, user: str, world: World) -> str | None:
    for side in SIDES.values():
        tenant = world.tenants[side.tenant]
        if (
            tenant.pk == tenant_id
            and user == side.user
            and (
                workspace_id is None
                or Workspace.objects.get(pk=workspace_id).name == side.workspace
            )
        ):
            return side.name
    return None


def snapshot(world: World) -> set[tuple[Any, ...]]:
    """The seeded rows, each tagged with its side (what a run may change), as comparable tuples."""
    rows: set[tuple[Any, ...]] = set()
    for s in Session.objects.all():
        rows.add(
            (
                side_of(s.tenant_id, s.workspace_id, s.user_id, world),
                "session",
                s.external_id,
                s.status,
            )
        )
    for n in Note.objects.all():
        rows.add(
            (side_of(n.tenant_id, n.workspace_id, n.user_id, world), "note", n.note_id, n.content)
        )
    for f in Fact.objects.all():
        rows.add(
            (
                side_of(f.tenant_id, f.workspace_id, f.user_id, world),
                "fact",
                f.pk,
                f.content,
                f.lifetime,
            )
        )
    for c in Chunk.objects.all():
        rows.add(
            (side_of(c.tenant_id, c.workspace_id, c.user_id, world), "chunk", c.pk, c.text, c.tier)
        )
    for r in Run.objects.filter(schedule__goal__startswith="digest for").select_related("schedule"):
        rows.add(
            (
                side_of(r.tenant_id, r.schedule.workspace_id, r.schedule.user_id, world),
                "run",
                str(r.pk),
                r.output,
            )
        )
    for sc in Schedule.objects.all():
        rows.add(
            (
                side_of(sc.tenant_id, sc.workspace_id, sc.user_id, world),
                "schedule",
                str(sc.pk),
                sc.name,
                sc.status,
            )
        )
    return rows


def leaked(text: str, kind: str) -> list[str]:
    """The sides outside a key's limits whose word is in `text`."""
    return [side.name for side in SIDES.values() if not within(kind, side) and side.word in text]


def what_each_key_reads(world: World) -> dict[str, str]:
    """Everything each key kind reads of schedules and runs, as one text per key."""
    seen = {}
    for kind, client in world.clients.items():
        listing = client.get(URL, {"limit": 200})
        assert listing.status_code == 200, listing.content
        parts = [listing.content.decode()]
        for schedule in listing.json()["results"]:
            runs = client.get(f"{URL}{schedule['id']}/runs/", {"limit": 200})
            assert runs.status_code == 200, runs.content
            parts.append(runs.content.decode())
        seen[kind] = "\n".join(parts)
    return seen


def test_an_id_names_one_session_and_one_note_per_tenant(world) -> None:  # type: ignore[no-untyped-def]
    """The premise of the one exception to "the same names" (docs/memory-model.md#ids): a second
    s1 or n1 in the key's own tenant is refused, while the other tenant holds both."""
    from django.db import IntegrityError, transaction

    home = world.tenants["home"]
    beta = Workspace.get_named(home, "beta")
    own = SIDES["own"]
    for model, field, value in ((Session, "external_id", own.session), (Note, "note_id", own.note)):
        with pytest.raises(IntegrityError), transaction.atomic():
            model.objects.create(
                tenant=home,
                workspace=beta,
                channel=beta.channels.first(),
                **{field: value},
                user_id="ann",
            )
        holders = model.objects.filter(**{field: value}).values_list("tenant__name", flat=True)
        assert sorted(holders) == ["away", "home"]


# --- every action × every key -------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(KEYS))
@pytest.mark.parametrize("action", list(PARAMS))
def test_a_schedule_acts_within_its_keys_limits(world, action, kind) -> None:  # type: ignore[no-untyped-def]
    world.agent.reply(200, {"status": "succeeded", "output": AGENT_REPLY})
    client = world.clients[kind]
    before = snapshot(world)
    body = {
        "name": "digest",
        "action": action,
        "params": PARAMS[action],
        "goal": "make the rounds",
        "workspace": "alpha",
        "cadence": {"type": "interval", "value": "1h"},
    }

    response = client.post(URL, body, format="json")

    status, code = expected_create(kind, action)
    assert response.status_code == status, response.content
    if status != 201:
        assert response.json()["error"]["code"] == code
        assert snapshot(world) == before  # a refusal stores nothing
        return
    created = snapshot(world) - before
    assert len(created) == 1 and next(iter(created))[1] == "schedule"
    queued = client.post(f"{URL}{response.json()['id']}/run/")
    assert queued.status_code == 202, queued.content
    execute_run(queued.json()["id"])
    run = Run.objects.get(pk=queued.json()["id"])
    assert run.status == "succeeded", run.output

    after = snapshot(world)
    for row in (before ^ after) - created:
        side = row[0]
        assert side is not None and within(kind, SIDES[side]), (
            f"{action} by {kind} changed {side}'s {row}"
        )
    assert not [row for row in before - after if row[0] == "other_tenant"]
    # What the run wrote, and its notification, name only what its key may read.
    delivery = Delivery.objects.filter(run=run).first()
    written = f"{run.output}\n{run.output_summary}\n{delivery.payload if delivery else ''}"
    assert not leaked(written, kind), (action, kind, written)
    if action == "prune_runs":
        pruned = {row[0] for row in before - after if row[1] == "run"}
        # A schedule acts in its own workspace (alpha here), for its user if it has one.
        assert pruned == {
            s.name for s in SIDES.values() if within(kind, s) and s.workspace == "alpha"
        }, pruned
    # And every key, reading every schedule and run it may, sees no side outside its own limits.
    for reader, text in what_each_key_reads(world).items():
        assert not leaked(text, reader), (
            f"after {action} by {kind}, {reader} reads {leaked(text, reader)}"
        )


# --- a schedule placed on each side × every key --------------------------------------------------

# The actions whose authority is the schedule's own place (its workspace and user): the tenant-wide
# ones act on the whole tenant wherever they are placed, and the matrix above holds them.
PLACED = [name for name, spec in REGISTRY.items() if not spec.tenant_wide]


def expected_placed(kind: str, side: Side) -> tuple[int, str]:
    """A key may place a schedule only within its own limits; the other tenant's names are the
    own side's, so they are within every key's."""
    scopes, workspace, user = KEYS[kind]
    if "write" not in scopes:
        return 403, "insufficient_scope"
    if workspace is not None and side.workspace != workspace:
        return 403, "workspace_forbidden"
    if user and side.user != user:
        return 403, "user_forbidden"
    return 201, ""


@pytest.mark.parametrize("target", list(SIDES))
@pytest.mark.parametrize("kind", list(KEYS))
@pytest.mark.parametrize("action", PLACED)
def test_a_schedule_placed_on_a_side_acts_on_that_side_alone(world, action, kind, target) -> None:  # type: ignore[no-untyped-def]
    side = SIDES[target]
    # The rows these names reach: in the key's own tenant, whichever tenant's names they are.
    reached = next(
        s
        for s in SIDES.values()
        if s.tenant == "home" and (s.workspace, s.user) == (side.workspace, side.user)
    )
    world.agent.reply(200, {"status": "succeeded", "output": AGENT_REPLY})
    client = world.clients[kind]
    before = snapshot(world)
    body = {
        "name": "digest",
        "action": action,
        "params": PARAMS[action],
        "goal": "make the rounds",
        "workspace": side.workspace,
        "user_id": side.user,
        "cadence": {"type": "interval", "value": "1h"},
    }

    response = client.post(URL, body, format="json")

    status, code = expected_placed(kind, side)
    assert response.status_code == status, response.content
    if status != 201:
        assert response.json()["error"]["code"] == code
        assert snapshot(world) == before  # a refusal stores nothing
        return
    created = snapshot(world) - before
    assert [row[:2] for row in created] == [(reached.name, "schedule")]
    queued = client.post(f"{URL}{response.json()['id']}/run/")
    assert queued.status_code == 202, queued.content
    execute_run(queued.json()["id"])
    run = Run.objects.get(pk=queued.json()["id"])
    assert run.status == "succeeded", run.output

    after = snapshot(world)
    assert {row[0] for row in (before ^ after) - created} <= {reached.name}
    if action == "prune_runs":
        assert {row[0] for row in before - after if row[1] == "run"} == {reached.name}
    delivery = Delivery.objects.filter(run=run).first()
    written = f"{run.output}\n{run.output_summary}\n{delivery.payload if delivery else ''}"
    assert [s.name for s in SIDES.values() if s is not reached and s.word in written] == []


# --- forget-user residue × every key --------------------------------------------------------------


FORGET = {
    "tenant": (403, "insufficient_scope"),
    "read_only": (403, "insufficient_scope"),
    "workspace": (403, "workspace_limited_key"),
    "user": (403, "user_limited_key"),
    "admin": (200, ""),
}


def _residue() -> str:
    """Every copy a schedule's work can make of memory text: run outputs and summaries, their
    notifications, consolidation reports."""
    parts = [f"{r.output}\n{r.output_summary}" for r in Run.objects.all()]
    parts += [str(d.payload) for d in Delivery.objects.all()]
    parts += [str(r.deletions) for r in ConsolidationReport.objects.all()]
    return "\n".join(parts)


@pytest.mark.parametrize("kind", list(KEYS))
def test_forget_user_leaves_no_residue_and_only_an_admin_key_for_the_tenant_may_ask(
    world, kind
) -> None:  # type: ignore[no-untyped-def]
    admin = world.clients["admin"]
    for dry_run in (True, False):  # a report of what it would delete, then one of what it deleted
        made = admin.post(
            URL,
            {
                "name": "tidy",
                "action": "consolidate",
                "params": {"dry_run": dry_run},
                "cadence": {"type": "interval", "value": "1h"},
            },
            format="json",
        )
        queued = admin.post(f"{URL}{made.json()['id']}/run/")
        execute_run(queued.json()["id"])
        assert Run.objects.get(pk=queued.json()["id"]).status == "succeeded"
    bob = SIDES["other_user"]
    residue = _residue()
    assert bob.word in residue  # the runs named him: there is something to forget
    before = snapshot(world)

    response = world.clients[kind].delete(f"/api/v1/users/{bob.user}/")

    status, code = FORGET[kind]
    assert response.status_code == status, response.content
    if status != 200:
        assert response.json()["error"]["code"] == code
        assert snapshot(world) == before and _residue() == residue  # a refusal changes nothing
        return
    # the dry run's output and the real one's
    assert response.json()["redacted"]["scheduling.Run"] == 2
    assert response.json()["redacted"]["lifecycle.ConsolidationReport"] == 1
    after = snapshot(world)
    assert {row[0] for row in before ^ after} == {"other_user"}  # only his rows went
    assert bob.word not in _residue()
    for side in SIDES.values():
        if side is not bob:
            assert _residue().count(side.word) == residue.count(side.word), side.name
    for reader, text in what_each_key_reads(world).items():
        assert bob.word not in text, reader
