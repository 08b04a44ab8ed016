"""The Spark layer's option names and storage helpers, shared by the source, its readers and writers, and the
package's own jobs (clustered write, row-level changes, SQL).

Option names: those Spark itself passes to a source, and those of the package's own jobs (not table options,
not for users). Storage helpers: a job's storage settings from its options and the session's
`spark.hadoop.fs.s3a.*` conf, and the check that an S3 job finds credentials before any task runs.
No pyspark here: the read and write path and paimon_ds.register() import this from a Spark Connect client too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..options.registry import OptionError
from ..options.storage import (
    NO_CREDENTIALS,
    is_storage_key,
    missing_s3_credentials,
    spark_conf_storage,
    split_storage,
)
from .jvm import session_conf

# Options Spark itself passes to a source with the user's: not table options (streaming ones, and the
# reserved properties of a catalog table: TableCatalog.PROP_*).
SPARK_OPTIONS = {"path", "checkpointlocation", "queryname", "owner", "provider", "location", "comment",
                 "external", "is_managed_location", "collation"}

# Options of the package's own jobs (row-level DELETE / UPDATE / MERGE, static partition overwrite):
# not table options, and not for users.
ROW_KIND_COLUMN_OPTION = "paimon_ds.row-kind-column"
# Paimon's Spark connector option (SparkConnectorOptions.READ_CHANGELOG): reads as `$audit_log`, see source.py
READ_CHANGELOG_OPTION = "read.changelog"
FILE_COLUMN_OPTION = "paimon_ds.file-column"
ONLY_FILES_OPTION = "paimon_ds.only-files"
POSITION_COLUMN_OPTION = "paimon_ds.position-column"  # with the file column: each row's position in its file
REPLACE_FILES_OPTION = "paimon_ds.replace-files"
OVERWRITE_PARTITION_OPTION = "paimon_ds.overwrite-partition"
# foreach_batch_writer: commit each micro-batch once, as this user with the batch id as identifier
COMMIT_USER_OPTION = "paimon_ds.commit-user"
COMMIT_IDENTIFIER_OPTION = "paimon_ds.commit-identifier"
# paimon_ds.write to a dynamic-bucket table: the snapshot whose hash index its assigners read, so that the
# writers restore (and the commit checks for conflicts) from the same one
BASE_SNAPSHOT_OPTION = "paimon_ds.base-snapshot"
JOB_OPTIONS = {ROW_KIND_COLUMN_OPTION, FILE_COLUMN_OPTION, ONLY_FILES_OPTION, REPLACE_FILES_OPTION,
               OVERWRITE_PARTITION_OPTION, COMMIT_USER_OPTION, COMMIT_IDENTIFIER_OPTION, POSITION_COLUMN_OPTION,
               BASE_SNAPSHOT_OPTION}

# Internal option set by paimon_ds.write(): the input is clustered by (partition, bucket). A writer option, not
# one of JOB_OPTIONS: it reaches the writer with the table options.
CLUSTERED_OPTION = "paimon_ds.clustered"
# The bucket of each row of a dynamic-bucket table, given by the package's assigners (spark/cluster.py).
BUCKET_COLUMN = "_paimon_ds_bucket"


class MissingCredentialsError(OptionError):
    """A read or write of an S3 path that would find no credentials: refused while Spark plans it, before any
    task runs or any file is written."""


def check_s3_credentials(path: str, job_storage: Mapping[str, Any], bound: Mapping[str, Any]) -> None:
    """Raise MissingCredentialsError if neither the job's storage options, nor the session settings bound into
    the source (``bound``), nor the environment give credentials for ``path`` (storage.missing_s3_credentials).
    Without the check, s3fs fails with botocore's bare "Unable to locate credentials", which does not say that
    `spark.hadoop.fs.s3a.*` set after register() are not seen."""
    missing = missing_s3_credentials(path, {**bound, **job_storage})
    if missing is None:
        return
    environment = (", and the environment (botocore's chain: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, AWS_PROFILE, "
                   "~/.aws, container or instance role: nothing)") if missing == NO_CREDENTIALS else ""
    raise MissingCredentialsError(
        f"no S3 credentials for {path}: the storage settings have {missing}. Looked in the job's options "
        f"({', '.join(sorted(job_storage)) or 'no storage options'}), the session's spark.hadoop.fs.s3a.* "
        "settings bound into the source when paimon_ds.register(spark) (or attach) last ran "
        f"({', '.join(sorted(bound)) or 'none bound'}){environment}. Python data sources cannot read Spark conf, "
        "so spark.hadoop.fs.s3a.* settings made after paimon_ds.register(spark) are not seen: call "
        "paimon_ds.register(spark) again after setting them (paimon_ds.attach(spark, warehouse) again for "
        "attached tables), or pass s3.access-key, s3.secret-key and s3.endpoint as options of the read or write. "
        "A public bucket: fs.s3a.aws.credentials.provider = "
        "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider.")


def table_path(options: dict[str, str]) -> str:
    path = options.get("path")
    if not path:
        raise OptionError("the paimon format needs a table path: .save(path) / .load(path) or option('path', ...). "
                          "A table made by plain spark.sql CREATE TABLE ... USING paimon has none (Spark gives a "
                          "Python data source no LOCATION or TBLPROPERTIES): create Paimon tables with "
                          "paimon_ds.sql(spark, 'CREATE TABLE ...') or paimon_ds.Catalog, then paimon_ds.attach")
    return path


def storage_options(options: Mapping[str, str], defaults: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """Storage settings of a job: its own `s3.*` / `fs.s3a.*` options over the session's (``defaults``)."""
    merged = {**(defaults or {}), **split_storage(options)[1]}
    return merged or None


def storage_job_options(storage: Mapping[str, Any] | None) -> dict[str, str]:
    """Storage settings as options of a Spark read or write: Paimon's or Hadoop's names, string values."""
    out = {}
    for k, v in (storage or {}).items():
        if not is_storage_key(k):
            raise OptionError(f"storage option {k!r}: Spark jobs take Paimon's or Hadoop's option names "
                              "(s3.endpoint, s3.access-key, s3.secret-key, fs.s3a.path.style.access, ...)")
        out[k] = str(v)
    return out


def session_storage(spark: Any) -> dict[str, str]:
    """`fs.s3a.*` settings from the session's `spark.hadoop.fs.s3a.*` conf (classic and Connect alike)."""
    return spark_conf_storage(session_conf(spark))
