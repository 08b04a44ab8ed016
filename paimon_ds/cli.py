"""`paimon-ds`: table maintenance from the command line, without Spark.

    paimon-ds describe PATH
    paimon-ds compact PATH [--full]
    paimon-ds expire PATH [--retain-min N] [--retain-max N] [--older-than DURATION]
    paimon-ds tag PATH NAME [--snapshot ID]       paimon-ds delete-tag PATH NAME
    paimon-ds rollback PATH (--snapshot ID | --tag NAME)
    paimon-ds remove-orphans PATH [--older-than DURATION] [--dry-run]
    paimon-ds branches PATH                       paimon-ds branch PATH NAME [--tag TAG] [--ignore-if-exists]
    paimon-ds delete-branch PATH NAME[,NAME...]   paimon-ds rename-branch PATH FROM TO
    paimon-ds fast-forward PATH NAME

Every command takes --branch NAME to work on a branch instead of main (describe, compact, expire, tag...; a
branch is created from a tag of that branch, and fast-forward moves that branch).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Sequence

from . import procedures
from .format.partition import partition_filter
from .mergetree.compact import sorted_runs
from .operation import maintenance as m
from .operation.compact import compact_in_process
from .operation.scan import TableScan
from .options import parse_duration_ms
from .table import Table


def _describe(table: Table) -> str:
    sm = table.snapshot_manager
    title = f"table {table.path}" + (f" (branch {table.branch})" if table.branch != "main" else "")
    lines = [title, "  columns: " + ", ".join(f"{f.name} {f.type.sql()}" for f in table.schema.fields)]
    if table.schema.partition_keys:
        lines.append(f"  partition keys: {', '.join(table.schema.partition_keys)}")
    if table.schema.primary_keys:
        lines.append(f"  primary key: {', '.join(table.schema.primary_keys)}")
    lines.append(f"  options: {dict(sorted(table.schema.options.items()))}")
    lines.append("")
    lines.append(f"  {'snapshot':>8}  {'kind':<9}  {'identifier':>20}  {'records':>12}  {'delta':>10}  commit user")
    for sid in sm.list_ids():
        s = sm.snapshot(sid)
        lines.append(f"  {s.id:>8}  {s.commit_kind:<9}  {s.commit_identifier:>20}  {s.total_record_count:>12,}  "
                     f"{s.delta_record_count:>+10,}  {s.commit_user}")
    latest = sm.latest()
    if latest is not None:
        scan = TableScan(table)
        buckets: dict[tuple[bytes, int], list] = defaultdict(list)
        for e in scan.read_entries(latest):
            buckets[(e.partition, e.bucket)].append(e.file)
        lines += ["", f"  {'partition':<30}  {'bucket':>6}  {'files':>5}  {'rows':>12}  {'runs':>4}  levels"]
        for (partition, bucket), files in sorted(buckets.items(), key=lambda kv: (kv[0][0], kv[0][1])):
            values = scan._partition_values(partition)
            part = ", ".join(f"{k}={v}" for k, v in zip(table.schema.partition_keys, values)) or "-"
            levels: dict[int, int] = defaultdict(int)
            for f in files:
                levels[f.level] += 1
            level_text = " ".join(f"L{lv}:{n}" for lv, n in sorted(levels.items()))
            lines.append(f"  {part:<30}  {bucket:>6}  {len(files):>5}  {sum(f.row_count for f in files):>12,}  "
                         f"{len(sorted_runs(files)):>4}  {level_text}")
    return "\n".join(lines)


def _progress(done: int, total: int, what: str) -> None:
    print(f"\r  {what}: {done}/{total}", end="" if done < total else "\n", file=sys.stderr, flush=True)


def _compact(table: Table, full: bool, partitions: str | None) -> str:
    done = [0]

    def progress(n: int, total: int) -> None:
        done[0] = n
        _progress(n, total, "buckets compacted")

    snapshot = compact_in_process(table, None, full, progress=progress,
                                  partitions=partition_filter(table, partitions))
    if snapshot is None:
        return "nothing to compact"
    return f"compacted {done[0]} bucket(s): snapshot {snapshot.id}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="paimon-ds", description="Maintain Apache Paimon tables (no Spark needed).")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--branch", help="work on this branch of the table (default: main)")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, **kwargs):
        return sub.add_parser(name, parents=[common], **kwargs)

    p = add("describe", help="schema, snapshots, and files, rows, sorted runs and levels per bucket")
    p.add_argument("path")
    p = add("compact", help="compact every bucket that needs it (universal compaction / small files)")
    p.add_argument("path")
    p.add_argument("--full", action="store_true", help="full compaction: one sorted run (or file set) per bucket")
    p.add_argument("--partitions", help="only these partitions, e.g. 'dt=2024-01-01,hr=1;dt=2024-01-02'")
    p = add("expire", help="expire old snapshots (defaults: the table's snapshot.* options)")
    p.add_argument("path")
    p.add_argument("--retain-min", type=int)
    p.add_argument("--retain-max", type=int)
    p.add_argument("--older-than", help="expire snapshots older than this (e.g. 1 h, 7 d)")
    p = add("tag", help="tag a snapshot (the latest by default)")
    p.add_argument("path")
    p.add_argument("name")
    p.add_argument("--snapshot", type=int)
    p = add("delete-tag", help="delete a tag and the files only it kept")
    p.add_argument("path")
    p.add_argument("name")
    p = add("rollback", help="make a snapshot or tag the latest again (newer snapshots are deleted)")
    p.add_argument("path")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--snapshot", type=int)
    target.add_argument("--tag")
    p = add("remove-orphans", help="delete unreferenced files older than a margin (default 1 d)")
    p.add_argument("path")
    p.add_argument("--older-than", default="1 d")
    p.add_argument("--dry-run", action="store_true")
    p = add("branches", help="list the table's branches")
    p.add_argument("path")
    p = add("branch", help="create a branch: from a tag, or empty (the current schema, no snapshot)")
    p.add_argument("path")
    p.add_argument("name")
    p.add_argument("--tag")
    p.add_argument("--ignore-if-exists", action="store_true")
    p = add("delete-branch", help="delete branches (comma-separated); files only they used become orphans")
    p.add_argument("path")
    p.add_argument("name")
    p = add("rename-branch", help="rename a branch")
    p.add_argument("path")
    p.add_argument("name")
    p.add_argument("to")
    p = add("fast-forward", help="make main (or --branch) what a branch is: its snapshots, schemas and tags")
    p.add_argument("path")
    p.add_argument("name")
    args = parser.parse_args(argv)

    try:
        table = Table.load(args.path, {"branch": args.branch} if args.branch else None)
        if args.command == "describe":
            print(_describe(table))
        elif args.command == "compact":
            print(_compact(table, args.full, args.partitions))
        elif args.command == "expire":
            older = parse_duration_ms(args.older_than) if args.older_than else None
            result = m.expire_snapshots(table, args.retain_min, args.retain_max, older)
            print(f"expired {len(result.expired)} snapshot(s) {result.expired}, "
                  f"deleted {len(result.deleted_files)} file(s)")
        elif args.command == "tag":
            print(f"tag {args.name!r} -> snapshot {m.create_tag(table, args.name, args.snapshot).id}")
        elif args.command == "delete-tag":
            print(f"deleted tag {args.name!r} and {len(m.delete_tag(table, args.name))} file(s) only it kept")
        elif args.command == "rollback":
            print(f"rolled back to snapshot {m.rollback(table, args.snapshot, args.tag).id}")
        elif args.command == "branches":
            print("\n".join(["main", *table.branch_manager().branches()]))
        elif args.command == "branch":
            created = procedures.create_branch(table, args.name, args.tag, args.ignore_if_exists)
            origin = f"from tag {args.tag!r}" if args.tag else "empty (no snapshot yet)"
            print(f"created branch {args.name!r} {origin}" if created else f"branch {args.name!r} exists")
        elif args.command == "delete-branch":
            procedures.delete_branch(table, args.name)
            print(f"deleted branch(es) {args.name}")
        elif args.command == "rename-branch":
            procedures.rename_branch(table, args.name, args.to)
            print(f"renamed branch {args.name!r} to {args.to!r}")
        elif args.command == "fast-forward":
            procedures.fast_forward(table, args.name)
            print(f"fast-forwarded {table.branch!r} to branch {args.name!r}: latest snapshot "
                  f"{table.snapshot_manager.latest_id()}")
        elif args.command == "remove-orphans":
            found = m.remove_orphan_files(table, parse_duration_ms(args.older_than), dry_run=args.dry_run)
            verb = "would delete" if args.dry_run else "deleted"
            print(f"{verb} {len(found)} orphan file(s)" + "".join(f"\n  {f}" for f in found))
    except (LookupError, ValueError, OSError) as e:  # our errors name the problem: no traceback
        print(f"paimon-ds {args.command}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
