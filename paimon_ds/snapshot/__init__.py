"""Snapshots and what names them: snapshot files and their manager (LATEST/EARLIEST hints, tags, changelog), time
travel, snapshot and changelog retention, automatic tags' periods, and branches."""
