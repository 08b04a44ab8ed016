"""File I/O: FileIO over fsspec, with atomic create-if-absent (a conditional PUT on S3)."""
