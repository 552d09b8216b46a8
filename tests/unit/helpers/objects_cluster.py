"""A few objects of core, apps and Calico types in the in-memory API of fake_k8s (``standard_api``), for the readers
and type resolvers of objects/ and k8s/discovery.py; ``gets`` lists the paths of the GETs the fake received."""

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_k8s import standard_api


def cluster():
    dyn = standard_api()
    dyn.put("v1", "configmaps", {"metadata": {"name": "a", "namespace": "kube-system", "labels": {"app": "x"}}})
    dyn.put("v1", "configmaps", {"metadata": {"name": "b", "namespace": "kube-system", "labels": {"app": "y"}}})
    dyn.put("v1", "configmaps", {"metadata": {"name": "c", "namespace": "default", "labels": {"app": "x"}}})
    dyn.put("apps/v1", "deployments", {"metadata": {"name": "op", "namespace": "tigera-operator"}})
    dyn.put("projectcalico.org/v3", "globalnetworkpolicies", {"metadata": {"name": "deny"}})
    dyn.put("v1", "secrets", {"metadata": {"name": "pull", "namespace": "kube-system"}, "type": "Opaque",
                              "data": {"k": "c2VjcmV0"}})
    return dyn


def gets(dyn):
    return [path for method, path, _q in dyn.log if method == "GET"]
