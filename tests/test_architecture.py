"""The package's layering, checked on its source: imports go one way (down), with no cycle among paimon_ds's
modules counting imports inside functions and `if TYPE_CHECKING:` imports (a type named is a dependency too); no
module below `operation/` imports the Table facade (they take the FileStore, `paimon_ds.store`); no private name
(`_x`) is imported from another module; an import inside a function only puts off loading an optional, heavy
dependency, with a comment saying so; and the package root holds only the facade and the entry points, every other
module sitting in the package of its concept."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

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


Edges = dict[str, set[str]]


def _imports(modules: dict[str, Path]) -> tuple[Edges, list[tuple[str, str, str]], Edges]:
    """module -> the paimon_ds modules it imports (anywhere in its body, `if TYPE_CHECKING:` blocks included);
    (module, from, name) of every private name imported from another module; and module -> the modules it imports
    only for typing (its edges under `if TYPE_CHECKING:` that no import run at run time gives)."""
    edges: Edges = defaultdict(set)
    at_run_time: Edges = defaultdict(set)
    private = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        typing_only = _type_checking_nodes(tree)
        for node in ast.walk(tree):
            targets = at_run_time[name] if id(node) not in typing_only else set()
            if isinstance(node, ast.ImportFrom):
                base = package[:len(package) - node.level + 1] if node.level else []
                source = ".".join(base + ([node.module] if node.module else []))
                if not source.startswith("paimon_ds"):
                    continue
                for alias in node.names:
                    target = f"{source}.{alias.name}"
                    edges[name].add(target if target in modules else source)
                    targets.add(target if target in modules else source)
                    if alias.name.startswith("_") and not alias.name.startswith("__") and source != name:
                        private.append((name, source, alias.name))
            elif isinstance(node, ast.Import):
                edges[name].update(a.name for a in node.names if a.name in modules)
                targets.update(a.name for a in node.names if a.name in modules)
        edges[name].discard(name)
        at_run_time[name].discard(name)
    typing_only_edges = {m: targets - at_run_time[m] for m, targets in edges.items() if targets - at_run_time[m]}
    return edges, private, typing_only_edges


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


# The facade and what stands above `operation/`: everything else is below it, takes the FileStore, and never imports
# the facade nor an operation (a new module is below by default).
FACADE = "paimon_ds.table"
ABOVE_OPERATION = ("paimon_ds.operation", FACADE, "paimon_ds.readers", "paimon_ds.catalog", "paimon_ds.procedures",
                   "paimon_ds.demo", "paimon_ds.cli", "paimon_ds.spark")


def _below_operation(module: str) -> bool:
    return module != "paimon_ds" and not any(module == a or module.startswith(a + ".") for a in ABOVE_OPERATION)


def _describe(edges: Edges, cycles: list[list[str]]) -> str:
    return "\n".join(f"  {c}: " + "; ".join(f"{m} -> {sorted(t for t in edges[m] if t in c)}" for m in c)
                     for c in cycles)


def test_no_import_cycle():
    modules = _modules()
    edges, _, _ = _imports(modules)
    cycles = _cycles(edges, sorted(modules))
    assert cycles == [], "modules that import each other (directly or round a loop):\n" + _describe(edges, cycles)


def _facade_imports_below_operation(edges: Edges) -> list[str]:
    """`module -> target` for every import (typing ones too) of a module below `operation/` that reaches the facade
    or an operation."""
    return sorted(f"{m} -> {t}" for m, targets in edges.items() if _below_operation(m)
                  for t in targets if not _below_operation(t) and t != "paimon_ds")


def _names_the_facade(path: Path) -> bool:
    """Whether the module's code uses the name `Table` (an import, annotation or call; `pa.Table` is another)."""
    tree = ast.parse(path.read_text())
    return any(isinstance(n, ast.Name) and n.id == "Table" or isinstance(n, ast.alias) and
               (n.asname or n.name) == "Table" for n in ast.walk(tree))


def test_nothing_below_operation_imports_the_facade():
    modules = _modules()
    edges, _, _ = _imports(modules)
    assert _facade_imports_below_operation(edges) == []
    assert sorted(m for m, path in modules.items() if _below_operation(m) and _names_the_facade(path)) == []
    # the line is where it should be: the store and the layers it serves are below, the facade above
    assert all(_below_operation(f"paimon_ds.{m}") for m in (
        "store.file_store", "io.data_files", "mergetree.writer", "index.hash_index", "deletionvectors.maintainer",
        "store.external_paths", "store.row_tracking", "store.consumer", "schema.manager", "snapshot.manager",
        "format.parquet_file", "manifest.files"))
    assert not any(_below_operation(m) for m in (FACADE, "paimon_ds.operation.scan", "paimon_ds.spark.source",
                                                 "paimon_ds.readers.scan", "paimon_ds.readers.system_tables"))


def _synthetic_package(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    """A package `paimon_ds` of ``files`` (relative path -> source) under ``tmp_path``: its modules by name."""
    package = tmp_path / "paimon_ds"
    for rel, text in files.items():
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text(text)
    return {".".join(p.relative_to(tmp_path).with_suffix("").parts).removesuffix(".__init__"): p
            for p in package.rglob("*.py")}


TYPING_IMPORT = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    {}\n"


def test_checker_finds_a_facade_import_below_operation(tmp_path: Path):
    # the checker itself, on a synthetic package: a `TYPE_CHECKING` import of the facade in mergetree is reported
    # and makes a loop with the facade's run-time import of it; the same import in an operation is a loop too; a
    # store import is fine
    modules = _synthetic_package(tmp_path, {
        "__init__.py": "",
        "store.py": "class FileStore: ...\n",
        "table.py": "from .mergetree.writer import Writer\nfrom .operation.scan import Scan\n",
        "operation/__init__.py": "",
        "operation/scan.py": "from ..store import FileStore\n",
        "mergetree/__init__.py": "",
        "mergetree/writer.py": "from ..store import FileStore\n" + TYPING_IMPORT.format("from ..table import Table"),
    })
    package = tmp_path / "paimon_ds"
    edges, _, typing_only = _imports(modules)
    assert _facade_imports_below_operation(edges) == ["paimon_ds.mergetree.writer -> paimon_ds.table"]
    assert typing_only == {"paimon_ds.mergetree.writer": {FACADE}}
    assert _names_the_facade(package / "mergetree" / "writer.py")
    assert not _names_the_facade(package / "store.py")
    assert _cycles(edges, sorted(modules)) == [["paimon_ds.mergetree.writer", FACADE]]
    # the facade's typing import moved up into an operation: nothing below operation/ names it, but it is a loop
    (package / "mergetree" / "writer.py").write_text("from ..store import FileStore\n")
    (package / "operation" / "scan.py").write_text(TYPING_IMPORT.format("from ..table import Table"))
    edges, _, typing_only = _imports(modules)
    assert _facade_imports_below_operation(edges) == []
    assert typing_only == {"paimon_ds.operation.scan": {FACADE}}
    assert _cycles(edges, sorted(modules)) == [["paimon_ds.operation.scan", FACADE]]


def test_checker_finds_a_typing_only_loop(tmp_path: Path, monkeypatch):
    # the checker itself: two modules that name each other's classes only under `TYPE_CHECKING` (no import at run
    # time either way) are a circle, and test_no_import_cycle fails on them; one side at run time is no circle
    modules = _synthetic_package(tmp_path, {
        "__init__.py": "",
        "operation/__init__.py": "",
        "operation/scan.py": TYPING_IMPORT.format("from .read import TableRead"),
        "operation/read.py": TYPING_IMPORT.format("from .scan import Split"),
    })
    edges, _, typing_only = _imports(modules)
    assert typing_only == {"paimon_ds.operation.scan": {"paimon_ds.operation.read"},
                           "paimon_ds.operation.read": {"paimon_ds.operation.scan"}}
    assert _cycles(edges, sorted(modules)) == [["paimon_ds.operation.read", "paimon_ds.operation.scan"]]
    monkeypatch.setitem(globals(), "_modules", lambda: modules)
    with pytest.raises(AssertionError, match="operation.read -> .'paimon_ds.operation.scan'."):
        test_no_import_cycle()
    (tmp_path / "paimon_ds" / "operation" / "read.py").write_text("from .split import Split\n")
    test_no_import_cycle()


def test_no_private_name_crosses_a_module():
    _, private, _ = _imports(_modules())
    assert private == []


# what a function may import late: loading it costs (a JVM bridge, Arrow's ORC library) or it is optional; the
# Spark layer counts for modules outside it (`import paimon_ds` works without pyspark)
DEFERRED = ("pyspark", "s3fs", "botocore", "fastavro", "pandas", "pyarrow.dataset", "pyarrow.orc", "paimon_ds.spark",
            "datasketches")


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


def test_the_package_and_its_spark_source_load_neither_pandas_nor_pyarrow_dataset():
    """Each of Spark's planner workers (schema, reader and writer planning, commit) and each streaming query's source
    runner is a fresh process that imports the source: pandas (which pyarrow.dataset and pyarrow's `pa.array` of a
    list load) would add ~0.3 CPU s to each, 40% of the import."""
    code = ("import sys, paimon_ds, paimon_ds.spark.source; "
            "print(sorted(m for m in ('pandas', 'pyarrow.dataset') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=PACKAGE.parent)
    assert out.stdout.strip() == "[]", out.stderr


# the package root: the public facade and the entry points; every other module sits in the package of its concept
# (schema/, snapshot/, store/, fs/, options/, predicate/, readers/, operation/, ...)
ROOT_MODULES = ("__init__", "catalog", "demo", "errors", "procedures", "table")


def test_package_root_holds_only_the_facade_and_entry_points():
    assert sorted(p.stem for p in PACKAGE.glob("*.py")) == sorted(ROOT_MODULES)
    assert sorted(p.name for p in PACKAGE.iterdir() if p.is_file() and p.suffix != ".py") == ["py.typed"]
    # every other module is in a subpackage: each folder between it and the root has an __init__.py
    assert [name for name, path in _modules().items() if not _in_packages(path.parent)] == []


def _in_packages(folder: Path) -> bool:
    """Whether ``folder`` and each folder above it up to the package root is a package (has an __init__.py)."""
    return folder == PACKAGE or (folder / "__init__.py").is_file() and _in_packages(folder.parent)


def test_every_module_says_what_it_owns():
    assert [name for name, path in _modules().items() if not ast.get_docstring(ast.parse(path.read_text()))] == []


def test_cycle_finder_finds_a_loop():
    # the checker itself: a loop of three and a self-contained pair are found, a chain is not
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    assert sorted(_cycles(edges, list("abcdef"))) == [["a", "b", "c"], ["d", "e"]]
