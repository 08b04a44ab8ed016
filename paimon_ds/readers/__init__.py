"""Reads without Spark: Scan (columns, filter, limit, time travel), the Polars, DuckDB and pyarrow Dataset readers,
and system tables as Arrow."""
