"""No import cycle between any two modules of the project, the Python client included, counting
every import: at module level, inside a function and under TYPE_CHECKING.

`make lint`'s acyclic contract (pyproject.toml) compares the modules of each package with each
other at every depth; this also catches what it does not look at, a module and the package it is
part of importing each other (the client's `client.py` once read `__version__` from its own
package)."""

from __future__ import annotations

import grimp

ROOTS = ("accounts", "memoryhub", "retrieval", "scheduling", "memoryhub_client")


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append(
                        (target, iter(sorted(graph.find_modules_directly_imported_by(target))))
                    )
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_module_imports_itself_back() -> None:
    graph = grimp.build_graph(
        *ROOTS, include_external_packages=False, exclude_type_checking_imports=False, cache_dir=None
    )
    assert cycles(graph) == []


def test_the_cycle_finder_sees_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for module in ("p", "p.a", "p.b", "p.c"):
        graph.add_module(module)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.c")
    graph.add_import(importer="p.c", imported="p.a")
    graph.add_import(importer="p", imported="p.a")
    assert cycles(graph) == [["p.a", "p.b", "p.c"]]
