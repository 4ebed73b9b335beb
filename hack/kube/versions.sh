# Pinned versions of the Kubernetes test bed. Source it; do not run it.
# Kubernetes v1.35.8 builds with Go 1.26; its staging modules are released as v0.35.8.
# Changing a version here invalidates the cache key, so the next provision rebuilds.
KUBE_VERSION=v1.35.8
# etcd 3.6 is the line Kubernetes 1.35 supports (its own go.mod pins the 3.6 client).
ETCD_VERSION=v3.6.16
HELM_VERSION=v3.22.0
KIND_VERSION=v0.33.0
export KUBE_VERSION ETCD_VERSION HELM_VERSION KIND_VERSION
