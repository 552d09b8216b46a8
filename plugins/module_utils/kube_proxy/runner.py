# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: the runner of the ``kube_proxy_info`` module (read-only).

Reads, through the collection's ``Client``: the platform (the user's, else the preflight's detection), the
kube-proxy DaemonSet, its pods and its ConfigMap in ``kube-system``; per platform, the OpenShift Network
operator config ``cluster`` or FelixConfiguration ``default``. ``kube_proxy_rules`` says what is to be patched
and whether the DaemonSet has settled. It never writes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.daemonset import progress
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.daemonset import read as read_daemonset
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.kube_proxy import rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.detect import choose_platform
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.facts import KUBE_PROXY_DAEMONSET_PLATFORMS
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.discovery import served_group_versions
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.server import (
    kops_cluster_name_from_host, parse_server)

OPENSHIFT_NETWORK_API = "operator.openshift.io/v1"
CALICO_NODE = ("calico-system/calico-node", "kube-system/calico-node")


def _mode(client, namespace, configmaps, ds, state, target_mode, now=None):
    """Where kube-proxy's mode is set and, when it is IPVS, what the switch to ``target_mode`` writes (the ConfigMap's
    switch is stamped with its time, ``roll_pending`` tells a switch the DaemonSet was not rolled after)."""
    out = {"mode": None, "where": None, "configmap": None, "key": None, "container": None, "source": None,
           "ipvs": False, "switch": None, "roll_pending": False}
    for name in configmaps:
        cm = client.get("v1", "configmaps", name, namespace=namespace)
        if cm is None:
            continue
        key, mode = rules.mode_from_configmap(cm)
        if mode is not None:
            out.update(mode=mode, where="configmap", configmap=name, key=key,
                       source="ConfigMap %s/%s %s" % (namespace, name, key))
            if mode == "ipvs":
                text = rules.switch_mode_text(cm["data"][key], target_mode)
                stamp = now or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                out["switch"] = {"configmap": name, "patch": {
                    "metadata": {"annotations": {rules.SWITCHED_ANNOTATION: stamp}}, "data": {key: text}}}
            else:
                out["roll_pending"] = rules.roll_pending(cm, ds)
        break
    container, mode = rules.mode_from_daemonset(ds)
    if mode is not None and (out["mode"] is None or mode == "ipvs"):
        out.update(mode=mode, where="args", container=container, configmap=None, key=None,
                   source="DaemonSet %s/%s --proxy-mode (container %s)" % (
                       namespace, (ds.get("metadata") or {}).get("name"), container))
        if mode == "ipvs":
            out["switch"] = {"daemonset_patch": {"spec": {"template": {"spec": {
                "containers": rules.switch_containers(ds, target_mode)}}}}}
    out["ipvs"] = out["mode"] == "ipvs"
    return out


def _calico_api(client, calico_node):
    """How the first calico-node DaemonSet of ``calico_node`` (namespace/name) that exists reaches the API server."""
    for ref in calico_node or ():
        namespace, name = ref.split("/", 1) if "/" in ref else ("kube-system", ref)
        ds = client.get("apps/v1", "daemonsets", name, namespace=namespace)
        if ds is None:
            continue
        cms = dict(((ns, cm), client.get("v1", "configmaps", cm, namespace=ns))
                   for ns, cm in rules.envfrom_configmaps(ds))
        svc = client.get("v1", "services", "kubernetes", namespace="default") or {}
        spec = svc.get("spec") or {}
        ips = [ip for ip in (spec.get("clusterIPs") or [spec.get("clusterIP")]) if ip and ip != "None"]
        return rules.calico_api_path(ds, cms, ips)
    return rules.calico_api_path(None, {})


def run_kube_proxy_info(client, server_url=None, state="disabled", platform="auto", namespace="kube-system",
                        daemonset="kube-proxy", configmaps=("kube-proxy", "kube-proxy-config"),
                        pod_selector="k8s-app=kube-proxy", node_selector=None, target_mode="iptables",
                        openshift_name="cluster", openshift_field="deployKubeProxy", felix_name="default",
                        felix_field=rules.FELIX_FIELD, kops_cluster_name=None, kops_state_store=None,
                        kops_binary="kops", kops_spec_file="cluster.yaml", calico_node=CALICO_NODE, now=None):
    selector = dict(node_selector or rules.DEFAULT_NODE_SELECTOR)
    groups = None
    if platform in (None, "", "auto", "aks", "openshift"):
        groups = served_group_versions(client)
    chosen = choose_platform(client, platform or "auto", group_versions=groups)
    name = chosen["name"]
    result = {"platform": chosen, "state": state, "node_selector": selector}

    ds, pods, label_selector = read_daemonset(client, namespace, daemonset, pod_selector)
    settle = progress(ds, pods, state)
    result["daemonset"] = {
        "present": ds is not None, "namespace": namespace, "name": daemonset,
        "node_selector": rules.node_selector(ds) if ds is not None else {},
        "selector_applied": rules.selector_applied(ds, selector) if ds is not None else False,
        "label_selector": label_selector, "pods": len(pods), "settled": settle["settled"],
        "line": settle["line"], "status": settle["status"],
        "patch": rules.selector_patch(state, selector),
    }
    result["running"] = rules.kube_proxy_running(ds, pods, selector)
    result["calico_api"] = _calico_api(client, calico_node)
    no_mode = {"mode": None, "ipvs": False, "switch": None, "roll_pending": False}
    result["mode"] = _mode(client, namespace, list(configmaps or ()), ds or {}, state, target_mode, now) if (
        ds is not None or name in KUBE_PROXY_DAEMONSET_PLATFORMS) else no_mode

    if name == "openshift":
        result["openshift"] = _openshift(client, groups, openshift_name, openshift_field, state)
    elif name == "aks":
        result["felix"] = _aks_felix(client, groups, chosen, felix_name, felix_field, state)
    elif name == "kops":
        result["kops"] = _kops(server_url, kops_cluster_name, kops_state_store, kops_binary, kops_spec_file, state)
    elif name == "mke":
        failed, message = rules.mke_message(state, result["running"])
        result["mke"] = {"failed": failed, "message": message, "flags": list(rules.MKE_FLAGS)}
    result["api_requests"] = dict(client.requests)
    return result


def _openshift(client, groups, openshift_name, openshift_field, state):
    """OpenShift: the Network operator's config (``deployKubeProxy``) and the patch for ``state``."""
    served = OPENSHIFT_NETWORK_API in (groups or ())
    network = client.get(OPENSHIFT_NETWORK_API, "networks", openshift_name) if served else None
    return {
        "api_version": OPENSHIFT_NETWORK_API, "served": served, "name": openshift_name,
        "exists": network is not None,
        "value": ((network or {}).get("spec") or {}).get(openshift_field),
        "patch": rules.openshift_patch(state, openshift_field),
    }


def _aks_felix(client, groups, chosen, felix_name, felix_field, state):
    """AKS: kube-proxy stays; the FelixConfiguration field that lets eBPF live beside it, and the patch for ``state``."""
    api = rules.felix_api_version(groups)
    felix = client.get(api, "felixconfigurations", felix_name) if api else None
    details = chosen.get("details") or {}
    return {
        "api_version": api, "name": felix_name, "exists": felix is not None,
        "value": ((felix or {}).get("spec") or {}).get(felix_field),
        "patch": rules.felix_patch(state, felix_field),
        "create": rules.felix_body(api, felix_name, felix_field) if api else None,
        "azure_cni": details.get("kube_proxy_can_be_disabled") if details else None,
        "message": rules.AKS_GAIN_LOST,
    }


def _kops(server_url, kops_cluster_name, kops_state_store, kops_binary, kops_spec_file, state):
    """kOps: the cluster's name (given, or read from the API server's host name) and the kops commands for ``state``."""
    server = parse_server(server_url)
    guessed = kops_cluster_name_from_host(server["host"]) if server else None
    cluster = kops_cluster_name or guessed
    return {
        "cluster_name": cluster,
        "cluster_name_source": ("variable" if kops_cluster_name else
                                ("the kubeconfig's server %s" % server["url"]) if guessed else None),
        "state_store": kops_state_store or None,
        "commands": rules.kops_commands(cluster, kops_state_store, state == "enabled", kops_binary,
                                        kops_spec_file),
    }
