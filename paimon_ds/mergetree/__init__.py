"""The LSM merge tree of primary-key tables: key-value layout, merge engines, write buffer, compaction."""
