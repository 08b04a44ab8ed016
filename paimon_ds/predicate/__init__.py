"""Filters: core predicates (stats pruning and row filters) and filters as text or col() expressions."""
