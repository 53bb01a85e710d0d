"""The package's import graph: no cycles, and the layers docs/architecture.md states.

Every import counts, at module level and inside functions (an import inside a function is a
cycle that waits for its first call); imports under `if TYPE_CHECKING:` do not (they never run).
`from pkg import sub` imports the submodule `pkg.sub`, not `pkg` itself."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import conformance

PACKAGE = Path(conformance.__file__).parent

# Lowest first: a module imports only from its own room or from rooms of a lower layer. Rooms
# are module-name prefixes (the longest one names a module's room). `encoders` is two rooms: the
# SPI (what protocols implement and use) and what finds and drives encoders.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("conformance", "conformance.errors", "conformance.model"),
    ("conformance.infra", "conformance.strategies"),
    ("conformance.checks", "conformance.encoders.spi conformance.encoders.tool conformance.encoders.sink "
                           "conformance.encoders.wire"),
    ("conformance.upstream",),
    ("conformance.protocols",),
    ("conformance.encoders", "conformance.reporting"),
    ("conformance.harness",),
    ("conformance.cli", "conformance.pytest_plugin"),
    ("conformance.__main__",),
)


@cache
def modules() -> dict[str, Path]:
    out = {}
    for p in PACKAGE.rglob("*.py"):
        parts = ["conformance", *p.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def _module_of(name: str) -> str | None:
    mods = modules()
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or \
        (isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imported(module: str, path: Path, tree: ast.AST) -> Iterator[tuple[str, int]]:
    """The package's modules `module` imports, with the line of each import."""
    mods = modules()
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _type_checking(node):
            for other in node.orelse:
                yield from _imported(module, path, other)
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                base = ".".join([*here[:len(here) - node.level + 1], *([node.module] if node.module else [])])
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
        for n in names:
            target = _module_of(n) if n.startswith("conformance") else None
            if target is not None and target != module:
                yield target, node.lineno
        yield from _imported(module, path, node)


@cache
def graph() -> dict[str, dict[str, int]]:
    return {m: dict(_imported(m, p, ast.parse(p.read_text(encoding="utf-8")))) for m, p in modules().items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def _edges() -> dict[str, set[str]]:
    return {m: set(targets) for m, targets in graph().items()}


def _show(comp: list[str]) -> str:
    g = graph()
    return "\n".join(f"  {a} -> {b} (line {g[a][b]})" for a in comp for b in sorted(g[a]) if b in comp)


def test_the_graph_sees_function_level_and_relative_imports() -> None:
    g = graph()
    assert "conformance.model.events" in g["conformance.model.dialects"]  # `from .events import ...`
    assert "conformance.protocols.debezium.engine" in g["conformance.protocols.debezium.suite"]  # in a function
    assert "conformance.strategies.domains" in g["conformance.strategies.dialect_domains"]  # `from . import domains`
    assert "conformance.strategies" not in g["conformance.strategies.dialect_domains"]


def test_no_import_cycles() -> None:
    found = cycles(_edges())
    assert found == [], "import cycles:\n" + "\n\n".join(_show(c) for c in found)


def _layer_of(module: str) -> tuple[int, str]:
    """The module's layer and room (the LAYERS entry with the longest prefix of its name)."""
    best = (-1, "", "")
    for rank, rooms in enumerate(LAYERS):
        for room in rooms:
            for prefix in room.split():
                if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best[2]):
                    best = (rank, room, prefix)
    assert best[0] >= 0, f"{module} is in no layer of LAYERS"
    return best[0], best[1]


def test_imports_go_down_the_layers() -> None:
    wrong = []
    for m, targets in graph().items():
        rank, room = _layer_of(m)
        for t, line in targets.items():
            t_rank, t_room = _layer_of(t)
            if t_room != room and t_rank >= rank:
                wrong.append(f"{m} (layer {rank}) imports {t} (layer {t_rank}) at line {line}")
    assert wrong == [], "\n".join(sorted(wrong))


def test_no_module_over_a_thousand_lines() -> None:
    """Issue 28's bound: a module that outgrows it is split by concern (as the TiCDC checks and the
    CLI's regression commands were), not left to grow."""
    long = {m: n for m, p in modules().items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > 1000}
    assert long == {}, f"modules over 1,000 lines: {long}"
