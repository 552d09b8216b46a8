# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which platform a cluster is, from its Nodes (labels, annotations, providerID, versions) and its served API
groups, and what the other roles need to know of it (``platform_details``: how kube-proxy is disabled, what the
install must set); ``choose_platform``: the user's choice, else the detection. The one platform detector of the
collection (the preflight reports it, the endpoint and kube-proxy roles act on it). Pure functions but
``choose_platform``, which reads the Nodes and the API groups.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.discovery import served_group_versions
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.facts import AWS_DNS, FLEX_VOLUME_PATH, PLATFORM_TITLES, UNSUPPORTED_PLATFORMS
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.nodes import node_facts, parse_os


# when several platforms leave signals, the most specific wins
_PLATFORM_PRIORITY = ("openshift", "gke", "aks", "eks", "tkg", "rke", "mke", "kops", "kubeadm")


# -- platform ---------------------------------------------------------------------------------------

def _label_prefixed(mapping, prefixes):
    for key in mapping or {}:
        for prefix in prefixes:
            if key.startswith(prefix):
                return key
    return None


# what a node shows of its platform, in the order the evidence is listed: (platform, where, what): a label or
# annotation key with one of the prefixes, the kubelet version matching the pattern, or the node's OS (id, evidence)
_NODE_SIGNALS = (
    ("gke", "label", ("cloud.google.com/gke-",)),
    ("gke", "kubelet", re.compile(r"-gke\.")),
    ("aks", "label", ("kubernetes.azure.com/",)),
    ("eks", "label", ("eks.amazonaws.com/", "alpha.eksctl.io/")),
    ("eks", "kubelet", re.compile(r"-eks-[0-9a-f]+$")),
    ("tkg", "label", ("run.tanzu.vmware.com/",)),
    ("tkg", "kubelet", re.compile(r"\+vmware\.")),
    ("rke", "annotation", ("rke.cattle.io/", "rke2.io/")),
    ("rke", "label", ("rke.cattle.io/",)),
    ("rke", "kubelet", re.compile(r"\+rke2")),
    ("openshift", "label", ("node.openshift.io/",)),
    ("openshift", "os", ("rhcos", "RHEL CoreOS node image")),  # only when the label above is not there
    ("mke", "label", ("com.docker.ucp.",)),
    ("kops", "label", ("kops.k8s.io/",)),
    ("kubeadm", "annotation", ("kubeadm.alpha.kubernetes.io/",)),
    # a gce:// providerID alone is not GKE (self-managed clusters run on GCE too)
)


def node_platform_signals(facts):
    """``[(platform, evidence)]`` that one node's labels, annotations, providerID and versions show."""
    found = {"label": facts.get("labels") or {}, "annotation": facts.get("annotations") or {}}
    kubelet = facts.get("kubelet_version") or ""
    os_id = parse_os(facts.get("os_image"))["id"]
    out = []
    for platform, where, what in _NODE_SIGNALS:
        if where == "kubelet":
            if what.search(kubelet):
                out.append((platform, "kubelet %s" % kubelet))
        elif where == "os":
            if os_id == what[0] and (not out or out[-1][0] != platform):
                out.append((platform, what[1]))
        else:
            key = _label_prefixed(found[where], what)
            if key:
                out.append((platform, "%s %s" % (where, key)))
    return out


def api_group_signals(group_versions):
    """``[(platform, evidence)]`` from the served API groups (``group/version`` strings)."""
    out = []
    for gv in sorted(set(group_versions or ())):
        group = gv.split("/")[0]
        if group.endswith(".openshift.io"):
            out.append(("openshift", "API group %s" % group))
        elif group.endswith(".gke.io"):
            out.append(("gke", "API group %s" % group))
        elif group.endswith(".tanzu.vmware.com"):
            out.append(("tkg", "API group %s" % group))
        elif group in ("crd.k8s.amazonaws.com", "vpcresources.k8s.aws"):
            out.append(("eks", "API group %s" % group))
    return out


def detect_platform(all_facts, group_versions=()):
    """``{name, evidence, nodes}``: the platform the nodes and API groups point to (generic if none)."""
    votes = {}
    evidence = {}
    for facts in all_facts:
        seen = set()
        for platform, why in node_platform_signals(facts):
            if platform not in seen:
                votes[platform] = votes.get(platform, 0) + 1
                seen.add(platform)
            ev = evidence.setdefault(platform, [])
            if len(ev) < 3 and "%s (node %s)" % (why, facts.get("name")) not in ev:
                ev.append("%s (node %s)" % (why, facts.get("name")))
    for platform, why in api_group_signals(group_versions):
        votes.setdefault(platform, 0)
        ev = evidence.setdefault(platform, [])
        if len(ev) < 5:
            ev.append(why)
    for platform in _PLATFORM_PRIORITY:
        if platform in evidence:
            return {"name": platform, "evidence": evidence[platform], "nodes": votes.get(platform, 0),
                    "other_signals": sorted(p for p in evidence if p != platform)}
    return {"name": "generic", "evidence": [], "nodes": 0, "other_signals": []}


def aks_kube_proxy(all_facts):
    """Whether kube-proxy can be disabled on AKS: False with Azure CNI (or kubenet), True with a
    bring-your-own CNI, None when the nodes do not tell."""
    for facts in all_facts:
        labels = facts.get("labels") or {}
        plugin = (labels.get("kubernetes.azure.com/network-plugin") or "").lower()
        if plugin in ("azure", "kubenet"):
            return False, "node %s: label kubernetes.azure.com/network-plugin=%s" % (facts["name"], plugin)
        if plugin == "none":
            return True, "node %s: label kubernetes.azure.com/network-plugin=none (bring your own CNI)" % (
                facts["name"])
        for key in ("kubernetes.azure.com/azure-cni-overlay", "kubernetes.azure.com/podnetwork-type",
                    "kubernetes.azure.com/network-subnet", "kubernetes.azure.com/nodenetwork-vnetguid",
                    "kubernetes.azure.com/ebpf-dataplane"):
            if key in labels:
                return False, "node %s: label %s (Azure CNI)" % (facts["name"], key)
    return None, "no node label shows which CNI the cluster uses"


def platform_details(name, all_facts, source="detected", detection=None):
    """What the other roles need to know of a platform: how kube-proxy is disabled, what the install
    must set, the API server address hint."""
    details = {"name": name, "title": PLATFORM_TITLES.get(name, name), "source": source,
               "supported": name not in UNSUPPORTED_PLATFORMS, "kube_proxy_can_be_disabled": True,
               "kube_proxy_disable": "daemonset-node-selector", "installation": {},
               "felix_configuration": {}, "operator_dns_nameservers": [], "notes": []}
    if detection is not None:
        details["detected"] = detection
    aws = any((f.get("provider_id") or "").startswith("aws://") for f in all_facts)
    if name in UNSUPPORTED_PLATFORMS:
        details["kube_proxy_can_be_disabled"] = None
        details["kube_proxy_disable"] = None
    elif name == "openshift":
        details["kube_proxy_disable"] = "openshift-network-operator"
        details["notes"].append("set networks.operator.openshift.io cluster spec.deployKubeProxy=false; "
                                "API server api.<cluster_name>.<base_domain>:6443")
    elif name == "kops":
        details["kube_proxy_disable"] = "kops-cluster-spec"
        details["notes"].append("set kubeProxy.enabled: false in the kOps cluster spec; API server "
                                "api.internal.<clustername>")
        if aws:
            details["operator_dns_nameservers"] = [AWS_DNS]
    elif name == "mke":
        details["kube_proxy_disable"] = "mke-install-flags"
        details["notes"].append("MKE: install with --kube-proxy-mode=disabled --kube-default-drop-masq-bits; "
                                "API server proxy.local:6444")
    elif name == "eks":
        details["operator_dns_nameservers"] = [AWS_DNS]
        bottlerocket = sorted(f["name"] for f in all_facts
                              if parse_os(f.get("os_image"))["id"] == "bottlerocket")
        details["bottlerocket_nodes"] = len(bottlerocket)
        if bottlerocket:
            details["installation"]["flexVolumePath"] = FLEX_VOLUME_PATH
    elif name == "aks":
        can, why = aks_kube_proxy(all_facts)
        details["kube_proxy_can_be_disabled"] = can
        details["kube_proxy_evidence"] = why
        if can is False:
            details["kube_proxy_disable"] = None
            details["felix_configuration"]["bpfKubeProxyIptablesCleanupEnabled"] = False
            details["notes"].append("Azure CNI: kube-proxy cannot be disabled; the install must set "
                                    "FelixConfiguration bpfKubeProxyIptablesCleanupEnabled: false")
    return details


def choose_platform(client, platform="auto", group_versions=None, page_size=500):
    """``{name, source, title, details}``: ``platform`` when it is not ``auto`` (source ``user``), otherwise
    what the preflight detects from the Nodes and the served API groups (source ``detected``).

    ``group_versions`` may be passed when already read (one GET of /apis saved).
    """
    if platform and platform != "auto":
        return {"name": platform, "source": "user", "title": PLATFORM_TITLES.get(platform, platform),
                "details": None}
    if group_versions is None:
        group_versions = served_group_versions(client)
    all_facts = [node_facts(n) for n in client.list("v1", "nodes", page_size=page_size)]
    detection = detect_platform(all_facts, group_versions)
    details = platform_details(detection["name"], all_facts, source="detected", detection=detection)
    return {"name": detection["name"], "source": "detected",
            "title": PLATFORM_TITLES.get(detection["name"], detection["name"]),
            "details": details}
