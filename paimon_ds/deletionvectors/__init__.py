"""Deletion vectors: per data file, the row positions deleted since it was written (Paimon's
`deletion-vectors.enabled`), kept in DELETION_VECTORS index files and applied when reading."""
