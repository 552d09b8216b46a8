"""Cluster shapes: what a platform's installer leaves in a new cluster, for the control plane to start with.

``kubeadm``: what ``kubeadm init`` creates that Calico's eBPF install meets - the kube-proxy addon
(ServiceAccount, ClusterRoleBinding ``kubeadm:node-proxier``, ConfigMap ``kube-proxy`` with ``config.conf`` and
``kubeconfig.conf``, DaemonSet ``kube-proxy``), ConfigMap ``kube-system/kubeadm-config``, and Service
``default/kubernetes`` backed by an EndpointSlice with the API server's address on a node network.

That address cannot be loopback (Endpoints and EndpointSlices refuse 127.0.0.0/8), so the harness makes a
node network of its own: a veth pair into a network namespace it creates (``calico-ops-<N>``), the host side
``10.250.<N>.1/30``, and a TCP forwarder there to kube-apiserver on 127.0.0.1. Nothing leaves the machine: the
only peer on that link is the namespace the harness made. Needs root (CI and developers' machines here are).
"""

from __future__ import annotations

import subprocess

import yaml

SHAPES = ("none", "kubeadm")


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def node_network(octet: int) -> dict:
    """Names and addresses of the harness's node network for service octet N."""
    return {"netns": f"calico-ops-{octet}", "host_if": f"cops{octet}h", "ns_if": f"cops{octet}n",
            "address": f"10.250.{octet}.1", "peer": f"10.250.{octet}.2"}


def create_node_network(octet: int) -> dict:
    net = node_network(octet)
    delete_node_network(octet)
    _ip("netns", "add", net["netns"])
    _ip("link", "add", net["host_if"], "type", "veth", "peer", "name", net["ns_if"])
    _ip("link", "set", net["ns_if"], "netns", net["netns"])
    _ip("addr", "add", f"{net['address']}/30", "dev", net["host_if"])
    _ip("link", "set", net["host_if"], "up")
    _ip("-n", net["netns"], "addr", "add", f"{net['peer']}/30", "dev", net["ns_if"])
    _ip("-n", net["netns"], "link", "set", net["ns_if"], "up")
    _ip("-n", net["netns"], "link", "set", "lo", "up")
    return net


def delete_node_network(octet) -> None:
    if not octet:
        return
    net = node_network(octet)
    _ip("link", "del", net["host_if"], check=False)  # takes its peer with it
    _ip("netns", "del", net["netns"], check=False)


def kubeadm_objects(server_address: str, port: int, version: str) -> list:
    """The kube-proxy addon and kubeadm-config as kubeadm v1.33 creates them (kube-proxy in iptables mode)."""
    labels = {"k8s-app": "kube-proxy"}
    proxy_conf = {"apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
                  "bindAddress": "0.0.0.0", "clientConnection": {"kubeconfig": "/var/lib/kube-proxy/kubeconfig.conf"},
                  "clusterCIDR": "192.168.0.0/16", "mode": ""}
    kubeconfig = {"apiVersion": "v1", "kind": "Config",
                  "clusters": [{"name": "default", "cluster": {
                      "certificate-authority": "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
                      "server": f"https://{server_address}:{port}"}}],
                  "contexts": [{"name": "default", "context": {"cluster": "default", "namespace": "default",
                                                               "user": "default"}}],
                  "current-context": "default",
                  "users": [{"name": "default", "user": {
                      "tokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token"}}]}
    cluster_config = {"apiVersion": "kubeadm.k8s.io/v1beta4", "kind": "ClusterConfiguration",
                      "kubernetesVersion": version, "controlPlaneEndpoint": f"{server_address}:{port}",
                      "networking": {"dnsDomain": "cluster.local", "podSubnet": "192.168.0.0/16"}}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "kube-proxy", "namespace": "kube-system"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "kubeadm:node-proxier"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node-proxier"},
         "subjects": [{"kind": "ServiceAccount", "name": "kube-proxy", "namespace": "kube-system"}]},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kube-proxy", "namespace": "kube-system",
                                                               "labels": {"app": "kube-proxy"}},
         "data": {"config.conf": yaml.safe_dump(proxy_conf), "kubeconfig.conf": yaml.safe_dump(kubeconfig)}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kubeadm-config", "namespace": "kube-system"},
         "data": {"ClusterConfiguration": yaml.safe_dump(cluster_config)}},
        {"apiVersion": "apps/v1", "kind": "DaemonSet",
         "metadata": {"name": "kube-proxy", "namespace": "kube-system", "labels": labels},
         "spec": {"selector": {"matchLabels": labels},
                  "updateStrategy": {"type": "RollingUpdate"},
                  "template": {"metadata": {"labels": labels}, "spec": {
                      "priorityClassName": "system-node-critical", "serviceAccountName": "kube-proxy",
                      "hostNetwork": True, "nodeSelector": {"kubernetes.io/os": "linux"},
                      "tolerations": [{"operator": "Exists"}],
                      "containers": [{
                          "name": "kube-proxy", "image": f"registry.k8s.io/kube-proxy:{version}",
                          "command": ["/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf",
                                      "--hostname-override=$(NODE_NAME)"],
                          "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                          "securityContext": {"privileged": True},
                          "volumeMounts": [{"name": "kube-proxy", "mountPath": "/var/lib/kube-proxy"}]}],
                      "volumes": [{"name": "kube-proxy", "configMap": {"name": "kube-proxy"}}]}}}},
    ]


def kubernetes_endpoints(address: str, port: int) -> list:
    """Endpoints and EndpointSlice of Service default/kubernetes, as kube-apiserver's endpoint reconciler keeps
    them on a real cluster (here it is off: --endpoint-reconciler-type=none; the harness writes them once)."""
    return [
        {"apiVersion": "v1", "kind": "Endpoints",
         "metadata": {"name": "kubernetes", "namespace": "default",
                      "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
         "subsets": [{"addresses": [{"ip": address}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]},
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
         "metadata": {"name": "kubernetes", "namespace": "default",
                      "labels": {"kubernetes.io/service-name": "kubernetes",
                                 "endpointslice.kubernetes.io/managed-by": "localcp.calico-ops"}},
         "addressType": "IPv4",
         "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
         "ports": [{"name": "https", "port": port, "protocol": "TCP"}]},
    ]
