"""Writing and naming files (data, key-value and index files), below both the merge tree and the operations."""
