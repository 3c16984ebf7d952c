"""A session as a conversation (the session admin's "Transcript" page): oldest message first, with
speaker names, tool calls folded, the summary tree beside it (which messages each summary covers),
the scratchpad and the rolling summary on top. Long sessions are read a page at a time."""

from __future__ import annotations

import json
from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

from django.contrib import admin
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse

from memoryhub.models import Event, RollingSummary, ScratchpadItem, Session, SummaryNode

PAGE_SIZE = 200
SPEAKER_KEYS = ("speaker", "name", "author", "user_name")


@dataclass
class Message:
    event: Event
    speaker: str
    is_tool: bool
    tool_args: str
    tool_result: str
    leaf: SummaryNode | None


@dataclass
class TreeRow:
    node: SummaryNode
    indent: int
    page: int


def speaker(event: Event, session: Session) -> str:
    """Who said it: the name the client stored with the message, else the session's user or
    agent."""
    meta = event.metadata or {}
    for key in SPEAKER_KEYS:
        if isinstance(meta.get(key), str) and meta[key].strip():
            return meta[key].strip()
    if event.role == "user":
        return session.user_id or "user"
    if event.role == "assistant":
        return session.agent or "assistant"
    if event.role == "tool":
        return f"tool {event.tool_name}".strip()
    return event.role


def _pretty(value: Any) -> str:
    if value in (None, "", {}, []):
        return ""
    return (
        value
        if isinstance(value, str)
        else json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    )


def summary_tree(nodes: list[SummaryNode], page_of: Any) -> list[TreeRow]:
    """The nodes depth-first from the roots (highest level first), each with its indent and the
    transcript page where its first message is."""
    children: dict[int | None, list[SummaryNode]] = {}
    ids = {n.pk for n in nodes}
    for node in nodes:
        parent = node.parent_id if node.parent_id in ids else None
        children.setdefault(parent, []).append(node)
    rows: list[TreeRow] = []

    def walk(parent: int | None, indent: int) -> None:
        for node in sorted(children.get(parent, []), key=lambda n: (-n.depth, n.sequence_start)):
            rows.append(TreeRow(node, indent, page_of(node.sequence_start)))
            walk(node.pk, indent + 1)

    walk(None, 0)
    return rows


def _leaf_for(sequence: int, leaves: list[SummaryNode]) -> SummaryNode | None:
    return next(
        (leaf for leaf in leaves if leaf.sequence_start <= sequence <= leaf.sequence_end), None
    )


def transcript_view(request: HttpRequest, object_id: str) -> HttpResponse:
    session = get_object_or_404(
        Session.objects.select_related("tenant", "workspace", "channel"), pk=object_id
    )
    events = Event.objects.filter(session=session).order_by("sequence")
    paginator = Paginator(events, PAGE_SIZE)
    around = request.GET.get("around", "")
    if around.isdigit():
        number = events.filter(sequence__lt=int(around)).count() // PAGE_SIZE + 1
    else:
        number = int(request.GET["page"]) if request.GET.get("page", "").isdigit() else 1
    page = paginator.get_page(number)
    nodes = list(SummaryNode.objects.filter(session=session).order_by("-depth", "sequence_start"))
    leaves = [n for n in nodes if n.depth == 0]
    sequences = list(events.values_list("sequence", flat=True)) if nodes else []

    def page_of(sequence: int) -> int:
        return bisect_left(sequences, sequence) // PAGE_SIZE + 1

    messages = [
        Message(
            e,
            speaker(e, session),
            bool(e.tool_name) or e.role == "tool",
            _pretty(e.tool_args),
            _pretty(e.tool_result),
            _leaf_for(e.sequence, leaves),
        )
        for e in page
    ]
    context = {
        **admin.site.each_context(request),
        "title": f"Transcript of {session.title or session.external_id}",
        "session": session,
        "opts": Session._meta,
        "page": page,
        "messages_": messages,
        "tree": summary_tree(nodes, page_of),
        "rolling": RollingSummary.objects.filter(session=session).first(),
        "scratchpad": list(
            ScratchpadItem.objects.filter(scratchpad__session=session).order_by("position")
        ),
        "highlight": int(around) if around.isdigit() else None,
    }
    return TemplateResponse(request, "admin/memoryhub/transcript.html", context)
