"""A cluster for the preflight runner in the in-memory API of fake_k8s: core and apps types, Calico's types when asked,
and Nodes added with their nodeInfo (Ubuntu 22.04 on amd64 unless told otherwise)."""

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_k8s import FakeDynamic


UBUNTU = {"osImage": "Ubuntu 22.04.4 LTS", "kernelVersion": "5.15.0-105-generic", "architecture": "amd64",
          "operatingSystem": "linux", "kubeletVersion": "v1.33.13"}


def api(calico=None):
    """Core and apps types; ``calico``: None, "crd" (crd.projectcalico.org/v1) or "v3" (both served)."""
    dyn = FakeDynamic()
    dyn.add_type("v1", "nodes", "Node", namespaced=False)
    dyn.add_type("v1", "services", "Service")
    dyn.add_type("v1", "pods", "Pod")
    dyn.add_type("v1", "configmaps", "ConfigMap")
    dyn.add_type("apps/v1", "daemonsets", "DaemonSet")
    if calico:
        for api_version in ["crd.projectcalico.org/v1"] + (["projectcalico.org/v3"] if calico == "v3" else []):
            group = api_version.split("/", maxsplit=1)[0]
            dyn.add_type(api_version, "felixconfigurations", "FelixConfiguration", namespaced=False,
                         storage="%s/felix" % group)
            dyn.add_type(api_version, "networkpolicies", "NetworkPolicy", storage="%s/np" % group)
            dyn.add_type(api_version, "globalnetworkpolicies", "GlobalNetworkPolicy", namespaced=False,
                         storage="%s/gnp" % group)
            dyn.add_type(api_version, "stagednetworkpolicies", "StagedNetworkPolicy", storage="%s/snp" % group)
            dyn.add_type(api_version, "stagedglobalnetworkpolicies", "StagedGlobalNetworkPolicy",
                         namespaced=False, storage="%s/sgnp" % group)
    return dyn


def add_node(dyn, name, labels=None, **info):
    node_info = dict(UBUNTU, **info)
    dyn.put("v1", "nodes", {"metadata": {"name": name, "labels": dict(labels or {})},
                            "status": {"nodeInfo": node_info}})
