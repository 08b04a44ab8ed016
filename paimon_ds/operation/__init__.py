"""Table operations: write (tasks), commit (driver), scan (planning) and read (tasks)."""
