"""The OpenAPI document's operations grouped by what a user does (a step of
memoryhub.api.docs.complete_schema): the groups, their order and the order of the paths in them."""

from __future__ import annotations

from typing import Any

# The reference lists these groups in this order (and the paths in it in the same order), so that
# the two calls every user needs first (store events, get the context) lead, not the alphabet.

TASK_GROUPS = {
    "Sessions and events": (
        "Store what was said: conversations (sessions) and their events.",
        ("sessions",),
    ),
    "Search and context": (
        "Get memory back: the context block for the next prompt, search, browse.",
        ("context", "search", "browse"),
    ),
    "Memory": (
        "What is remembered besides the transcript: notes, facts, documents, summaries.",
        ("notes", "facts", "documents", "summaries"),
    ),
    "Schedules": (
        "Work that runs later for this key: schedules, their runs, webhooks.",
        ("schedules", "runs", "webhooks"),
    ),
    "Operations": (
        "Running an installation: the key itself, end users, workspaces, channels, import and "
        "export, consolidation, statistics, health.",
        (
            "key",
            "users",
            "workspaces",
            "channels",
            "import",
            "export",
            "consolidation",
            "stats",
            "health",
            "ready",
        ),
    ),
}


def group_by_task(result: dict[str, Any]) -> None:
    """Tag each operation with its group (TASK_GROUPS, by the path's first part) and order the
    groups and paths by what a user does first; a path no group names goes last, under its own
    tag."""
    rank = {
        part: (g, i)
        for g, (_, parts) in enumerate(TASK_GROUPS.values())
        for i, part in enumerate(parts)
    }
    names = list(TASK_GROUPS)

    def part(path: str) -> str:
        return path.removeprefix("/api/v1/").split("/", 1)[0]

    def order(path: str) -> tuple[int, int, str]:
        group, index = rank.get(part(path), (len(names), 0))
        return group, index, path

    paths = result.get("paths", {})
    for path, operations in paths.items():
        if part(path) in rank:
            for operation in operations.values():
                if isinstance(operation, dict):
                    operation["tags"] = [names[rank[part(path)][0]]]
    result["paths"] = {path: paths[path] for path in sorted(paths, key=order)}
    result["tags"] = [
        {"name": name, "description": text} for name, (text, _) in TASK_GROUPS.items()
    ]
