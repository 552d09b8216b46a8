"""Pinned versions of everything the local control plane builds (one place to change them)."""

KUBERNETES_VERSION = "v1.33.13"
ETCD_MODULE = "go.etcd.io/etcd/server/v3"  # version: whatever k8s.io/kubernetes's module graph requires
KWOK_MODULE = "sigs.k8s.io/kwok"
KWOK_VERSION = "v0.7.0"
HELM_MODULE = "helm.sh/helm/v3"
HELM_VERSION = "v3.18.6"
# The Tigera operator releases the harness runs (built from ../shared/third_party: the Go module proxy refuses
# github.com/tigera/operator), each with the Calico release it installs.
OPERATOR_VERSIONS = {"v1.40.7": "v3.31.4", "v1.36.16": "v3.29.7", "v1.32.12": "v3.27.5"}
OPERATOR_VERSION = "v1.40.7"
# Calico components built from the v3.31.4 monorepo tarball in ../shared/third_party.
CALICO_VERSION = "v3.31.4"
CALICO_COMPONENTS = ("calicoctl", "kube-controllers", "apiserver")
# The data plane of v3.31.4 (build-calico-felix.sh, and Calico's CNI plugin from the same tree): calico-node runs
# behind calico-node pods, calico-typha behind Typha's, calico-bpf reads a node's BPF maps, calico/calico-ipam is the
# CNI plugin the pod runner calls as a kubelet would.
DATAPLANE_BINARIES = ("calico-node", "calico-typha", "calico-felix", "calico-bpf", "calico", "calico-ipam")
# the Go release the v3.31.4 go.mod declares: Calico's data-plane components are built with it (GOTOOLCHAIN fetches
# it through the module proxy); built with Go 1.26, calico-typha panics in json-iterator once in sync
CALICO_GO_TOOLCHAIN = "go1.24.13"
