"""The file contracts of DESIGN.md: snapshot in, goals manifests in, Kafka reassignment JSON out."""
