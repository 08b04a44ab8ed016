"""Builds the class-data-sharing archive the suite's Spark drivers start from (make test; run as a script).

A Spark driver's JVM loads and verifies thousands of classes before its first query; the suite starts dozens of them
(its sessions, stream jobs killed and restarted, Connect servers, concurrent applications). The JVM can instead map
the classes from an archive written by an earlier run (Java's AppCDS: -XX:ArchiveClassesAtExit, then
-XX:SharedArchiveFile). This script is that earlier run: a session that writes, reads, attaches, runs SQL (MERGE
too) and a stream, so that the classes those load are in the archive. A JVM whose class path differs from this
one's (a test's own Spark home) ignores the archive and loads its classes as before.

    SPARK_SUBMIT_OPTS="-XX:ArchiveClassesAtExit=ARCHIVE ..." python tests/spark_class_archive.py

(the Makefile gives the archive's options, the same JVM options as the suite's drivers: SUITE_JVM)
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import paimon_ds


def exercise(spark, base: Path) -> None:
    """What loads most of the classes the suite's drivers use: batch and SQL writes and reads, a stream."""
    rows = spark.range(2000).selectExpr("id", "cast(id % 7 as string) as dt", "id * 1.5 as v")
    rows.write.format("paimon").option("primary-key", "id").option("bucket", "2").mode("append") \
        .save(str(base / "wh/db.db/t"))
    paimon_ds.read(spark, str(base / "wh/db.db/t")).groupBy("dt").count().collect()
    spark.read.format("paimon").load(str(base / "wh/db.db/t")).where("id > 10").toPandas()
    paimon_ds.attach(spark, str(base / "wh"))
    for statement in ("CREATE TABLE db.s (a INT, b STRING) TBLPROPERTIES ('primary-key' = 'a', 'bucket' = '2')",
                      "INSERT INTO db.s VALUES (1, 'x'), (2, 'y')",
                      "MERGE INTO db.s t USING (SELECT 2 AS a, 'z' AS b) src ON t.a = src.a "
                      "WHEN MATCHED THEN UPDATE SET b = src.b WHEN NOT MATCHED THEN INSERT *",
                      "UPDATE db.s SET b = 'w' WHERE a = 1", "DELETE FROM db.s WHERE a = 2",
                      "SELECT * FROM db.s ORDER BY a"):
        result = paimon_ds.sql(spark, statement)  # a DataFrame for a query, None for the others
        if result is not None:
            result.collect()
    spark.sql("SELECT * FROM db.s").join(spark.range(3).withColumnRenamed("id", "a"), "a").collect()
    (base / "in").mkdir()
    rows.limit(100).write.parquet(str(base / "in/part"))
    stream = spark.readStream.schema(rows.schema).parquet(str(base / "in/part"))
    query = stream.writeStream.format("paimon").option("checkpointLocation", str(base / "cp")) \
        .trigger(availableNow=True).start(str(base / "wh/db.db/events"))
    query.awaitTermination()


def main() -> None:
    spark = paimon_ds.session("paimon_ds-class-archive", master="local[2]", conf={"spark.ui.enabled": "false"})
    with tempfile.TemporaryDirectory() as base:
        exercise(spark, Path(base))
    # the JVM writes the archive as it exits, which it does once its gateway's stdin closes: wait for that
    jvm = spark.sparkContext._gateway.proc
    spark.stop()
    jvm.stdin.close()
    if jvm.wait(timeout=600) != 0:
        raise SystemExit(f"the Spark driver exited with {jvm.returncode}: no class archive")


if __name__ == "__main__":
    main()
