"""The package's layering, checked on its source: imports go one way (down), with no cycle among paimon_ds's
modules counting imports inside functions (only `if TYPE_CHECKING:` imports, which never run, are left out); no
private name (`_x`) is imported from another module; and an import inside a function only puts off loading an
optional, heavy dependency, with a comment saying so."""

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


# what a function may import late: loading it costs (a JVM bridge, Arrow's ORC library) or it is optional; the
# Spark layer counts for modules outside it (`import paimon_ds` works without pyspark)
DEFERRED = ("pyspark", "s3fs", "botocore", "fastavro", "pandas", "pyarrow.orc", "paimon_ds.spark", "datasketches")


def _absolute(importer: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not node.level:
        return [node.module or ""]
    package = importer.split(".") if is_package else importer.split(".")[:-1]
    base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
    return [f"{base}.{a.name}" for a in node.names] if not node.module else [base]


# modules whose classes and functions are pickled by value to a Spark Connect server that lacks paimon_ds: a
# module-level name would be pickled by reference, so their methods import the package when they run (after the
# shim has put it on sys.path)
PICKLED_BY_VALUE = ("paimon_ds.spark.connect_shim",)


def _deferred(importer: str, module: str) -> bool:
    if importer in PICKLED_BY_VALUE and module.startswith("paimon_ds."):
        return True
    return any(module == d or module.startswith(d + ".") for d in DEFERRED) and not (
        module.startswith("paimon_ds.spark") and importer.startswith("paimon_ds.spark"))


def test_imports_inside_functions_only_defer_heavy_dependencies():
    wrong = []
    for name, path in _modules().items():
        source = path.read_text()
        lines = source.splitlines()
        for func in ast.walk(ast.parse(source)):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                if not isinstance(node, (ast.Import, ast.ImportFrom)):
                    continue
                modules = _absolute(name, path.name == "__init__.py", node)
                commented = "#" in lines[node.lineno - 1] or lines[node.lineno - 2].strip().startswith("#")
                if not (commented and all(_deferred(name, m) for m in modules)):
                    wrong.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
    assert wrong == [], "imports inside functions that are not a commented, deferred heavy dependency:\n" + \
        "\n".join(sorted(set(wrong)))


def test_every_module_says_what_it_owns():
    assert [name for name, path in _modules().items() if not ast.get_docstring(ast.parse(path.read_text()))] == []


def test_cycle_finder_finds_a_loop():
    # the checker itself: a loop of three and a self-contained pair are found, a chain is not
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    assert sorted(_cycles(edges, list("abcdef"))) == [["a", "b", "c"], ["d", "e"]]
