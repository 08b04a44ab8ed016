"""The Python data source floor: a writer that receives Spark's Arrow batches and does nothing.

Benchmarks time it in the same run as Spark's parquet writer and paimon_ds, so the cost of moving
rows from the JVM to Python workers (which no Python data source can avoid) is measured, not assumed.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage


class _NullWriter(DataSourceArrowWriter):
    def write(self, iterator):
        for _ in iterator:
            pass
        return WriterCommitMessage()

    def commit(self, messages) -> None:
        pass


class NullSink(DataSource):
    @classmethod
    def name(cls) -> str:
        return "paimon_ds_bench_null"

    def writer(self, schema, overwrite):
        return _NullWriter()


def register(spark) -> str:
    spark.dataSource.register(NullSink)
    return NullSink.name()
