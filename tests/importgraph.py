"""The import graph of bnviz's own code, as a dependency-graph tool draws it.

ARCHITECTURE.md promises that dependencies point one way (core <- params <- views <- ...).
A cycle is where that promise breaks: neither module can be read, tested or moved without
the other. This module builds the graph from the source (the AST; nothing is imported, so a
cycle that Python happens to tolerate at run time is still found) and lists its cycles.

What counts as an edge, as farm-studio and similar tools count it:
- every ``import`` and ``from ... import``, at module level or inside a function or an
  ``if TYPE_CHECKING`` block (a deferred import hides a cycle from Python, not from a reader);
- ``from pkg import name`` is an edge to ``pkg.name`` when that is a module of the tree, else
  to ``pkg`` (its ``__init__``); ``import a.b.c`` is an edge to ``a.b.c``;
- relative imports are resolved against the importing module's package;
- ``bench/`` holds scripts run from that folder, which import each other by bare name
  (``import load_stack``): inside bench, a bare name that is a bench script is that script.
Only modules of the scanned trees are nodes; the standard library and third-party packages
are not.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The trees the architecture rule covers: the packages, the benchmark scripts and the app.
PACKAGES = ("bnviz", "callbacks", "layouts")
SCRIPT_DIRS = ("bench",)
SCRIPTS = ("app.py",)


def module_files(root: Path = REPO, packages: Iterable[str] = PACKAGES,
                 script_dirs: Iterable[str] = SCRIPT_DIRS,
                 scripts: Iterable[str] = SCRIPTS) -> dict[str, Path]:
    """Every module of the scanned trees under ``root``, by dotted name."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    for folder in script_dirs:
        for path in sorted((root / folder).glob("*.py")):
            found[f"{folder}.{path.stem}"] = path
    for script in scripts:
        if (root / script).exists():
            found[Path(script).stem] = root / script
    return found


def _package_of(name: str, path: Path) -> str:
    """The package a relative import in module ``name`` is resolved against."""
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _known(target: str, modules: dict[str, Path]) -> str | None:
    """``target`` or its longest prefix that is a module of the tree."""
    while target:
        if target in modules:
            return target
        target = target.rpartition(".")[0]
    return None


def _imports(name: str, path: Path, modules: dict[str, Path],
             script_dirs: Iterable[str] = SCRIPT_DIRS) -> Iterator[str]:
    """The modules of the tree that module ``name`` imports, anywhere in its body."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    script_dir = name.partition(".")[0] if name.partition(".")[0] in set(script_dirs) else None

    def resolve(target: str) -> str | None:
        if script_dir and f"{script_dir}.{target}" in modules:
            return f"{script_dir}.{target}"
        return _known(target, modules)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (found := resolve(alias.name)) is not None:
                    yield found
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package_of(name, path)
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            for alias in node.names:  # a submodule if it is one, else a name of ``base``
                found = resolve(f"{base}.{alias.name}")
                if found not in (f"{base}.{alias.name}", f"{script_dir}.{base}.{alias.name}"):
                    found = resolve(base)
                if found is not None:
                    yield found


def import_graph(root: Path = REPO, packages: Iterable[str] = PACKAGES,
                 script_dirs: Iterable[str] = SCRIPT_DIRS,
                 scripts: Iterable[str] = SCRIPTS) -> dict[str, set[str]]:
    """Each module of the tree and the modules of the tree it imports (no self-edges)."""
    modules = module_files(root, packages, script_dirs, scripts)
    return {
        name: {target for target in _imports(name, path, modules, script_dirs) if target != name}
        for name, path in modules.items()
    }


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative: no recursion limit to hit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
    return components


def _one_cycle(graph: dict[str, set[str]], members: Iterable[str]) -> list[str]:
    """A shortest cycle through the first member of a component, for the message."""
    inside = set(members)
    first = min(inside)
    paths = {first: [first]}
    frontier = [first]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & inside):
                if child == first:
                    return paths[node] + [first]
                if child not in paths:
                    paths[child] = paths[node] + [child]
                    following.append(child)
        frontier = following
    return [first]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One example cycle per strongly connected component of more than one module."""
    return [
        _one_cycle(graph, component)
        for component in strongly_connected(graph)
        if len(component) > 1
    ]
