"""The package's layering, checked on its source: imports go one way (down), with no cycle among paimon_ds's
modules counting imports inside functions (only `if TYPE_CHECKING:` imports, which never run, are left out), and
no private name (`_x`) is imported from another module."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "paimon_ds"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skipped


def _imports(modules: dict[str, Path]) -> tuple[dict[str, set[str]], list[tuple[str, str, str]]]:
    """module -> the paimon_ds modules it imports (anywhere in its body); and (module, from, name) of every private
    name imported from another module."""
    edges: dict[str, set[str]] = defaultdict(set)
    private = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        skipped = _type_checking_nodes(tree)
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.ImportFrom):
                base = package[:len(package) - node.level + 1] if node.level else []
                source = ".".join(base + ([node.module] if node.module else []))
                if not source.startswith("paimon_ds"):
                    continue
                for alias in node.names:
                    target = f"{source}.{alias.name}"
                    edges[name].add(target if target in modules else source)
                    if alias.name.startswith("_") and not alias.name.startswith("__") and source != name:
                        private.append((name, source, alias.name))
            elif isinstance(node, ast.Import):
                edges[name].update(a.name for a in node.names if a.name in modules)
        edges[name].discard(name)
    return edges, private


def _cycles(edges: dict[str, set[str]], nodes: list[str]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
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
                    out.append(sorted(component))
    return out


def test_no_import_cycle():
    modules = _modules()
    edges, _ = _imports(modules)
    cycles = _cycles(edges, sorted(modules))
    assert cycles == [], "modules that import each other (directly or round a loop):\n" + "\n".join(
        f"  {c}: " + "; ".join(f"{m} -> {sorted(t for t in edges[m] if t in c)}" for m in c) for c in cycles)


def test_no_private_name_crosses_a_module():
    _, private = _imports(_modules())
    assert private == []


def test_cycle_finder_finds_a_loop():
    # the checker itself: a loop of three and a self-contained pair are found, a chain is not
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    assert sorted(_cycles(edges, list("abcdef"))) == [["a", "b", "c"], ["d", "e"]]
