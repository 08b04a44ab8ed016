"""Lazy reads for Polars and DuckDB, and a pyarrow Dataset where one can express a table.

Polars (`to_polars`): an IO-source plugin (polars.io.plugins.register_io_source). Polars hands each collect the
columns it needs, its predicate (a Polars expression) and a row count; the columns narrow the Scan, the predicate
is translated, where it can be, into a core predicate that prunes partitions and files (translate_polars), and the
Polars expression itself is then applied to every batch, so a row Polars would keep is never dropped.

DuckDB (`to_duckdb`): DuckDB 2's Arrow scan asks a source object (duckdb._sources.ArrowScanSource) which filters
it takes (`accepts`) and then for a stream of some columns with those filters (`stream`): each accepted filter
prunes through Table.scan (translate_duckdb) and is applied to the rows exactly as DuckDB would (its own
Arrow translation, duckdb._sources.to_arrow). A DuckDB without that protocol (1.x) gets the table's pyarrow
Dataset where one can express it (DuckDB pushes projection and filters into a Dataset), else the Arrow C stream.

pyarrow Dataset (`pyarrow_dataset`): the table's data files as a FileSystemDataset, where reading each file's
columns by name gives the table's rows (operation/raw_files.py: append files and primary-key buckets that need no
merge, written with the current fields, parquet or ORC, in types pyarrow reads as paimon_ds does), without
deletion vectors and without retractions (-U / -D rows) to drop; each file's partition values are its fragment's
partition expression, so pyarrow and its users skip partitions without opening files.
"""

from __future__ import annotations

import importlib
import inspect
import io
import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from ..errors import MissingDependencyError, PaimonDsError
from ..operation.incremental import new_scan
from ..operation.raw_files import raw_readable_table, split_raw_files
from ..predicate.expressions import (
    AndExpr,
    Column,
    Compare,
    Expr,
    FilterError,
    InList,
    IsNull,
    Literal,
    NotExpr,
    OrExpr,
    bind_filter,
)
from ..predicate.predicates import Predicate, and_all

if TYPE_CHECKING:
    import pyarrow.dataset as ds

    from ..store.file_store import FileStore


class Scan(Protocol):
    """What the lazy readers use of a readers.scan.Scan (which imports this module, so it is named by its shape)."""

    table: FileStore
    columns: list[str]
    schema: pa.Schema
    full_schema: pa.Schema
    limit: int | None
    filter: Any

    def narrow(self, columns: Any = None, filter: Any = None, limit: int | None = None) -> Scan: ...

    def to_batches(self) -> pa.RecordBatchReader: ...

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any: ...


class NotExpressibleError(PaimonDsError, ValueError):
    """A pyarrow Dataset cannot give the table's rows (files that need a merge, deletion vectors, ...)."""


def _import(module: str, what: str) -> Any:
    try:  # optional: only this result form needs it
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(f"{what} needs {module}, which is not installed (pip install "
                                     f"'paimon_ds[{module}]'); scan().to_arrow() needs nothing more") from None


# ------------------------------------------------------------------ shared: reading a scan with pushdown
def pushed_batches(scan: Scan, columns: list[str] | None, predicate: Predicate | None, limit: int | None,
                   batch_size: int | None = None) -> Iterator[pa.RecordBatch]:
    """The batches of ``scan`` narrowed to ``columns`` (None: all; [] gives rows without columns), a pruning
    ``predicate`` (implied by the caller's own exact filter, which it still applies) and a row ``limit``."""
    wanted = list(scan.columns) if columns is None else list(columns)
    read = wanted or [_cheapest_column(scan)]
    narrowed = scan.narrow(read, predicate, limit)
    for batch in narrowed.to_batches():
        if not wanted:
            batch = batch.select([])
        if batch_size and batch.num_rows > batch_size:
            for offset in range(0, batch.num_rows, batch_size):
                yield batch.slice(offset, batch_size)
        else:
            yield batch


def _cheapest_column(scan: Scan) -> str:
    """A column to read when a query needs rows but no column (a count): the narrowest fixed-width one."""
    widths = {n: (scan.schema.field(n).type.bit_width if pa.types.is_primitive(scan.schema.field(n).type)
                  else 1 << 20) for n in scan.columns}
    return min(scan.columns, key=lambda n: widths[n])


def prune_predicate(exprs: list[Expr], schema: pa.Schema) -> Predicate | None:
    """The core predicate of the conjuncts ``exprs`` that bind to ``schema`` (one that does not is left out: it
    prunes nothing, and the engine's own filter still applies)."""
    preds = []
    for expr in exprs:
        try:
            bound = bind_filter(expr, schema)
        except (FilterError, pa.ArrowException, TypeError, ValueError, OverflowError):
            continue
        if bound.predicate is not None:
            preds.append(bound.predicate)
    return and_all(preds)


def _conjuncts(expr: Expr | None) -> list[Expr]:
    if expr is None:
        return []
    if isinstance(expr, AndExpr):
        return [c for child in expr.children for c in _conjuncts(child)]
    return [expr]


def _combine(kind: type, parts: list[Expr | None], drop_unknown: bool) -> Expr | None:
    """AND / OR of translated parts; an untranslated part (None) is left out where that only widens the filter
    (``drop_unknown``: AND under an even number of NOTs, OR under an odd one), else makes the whole unknown."""
    if any(p is None for p in parts):
        if not drop_unknown:
            return None
        parts = [p for p in parts if p is not None]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else kind(tuple(parts))


# ------------------------------------------------------------------ Polars
_POLARS_COMPARE = {"Eq": "=", "NotEq": "!=", "Lt": "<", "LtEq": "<=", "Gt": ">", "GtEq": ">="}
_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_BETWEEN = {"Both": (">=", "<="), "Left": (">=", "<"), "Right": (">", "<="), "None": (">", "<")}


class PolarsTranslator:
    """A Polars predicate (its serialized expression tree) as a paimon_ds filter that it implies: comparisons of a
    column with a constant, is_in, is_between, is_null / is_not_null, &, |, ~. Anything else (casts of columns,
    arithmetic, string functions) is unknown; unknown parts are dropped where that only widens the filter."""

    def __init__(self, pl: Any, names: list[str]) -> None:
        self.pl = pl
        self.names = set(names)

    def translate(self, predicate: Any) -> Expr | None:
        try:
            tree = json.loads(predicate.meta.serialize(format="json"))
        except Exception:  # noqa: BLE001 - an expression Polars cannot serialize prunes nothing
            return None
        return self.node(tree, True)

    def node(self, tree: Any, positive: bool) -> Expr | None:
        if not isinstance(tree, dict) or len(tree) != 1:
            return None
        kind, body = next(iter(tree.items()))
        if kind == "BinaryExpr":
            op = body.get("op")
            if op in ("And", "LogicalAnd", "Or", "LogicalOr"):
                conjunction = op in ("And", "LogicalAnd")
                parts = [self.node(body["left"], positive), self.node(body["right"], positive)]
                return _combine(AndExpr if conjunction else OrExpr, parts, conjunction == positive)
            if op in _POLARS_COMPARE:
                return self.compare(_POLARS_COMPARE[op], body["left"], body["right"])
            return None
        if kind == "Function":
            function = body.get("function")
            inputs = body.get("input") or []
            boolean = function.get("Boolean") if isinstance(function, dict) else None
            if boolean == "Not" and len(inputs) == 1:
                child = self.node(inputs[0], not positive)
                return NotExpr(child) if child is not None else None
            if boolean in ("IsNull", "IsNotNull") and len(inputs) == 1:
                column = self.column(inputs[0])
                return IsNull(column, boolean == "IsNotNull") if column is not None else None
            if isinstance(boolean, dict) and "IsIn" in boolean and len(inputs) == 2:
                column, values = self.column(inputs[0]), self.constant(inputs[1])
                if column is None or not isinstance(values, list) or boolean["IsIn"].get("nulls_equal"):
                    return None
                return InList(column, tuple(Literal(v) for v in values))
            if isinstance(boolean, dict) and "IsBetween" in boolean and len(inputs) == 3:
                low_op, high_op = _BETWEEN.get(str(boolean["IsBetween"].get("closed")), (None, None))
                if low_op is None:
                    return None
                parts = [self.compare(low_op, inputs[0], inputs[1]), self.compare(high_op, inputs[0], inputs[2])]
                return _combine(AndExpr, parts, positive)
        return None

    def compare(self, op: str, left: Any, right: Any) -> Expr | None:
        column = self.column(left)
        if column is None:  # a constant on the left: 5 < x is x > 5
            column, left, right, op = self.column(right), right, left, _FLIP[op]
        if column is None or self.column(right) is not None:
            return None
        value = self.constant(right)
        if value is _UNKNOWN or isinstance(value, list):
            return None
        return Compare(op, column, Literal(value))

    def column(self, tree: Any) -> Column | None:
        if isinstance(tree, dict) and isinstance(tree.get("Column"), str) and tree["Column"] in self.names:
            return Column(tree["Column"])
        return None

    def constant(self, tree: Any) -> Any:
        """The value of a subtree that reads no column (a literal, a cast of one), evaluated by Polars."""
        if _mentions_column(tree):
            return _UNKNOWN
        try:
            expr = self.pl.Expr.deserialize(io.StringIO(json.dumps(tree)), format="json")
            values = self.pl.select(expr).to_series().to_list()
        except Exception:  # noqa: BLE001 - a constant Polars cannot evaluate alone prunes nothing
            return _UNKNOWN
        return values[0] if len(values) == 1 else _UNKNOWN


_UNKNOWN = object()


def _mentions_column(tree: Any) -> bool:
    if isinstance(tree, dict):
        return any(k in ("Column", "Columns", "Nth", "Selector", "Wildcard") or _mentions_column(v)
                   for k, v in tree.items())
    if isinstance(tree, list):
        return any(_mentions_column(v) for v in tree)
    return False


def polars_frame(scan: Scan) -> Any:
    """A Polars LazyFrame over ``scan`` (see the module's docstring): each collect plans the scan anew."""
    pl = _import("polars", "to_polars")
    register_io_source = importlib.import_module("polars.io.plugins").register_io_source

    schema = pl.from_arrow(scan.schema.empty_table()).schema
    translator = PolarsTranslator(pl, list(scan.columns))

    def source(with_columns: list[str] | None, predicate: Any, n_rows: int | None,
               batch_size: int | None) -> Iterator[Any]:
        needed = None
        if with_columns is not None:
            extra = set(predicate.meta.root_names()) if predicate is not None else set()
            needed = [c for c in scan.columns if c in set(with_columns) | extra]
        # Polars gives n_rows before its predicate (lf.head(n).filter(p)), and a scan's own limit comes before
        # the predicate too: then the predicate must not narrow which rows are counted, so it does not prune
        prune = None
        if predicate is not None and n_rows is None and scan.limit is None:
            prune = prune_predicate(_conjuncts(translator.translate(predicate)), scan.full_schema)
        for batch in pushed_batches(scan, needed, prune, n_rows, batch_size):
            frame = pl.from_arrow(batch) if batch.num_columns else pl.DataFrame(height=batch.num_rows)
            if predicate is not None:
                frame = frame.filter(predicate)
            if with_columns is not None and batch.num_columns:
                # no column asked for (a count): the rows' number alone, which select([]) would lose
                frame = frame.select(with_columns) if with_columns else pl.DataFrame(height=frame.height)
            if frame.height:
                yield frame

    labels = {"explain_name": "paimon_ds", "explain_detail": scan.table.path}  # shown by LazyFrame.explain()
    accepted = inspect.signature(register_io_source).parameters
    return register_io_source(source, schema=schema, **{k: v for k, v in labels.items() if k in accepted})


# ------------------------------------------------------------------ DuckDB
def translate_duckdb(node: Any, positive: bool = True) -> Expr | None:
    """A DuckDB pushed filter (duckdb._sources.nodes: Binary, Unary NOT, Postfix IS [NOT] NULL, In, Col, Lit) as a
    paimon_ds filter it implies; None where it says nothing we can prune on."""
    kind = type(node).__name__
    if kind == "Binary":
        if node.op in ("AND", "OR"):
            parts = [translate_duckdb(node.left, positive), translate_duckdb(node.right, positive)]
            return _combine(AndExpr if node.op == "AND" else OrExpr, parts, (node.op == "AND") == positive)
        column, value = _duckdb_column(node.left), _duckdb_value(node.right)
        if node.op not in _FLIP or column is None or value is _UNKNOWN:
            return None
        return Compare(node.op, column, Literal(value))
    if kind == "Unary" and node.op == "NOT":
        child = translate_duckdb(node.operand, not positive)
        return NotExpr(child) if child is not None else None
    if kind == "Postfix" and node.op in ("IS NULL", "IS NOT NULL"):
        column = _duckdb_column(node.operand)
        return IsNull(column, node.op == "IS NOT NULL") if column is not None else None
    if kind == "In":
        column = _duckdb_column(node.operand)
        values = [_duckdb_value(v) for v in node.values]
        if column is None or any(v is _UNKNOWN for v in values):
            return None
        return InList(column, tuple(Literal(v) for v in values))
    return None


def _duckdb_column(node: Any) -> Column | None:
    parts = getattr(node, "parts", None)
    return Column(parts[0]) if type(node).__name__ == "Col" and parts and len(parts) == 1 else None


def _duckdb_value(node: Any) -> Any:
    if type(node).__name__ != "Lit":
        return _UNKNOWN
    if node.type == "TIMESTAMP WITH TIME ZONE" and isinstance(node.value, int):
        return pa.scalar(node.value, pa.timestamp("us", "UTC")).as_py()  # microseconds since the epoch
    return node.value


def duckdb_source_class() -> type | None:
    """DuckDB 2's source protocol class (None where the installed DuckDB has none)."""
    try:  # the protocol of DuckDB 2's Arrow scan (duckdb/_sources/__init__.py documents it)
        ArrowScanSource = importlib.import_module("duckdb._sources").ArrowScanSource
        Untranslatable = importlib.import_module("duckdb._sources.nodes").Untranslatable
        to_arrow = importlib.import_module("duckdb._sources.to_arrow").to_arrow
    except (ImportError, AttributeError):
        return None

    class PaimonDuckDBSource(ArrowScanSource):
        """A Scan as DuckDB's Arrow scan reads it: the projection and every filter DuckDB can hand over reach
        Table.scan's pruning; the filters are then applied exactly, as DuckDB's own Arrow translation says."""

        schema_is_stable = True

        def __init__(self, scan: Scan) -> None:
            super().__init__(scan)
            self.scan = scan

        def __arrow_c_schema__(self) -> object:
            return self.scan.schema.__arrow_c_schema__()

        def __arrow_c_stream__(self, requested_schema: object = None) -> object:
            return self.scan.__arrow_c_stream__(requested_schema)

        def accepts(self, predicate: Any) -> bool:
            try:
                to_arrow(predicate, self.scan.schema)
            except Untranslatable:
                return False
            return True

        def stream(self, columns: Any, filters: Any) -> tuple[object, bool]:
            schema = self.scan.schema
            chosen = None if columns is None else [schema.names[i] for i in columns]
            exact = [to_arrow(f, schema) for f in filters]
            needed = chosen
            if chosen is not None and filters:
                used = {n for f in filters for n in _duckdb_columns(f)}
                needed = [n for n in schema.names if n in used or n in chosen]
            prune = None
            if self.scan.limit is None:  # a scan's own limit comes before DuckDB's filters: they must not prune
                prune = prune_predicate([e for f in filters for e in _conjuncts(translate_duckdb(f))],
                                        self.scan.full_schema)
            out_schema = schema if chosen is None else pa.schema([schema.field(n) for n in chosen])

            def batches() -> Iterator[pa.RecordBatch]:
                for batch in pushed_batches(self.scan, needed, prune, None):
                    if exact:
                        table = pa.Table.from_batches([batch])
                        for e in exact:
                            table = table.filter(e)
                        if table.num_rows == 0:
                            continue
                        batch = table.combine_chunks().to_batches()[0] if table.num_columns else \
                            batch.slice(0, table.num_rows)
                    yield batch.select(chosen) if chosen is not None else batch

            reader = pa.RecordBatchReader.from_batches(out_schema, batches())
            return reader.__arrow_c_stream__(), chosen is not None

    return PaimonDuckDBSource


def _duckdb_columns(node: Any) -> set[str]:
    if type(node).__name__ == "Col":
        return {node.parts[0]}
    out: set[str] = set()
    for attr in ("left", "right", "operand"):
        child = getattr(node, attr, None)
        if child is not None:
            out |= _duckdb_columns(child)
    return out


def duckdb_relation(scan: Scan, con: Any = None, name: str | None = None) -> Any:
    """A DuckDB relation over ``scan`` on ``con`` (default: DuckDB's default connection); ``name`` also
    registers it under that name for SQL on ``con``."""
    duckdb = _import("duckdb", "to_duckdb")
    if con is None:
        con = duckdb.default_connection()
    source_class = duckdb_source_class()
    if source_class is not None:
        obj: Any = source_class(scan)
    else:  # an older DuckDB: a pyarrow Dataset gets its projection and filters, else the Arrow C stream
        try:
            obj = pyarrow_dataset(scan.table) if scan.filter is None and scan.limit is None \
                and list(scan.columns) == scan.table.arrow_schema().names else scan
        except NotExpressibleError:
            obj = scan
    if name is not None:
        con.register(name, obj)
        return con.table(name)
    return con.from_arrow(obj)


# ------------------------------------------------------------------ pyarrow Dataset
def pyarrow_dataset(table: FileStore) -> ds.Dataset:
    """The table's latest (or time-travelled) snapshot as a pyarrow Dataset over its data files; a
    NotExpressibleError naming why where a Dataset cannot give the table's rows."""
    # pyarrow.dataset loads pandas (0.23 CPU s): imported here, not by every process that imports paimon_ds (each
    # of Spark's planner workers does)
    import pyarrow.dataset as ds

    alternatives = "read it with to_polars(), to_duckdb() or scan().to_arrow(), which merge and filter"
    table.check_readable()
    why = raw_readable_table(table)
    if why is not None:
        raise NotExpressibleError(f"a pyarrow Dataset cannot express Paimon table {table.path}: {why}; "
                                  f"{alternatives}")
    splits = new_scan(table).plan()
    raw, rest = split_raw_files(table, splits, added_columns=True)
    problems = []
    if rest:
        merged = [s for s in rest if table.table_schema.primary_keys]
        if merged:
            problems.append(f"{len(merged)} bucket(s) need a merge of several sorted runs (or hold files written "
                            "before a column was renamed or retyped, or in another format); a full compaction "
                            "makes them merge-free")
        else:
            problems.append(f"{sum(len(s.files) for s in rest)} file(s) were written before a column was renamed "
                            "or retyped, or in a format other than parquet / ORC")
    with_dvs = [f for f in raw if f.deletion is not None]
    if with_dvs:
        problems.append(f"{len(with_dvs)} file(s) have deletion vectors (rows deleted by position)")
    retractions = [f for f in raw if f.keyed]
    if retractions:
        problems.append(f"{len(retractions)} file(s) hold retraction rows (-U / -D) to drop")
    if problems:
        raise NotExpressibleError(f"a pyarrow Dataset cannot express Paimon table {table.path}: "
                                  f"{'; '.join(problems)}; {alternatives}")
    schema = table.arrow_schema()
    partition_of = _partition_expressions(table, splits)
    bounds_of = _stats_expressions(table, schema)
    by_format: dict[str, list[tuple[str, pc.Expression]]] = {}
    located = {meta.file_name: (s, meta) for s in splits for meta in s.files}
    for f in raw:
        split, meta = located[f.file_name]
        by_format.setdefault(f.format, []).append((f.path, partition_of(split.partition) & bounds_of(meta)))
    fs, _, _ = table.io.locate(table.path)
    elsewhere = [f.path for f in raw if table.io.locate(f.path)[0] is not fs]
    if elsewhere:
        raise NotExpressibleError(f"a pyarrow Dataset cannot express Paimon table {table.path}: {len(elsewhere)} "
                                  f"file(s) live on another filesystem than the table (external paths, e.g. "
                                  f"{elsewhere[0]}); {alternatives}")
    datasets = []
    for fmt, files in sorted(by_format.items()):
        file_format = ds.ParquetFileFormat() if fmt == "parquet" else ds.OrcFileFormat()
        datasets.append(ds.FileSystemDataset.from_paths(
            [_fs_path(table, p) for p, _ in files], schema=schema, format=file_format,
            filesystem=_pyarrow_fs(fs), partitions=[e for _, e in files]))
    if not datasets:
        return ds.FileSystemDataset.from_paths([], schema=schema, format=ds.ParquetFileFormat(),
                                               filesystem=_pyarrow_fs(fs))
    return datasets[0] if len(datasets) == 1 else ds.UnionDataset(schema, datasets)


def _partition_expressions(table: FileStore, splits: list) -> Callable[[bytes], pc.Expression]:
    """Each partition's values as the guarantee of its files' fragments (pyarrow skips a fragment its filter
    cannot match there without opening the file)."""
    keys = list(table.table_schema.partition_keys)
    scan = new_scan(table)
    schema = table.arrow_schema()
    cache: dict[bytes, pc.Expression] = {}

    def of(partition: bytes) -> pc.Expression:
        if partition not in cache:
            expr = pc.scalar(True)
            for key, value in zip(keys, scan.partition_values(partition)):
                field = pc.field(key)
                term = field.is_null() if value is None else field == pa.scalar(value, schema.field(key).type)
                expr = expr & term
            cache[partition] = expr
        return cache[partition]
    return of


def _stats_expressions(table: FileStore, schema: pa.Schema) -> Callable[[Any], pc.Expression]:
    """A data file's min / max statistics as its fragment's guarantee (pyarrow then skips a file a filter cannot
    match, unopened): only exact bounds (integers, dates, decimals; not strings, whose bounds may be truncated,
    nor floats, whose NaN the bounds leave out) of columns without nulls (a null satisfies no bound)."""
    scan = new_scan(table)
    bounded = [f.name for f in schema if f.name not in table.table_schema.partition_keys and (
        pa.types.is_integer(f.type) or pa.types.is_date(f.type) or pa.types.is_decimal(f.type))]

    def of(meta: Any) -> pc.Expression:
        expr = pc.scalar(True)
        stats = scan.file_stats(meta)
        for name in bounded:
            lo, hi, nulls, rows = stats(name)
            if lo is None or hi is None or nulls != 0 or not rows:
                continue
            column_type = schema.field(name).type
            try:
                low, high = pa.scalar(lo, column_type), pa.scalar(hi, column_type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
                continue  # a bound not of the column's type (an evolved column) guarantees nothing
            expr = expr & (pc.field(name) >= low) & (pc.field(name) <= high)
        return expr
    return of


def _pyarrow_fs(fs: Any) -> Any:
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    if protocol in ("file", "local"):
        return pafs.LocalFileSystem()
    return pafs.PyFileSystem(pafs.FSSpecHandler(fs))


def _fs_path(table: FileStore, path: str) -> str:
    return table.io.locate(path)[1]
