"""Pinned versions of everything the local control plane builds (one place to change them)."""

KUBERNETES_VERSION = "v1.33.13"
ETCD_MODULE = "go.etcd.io/etcd/server/v3"  # version: whatever k8s.io/kubernetes's module graph requires
KWOK_MODULE = "sigs.k8s.io/kwok"
KWOK_VERSION = "v0.7.0"
HELM_MODULE = "helm.sh/helm/v3"
HELM_VERSION = "v3.18.6"
OPERATOR_MODULE = "github.com/tigera/operator"
OPERATOR_VERSION = "v1.40.7"
