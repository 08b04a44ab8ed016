"""PaimonDsError, the base of every error paimon_ds raises on purpose, and the errors of the Spark layer.

Each error also derives from the built-in exception it refines (ValueError, LookupError, OSError,
RuntimeError), so `except ValueError` clauses written before the base existed keep catching it. The Spark
layer's errors are defined here, not beside the code that raises them, so that `paimon_ds` exports every
public error without importing pyspark. The CLI turns a PaimonDsError into one line and its exit code.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


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


class CommitLandedError(PaimonDsError, RuntimeError):
    """Spark reports a write failed whose commit landed (the driver-side commit raised, or its Python worker died,
    after the snapshot was created): its rows are in the table, and running the write again would add them twice."""



class MissingFileError(PaimonDsError, FileNotFoundError):
    """A file a live snapshot uses is gone: the table is damaged (deleted by hand, or by a tool that ignored the
    snapshot)."""

    exit_code = EXIT_STORAGE


class CorruptFileError(PaimonDsError, OSError):
    """A table file (snapshot, schema, tag, manifest, data or index file) exists but cannot be read: empty,
    truncated, or not in the format it should have. ``path`` is the file's full path, ``problem`` what was wrong.

    An OSError, as a read that fails is one, so that `except OSError` written for unreadable files catches it.
    """

    exit_code = EXIT_STORAGE

    def __init__(self, path: str, what: str, problem: str) -> None:
        # one argument: OSError would read (path, problem) as (errno, strerror)
        super().__init__(f"cannot read {what} {path}: {problem}")
        self.path = path
        self.problem = problem


# Errors of the store itself, and errors of the program (ours, or a missing package), not of a file's content:
# never reported as a damaged file
_NOT_DAMAGE = (FileNotFoundError, PermissionError, TimeoutError, ConnectionError, InterruptedError, MemoryError,
               RecursionError, NotImplementedError, AttributeError, NameError, AssertionError, ImportError)


def is_decoding_error(error: BaseException) -> bool:
    """Whether ``error``, raised while a file's bytes were decoded, says the bytes are bad (as opposed to a store
    that failed, an error of ours, or an interrupt)."""
    if not isinstance(error, Exception) or isinstance(error, (PaimonDsError, *_NOT_DAMAGE)):
        return False
    # an OSError with an errno comes from the operating system or the store; the decoders' OSErrors
    # (pyarrow's "Couldn't deserialize thrift", ...) have none
    return not (isinstance(error, OSError) and error.errno is not None)


def decoding_problem(error: BaseException, size: int | None = None) -> str:
    """What was wrong, in words: empty where ``size`` is 0, else the decoder's message."""
    if size == 0:
        return "the file is empty (0 bytes)"
    if isinstance(error, KeyError):  # a JSON file that parses but lacks a field Paimon always writes
        return f"truncated or damaged: field {error} is missing"
    text = str(error).strip() or type(error).__name__
    where = f" ({size} bytes)" if size is not None else ""
    return f"truncated or damaged{where}: {type(error).__name__}: {text}"


@contextmanager
def reading_file(path: str, what: str, size: int | None = None) -> Iterator[None]:
    """Decode the file at ``path`` (a ``what``: "snapshot", "manifest"...) inside this block: an error that says its
    bytes are bad becomes a CorruptFileError naming the file and what was wrong (is_decoding_error)."""
    try:
        yield
    except Exception as e:
        if not is_decoding_error(e):
            raise
        raise CorruptFileError(path, what, decoding_problem(e, size)) from e
