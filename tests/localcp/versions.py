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
# The data planes of the releases an upgrade starts from, run on nodes with a network beside v3.31.4's (the pod runner
# runs the release a calico-node or Typha pod names): built by localcp/releases.py from ../shared/third_party's
# monorepo tarball of each release into <cache>/calico-node-<release>. ``go``: the toolchain (v3.29.7's go.mod says
# go 1.24.7; 1.24.13 is a later patch of the same Go release, the one v3.31.4 is built with, fetched once).
# ``version_vars``: the variables its Makefiles set with -ldflags -X (calico-node -v, Felix's and Typha's version, and
# startup.VERSION, which calico-node writes as ClusterInformation calicoVersion, where the upgrade reads the version
# a cluster runs). No BPF programs: these releases run the Iptables data plane here (Felix in eBPF mode needs them).
UPGRADE_SOURCE_DATAPLANES = {
    "v3.29.7": {"go": "go1.24.13",
                "version_vars": ("node/pkg/lifecycle/startup.VERSION", "node/buildinfo.GitVersion",
                                 "node/buildinfo.GitRevision", "felix/buildinfo.GitVersion",
                                 "felix/buildinfo.GitRevision", "typha/pkg/buildinfo.GitVersion",
                                 "typha/pkg/buildinfo.GitRevision")},
}
# what each of them holds: calico-node, calico-typha and Calico's CNI plugin (calico, calico-ipam)
UPGRADE_SOURCE_BINARIES = ("calico-node", "calico-typha", "calico", "calico-ipam")
