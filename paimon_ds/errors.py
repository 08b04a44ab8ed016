"""PaimonDsError, the base of every error paimon_ds raises on purpose, and the errors of the Spark layer.

Each error also derives from the built-in exception it refines (ValueError, LookupError, OSError,
RuntimeError), so `except ValueError` clauses written before the base existed keep catching it. The Spark
layer's errors are defined here, not beside the code that raises them, so that `paimon_ds` exports every
public error without importing pyspark. The CLI turns a PaimonDsError into one line and its exit code.
"""

from __future__ import annotations


class PaimonDsError(Exception):
    """Base of paimon_ds's errors: the operation was refused or failed, and the table was left unchanged."""

    # the `paimon-ds` command's exit status for this error (2 is bad input, as argparse uses it)
    exit_code = 1


# Exit statuses of `paimon-ds` by kind of error (1: any other PaimonDsError)
EXIT_BAD_INPUT = 2
EXIT_NOT_FOUND = 3
EXIT_CONFLICT = 4
EXIT_STORAGE = 5


class MissingDependencyError(PaimonDsError, ImportError):
    """An optional package a result form needs (pandas for to_pandas, polars for to_polars, duckdb for
    to_duckdb) is not installed."""


class SqlError(PaimonDsError, ValueError):
    """A statement paimon_ds.sql cannot run as asked; nothing was changed."""

    exit_code = EXIT_BAD_INPUT


class CatalogError(PaimonDsError, ValueError):
    """A catalog operation that cannot be done as asked (nothing was changed)."""

    exit_code = EXIT_BAD_INPUT


class TableAlreadyExists(CatalogError):
    """A table is already where one was to be created (Catalog.create_table, write_arrow(mode="error"))."""


class RowLevelError(PaimonDsError, ValueError):
    """A DELETE / UPDATE / MERGE the table cannot take; nothing was written."""

    exit_code = EXIT_BAD_INPUT


class ConnectError(PaimonDsError, RuntimeError):
    """The package cannot be prepared for a Spark Connect server."""

