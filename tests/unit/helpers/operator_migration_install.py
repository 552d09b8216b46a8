"""A manifest install of Calico for the operator migration's tests: the release's own objects (``RELEASE``, a small
calico.yaml of calico-node, calico-kube-controllers and calico-config) and ``observed``, what the runner reads of a
cluster that runs them as released (``edit`` changes it); ``node`` is its calico-node container."""

import copy

import yaml

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.operator_migration.runner import release_objects


CNI = """{
  "name": "k8s-pod-network",
  "plugins": [
    {"type": "calico", "nodename": "__KUBERNETES_NODE_NAME__", "mtu": __CNI_MTU__, "ipam": {"type": "calico-ipam"}},
    {"type": "portmap", "snat": true}
  ]
}"""

NODE_ENV = [
    {"name": "DATASTORE_TYPE", "value": "kubernetes"},
    {"name": "WAIT_FOR_DATASTORE", "value": "true"},
    {"name": "NODENAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
    {"name": "CALICO_NETWORKING_BACKEND",
     "valueFrom": {"configMapKeyRef": {"name": "calico-config", "key": "calico_backend"}}},
    {"name": "CLUSTER_TYPE", "value": "k8s,bgp"},
    {"name": "IP", "value": "autodetect"},
    {"name": "CALICO_IPV4POOL_IPIP", "value": "Always"},
    {"name": "FELIX_IPINIPMTU", "valueFrom": {"configMapKeyRef": {"name": "calico-config", "key": "veth_mtu"}}},
    {"name": "FELIX_DEFAULTENDPOINTTOHOSTACTION", "value": "ACCEPT"},
    {"name": "FELIX_HEALTHENABLED", "value": "true"},
]

RELEASE = [
    {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
     "metadata": {"name": "calico-kube-controllers", "namespace": "kube-system"}},
    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "calico-node", "namespace": "kube-system"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "calico-config", "namespace": "kube-system"},
     "data": {"calico_backend": "bird", "veth_mtu": "0", "cni_network_config": CNI}},
    {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
     "metadata": {"name": "ippools.crd.projectcalico.org"}},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "calico-node"}},
    {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "calico-node", "namespace": "kube-system"},
     "spec": {"template": {"spec": {
         "nodeSelector": {"kubernetes.io/os": "linux"},
         "tolerations": [{"operator": "Exists", "effect": "NoSchedule"}],
         "initContainers": [{"name": "install-cni", "image": "quay.io/calico/cni:v3.31.4",
                             "env": [{"name": "CNI_CONF_NAME", "value": "10-calico.conflist"}]}],
         "containers": [{"name": "calico-node", "image": "quay.io/calico/node:v3.31.4", "env": NODE_ENV}],
         "volumes": [{"name": "lib-modules", "hostPath": {"path": "/lib/modules"}}]}}}},
    {"apiVersion": "apps/v1", "kind": "Deployment",
     "metadata": {"name": "calico-kube-controllers", "namespace": "kube-system"},
     "spec": {"template": {"spec": {
         "nodeSelector": {"kubernetes.io/os": "linux"},
         "containers": [{"name": "calico-kube-controllers", "image": "quay.io/calico/kube-controllers:v3.31.4",
                         "env": [{"name": "ENABLED_CONTROLLERS", "value": "node,loadbalancer"},
                                 {"name": "DATASTORE_TYPE", "value": "kubernetes"}]}]}}}},
]
RELEASE_TEXT = yaml.safe_dump_all(RELEASE)
POOL = {"metadata": {"name": "default-ipv4-ippool"},
        "spec": {"cidr": "192.168.0.0/16", "ipipMode": "Always", "natOutgoing": True, "blockSize": 26,
                 "nodeSelector": "all()"}}


def release():
    return release_objects(RELEASE_TEXT, "kube-system", "calico-node", "calico-kube-controllers", "calico-config")


def observed(edit=None):
    rel = release()
    obs = {"node_ds": copy.deepcopy(rel["node_ds"]), "kube_controllers": copy.deepcopy(rel["kube_controllers"]),
           "config_map": copy.deepcopy(rel["config_map"]), "ippools": [copy.deepcopy(POOL)]}
    if edit:
        edit(obs)
    return obs


def node(obs):
    return obs["node_ds"]["spec"]["template"]["spec"]["containers"][0]
