"""Storage settings: where credentials and endpoints come from, and how they reach fsspec.

A table's metadata holds nothing but its path. Credentials and endpoints come, in this order, from the
job's options (Paimon's `s3.*` names or Hadoop's `fs.s3a.*` names), from Spark conf
(`spark.hadoop.fs.s3a.*`, read by the Spark layer and passed down as `fs.s3a.*`), and from the
environment (botocore's own chain: `AWS_ACCESS_KEY_ID`, `AWS_ENDPOINT_URL_S3`, profiles, instance roles).
Keys without a dot are fsspec/s3fs arguments (`key`, `endpoint_url`, `client_kwargs`...) and pass as they are.
missing_s3_credentials tells, before a job starts, whether none of the three gives credentials.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import fsspec.core

# Option keys that configure storage: never stored in a table's schema, never table options.
STORAGE_PREFIXES = ("s3.", "s3a.", "fs.", "hadoop.")

# Our own S3 commit settings (not s3fs arguments), under paimon_ds's prefix: Paimon owns `s3.*`. Parsed,
# with their old names (deprecated, still read), by the option registry (registry.py).
CONDITIONAL_WRITES = "paimon_ds.s3.conditional-writes"  # auto (probe the store once) | true | false
SINGLE_WRITER = "paimon_ds.s3.single-writer"  # true: the user guarantees one committer on a store without them
DEPRECATED_CONDITIONAL_WRITES = "s3.conditional-writes"
DEPRECATED_SINGLE_WRITER = "s3.single-writer"
OWN_STORAGE_KEYS = frozenset({CONDITIONAL_WRITES, SINGLE_WRITER})

# Paimon's S3 option names and Hadoop S3A's, for each s3fs argument.
_S3_KEYS: dict[str, tuple[str, ...]] = {
    "endpoint": ("s3.endpoint", "fs.s3a.endpoint", "s3a.endpoint"),
    "key": ("s3.access-key", "s3.access.key", "fs.s3a.access.key", "s3a.access.key"),
    "secret": ("s3.secret-key", "s3.secret.key", "fs.s3a.secret.key", "s3a.secret.key"),
    "token": ("s3.session-token", "s3.session.token", "fs.s3a.session.token", "s3a.session.token"),
    "region": ("s3.region", "fs.s3a.endpoint.region", "fs.s3a.region", "s3a.region"),
    "path_style": ("s3.path.style.access", "s3.path-style-access", "fs.s3a.path.style.access",
                   "s3a.path.style.access"),
    "ssl": ("s3.connection.ssl.enabled", "fs.s3a.connection.ssl.enabled"),
    "provider": ("fs.s3a.aws.credentials.provider",),
}
S3_PROTOCOLS = ("s3", "s3a", "s3n")

# How long the credentials check waits for botocore's chain. Its last link asks the EC2 instance metadata
# service, which takes 2.0 s to give up where an address accepts and never answers (1 s for the IMDSv2
# token, 1 s for IMDSv1; measured) and longer with more attempts configured. A chain still busy then counts
# as undecided, so the check never delays a job by more than this, nor refuses one it cannot judge.
CREDENTIALS_CHECK_SECONDS = 5.0
NO_CREDENTIALS = "no access key and secret key"  # what missing_s3_credentials says when nothing gave any


def is_storage_key(key: str) -> bool:
    return key.startswith(STORAGE_PREFIXES) or key in OWN_STORAGE_KEYS


def split_storage(options: Mapping[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(table and job options, storage options) of one option map."""
    table, storage = {}, {}
    for k, v in (options or {}).items():
        (storage if is_storage_key(str(k)) else table)[k] = v
    return table, storage


def protocol_of(path: str) -> str:
    protocol, _ = fsspec.core.split_protocol(path)
    return protocol or "file"


def _first(options: Mapping[str, Any], names: tuple[str, ...]) -> Any:
    for name in names:
        if options.get(name) not in (None, ""):
            return options[name]
    return None


def _is_true(value: Any) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes")


def fsspec_options(path: str, storage_options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The keyword arguments of the fsspec filesystem for ``path``."""
    options = dict(storage_options or {})
    kwargs = {k: v for k, v in options.items() if "." not in k}
    if protocol_of(path) not in S3_PROTOCOLS:
        return kwargs
    s3 = {name: _first(options, keys) for name, keys in _S3_KEYS.items()}
    if s3["endpoint"] is not None and "endpoint_url" not in kwargs:
        endpoint = str(s3["endpoint"]).rstrip("/")
        if "://" not in endpoint:  # Hadoop allows a bare host; TLS unless switched off
            endpoint = ("http://" if s3["ssl"] is not None and not _is_true(s3["ssl"]) else "https://") + endpoint
        kwargs["endpoint_url"] = endpoint
    for name in ("key", "secret", "token"):
        if s3[name] is not None:
            kwargs.setdefault(name, str(s3[name]))
    if s3["provider"] is not None and "Anonymous" in str(s3["provider"]):
        kwargs.setdefault("anon", True)
    if s3["region"] is not None:
        kwargs["client_kwargs"] = {"region_name": str(s3["region"]), **kwargs.get("client_kwargs", {})}
    if s3["path_style"] is not None and _is_true(s3["path_style"]):
        config = dict(kwargs.get("config_kwargs", {}))
        config["s3"] = {"addressing_style": "path", **config.get("s3", {})}
        kwargs["config_kwargs"] = config
    # Every listing must be fresh: snapshots and schemas appear under a long-lived filesystem.
    kwargs.setdefault("use_listings_cache", False)
    return kwargs


def missing_s3_credentials(path: str, storage_options: Mapping[str, Any] | None,
                           timeout: float = CREDENTIALS_CHECK_SECONDS) -> str | None:
    """What s3fs would lack to sign requests to ``path``, or None: not S3, anonymous, keys (or a profile, or
    a botocore session) given, credentials found by botocore's chain in this process's environment, or the
    chain undecided after ``timeout`` seconds (the job then goes on and its requests find out)."""
    if protocol_of(path) not in S3_PROTOCOLS:
        return None
    kwargs = fsspec_options(path, storage_options)
    client = kwargs.get("client_kwargs") or {}
    key = kwargs.get("key") or client.get("aws_access_key_id")
    secret = kwargs.get("secret") or client.get("aws_secret_access_key")
    if _is_true(kwargs.get("anon", False)) or kwargs.get("session") is not None or (key and secret):
        return None
    if key or secret:  # botocore refuses half a pair (PartialCredentialsError), even with the rest in the environment
        return "an access key but no secret key" if key else "a secret key but no access key"
    if kwargs.get("profile"):
        return None  # botocore reads the profile, and names it if it has no credentials
    return NO_CREDENTIALS if environment_has_credentials(timeout=timeout) is False else None


def environment_has_credentials(timeout: float = CREDENTIALS_CHECK_SECONDS) -> bool | None:
    """Whether botocore's credential chain (environment variables, profiles, ~/.aws, container and instance
    roles) finds credentials in this process; None if it fails or has not answered within ``timeout``."""
    answer: list[bool | None] = []

    def resolve() -> None:
        try:
            import botocore.session  # optional and heavy: only S3 jobs that ask about credentials load it
            answer.append(botocore.session.Session().get_credentials() is not None)
        except Exception:  # noqa: BLE001 - a broken profile or config: the job's own requests report it
            answer.append(None)

    # a daemon thread, so a metadata service that never answers delays the check by ``timeout`` at most
    resolver = threading.Thread(target=resolve, name="paimon_ds-credentials-check", daemon=True)
    resolver.start()
    resolver.join(timeout)
    return answer[0] if answer else None


# Hadoop's vectored-read tuning, which Spark 4.2 sets on every session: nothing a user chose, nothing s3fs reads
SPARK_DEFAULT_S3A_TUNING = "spark.hadoop.fs.s3a.vectored."


def spark_conf_storage(conf: Mapping[str, str]) -> dict[str, str]:
    """`fs.s3a.*` settings from Spark conf entries `spark.hadoop.fs.s3a.*` (the names users already set)."""
    prefix = "spark.hadoop."
    return {k[len(prefix):]: v for k, v in conf.items()
            if (k.startswith(prefix + "fs.s3a.") or k.startswith(prefix + "fs.s3."))
            and not k.startswith(SPARK_DEFAULT_S3A_TUNING)}
