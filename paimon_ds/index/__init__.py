"""Paimon's indexes kept beside the data: hash indexes of dynamic-bucket tables and index manifests.

hash_index.py: HASH index files (`index-<uuid>-<n>`) and the per-bucket HashIndexMaintainer;
paths.py: where index files live (`index/`, or the bucket directory with `index-file-in-data-file-dir`);
manifest.py: IndexFileMeta, IndexManifestEntry and index manifests (`manifest/index-manifest-*`);
bucket_assigner.py: key and partition hashes and the dynamic bucket assigner (HashBucketAssigner).
"""

from .bucket_assigner import (
    BUCKET_COLUMN,
    DynamicBucketAssigner,
    assigner_ids,
    is_dynamic_bucket,
    key_hashes,
    partition_hashes,
)
from .manifest import HASH_INDEX, IndexFileMeta, IndexManifestEntry, IndexManifestFile

__all__ = ["BUCKET_COLUMN", "HASH_INDEX", "DynamicBucketAssigner", "IndexFileMeta", "IndexManifestEntry",
           "IndexManifestFile", "assigner_ids", "is_dynamic_bucket", "key_hashes", "partition_hashes"]
