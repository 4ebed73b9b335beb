"""The Kubernetes layer: the only importer of kopf. Handlers stay thin: parse, call reconcile/, write."""
