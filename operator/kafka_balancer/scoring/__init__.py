"""The scoring job (PySpark): samples → per-partition load model → per-broker goal scores →
scored candidate actions. Importing this package does not import pyspark."""
