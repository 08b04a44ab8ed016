"""`paimon-ds describe`: a table's schema, options, latest snapshots and each bucket's files, levels and sorted runs.

describe() gathers the facts as one JSON-ready document (the `--json` form, its keys listed in the README); render()
prints that document as tables (rich on a terminal, aligned plain text elsewhere).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..snapshot.manager import Snapshot
from ..table import Table
from . import lsm
from .output import Column, Output

DEFAULT_LIMIT = 20  # snapshots shown by default (0: all)


def _snapshot_json(s: Snapshot) -> dict[str, Any]:
    return {"id": s.id, "schema_id": s.schema_id, "commit_kind": s.commit_kind, "commit_user": s.commit_user,
            "commit_identifier": s.commit_identifier, "time_millis": s.time_millis,
            "total_record_count": s.total_record_count, "delta_record_count": s.delta_record_count}


def describe(table: Table, limit: int = DEFAULT_LIMIT) -> tuple[dict[str, Any], list[lsm.BucketState]]:
    """The document of `describe --json`, and the bucket states it was made from (for the LSM image)."""
    sm = table.snapshot_manager
    ids = sm.list_ids()
    shown = ids if limit == 0 else ids[-limit:]  # only the snapshot files shown are read
    snapshots = sm.readable_snapshots(shown)  # a damaged old one is left out with a warning
    latest = snapshots[-1] if snapshots else None
    states = lsm.bucket_states(table, latest)
    triggers = lsm.Triggers.of(table)
    schema = table.table_schema
    doc = {
        "path": table.path,
        "branch": table.branch,
        "schema_id": schema.id,
        "columns": [{"name": f.name, "type": f.type.sql()} for f in schema.fields],
        "partition_keys": list(schema.partition_keys),
        "primary_keys": list(schema.primary_keys),
        "options": dict(sorted(schema.options.items())),
        "snapshot_count": len(ids),
        "snapshots": [_snapshot_json(s) for s in snapshots],
        "latest_snapshot_id": latest.id if latest else None,
        # sorted runs and their triggers are a primary-key table's (append tables have no LSM tree)
        "compaction": triggers.to_json() if schema.primary_keys else None,
        "buckets": [s.to_json(triggers) for s in states],
    }
    return doc, states


def _local_time(millis: int) -> str:
    return dt.datetime.fromtimestamp(millis / 1000).strftime("%Y-%m-%d %H:%M:%S")


def render(out: Output, table: Table, doc: dict[str, Any], states: list[lsm.BucketState]) -> None:
    title = f"table {doc['path']}" + (f" (branch {doc['branch']})" if doc["branch"] != "main" else "")
    out.line(title, "bold")
    out.line("  columns: " + ", ".join(f"{c['name']} {c['type']}" for c in doc["columns"]))
    if doc["partition_keys"]:
        out.line(f"  partition keys: {', '.join(doc['partition_keys'])}")
    if doc["primary_keys"]:
        out.line(f"  primary key: {', '.join(doc['primary_keys'])}")

    out.heading("options" if doc["options"] else "options: none")
    out.pairs(list(doc["options"].items()))

    total, shown = doc["snapshot_count"], doc["snapshots"]
    if not shown:
        out.heading("snapshots: none")
    else:
        more = f" (latest {len(shown)} of {total}; --limit 0 shows all)" if len(shown) < total else ""
        out.heading(f"snapshots{more}")
        out.table([Column("snapshot", True), Column("kind"), Column("committed"), Column("records", True),
                   Column("delta", True), Column("identifier", True), Column("commit user")],
                  [[str(s["id"]), s["commit_kind"], _local_time(s["time_millis"]), f"{s['total_record_count']:,}",
                    f"{s['delta_record_count']:+,}", str(s["commit_identifier"]), s["commit_user"]]
                   for s in shown])

    if not states:
        return
    glyphs = out.form == "rich"
    columns = [Column("partition"), Column("bucket", True), Column("files", True), Column("rows", True),
               Column("size", True)]
    if doc["compaction"] is None:
        out.heading(f"files per bucket (snapshot {doc['latest_snapshot_id']})")
        out.table(columns + [Column("levels")],
                  [[s.partition_text, str(s.bucket), str(s.files), f"{s.rows:,}", lsm.human_bytes(s.bytes),
                    lsm.levels_text(s)] for s in states])
        return
    triggers = lsm.Triggers.of(table)
    marks = "┃ yellow, ┃ red" if glyphs else "| and !"
    out.heading(f"sorted runs per bucket (snapshot {doc['latest_snapshot_id']}): compaction trigger "
                f"{triggers.compaction}, stop trigger {triggers.stop} ({marks}); runs newest first"
                + ("" if glyphs else ", each by its level"))
    width = lsm.bar_width(states, triggers)
    out.table(columns + [Column("runs", True), Column("sorted runs"), Column("levels")],
              [[s.partition_text, str(s.bucket), str(s.files), f"{s.rows:,}", lsm.human_bytes(s.bytes),
                lsm.runs_cell(s, triggers), lsm.run_bar(s, triggers, width, glyphs), lsm.levels_text(s)]
               for s in states])
    due = sum(1 for s in states if triggers.debt(len(s.runs or [])) != "ok")
    if due:
        branch = f" --branch {doc['branch']}" if doc["branch"] != "main" else ""
        out.line(f"  {due} bucket(s) over the compaction trigger: `paimon-ds compact {doc['path']}{branch}` "
                 "compacts them",
                 lsm.TERMINAL_TRIGGER)
