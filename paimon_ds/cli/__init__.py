"""`paimon-ds`: a table's metadata and its maintenance from the command line, without Spark.

    paimon-ds list WAREHOUSE [--database DB]      paimon-ds schema PATH        paimon-ds options PATH
    paimon-ds files PATH [--snapshot ID | --tag NAME]
    paimon-ds history PATH [--limit N]
    paimon-ds describe PATH [--limit N] [--lsm-image FILE.svg]
    paimon-ds compact PATH [--full] [--partitions SPEC]
    paimon-ds expire PATH [--retain-min N] [--retain-max N] [--older-than DURATION] [--max-deletes N]
    paimon-ds tag PATH NAME [--snapshot ID]       paimon-ds delete-tag PATH NAME
    paimon-ds rollback PATH (--snapshot ID | --tag NAME)
    paimon-ds remove-orphans PATH [--older-than DURATION] [--dry-run]
    paimon-ds branches PATH                       paimon-ds branch PATH NAME [--tag TAG] [--ignore-if-exists]
    paimon-ds delete-branch PATH NAME[,NAME...]   paimon-ds rename-branch PATH FROM TO
    paimon-ds fast-forward PATH NAME
    paimon-ds consumers PATH                      paimon-ds reset-consumer PATH ID [--next-snapshot ID]
    paimon-ds clear-consumers PATH [--including REGEX] [--excluding REGEX]

Every command takes --branch NAME (work on a branch instead of main), --json (one JSON document on stdout),
--plain (no rich output even on a terminal), -o KEY=VALUE / --options-file FILE (storage options) and -v / -vv
(log paimon_ds's INFO / DEBUG records on stderr). An error paimon_ds raises on purpose is one line on stderr,
`paimon-ds: error: <message>`, and the exit status is its kind's (errors.py: 2 bad input, 3 not found, 4 commit
conflict, 5 storage, 1 other); any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from .. import MissingCredentialsError, __version__, procedures
from ..errors import EXIT_STORAGE, PaimonDsError
from ..format.partition import partition_filter
from ..operation import maintenance as m
from ..operation.compact import compact_in_process
from ..options.registry import OptionError, parse_duration_ms
from ..options.storage import missing_s3_credentials
from ..table import Table
from . import describe as describe_command
from . import lsm, metadata
from .output import Column, Output
from .storage_args import storage_options

EXIT_INTERRUPTED = 130  # as a shell reports SIGINT
PROG = "paimon-ds"


def _duration(text: str, flag: str) -> float:
    try:
        return parse_duration_ms(text)
    except ValueError as e:
        raise OptionError(f"{flag}: {e}") from None


def _describe(table: Table, args: argparse.Namespace, out: Output) -> dict[str, Any] | None:
    if args.limit < 0:
        raise OptionError(f"--limit must be >= 0 (0: every snapshot), got {args.limit}")
    if args.lsm_image and not table.table_schema.primary_keys:
        raise OptionError(f"--lsm-image: {table.path} is an append table (no primary key): it has no sorted runs")
    with out.busy("reading snapshots and manifests"):
        doc, states = describe_command.describe(table, args.limit)
    if args.lsm_image:
        title = f"sorted runs of {table.path}" + (f" (branch {table.branch})" if table.branch != "main" else "") + \
            (f", snapshot {doc['latest_snapshot_id']}" if doc["latest_snapshot_id"] is not None else "")
        try:
            with open(args.lsm_image, "w", encoding="utf-8") as f:
                f.write(lsm.svg(title, states, lsm.Triggers.of(table)))
        except OSError as e:
            raise OptionError(f"--lsm-image: cannot write {args.lsm_image}: {e.strerror or e}") from None
    doc["lsm_image"] = args.lsm_image
    if out.is_json:
        return doc
    describe_command.render(out, table, doc, states)
    if args.lsm_image:
        out.line(f"\nLSM picture written to {args.lsm_image}")
    return None


def _compact(table: Table, args: argparse.Namespace, out: Output) -> tuple[dict[str, Any], str]:
    try:
        partitions = partition_filter(table, args.partitions)
    except ValueError as e:
        raise OptionError(f"--partitions: {e}") from None
    compacted = [0]
    with out.progress("compacting buckets") as progress:
        def report(done: int, total: int) -> None:
            compacted[0] = done
            progress(done, total)

        snapshot = compact_in_process(table, None, args.full, progress=report, partitions=partitions)
    doc = {"compacted_buckets": compacted[0] if snapshot else 0, "snapshot_id": snapshot.id if snapshot else None}
    if snapshot is None:
        return doc, "nothing to compact"
    return doc, f"compacted {compacted[0]} bucket(s): snapshot {snapshot.id}"


def _expire(table: Table, args: argparse.Namespace, out: Output) -> tuple[dict[str, Any], str]:
    older = _duration(args.older_than, "--older-than") if args.older_than else None
    with out.busy("expiring snapshots"):
        result = m.expire_snapshots(table, args.retain_min, args.retain_max, older, max_deletes=args.max_deletes)
    doc = {"expired_snapshots": result.expired, "expired_changelogs": result.expired_changelogs,
           "deleted_files": len(result.deleted_files)}
    changelogs = f", {len(result.expired_changelogs)} changelog(s)" if result.expired_changelogs else ""
    return doc, (f"expired {len(result.expired)} snapshot(s) {result.expired}{changelogs}, "
                 f"deleted {len(result.deleted_files)} file(s)")


def _remove_orphans(table: Table, args: argparse.Namespace, out: Output) -> tuple[dict[str, Any], str]:
    older = _duration(args.older_than, "--older-than")
    with out.busy("listing files"):
        found = m.remove_orphan_files(table, older, dry_run=args.dry_run)
    verb = "would delete" if args.dry_run else "deleted"
    return ({"dry_run": args.dry_run, "files": list(found)},
            f"{verb} {len(found)} orphan file(s)" + "".join(f"\n  {f}" for f in found))


def _snapshot_text(verb: str, snapshot: Any) -> tuple[dict[str, Any], str]:
    sid = None if snapshot is None else snapshot.id
    return {"snapshot_id": sid}, f"{verb}: snapshot {sid}" if sid is not None else f"{verb}: nothing to commit"


def _expire_partitions(table: Table, args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    expired = procedures.expire_partitions(table, args.expiration_time, args.timestamp_formatter,
                                           args.timestamp_pattern, args.strategy, args.max_expires)
    return {"expired_partitions": expired}, f"expired {len(expired)} partition(s)" + "".join(
        "\n  " + ", ".join(f"{k}={v}" for k, v in p.items()) for p in expired)


def _expire_tags(table: Table, args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    expired = procedures.expire_tags(table, args.older_than)
    return {"expired_tags": expired}, f"expired {len(expired)} tag(s)" + (f": {', '.join(expired)}" if expired else "")


def _mark_done(table: Table, args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    written = procedures.mark_partition_done(table, args.partitions)
    return {"success_files": written}, f"marked {len(written)} partition(s) done"


def _rename_tag(table: Table, args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    procedures.rename_tag(table, args.name, args.to)
    return {"from": args.name, "to": args.to}, f"renamed tag {args.name!r} to {args.to!r}"


# the commands of issue 36's DDL and procedures: (table, arguments) -> (JSON document, text)
_PARTITION_COMMANDS: dict[str, Callable[[Table, argparse.Namespace], tuple[dict[str, Any], str]]] = {
    "truncate": lambda table, args: _snapshot_text("truncated", procedures.truncate(table)),
    "drop-partition": lambda table, args: _snapshot_text(
        "dropped", procedures.drop_partitions(table, args.partitions)),
    "compact-manifest": lambda table, args: _snapshot_text("compacted manifests", procedures.compact_manifest(table)),
    "expire-partitions": _expire_partitions,
    "expire-tags": _expire_tags,
    "mark-partition-done": _mark_done,
    "rename-tag": _rename_tag,
}


# the read-only metadata commands: (the document from the table and arguments, its rendering)
_METADATA: dict[str, tuple[Callable[[Table, argparse.Namespace], dict[str, Any]],
                           Callable[[Output, dict[str, Any]], None]]] = {
    "schema": (lambda table, args: metadata.schema(table), metadata.render_schema),
    "options": (lambda table, args: metadata.options(table), metadata.render_options),
    "files": (lambda table, args: metadata.files(table, args.snapshot, args.tag), metadata.render_files),
    "history": (lambda table, args: metadata.history(table, args.limit), metadata.render_history),
}


def _list(args: argparse.Namespace, out: Output) -> dict[str, Any] | None:
    if args.branch:
        raise OptionError("--branch: `list` lists a warehouse's tables; a branch is a table's (paimon-ds branches)")
    with out.busy("listing tables"):
        doc = metadata.list_tables(args.path, args.database, _storage(args))
    if out.is_json:
        return doc
    metadata.render_list(out, doc)
    return None


def _run(table: Table, args: argparse.Namespace, out: Output) -> dict[str, Any] | None:
    """Run the command; its JSON document (printed by the caller), or None when it printed itself."""
    command = args.command
    if command == "describe":
        return _describe(table, args, out)
    if command in _METADATA:
        make, render = _METADATA[command]
        with out.busy("reading metadata"):
            doc = make(table, args)
        if out.is_json:
            return doc
        render(out, doc)
        return None
    if command == "branches":
        names = ["main", *table.branch_manager().branches()]
        if out.is_json:
            return {"branches": names}
        if out.form == "rich":
            out.table([Column("branch")], [[n] for n in names])
        else:
            out.line("\n".join(names))
        return None
    if command == "consumers":
        found = procedures.list_consumers(table)
        if out.is_json:
            return {"consumers": [{"consumer_id": c, "next_snapshot_id": n} for c, n in found.items()]}
        if out.form == "rich":
            out.table([Column("consumer"), Column("next snapshot", right=True)],
                      [[c, str(n)] for c, n in found.items()])
        else:
            out.line("\n".join(f"{c}\t{n}" for c, n in found.items()) or "no consumers")
        return None
    if command == "compact":
        doc, text = _compact(table, args, out)
    elif command == "expire":
        doc, text = _expire(table, args, out)
    elif command == "remove-orphans":
        doc, text = _remove_orphans(table, args, out)
    elif command == "tag" and args.timestamp is not None:
        sid = procedures.create_tag_from_timestamp(table, args.name, args.timestamp, args.time_retained).id
        doc, text = {"tag": args.name, "snapshot_id": sid}, f"tag {args.name!r} -> snapshot {sid}"
    elif command == "tag":
        if args.time_retained is not None:
            raise ValueError("--time-retained goes with --timestamp")
        sid = m.create_tag(table, args.name, args.snapshot).id
        doc, text = {"tag": args.name, "snapshot_id": sid}, f"tag {args.name!r} -> snapshot {sid}"
    elif command == "delete-tag":
        deleted = m.delete_tag(table, args.name)
        doc = {"tag": args.name, "deleted_files": len(deleted)}
        text = f"deleted tag {args.name!r} and {len(deleted)} file(s) only it kept"
    elif command == "rollback" and args.timestamp is not None:
        sid = procedures.rollback_to_timestamp(table, args.timestamp).id
        doc, text = {"snapshot_id": sid}, f"rolled back to snapshot {sid}"
    elif command == "rollback":
        sid = m.rollback(table, args.snapshot, args.tag).id
        doc, text = {"snapshot_id": sid}, f"rolled back to snapshot {sid}"
    elif command == "branch":
        created = procedures.create_branch(table, args.name, args.tag, args.ignore_if_exists)
        origin = f"from tag {args.tag!r}" if args.tag else "empty (no snapshot yet)"
        doc = {"branch": args.name, "created": created, "from_tag": args.tag}
        text = f"created branch {args.name!r} {origin}" if created else f"branch {args.name!r} exists"
    elif command == "delete-branch":
        procedures.delete_branch(table, args.name)
        names = [n.strip() for n in args.name.split(",")]
        doc, text = {"deleted_branches": names}, f"deleted branch(es) {', '.join(names)}"
    elif command == "rename-branch":
        procedures.rename_branch(table, args.name, args.to)
        doc, text = {"from": args.name, "to": args.to}, f"renamed branch {args.name!r} to {args.to!r}"
    elif command == "fast-forward":
        procedures.fast_forward(table, args.name)
        latest = table.snapshot_manager.latest_id()
        doc = {"branch": table.branch, "from_branch": args.name, "latest_snapshot_id": latest}
        text = f"fast-forwarded {table.branch!r} to branch {args.name!r}: latest snapshot {latest}"
    elif command == "reset-consumer":
        procedures.reset_consumer(table, args.id, args.next_snapshot)
        doc = {"consumer_id": args.id, "next_snapshot_id": args.next_snapshot}
        text = (f"deleted consumer {args.id!r}" if args.next_snapshot is None
                else f"consumer {args.id!r} -> next snapshot {args.next_snapshot}")
    elif command == "clear-consumers":
        cleared = procedures.clear_consumers(table, args.including, args.excluding)
        doc = {"cleared_consumers": cleared}
        text = f"cleared {len(cleared)} consumer(s)" + (f": {', '.join(cleared)}" if cleared else "")
    elif command in _PARTITION_COMMANDS:
        doc, text = _PARTITION_COMMANDS[command](table, args)
    else:  # argparse admits only the commands above
        raise AssertionError(command)
    if out.is_json:
        return doc
    out.line(text)
    return None


# options every command takes, accepted before the command name and after it (a subcommand's copies have their
# own dests, merged in _merge_globals, because argparse lets a subcommand's defaults overwrite the main parser's)
def _add_globals(parser: argparse.ArgumentParser, suffix: str) -> None:
    parser.add_argument("--branch", dest="branch" + suffix, help="work on this branch of the table (default: main)")
    parser.add_argument("--json", dest="json" + suffix, action="store_true",
                        help="print one JSON document on stdout (its keys: docs/maintenance.md) and nothing else")
    parser.add_argument("--plain", dest="plain" + suffix, action="store_true",
                        help="plain text even on a terminal (plain is the default when stdout is not one)")
    parser.add_argument("-o", "--option", dest="option" + suffix, action="append", default=[], metavar="KEY=VALUE",
                        help="a storage option, e.g. s3.endpoint=http://host:9000, s3.access-key=..., "
                             "s3.path.style.access=true (repeatable)")
    parser.add_argument("--options-file", dest="options_file" + suffix, metavar="FILE",
                        help="storage options from a JSON object or a properties file (keeps secrets off the "
                             "command line; -o wins)")
    parser.add_argument("-v", "--verbose", dest="verbose" + suffix, action="count", default=0,
                        help="log paimon_ds's INFO records on stderr (-vv: DEBUG); with -v an error also shows "
                             "its traceback")


def _merge_globals(args: argparse.Namespace) -> argparse.Namespace:
    args.branch = args.branch_sub or args.branch
    args.json = args.json or args.json_sub
    args.plain = args.plain or args.plain_sub
    args.option = args.option + args.option_sub
    args.options_file = args.options_file_sub or args.options_file
    args.verbose = args.verbose + args.verbose_sub
    return args


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG,
                                     description="Inspect and maintain Apache Paimon tables (no Spark needed).",
                                     epilog="Exit status: 0 ok, 1 other error, 2 bad input, 3 not found, "
                                            "4 commit conflict, 5 storage.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    _add_globals(parser, "")
    common = argparse.ArgumentParser(add_help=False)
    _add_globals(common, "_sub")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help_text, description=help_text)
        p.add_argument("path", help="the table's directory (a local path, s3://bucket/key, ...)")
        return p

    p = sub.add_parser("list", parents=[common], help="list the tables of a warehouse (<warehouse>/<db>.db/<table>)",
                       description="list the tables of a warehouse (<warehouse>/<db>.db/<table>), by database")
    p.add_argument("path", metavar="warehouse", help="the warehouse directory (a local path, s3://bucket/key, ...)")
    p.add_argument("--database", help="only this database's tables")
    add("schema", "the table's current schema: columns (id, name, type, comment), primary key, partition keys")
    add("options", "the options stored in the table's schema")
    p = add("files", "the live data files (partition, bucket, level, rows, size, path) of the latest snapshot")
    target = p.add_mutually_exclusive_group()
    target.add_argument("--snapshot", type=int, help="of this snapshot instead")
    target.add_argument("--tag", help="of this tag's snapshot instead")
    p = add("history", "the commits, newest first: snapshot, time, kind, record counts, schema, user")
    p.add_argument("--limit", type=int, help="the latest N commits only (default, or 0: all)")
    p = add("describe", "schema, options, latest snapshots, and each bucket's files, levels and sorted runs "
                        "against the compaction and stop triggers")
    p.add_argument("--limit", type=int, default=describe_command.DEFAULT_LIMIT,
                   help=f"show the latest N snapshots (default {describe_command.DEFAULT_LIMIT}; 0: all)")
    p.add_argument("--lsm-image", metavar="FILE.svg",
                   help="also write an SVG picture of each bucket's sorted runs and levels (primary-key tables)")
    p = add("compact", "compact every bucket that needs it (universal compaction / small files)")
    p.add_argument("--full", action="store_true", help="full compaction: one sorted run (or file set) per bucket")
    p.add_argument("--partitions", help="only these partitions, e.g. 'dt=2024-01-01,hr=1;dt=2024-01-02'")
    p = add("expire", "expire old snapshots (defaults: the table's snapshot.* options)")
    p.add_argument("--retain-min", type=int)
    p.add_argument("--retain-max", type=int)
    p.add_argument("--older-than", help="expire snapshots older than this (e.g. 1 h, 7 d)")
    p.add_argument("--max-deletes", type=int,
                   help="expire at most this many snapshots (default: snapshot.expire.limit)")
    p = add("tag", "tag a snapshot (the latest by default)")
    p.add_argument("name")
    target = p.add_mutually_exclusive_group()
    target.add_argument("--snapshot", type=int)
    target.add_argument("--timestamp", help="the first snapshot committed at or after this (epoch millis or "
                                            "'yyyy-MM-dd HH:mm:ss')")
    p.add_argument("--time-retained", help="with --timestamp: the tag expires after this (e.g. 1 d)")
    p = add("rename-tag", "rename a tag")
    p.add_argument("name")
    p.add_argument("to")
    p = add("expire-tags", "delete tags whose retention has passed, and with --older-than those created before")
    p.add_argument("--older-than", help="epoch millis or 'yyyy-MM-dd HH:mm:ss'")
    add("truncate", "remove every row: one OVERWRITE snapshot without files")
    p = add("drop-partition", "remove partitions: one OVERWRITE snapshot")
    p.add_argument("partitions", help="e.g. 'dt=2024-01-01,hr=1;dt=2024-01-02'")
    p = add("expire-partitions", "drop the partitions older than an expiration time (as partition.expiration-*)")
    p.add_argument("expiration_time", help="e.g. 7 d")
    p.add_argument("--timestamp-formatter")
    p.add_argument("--timestamp-pattern")
    p.add_argument("--strategy", choices=["values-time", "update-time"])
    p.add_argument("--max-expires", type=int)
    add("compact-manifest", "merge the latest snapshot's manifests (a COMPACT snapshot)")
    p = add("mark-partition-done", "write the partitions' _SUCCESS files (the success-file mark-done action)")
    p.add_argument("partitions", help="e.g. 'dt=2024-01-01;dt=2024-01-02'")
    p = add("delete-tag", "delete a tag and the files only it kept")
    p.add_argument("name")
    p = add("rollback", "make a snapshot or tag the latest again (newer snapshots are deleted)")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--snapshot", type=int)
    target.add_argument("--tag")
    target.add_argument("--timestamp", help="the latest snapshot committed at or before this (epoch millis or "
                                            "'yyyy-MM-dd HH:mm:ss')")
    p = add("remove-orphans", "delete unreferenced files older than a margin (default 1 d)")
    p.add_argument("--older-than", default="1 d")
    p.add_argument("--dry-run", action="store_true")
    add("branches", "list the table's branches")
    p = add("branch", "create a branch: from a tag, or empty (the current schema, no snapshot)")
    p.add_argument("name")
    p.add_argument("--tag")
    p.add_argument("--ignore-if-exists", action="store_true")
    p = add("delete-branch", "delete branches (comma-separated); files only they used become orphans")
    p.add_argument("name")
    p = add("rename-branch", "rename a branch")
    p.add_argument("name")
    p.add_argument("to")
    p = add("fast-forward", "make main (or --branch) what a branch is: its snapshots, schemas and tags")
    p.add_argument("name")
    add("consumers", "list the table's consumers (streaming readers' progress) and their next snapshots")
    p = add("reset-consumer", "set a consumer's next snapshot, or delete it (no --next-snapshot)")
    p.add_argument("id", help="the consumer id (a streaming read's consumer-id)")
    p.add_argument("--next-snapshot", type=int, help="an existing snapshot id (omitted: delete the consumer)")
    p = add("clear-consumers", "delete consumers by regular expression (default: all of them)")
    p.add_argument("--including", help="delete the consumers whose whole id matches this (default: all)")
    p.add_argument("--excluding", help="but not those whose whole id matches this")
    return parser


class _StderrHandler(logging.StreamHandler):
    """The handler -v puts on the `paimon_ds` logger (one, however often main runs in a process)."""


def _setup_logging(verbose: int) -> None:
    logger = logging.getLogger("paimon_ds")
    for old in [h for h in logger.handlers if isinstance(h, _StderrHandler)]:
        logger.removeHandler(old)
    if verbose <= 0:
        return
    handler = _StderrHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"{PROG}: %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if verbose == 1 else logging.DEBUG)


def _storage(args: argparse.Namespace) -> dict[str, str] | None:
    storage = storage_options(args.option, args.options_file)
    missing = missing_s3_credentials(args.path, storage)
    if missing is not None:
        raise MissingCredentialsError(
            f"no S3 credentials for {args.path}: {missing}. Give -o s3.access-key=... -o s3.secret-key=... (or "
            "--options-file FILE), or set AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or AWS_PROFILE")
    return storage


def _open(args: argparse.Namespace) -> Table:
    return Table.load(args.path, {"branch": args.branch} if args.branch else None, _storage(args))


def _fail(args: argparse.Namespace, error: BaseException, code: int) -> int:
    if args.verbose:
        traceback.print_exception(error, file=sys.stderr)
    message = " ".join(str(error).split()) or type(error).__name__  # one line, whatever the message holds
    if args.json:
        Output("json").document({"error": {"type": type(error).__name__, "message": message, "exit_code": code}})
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    args = _merge_globals(build_parser().parse_args(argv))
    _setup_logging(args.verbose)
    out = Output.choose(args.json, args.plain)
    try:
        doc = _list(args, out) if args.command == "list" else _run(_open(args), args, out)
        if doc is not None:
            out.document(doc)
    except PaimonDsError as e:
        return _fail(args, e, e.exit_code)
    except BrokenPipeError:  # `paimon-ds describe ... | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so that exit's flush does not fail again
        return 0
    except (ValueError, OSError) as e:
        # refusals and storage failures the library reports with a built-in exception: named, not a bug
        return _fail(args, e, EXIT_STORAGE if isinstance(e, OSError) else PaimonDsError.exit_code)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0
