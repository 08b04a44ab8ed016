"""The only package that imports pyspark: thin adapters from Spark's Data Source API to the core."""
