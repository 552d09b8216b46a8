"""What the pod runner does as a kubelet would (pure parts of tests/localcp/podrunner.py)."""

from pathlib import Path

from localcp import podrunner as pr


def test_images_map_to_components_by_repository_and_tag():
    comp, tag = pr.component_for("quay.io/tigera/operator:v1.36.16")
    assert comp.name == "tigera-operator" and tag == "v1.36.16"
    comp, tag = pr.component_for("docker.io/calico/kube-controllers:v3.31.4@sha256:abc")
    assert comp.name == "calico-kube-controllers" and tag == "v3.31.4"
    # calico-node is real now (issue 37): v3.31.4 has a binary, an older release's pods stay kwok-only
    node, tag = pr.component_for("quay.io/calico/node:v3.31.4")
    assert node.name == "calico-node" and node.binary({"calico-node": "/c/cn"}, tag) == "/c/cn"
    assert node.binary({"calico-node": "/c/cn"}, "v3.27.5") is None
    assert pr.component_for("quay.io/tigera/kube-controllers:v3.22.2")[0] is None  # Enterprise: not built here
    assert pr.parse_image("localhost:5000/calico/apiserver") == ("calico/apiserver", None)


def test_binaries_are_chosen_by_the_exact_version():
    bins = {"operator-v1.40.7": "/c/op40", "operator-v1.36.16": "/c/op36", "kube-controllers": "/c/kc"}
    op, _ = pr.component_for("quay.io/tigera/operator:v1.40.7")
    assert op.binary(bins, "v1.40.7") == "/c/op40" and op.binary(bins, "v1.36.16") == "/c/op36"
    assert op.binary(bins, "v1.99.0") is None
    kc, _ = pr.component_for("calico/kube-controllers:v3.31.4")
    assert kc.binary(bins, "v3.31.4") == "/c/kc" and kc.binary(bins, "v3.29.7") is None


def test_dollar_references_expand_as_kubernetes_does():
    env = {"NODE_NAME": "node-1"}
    assert pr.expand("--hostname-override=$(NODE_NAME)", env) == "--hostname-override=node-1"
    assert pr.expand("$(UNKNOWN) $$(NODE_NAME)", env) == "$(UNKNOWN) $(NODE_NAME)"


def test_fields_of_the_downward_api():
    pod = {"metadata": {"name": "p", "namespace": "n", "uid": "u", "labels": {"a": "b"}},
           "spec": {"nodeName": "node-1", "serviceAccountName": "sa"}, "status": {"podIP": "10.244.0.5"}}
    assert [pr._field(pod, f) for f in ("metadata.name", "metadata.namespace", "spec.nodeName",
                                        "metadata.labels['a']", "status.podIP", "spec.serviceAccountName")] == \
        ["p", "n", "node-1", "b", "10.244.0.5", "sa"]


def test_paths_under_a_mount_point_are_rewritten_to_the_process_directory():
    runner = pr.PodRunner.__new__(pr.PodRunner)
    mounts = {"/calico-apiserver-certs": Path("/run/p/volumes/certs"), "/etc/pki/tls/certs": Path("/run/p/ca")}
    assert runner._translate("--tls-cert-file=/calico-apiserver-certs/tls.crt", mounts) == \
        "--tls-cert-file=/run/p/volumes/certs/tls.crt"
    assert runner._translate("/etc/pki/tls/certs/tigera-ca-bundle.crt", mounts) == "/run/p/ca/tigera-ca-bundle.crt"
    assert runner._translate("/etc/pki/tls/certsx", mounts) == "/etc/pki/tls/certsx"
    assert runner._translate("kubernetes", mounts) == "kubernetes"
