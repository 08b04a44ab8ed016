"""Manifests: data file metadata, manifest files (entries) and manifest lists, in Avro."""

from .files import ManifestFile, ManifestList
from .meta import DataFileMeta, FileKind, FileSource, ManifestEntry, ManifestFileMeta, SimpleStats

__all__ = ["DataFileMeta", "FileKind", "FileSource", "ManifestEntry", "ManifestFileMeta", "SimpleStats",
           "ManifestFile", "ManifestList"]
