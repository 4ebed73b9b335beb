"""The file contracts of docs/design.md: snapshot in, goals manifests in, Kafka reassignment JSON out."""
