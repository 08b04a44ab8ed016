"""Storage options of `paimon-ds`: `-o KEY=VALUE` and `--options-file FILE`, as the Python API's storage_options.

Keys are Paimon's (`s3.endpoint`, `s3.access-key`, `s3.secret-key`, `s3.path.style.access`, ...), Hadoop's
(`fs.s3a.*`) or fsspec keyword arguments (no dot: `anon`, `profile`, ...); options/storage.py maps them to the
filesystem.
A file keeps secrets off the command line (and out of the shell's history and `ps`): a JSON object, or Java
properties lines (`key=value` or `key: value`, `#` and `!` comments). `-o` wins over the file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..options.registry import OptionError
from ..options.storage import is_storage_key

PROPERTY = re.compile(r"([^=:\s]+)\s*(?:[=:]|\s)\s*(.*)")


def parse_pair(text: str, where: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise OptionError(f"{where}: expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def _check_key(key: str, where: str) -> None:
    if "." in key and not is_storage_key(key):
        raise OptionError(f"{where}: {key!r} is not a storage option (keys start with s3., s3a., fs. or hadoop., "
                          "or are fsspec arguments without a dot)")


def read_options_file(path: str) -> dict[str, str]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise OptionError(f"--options-file: cannot read {path}: {e.strerror or e}") from None
    if path.endswith(".json") or text.lstrip().startswith("{"):
        try:
            loaded: Any = json.loads(text)
        except json.JSONDecodeError as e:
            raise OptionError(f"--options-file {path}: not valid JSON: {e}") from None
        if not isinstance(loaded, dict) or any(isinstance(v, (dict, list)) for v in loaded.values()):
            raise OptionError(f"--options-file {path}: expected a JSON object of KEY: VALUE (strings, numbers "
                              "or booleans)")
        return {str(k): (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in loaded.items()}
    options = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#!":
            continue
        # as java.util.Properties: the key ends at the first '=', ':' or blank
        match = PROPERTY.fullmatch(stripped)
        if match is None:
            raise OptionError(f"--options-file {path}, line {number}: expected key=value or key: value")
        options[match.group(1)] = match.group(2)
    return options


def storage_options(pairs: Sequence[str], options_file: str | None) -> dict[str, str] | None:
    """The storage options the command line gives (None: none), checked before any table is opened."""
    options = read_options_file(options_file) if options_file else {}
    for key in options:
        _check_key(key, f"--options-file {options_file}")
    for text in pairs:
        key, value = parse_pair(text, "--option")
        _check_key(key, "--option")
        options[key] = value
    return options or None
