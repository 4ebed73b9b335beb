# Pinned versions of the Kubernetes test bed. Source it; do not run it.
# The wrapper modules' go.mod files pin the same versions; provision.sh refuses a mismatch.
# Kubernetes v1.35.8 builds with Go 1.26; its staging modules are released as v0.35.8.
KUBE_VERSION=v1.35.8
# Stamped into the binaries as the release build does (`kubectl version`, /version, discovery).
KUBE_GIT_COMMIT=1c2e10a409eb1b03f2f28f401ce935312e20d9fb
KUBE_BUILD_DATE=2026-08-20T15:16:14Z
# etcd 3.6 is the line Kubernetes 1.35 supports (its own go.mod pins the 3.6 client).
ETCD_VERSION=v3.6.16
HELM_VERSION=v3.22.0
HELM_GIT_COMMIT=144ca65f8501953fa8b41cd1d37c7223051c85b7
KIND_VERSION=v0.33.0
export KUBE_VERSION KUBE_GIT_COMMIT KUBE_BUILD_DATE ETCD_VERSION HELM_VERSION HELM_GIT_COMMIT KIND_VERSION
# CoreDNS, the node bed's cluster DNS (hack/kube/coredns/go.mod pins the same).
COREDNS_VERSION=v1.15.0
export COREDNS_VERSION
