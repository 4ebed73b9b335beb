"""One module per CLI command: read inputs, call the layer that does the work, write outputs."""
