"""A pod's network, set up as a kubelet does it: Calico's CNI plugin called with the network configuration the
install rendered.

On a real node, calico-node's ``install-cni`` init container writes ``/etc/cni/net.d/10-calico.conflist`` from its
``CNI_NETWORK_CONFIG`` (the operator's ConfigMap ``cni-config``, or the manifest's ``calico-config``) and a
kubeconfig for the ServiceAccount ``calico-cni-plugin``; the kubelet's runtime then calls the ``calico`` plugin of
that list with ``CNI_COMMAND=ADD`` for each new pod sandbox, and the plugin calls ``calico-ipam``. Here the pod
runner does exactly that, with the real plugin built from the same source as calico-node, inside the node's
namespaces (so the veth ``cali...`` is made on the node, and the plugin's files land in the node's own ``/var``):

* the configuration: the ``install-cni`` container's ``CNI_NETWORK_CONFIG`` with install-cni's placeholders
  replaced (``__KUBECONFIG_FILEPATH__``, ``__CNI_MTU__``, ``__KUBERNETES_NODE_NAME__``, ...); of the list only the
  ``calico`` plugin is called (``bandwidth`` and ``portmap`` are plugins of containernetworking/plugins, not built
  here; the tests use neither);
* the kubeconfig: a TokenRequest for ``calico-cni-plugin`` in calico-node's namespace (the plugin's own RBAC),
  with the API server install-cni would write: the ``KUBERNETES_SERVICE_HOST/PORT`` of its environment;
* the pod's network namespace: its holder's (``/proc/<pid>/ns/net``, dataplane.py);
* the result's address is the pod's IP, reported in ``status.podIP(s)`` as a kubelet does (kwok had given the pod
  one of its own addresses, outside Calico's blocks).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from . import dataplane

PLACEHOLDER_DEFAULTS = {"LOG_LEVEL": "info", "LOG_FILE_PATH": "/var/log/calico/cni/cni.log",
                        "LOG_FILE_MAX_SIZE": "100", "LOG_FILE_MAX_AGE": "30", "LOG_FILE_MAX_COUNT": "10",
                        "DATASTORE_TYPE": "kubernetes", "CNI_MTU": "1500"}


def netconf(template: str, env: dict, node: str, kubeconfig: str) -> dict:
    """The ``calico`` plugin's configuration from install-cni's template, as libcni hands it to the plugin (the
    list's ``name`` and ``cniVersion`` added to the plugin's own)."""
    text = template
    for key, default in PLACEHOLDER_DEFAULTS.items():
        text = text.replace(f"__{key}__", env.get(key) or default)
    text = text.replace("__KUBERNETES_NODE_NAME__", env.get("KUBERNETES_NODE_NAME") or node)
    text = text.replace("__KUBECONFIG_FILEPATH__", kubeconfig)
    text = text.replace("__KUBERNETES_SERVICE_HOST__", env.get("KUBERNETES_SERVICE_HOST", ""))
    text = text.replace("__KUBERNETES_SERVICE_PORT__", env.get("KUBERNETES_SERVICE_PORT", ""))
    for key in ("ETCD_CERT_FILE", "ETCD_CA_CERT_FILE", "ETCD_KEY_FILE", "ETCD_ENDPOINTS", "ETCD_DISCOVERY_SRV",
                "SERVICEACCOUNT_TOKEN"):
        text = text.replace(f"__{key}__", "")
    conf = json.loads(text)
    plugins = conf.get("plugins") or [conf]
    calico = next((p for p in plugins if p.get("type") == "calico"), None)
    if calico is None:
        raise RuntimeError("the CNI network configuration has no `calico` plugin")
    out = dict(calico)
    out["name"] = conf.get("name", "k8s-pod-network")
    out["cniVersion"] = conf.get("cniVersion", "0.3.1")
    return out


def call(command: str, node_holder: int, bindir: str, conf: dict, pod: dict, netns: str,
         container_id: str, timeout: float = 90) -> dict:
    """Run the plugin in the node's namespaces; the parsed result of ADD, ``{}`` for DEL. Raises RuntimeError with
    the plugin's own error message."""
    meta = pod["metadata"]
    env = {"CNI_COMMAND": command, "CNI_CONTAINERID": container_id, "CNI_NETNS": netns, "CNI_IFNAME": "eth0",
           "CNI_PATH": bindir, "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "CNI_ARGS": (f"IgnoreUnknown=1;K8S_POD_NAMESPACE={meta['namespace']};K8S_POD_NAME={meta['name']};"
                        f"K8S_POD_INFRA_CONTAINER_ID={container_id};K8S_POD_UID={meta['uid']}")}
    argv = dataplane.enter(node_holder) + [str(Path(bindir) / "calico")]
    proc = subprocess.run(argv, input=json.dumps(conf), capture_output=True, text=True, env=env, timeout=timeout,
                          check=False)
    if proc.returncode != 0:
        try:
            err = json.loads(proc.stdout)
            msg = f"{err.get('msg')}: {err.get('details', '')}".rstrip(": ")
        except ValueError:
            msg = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
            msg = msg[0]
        raise RuntimeError(f"CNI {command} of {meta['namespace']}/{meta['name']}: {msg}")
    if command != "ADD":
        return {}
    return json.loads(proc.stdout)


def result_ips(result: dict) -> list:
    return [ip["address"].split("/")[0] for ip in result.get("ips") or []]
