"""The Kubernetes layer, the only importer of kopf: thin handlers (handlers.py) calling the services
(pools.py, executions.py) that reach Kubernetes through KubePort (port.py) and decide with reconcile/."""
