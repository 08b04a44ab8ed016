"""Bytes Paimon defines: BinaryRow, the bucket hash, partition paths, column stats."""
