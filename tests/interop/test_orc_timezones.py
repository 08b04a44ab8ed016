"""ORC timestamps written in a time zone other than UTC, read as Java reads them.

Java Paimon writes TIMESTAMP(p) to ORC in its JVM's default zone (ORC records it as each stripe's writer zone).
Files of a non-UTC writer zone come from any Paimon job whose JVM is not on UTC; here Java Paimon 0.9 writes them
in the oracle's JVM with its default zone switched for the write (and back after), then reads them in UTC.
pyarrow's ORC reader (Apache ORC's C++ library) moves such values to the wall clock before compensating a
pre-1970 second and takes other offsets before a zone's first transition (see paimon_ds/format/orc.py): paimon_ds
must read exactly what Java reads, here for hundreds of values per zone concentrated where the readers differ (within
two days of 1970-01-01 and around 1900), in zones east and west of UTC, with daylight saving time, half-hour
offsets and an old local mean time, also nested in a ROW and through Spark.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from paimon_ds import Table

from .java_rows import java_script, plain_rows, row_differences, spark_rows

ZONES = ["Asia/Shanghai", "America/New_York", "Europe/Berlin", "Asia/Kolkata", "America/St_Johns", "Africa/Monrovia"]
NS = 1_000_000_000


def _values(n: int, seed: int) -> list[int]:
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        secs = rnd.choice([rnd.randint(-3_000_000_000, 2_000_000_000), rnd.randint(-200_000, 200_000),
                           rnd.randint(-2_250_000_000, -2_150_000_000)])  # anywhere, near 1970, around 1900
        frac = rnd.choice([0, rnd.randint(0, 999) * 1_000_000, rnd.randint(0, NS - 1), rnd.randint(1, 999_999)])
        out.append(secs * NS + frac)
    # the edges: just before 1970 and just before 2015 (ORC's base), a millisecond fraction on both sides
    return out + [-1, -999_999_999, -NS, -NS - 1, -1_000_000, 1_420_070_400 * NS - 1, 1_420_070_400 * NS - NS // 2,
                  28_800 * NS - 1, 28_799 * NS + NS // 2, -18_000 * NS + 1]


FIELDS = [["id", "INT NOT NULL"], ["t9", "TIMESTAMP(9)"], ["t3", "TIMESTAMP(3)"], ["t6", "TIMESTAMP(6)"],
          ["l9", "TIMESTAMP(9) WITH LOCAL TIME ZONE"],
          ["r", {"type": "ROW", "fields": [{"id": 10, "name": "a", "type": "TIMESTAMP(9)"}]}]]

# Java: the table written with the JVM's default zone set to ZONE (restored after), then read in UTC
JAVA_WRITE = """
tzc = jvm.java.util.TimeZone
old_zone = tzc.getDefault()
tzc.setDefault(tzc.getTimeZone(ZONE))
try:
    create_table(FIELDS, [], [], {"file.format": "orc"})
    write_rows(ROWS)
finally:
    tzc.setDefault(old_zone)
print(json.dumps(read_rows()))
"""


@pytest.mark.parametrize("zone", ZONES)
def test_orc_written_in_a_zone_reads_as_java_reads(spark, java_oracle, table_path, zone):
    values = _values(300, ZONES.index(zone))
    rows: list[list[Any]] = [[i, v, v - v % 1_000_000, v - v % 1000, v, [v]] for i, v in enumerate(values)]
    java = sorted(json.loads(java_oracle.exec(table_path, java_script(JAVA_WRITE, FIELDS=FIELDS, ROWS=rows,
                                                                      ZONE=zone)).strip().splitlines()[-1]))
    table = Table.load(table_path)
    ours = sorted(plain_rows(table.to_arrow()))
    assert ours == java, row_differences(ours, java, [f[0] for f in FIELDS])[:10]
    via_spark = sorted(plain_rows(spark.read.format("paimon").load(table_path).toArrow()))
    assert via_spark == spark_rows(java, table.arrow_schema())
    # what pyarrow alone gives differs from Java for some values: the correction is exercised, not idle
    import glob

    import pyarrow.orc as po
    raw = po.ORCFile(glob.glob(f"{table_path}/bucket-0/*.orc")[0]).read(columns=["id", "t9"]).to_pylist()
    java_t9 = {r[0]: r[1] for r in java}
    assert any(int(r["t9"].value) != java_t9[r["id"]] for r in raw if r["t9"] is not None)
