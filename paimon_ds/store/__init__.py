"""The FileStore (one table's metadata, what every layer below the facade takes) and what builds on it: consumers,
data-file external paths, and row tracking."""
