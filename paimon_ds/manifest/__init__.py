"""Manifests: data file metadata, manifest files (entries) and manifest lists, in Avro."""

from .meta import DataFileMeta, FileKind, FileSource, ManifestEntry, ManifestFileMeta, SimpleStats
from .files import ManifestFile, ManifestList

__all__ = ["DataFileMeta", "FileKind", "FileSource", "ManifestEntry", "ManifestFileMeta", "SimpleStats",
           "ManifestFile", "ManifestList"]
