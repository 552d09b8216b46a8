"""calico/objects.py: Helm release Secrets decoded without their values, the field managers that own an image, and the
applyable copy of a live object (the records' copies)."""

import copy

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import objects

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.calico_observed import helm_secret, observed, release_docs


def test_helm_release_is_decoded_without_its_values():
    rel = objects.decode_helm_release(helm_secret(revision=3))
    assert rel == {"name": "calico", "namespace": "tigera-operator", "revision": 3, "status": "deployed",
                   "chart": "tigera-operator", "chart_version": "v3.27.5", "app_version": "v3.27.5",
                   "secret": "sh.helm.release.v1.calico.v3"}
    assert objects.decode_helm_release({"data": {"release": "not base64!"}}) is None


def test_installer_field_managers_own_the_image():
    ds = copy.deepcopy(observed(release_docs("v3.27.5", "calico.yaml"))["daemonsets"]["calico-node"])
    image = {"f:spec": {"f:template": {"f:spec": {"f:containers": {
        'k:{"name":"calico-node"}': {"f:image": {}, "f:name": {}}}}}}}
    env_only = {"f:spec": {"f:template": {"f:spec": {"f:containers": {
        'k:{"name":"calico-node"}': {"f:env": {}}}}}}}
    ds["metadata"]["managedFields"] = [
        {"manager": "kubectl-client-side-apply", "operation": "Update", "fieldsV1": image},
        {"manager": "kubectl-set", "operation": "Update", "fieldsV1": env_only},
        {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status", "fieldsV1": image}]
    assert objects.image_field_managers(ds, "calico-node") == ["kubectl-client-side-apply"]


def test_what_the_record_keeps_is_the_whole_object_and_the_live_one_is_not_changed():
    """The record's copy of a removed object keeps every field of it (a ServiceAccount's imagePullSecrets, not only
    spec/data) but server-set metadata; reading it does not change the object read (an earlier version popped kubectl's
    annotation out of the live object)."""
    from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.objects import applyable
    live = {"apiVersion": "v1", "kind": "ServiceAccount", "status": {},
            "metadata": {"name": "calico-node", "namespace": "kube-system", "uid": "u", "resourceVersion": "9",
                         "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "team": "net"}},
            "imagePullSecrets": [{"name": "mirror"}], "automountServiceAccountToken": False}
    before = copy.deepcopy(live)
    assert applyable(live) == {"apiVersion": "v1", "kind": "ServiceAccount",
                               "metadata": {"name": "calico-node", "namespace": "kube-system",
                                            "annotations": {"team": "net"}},
                               "imagePullSecrets": [{"name": "mirror"}], "automountServiceAccountToken": False}
    assert live == before
