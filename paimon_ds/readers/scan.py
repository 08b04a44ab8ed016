"""Scan: a table read without Spark, in the shape pyiceberg users know (`table.scan(...).to_arrow()`).

It plans splits and reads them through the same core operations as the Spark source (operation/scan.py plans and
prunes, operation/read.py merges primary-key buckets and applies deletion vectors). Data files (append tables) or
buckets (primary-key tables) are decoded in threads ahead of the consumer, in the order a sequential read gives
(io/prefetch.py): `to_batches()` holds a few batches of a few files or buckets at most, and a `limit` starts no
file past those whose rows it needs. Results: a
RecordBatchReader, an Arrow table, a pandas DataFrame, or the Arrow C stream (`__arrow_c_stream__`) that DuckDB
and Polars consume directly.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Iterator, Sequence
from contextlib import closing
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import MissingDependencyError
from ..io.prefetch import read_ahead
from ..operation.incremental import new_scan
from ..operation.read import TableRead
from ..operation.scan import Split
from ..options.registry import OptionError
from ..predicate.expressions import BoundFilter, Expr, FilterError, bind_filter
from ..predicate.predicates import Predicate, and_all
from ..schema.types import SchemaError
from ..snapshot.manager import to_millis
from ..snapshot.time_travel import READ_RANGE_KEYS
from ..store.row_tracking import row_tracking_enabled, system_fields
from .lazy import duckdb_relation, polars_frame

if TYPE_CHECKING:
    from ..store.file_store import FileStore

# the time-travel options of a read (Paimon's scan.* keys) and of an incremental read: a scan sets at most one
TIME_TRAVEL_KEYS = READ_RANGE_KEYS


class Scan:
    """A read of a table: which columns, rows (filter), how many (limit) and which snapshot.

    Build it with `Table.scan(...)`; read it with `to_batches()`, `to_arrow()`, `to_pandas()`, `count()`, or
    hand it to DuckDB / Polars as an Arrow C stream. Each read plans anew: without time travel it sees the
    table's latest snapshot at that moment.
    """

    def __init__(self, table: FileStore, columns: Sequence[str] | None = None,
                 filter: str | Expr | Predicate | None = None, limit: int | None = None,
                 snapshot_id: int | None = None, tag: str | None = None,
                 timestamp: dt.datetime | int | None = None, version: int | str | None = None,
                 incremental_between: str | Sequence[int | str] | None = None) -> None:
        travel = time_travel_options(snapshot_id, tag, timestamp, version)
        if incremental_between is not None:
            if travel:
                raise OptionError("incremental_between reads the changes between two versions: it takes no "
                                  "snapshot_id, tag, timestamp or version")
            travel = {"incremental-between": incremental_text(incremental_between)}
        if travel:
            # time travel reads the snapshot with the schema it was written under (Table.load does that)
            options = {k: v for k, v in table.dynamic_options.items() if k not in TIME_TRAVEL_KEYS}
            table = table.reload({**options, **travel})
        self.table = table
        table.check_readable()
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise OptionError(f"limit must be a non-negative integer, got {limit!r}")
        self.limit = limit
        self.travel = travel
        full = table.arrow_schema()
        if row_tracking_enabled(table.options):  # _ROW_ID and _SEQUENCE_NUMBER may be read by name
            full = pa.schema([*full, *system_fields()])
        self.full_schema = full
        self.columns = self._columns(columns, full)
        self.filter: BoundFilter | None = bind_filter(filter, full) if filter is not None else None
        self._shape()

    def _shape(self) -> None:
        full = self.full_schema
        wanted = set(self.columns) | set(self.filter.columns if self.filter else ())
        # the columns decoded: those asked for and those the filter reads, in table order
        self.read_schema = pa.schema([f for f in full if f.name in wanted])
        self.schema = pa.schema([full.field(n) for n in self.columns])

    def narrow(self, columns: Sequence[str] | None = None, filter: str | Expr | Predicate | None = None,
               limit: int | None = None) -> Scan:
        """This scan with fewer ``columns`` (of its own, in that order), a further ``filter`` (ANDed with its own,
        before its limit) and a lower ``limit``: how Polars and DuckDB push their projection, filters and row
        counts into it."""
        out = copy.copy(self)
        if columns is not None:
            out.columns = self._columns(columns, self.schema)
        if filter is not None:
            extra = bind_filter(filter, self.full_schema)
            if self.filter is None:
                out.filter = extra
            else:
                out.filter = BoundFilter(
                    self.filter.expression & extra.expression,
                    and_all([p for p in (self.filter.predicate, extra.predicate) if p is not None]),
                    tuple(n for n in self.full_schema.names if n in {*self.filter.columns, *extra.columns}),
                    f"({self.filter.text}) AND ({extra.text})")
        if limit is not None:
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
                raise OptionError(f"limit must be a non-negative integer, got {limit!r}")
            out.limit = limit if self.limit is None else min(self.limit, limit)
        out._shape()
        return out

    def _columns(self, columns: Sequence[str] | None, full: pa.Schema) -> list[str]:
        if columns is None:
            return [n for n in self.table.arrow_schema().names]
        if isinstance(columns, str):
            raise SchemaError(f"columns takes a list of names, got the string {columns!r}")
        columns = list(columns)
        unknown = [c for c in columns if c not in full.names]
        if unknown:
            raise SchemaError(f"column(s) {unknown} are not in Paimon table {self.table.path} "
                              f"(columns: {', '.join(full.names)})")
        twice = sorted({c for c in columns if columns.count(c) > 1})
        if twice:
            raise SchemaError(f"column(s) {twice} are asked for more than once")
        return columns

    @property
    def predicate(self) -> Predicate | None:
        """The core predicate that prunes partitions and files (the filter applies to rows exactly)."""
        return self.filter.predicate if self.filter is not None else None

    # ------------------------------------------------------------------ planning
    def plan(self) -> list[Split]:
        """The splits a read opens, after partition and file pruning (a split: one bucket's files)."""
        return new_scan(self.table, self.predicate).plan()

    # ------------------------------------------------------------------ results
    def to_batches(self, columns: Sequence[str] | None = None, filter: Any = None, batch_size: int | None = None,
                   **kwargs: Any) -> pa.RecordBatchReader:
        """The rows as a stream of Arrow record batches, in read order; files are decoded ahead in threads (bounded).

        The keyword arguments of pyarrow's `Dataset.to_batches`, so that `polars.scan_pyarrow_dataset(scan)` reads
        it: ``columns`` narrows the columns read; ``filter`` (a pyarrow compute Expression, or a filter as
        Table.scan takes) keeps the rows it is true for, a pyarrow Expression with pyarrow's semantics and
        without pruning any file (`to_polars()` prunes); ``batch_size`` caps the rows per batch."""
        unknown = sorted(k for k in kwargs if k not in _DATASET_SCAN_OPTIONS)
        if unknown:
            raise TypeError(f"Scan.to_batches() got unexpected keyword argument(s) {unknown}")
        scan, arrow_filter = self, None
        if isinstance(filter, pc.Expression):
            arrow_filter = filter
            if columns is not None:  # the columns the expression reads as well (it names them, unlisted)
                kept = list(columns)
                if not _evaluable(filter, pa.schema([self.full_schema.field(n) for n in kept
                                                     if n in self.full_schema.names])):
                    kept = list(self.columns)
                scan = self.narrow([c for c in self.columns if c in set(kept)])
            filter = None
        elif columns is not None:
            scan = self.narrow(columns)
        if filter is not None:
            scan = scan.narrow(filter=filter)
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                       or batch_size <= 0):
            raise OptionError(f"batch_size must be a positive integer, got {batch_size!r}")
        splits = scan.plan()  # planned now: a missing snapshot or tag is raised here, not by the first batch
        schema = scan.schema if columns is None else pa.schema([self.full_schema.field(n) for n in columns])
        batches = scan._batches(splits)
        if arrow_filter is not None or columns is not None or batch_size is not None:
            batches = _reshaped(batches, arrow_filter, None if columns is None else list(columns), batch_size)
        return pa.RecordBatchReader.from_batches(schema, batches)

    def _batches(self, splits: list[Split]) -> Iterator[pa.RecordBatch]:
        remaining = self.limit
        if remaining == 0:
            return
        read = TableRead(self.table, self.read_schema, self.predicate)
        expression = self.filter.expression if self.filter is not None else None
        # files (append tables) or buckets decoded in threads, in the order a sequential read gives
        with closing(read_ahead(read.read_units(splits), row_budget=remaining)) as batches:
            for batch in batches:
                if expression is not None:
                    kept = pa.Table.from_batches([batch]).filter(expression)
                    if kept.num_rows == 0:
                        continue
                    batch = kept.combine_chunks().to_batches()[0]
                if batch.num_rows == 0:
                    continue
                batch = batch.select(self.columns)
                if remaining is not None:
                    if batch.num_rows >= remaining:
                        yield batch.slice(0, remaining)
                        return  # closing stops the read-ahead: files past those it started are never opened
                    remaining -= batch.num_rows
                yield batch

    def to_arrow(self) -> pa.Table:
        return self.to_batches().read_all()

    def to_pandas(self, **kwargs: Any) -> Any:
        """A pandas DataFrame (``kwargs`` go to pyarrow's Table.to_pandas)."""
        try:
            import pandas  # noqa: F401  # optional: only this result form needs it
        except ImportError:
            raise MissingDependencyError("Scan.to_pandas needs pandas, which is not installed "
                                         "(pip install pandas); to_arrow() needs nothing more") from None
        return self.to_arrow().to_pandas(**kwargs)

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The Arrow C stream (PyCapsule interface): `duckdb.sql("SELECT ... FROM scan")`, `polars.DataFrame(scan)`,
        `pyarrow.table(scan)`. Each call reads the table anew."""
        return self.to_batches().__arrow_c_stream__(requested_schema)

    def to_polars(self) -> Any:
        """A Polars LazyFrame over this scan: Polars' projection, predicate and row count reach the scan (the
        predicate prunes partitions and files where it translates; Polars' expression applies to every row).
        Each collect reads the table anew. Needs polars (pip install 'paimon_ds[polars]')."""
        return polars_frame(self)

    def to_duckdb(self, con: Any = None, name: str | None = None) -> Any:
        """A DuckDB relation over this scan on ``con`` (default: DuckDB's default connection); ``name`` also
        registers it on ``con`` for SQL. DuckDB's projection and filters reach the scan's pruning (docs: "Lazy scans").
        Needs duckdb (pip install 'paimon_ds[duckdb]')."""
        return duckdb_relation(self, con, name)

    def count(self) -> int:
        """The number of rows the scan gives; from file metadata alone where no row needs reading (an append
        table without filter or deletion vectors), else by reading the fewest columns."""
        splits = self.plan()
        if (self.filter is None and not self.table.table_schema.primary_keys
                and not row_tracking_enabled(self.table.options)
                and not any(s.deletion_files for s in splits)):
            total = sum(s.row_count for s in splits)
            return total if self.limit is None else min(total, self.limit)
        return sum(b.num_rows for b in self._batches(splits))

    def __repr__(self) -> str:
        parts = [f"path={self.table.path!r}", f"columns={self.columns}"]
        if self.filter is not None:
            parts.append(f"filter={self.filter.text!r}")
        if self.limit is not None:
            parts.append(f"limit={self.limit}")
        for key, value in self.travel.items():
            parts.append(f"{key}={value}")
        return f"Scan({', '.join(parts)})"


# the keyword arguments of pyarrow's Dataset.to_batches / scanner that a Scan takes and ignores (they tune
# pyarrow's own reading: readahead, threads, caching, memory pool)
_DATASET_SCAN_OPTIONS = {"batch_readahead", "fragment_readahead", "fragment_scan_options", "use_threads",
                         "cache_metadata", "memory_pool"}


def _evaluable(expression: pc.Expression, schema: pa.Schema) -> bool:
    try:
        schema.empty_table().filter(expression)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return False
    return True


def _reshaped(batches: Iterator[pa.RecordBatch], expression: pc.Expression | None, columns: list[str] | None,
              batch_size: int | None) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        if expression is not None:
            try:
                kept = pa.Table.from_batches([batch]).filter(expression)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise FilterError(f"the filter {expression} cannot be evaluated on the scan's columns: {e}") from None
            if kept.num_rows == 0:
                continue
            batch = kept.combine_chunks().to_batches()[0]
        if columns is not None:
            batch = batch.select(columns)
        if batch_size is None or batch.num_rows <= batch_size:
            yield batch
            continue
        for offset in range(0, batch.num_rows, batch_size):
            yield batch.slice(offset, batch_size)


def time_travel_options(snapshot_id: int | None, tag: str | None,
                        timestamp: dt.datetime | int | None, version: int | str | None = None) -> dict[str, str]:
    """The scan.* option of the one time-travel argument given ({} for none; OptionError for several).
    ``version``: Spark's `VERSION AS OF` (scan.version): a tag of that name, else a snapshot id."""
    given = [name for name, v in (("snapshot_id", snapshot_id), ("tag", tag), ("timestamp", timestamp),
                                  ("version", version)) if v is not None]
    if len(given) > 1:
        raise OptionError(f"time travel takes one of snapshot_id, tag or timestamp; got {' and '.join(given)} "
                          "(version, as VERSION AS OF, also stands alone)")
    if version is not None:
        if isinstance(version, bool) or not isinstance(version, (int, str)):
            raise OptionError(f"version must be a snapshot id or a tag name, got {version!r}")
        return {"scan.version": str(version)}
    if snapshot_id is not None:
        if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int):
            raise OptionError(f"snapshot_id must be an integer, got {snapshot_id!r}")
        return {"scan.snapshot-id": str(snapshot_id)}
    if tag is not None:
        return {"scan.tag-name": str(tag)}
    if timestamp is not None:
        return {"scan.timestamp-millis": str(instant_millis(timestamp))}
    return {}


def incremental_text(between: str | Sequence[int | str]) -> str:
    """`incremental-between`'s value: `start,end` (snapshot ids or tag names) from a string or a pair."""
    if isinstance(between, str):
        return between
    if isinstance(between, Sequence) and len(between) == 2 and all(
            isinstance(v, (int, str)) and not isinstance(v, bool) for v in between):
        return f"{between[0]},{between[1]}"
    raise OptionError(f"incremental_between takes (start, end) snapshot ids or tag names, or 'start,end'; "
                      f"got {between!r}")


def instant_millis(value: Any) -> int:
    """A time-travel instant as epoch millis (snapshot.to_millis: datetime, epoch millis, `yyyy-MM-dd HH:mm:ss`)."""
    try:
        return to_millis(value)
    except (ValueError, TypeError, AttributeError):
        raise OptionError(f"timestamp must be a datetime, epoch milliseconds or yyyy-MM-dd HH:mm:ss, "
                          f"got {value!r}") from None
