"""Load samples: the schema shared by the collector (writer) and the Spark scoring job (reader)."""
