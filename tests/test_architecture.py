"""The shape of the code, read from its own imports: no cycles, layers that import only
downward, no private name or module taken from outside the package that holds it, and no
module over 600 lines.

Every import statement counts: module level, inside functions and under ``TYPE_CHECKING``.
Run as a script (``python tests/test_architecture.py``) to print the graph's findings.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("stores", "catalog", "datasource")
#: Which package may import which: each only those below it.
BELOW = {"datasource": {"catalog", "stores"}, "catalog": {"stores"}, "stores": set()}
#: Subpackages kept apart from what sits above them inside their package: the modules they
#: may import (a dotted prefix each). The log imports nothing of the table, the caches or the
#: operations; the kinds' store folders import no other kind.
APART = {
    "catalog.log": ("stores", "catalog.faults", "catalog.log"),
    **{
        f"stores.{kind}": tuple(
            f"stores.{m}" for m in ("bytes", "columns", "formats", "segments", "engine", "errors",
                                    "records", "checks", "iterators", "protocols", "query.queries",
                                    "time", "types", "serdes", kind)
        )
        for kind in ("key_value", "timestamped", "versioned", "window", "session")
    },
}
MAX_LINES = 600


@dataclass(frozen=True)
class Import:
    """One name (or whole module) one module takes from another, at a line."""

    source: str  # the importing module, dotted
    target: str  # the module imported from, dotted (a package is its __init__)
    name: str | None  # the name taken (``from target import name``), None for ``import target``
    line: int


def modules() -> dict[str, Path]:
    """Every module of the three packages by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_package(name: str, known: dict[str, Path]) -> bool:
    return known[name].name == "__init__.py"


def imports(known: dict[str, Path]) -> Iterator[Import]:
    """Every import among ``known`` modules, resolved: ``from a.b import c`` takes module
    ``a.b.c`` where that is a module, else name ``c`` of ``a.b``."""
    for source, path in known.items():
        package = source if _is_package(source, known) else source.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in PACKAGES:
                        yield Import(source, _deepest(alias.name, known), None, node.lineno)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                if base.split(".")[0] not in PACKAGES:
                    continue
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    if full in known:
                        yield Import(source, full, None, node.lineno)
                    else:
                        yield Import(source, _deepest(base, known), alias.name, node.lineno)


def _deepest(dotted: str, known: dict[str, Path]) -> str:
    parts = dotted.split(".")
    while parts and ".".join(parts) not in known:
        parts.pop()
    return ".".join(parts)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
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

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _holder(module: str, known: dict[str, Path]) -> str:
    """The package that holds ``module``: itself for a package, else its parent."""
    return module if _is_package(module, known) else module.rpartition(".")[0]


def _inside(source: str, package: str) -> bool:
    return source == package or source.startswith(package + ".")


def reach_ins(found: list[Import], known: dict[str, Path]) -> list[str]:
    """Private modules, or private names, imported from outside the package that holds them."""
    out = []
    for imp in found:
        parts = imp.target.split(".")
        for depth, part in enumerate(parts):
            if _private(part):
                holder = ".".join(parts[:depth])
                if not _inside(imp.source, holder):
                    out.append(f"{imp.source}:{imp.line} imports private module {imp.target}")
                break
        else:
            if imp.name and _private(imp.name):
                holder = _holder(imp.target, known)
                if not _inside(imp.source, holder):
                    out.append(
                        f"{imp.source}:{imp.line} imports private {imp.name} from {imp.target}"
                    )
    return out


def upward(found: list[Import]) -> list[str]:
    """Imports from a package that is not below the importer's."""
    out = []
    for imp in found:
        mine, theirs = imp.source.split(".")[0], imp.target.split(".")[0]
        if mine != theirs and theirs not in BELOW[mine]:
            out.append(f"{imp.source}:{imp.line} imports {imp.target} ({mine} is below {theirs})")
    return out


def outside_apart(found: list[Import]) -> list[str]:
    """Imports of a subpackage in ``APART`` from a module it may not import."""
    out = []
    for imp in found:
        for package, allowed in APART.items():
            if _inside(imp.source, package) and not any(
                _inside(imp.target, prefix) for prefix in allowed
            ):
                out.append(f"{imp.source}:{imp.line} imports {imp.target} (outside {package}'s)")
    return out


def long_modules(known: dict[str, Path]) -> list[str]:
    out = []
    for name, path in known.items():
        lines = len(path.read_text().splitlines())
        if lines > MAX_LINES:
            out.append(f"{name}: {lines} lines")
    return sorted(out)


def graph() -> tuple[dict[str, Path], list[Import], dict[str, set[str]]]:
    known = modules()
    found = list(imports(known))
    edges: dict[str, set[str]] = {}
    for imp in found:
        if imp.target != imp.source:
            edges.setdefault(imp.source, set()).add(imp.target)
    return known, found, edges


def test_no_import_cycles() -> None:
    _, _, edges = graph()
    assert cycles(edges) == []


def test_layers_import_only_downward() -> None:
    _, found, _ = graph()
    assert upward(found) == []


def test_the_log_and_each_kind_import_only_what_lies_below_them() -> None:
    _, found, _ = graph()
    assert outside_apart(found) == []


def test_no_private_reach_ins_across_packages() -> None:
    known, found, _ = graph()
    assert reach_ins(found, known) == []


def test_no_module_over_600_lines() -> None:
    assert long_modules(modules()) == []


def test_the_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    """The reader itself: lazy, TYPE_CHECKING and relative imports are all edges."""
    known = {"stores": tmp_path / "__init__.py", "stores.a": tmp_path / "a.py",
             "stores.b": tmp_path / "b.py", "stores._c": tmp_path / "_c.py"}  # fmt: skip
    known["stores"].write_text("")
    known["stores.a"].write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from stores.b import X\n"
    )
    known["stores.b"].write_text("def f():\n    from . import a\n    from stores._c import y\n")
    known["stores._c"].write_text("import stores.a\n")
    found = list(imports(known))
    edges: dict[str, set[str]] = {}
    for imp in found:
        edges.setdefault(imp.source, set()).add(imp.target)
    assert cycles(edges) == [["stores._c", "stores.a", "stores.b"]]
    assert reach_ins(found, known) == []  # stores._c is private to stores, used inside it
    outside = [Import("catalog.x", "stores._c", None, 1), Import("catalog.x", "stores.a", "_z", 2)]
    assert len(reach_ins(outside, known)) == 2
    assert upward([Import("stores.a", "catalog.x", None, 3)]) != []
    assert outside_apart([Import("catalog.log.x", "catalog.table", None, 4),
                          Import("stores.session.store", "stores.window.store", None, 5)]) != []
    assert outside_apart([Import("stores.session.store", "stores.segments.base", None, 6)]) == []


if __name__ == "__main__":
    known, found, edges = graph()
    for title, items in (
        ("cycles", [" ".join(c) for c in cycles(edges)]),
        ("upward imports", upward(found)),
        ("imports out of a subpackage kept apart", outside_apart(found)),
        ("private reach-ins", reach_ins(found, known)),
        ("modules over 600 lines", long_modules(known)),
    ):
        print(f"{title}: {len(items)}")
        for item in items:
            print("  ", item)
