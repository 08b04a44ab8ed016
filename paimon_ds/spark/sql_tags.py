"""Paimon's tag DDL (its Spark SQL extensions, PaimonSqlExtensions.g4), which Spark's own parser does not know:

    SHOW TAGS t
    ALTER TABLE t CREATE TAG [IF NOT EXISTS] name [AS OF VERSION n] [RETAIN n DAYS|HOURS|MINUTES]
    ALTER TABLE t [CREATE OR] REPLACE TAG name [AS OF VERSION n] [RETAIN n DAYS|HOURS|MINUTES]
    ALTER TABLE t DELETE TAG [IF EXISTS] `name1, name2`
    ALTER TABLE t RENAME TAG a TO b

The grammar is these five statements; they are recognised here (keywords in any case, names plain or
backquoted) and run as Paimon's CreateOrReplaceTagExec / DeleteTagExec / RenameTagExec / ShowTagsExec run them.
Everything else goes on to Spark's parser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyspark.sql import DataFrame

from .. import procedures
from .sql import SqlContext, SqlError

_NAME = r"(?:`(?:[^`]|``)+`|[A-Za-z0-9_]+)"
_TABLE = rf"(?P<table>{_NAME}(?:\s*\.\s*{_NAME})*)"
_OPTIONS = (r"(?:\s+AS\s+OF\s+VERSION\s+(?P<version>\d+))?"
            r"(?:\s+RETAIN\s+(?P<retain>\d+)\s+(?P<unit>DAYS|HOURS|MINUTES))?")
_END = r"\s*;?\s*"
_STATEMENTS = {
    "show": re.compile(rf"\s*SHOW\s+TAGS\s+{_TABLE}{_END}", re.I),
    "create": re.compile(rf"\s*ALTER\s+TABLE\s+{_TABLE}\s+CREATE\s+TAG(?P<if_not_exists>\s+IF\s+NOT\s+EXISTS)?\s+"
                         rf"(?P<tag>{_NAME}){_OPTIONS}{_END}", re.I),
    "replace": re.compile(rf"\s*ALTER\s+TABLE\s+{_TABLE}\s+(?P<create>CREATE\s+OR\s+)?REPLACE\s+TAG\s+"
                          rf"(?P<tag>{_NAME}){_OPTIONS}{_END}", re.I),
    "delete": re.compile(rf"\s*ALTER\s+TABLE\s+{_TABLE}\s+DELETE\s+TAG(?P<if_exists>\s+IF\s+EXISTS)?\s+"
                         rf"(?P<tag>{_NAME}){_END}", re.I),
    "rename": re.compile(rf"\s*ALTER\s+TABLE\s+{_TABLE}\s+RENAME\s+TAG\s+(?P<tag>{_NAME})\s+TO\s+"
                         rf"(?P<target>{_NAME}){_END}", re.I),
}
_UNITS = {"DAYS": "d", "HOURS": "h", "MINUTES": "min"}


@dataclass(frozen=True)
class TagStatement:
    kind: str  # show, create, replace, delete, rename
    table: list[str]
    tag: str | None = None
    target: str | None = None
    snapshot: int | None = None
    time_retained: str | None = None  # a duration as procedures.create_tag takes it, e.g. `2 d`
    create: bool = False  # REPLACE: CREATE OR REPLACE
    lenient: bool = False  # IF NOT EXISTS / IF EXISTS


def _name(text: str) -> str:
    return text[1:-1].replace("``", "`") if text.startswith("`") else text


def _table_parts(text: str) -> list[str]:
    return [_name(p) for p in re.findall(_NAME, text)]


def tag_statement(statement: str) -> TagStatement | None:
    """The tag statement ``statement`` is, or None when it is none of them."""
    for kind, pattern in _STATEMENTS.items():
        m = pattern.fullmatch(statement)
        if m is None:
            continue
        groups = m.groupdict()
        retain = groups.get("retain")
        return TagStatement(
            kind, _table_parts(groups["table"]),
            tag=_name(groups["tag"]) if groups.get("tag") else None,
            target=_name(groups["target"]) if groups.get("target") else None,
            snapshot=int(groups["version"]) if groups.get("version") else None,
            time_retained=f"{retain} {_UNITS[groups['unit'].upper()]}" if retain else None,
            create=bool(groups.get("create")),
            lenient=bool(groups.get("if_not_exists") or groups.get("if_exists")))
    return None


def run_tag_statement(ctx: SqlContext, st: TagStatement) -> DataFrame | None:
    _, table = ctx.table(st.table)
    tags = table.snapshot_manager.tag_names()
    if st.kind == "show":
        return ctx.spark.createDataFrame([(t,) for t in sorted(tags)], "tag string")
    if st.kind == "create" or (st.kind == "replace" and st.create and st.tag not in tags):
        if st.tag in tags:
            if st.lenient:
                return None
            raise SqlError(f"Tag {st.tag} is exists.")
        procedures.create_tag(table, st.tag, st.snapshot, time_retained=st.time_retained)
    elif st.kind == "replace":
        procedures.replace_tag(table, st.tag, st.snapshot, time_retained=st.time_retained)
    elif st.kind == "delete":
        for name in (n.strip() for n in st.tag.split(",")):
            procedures.delete_tag(table, name)  # a tag that does not exist is no error, as in Paimon
    else:
        procedures.rename_tag(table, st.tag, st.target)
    return None
