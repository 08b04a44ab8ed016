"""Table schemas: Paimon's types and their Arrow mapping, the schema files (schema-N) and their manager, ALTER
TABLE's schema changes, write.merge-schema, and the checks a schema must pass to be created or written."""
