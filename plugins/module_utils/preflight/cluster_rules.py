# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The eBPF preflight rules of the cluster, as pure functions: which platform it is (node labels and served
API groups), kube-proxy's mode, and the features eBPF mode does not support (SCTP services, policy Log
actions, floating IPs, application layer features).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight.node_rules import parse_os
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight.rules import (
    AWS_DNS, FAIL, FLEX_VOLUME_PATH, OK, PLATFORM_TITLES, UNSUPPORTED_PLATFORMS, WARN, verdict)

try:
    _STRING_TYPES = (str, unicode)  # noqa: F821  pylint: disable=undefined-variable
except NameError:
    _STRING_TYPES = (str,)


# when several platforms leave signals, the most specific wins
_PLATFORM_PRIORITY = ("openshift", "gke", "aks", "eks", "tkg", "rke", "mke", "kops", "kubeadm")


# -- platform ---------------------------------------------------------------------------------------

def _label_prefixed(mapping, prefixes):
    for key in mapping or {}:
        for prefix in prefixes:
            if key.startswith(prefix):
                return key
    return None


def node_platform_signals(facts):
    """``[(platform, evidence)]`` that one node's labels, annotations, providerID and versions show."""
    labels, annotations = facts.get("labels") or {}, facts.get("annotations") or {}
    kubelet = facts.get("kubelet_version") or ""
    os_id = parse_os(facts.get("os_image"))["id"]
    out = []
    key = _label_prefixed(labels, ("cloud.google.com/gke-",))
    if key:
        out.append(("gke", "label %s" % key))
    if "-gke." in kubelet:
        out.append(("gke", "kubelet %s" % kubelet))
    key = _label_prefixed(labels, ("kubernetes.azure.com/",))
    if key:
        out.append(("aks", "label %s" % key))
    key = _label_prefixed(labels, ("eks.amazonaws.com/", "alpha.eksctl.io/"))
    if key:
        out.append(("eks", "label %s" % key))
    if re.search(r"-eks-[0-9a-f]+$", kubelet):
        out.append(("eks", "kubelet %s" % kubelet))
    key = _label_prefixed(labels, ("run.tanzu.vmware.com/",))
    if key:
        out.append(("tkg", "label %s" % key))
    if "+vmware." in kubelet:
        out.append(("tkg", "kubelet %s" % kubelet))
    key = _label_prefixed(annotations, ("rke.cattle.io/", "rke2.io/"))
    if key:
        out.append(("rke", "annotation %s" % key))
    key = _label_prefixed(labels, ("rke.cattle.io/",))
    if key:
        out.append(("rke", "label %s" % key))
    if "+rke2" in kubelet:
        out.append(("rke", "kubelet %s" % kubelet))
    key = _label_prefixed(labels, ("node.openshift.io/",))
    if key or os_id == "rhcos":
        out.append(("openshift", "label %s" % key if key else "RHEL CoreOS node image"))
    key = _label_prefixed(labels, ("com.docker.ucp.",))
    if key:
        out.append(("mke", "label %s" % key))
    key = _label_prefixed(labels, ("kops.k8s.io/",))
    if key:
        out.append(("kops", "label %s" % key))
    key = _label_prefixed(annotations, ("kubeadm.alpha.kubernetes.io/",))
    if key:
        out.append(("kubeadm", "annotation %s" % key))
    # a gce:// providerID alone is not GKE (self-managed clusters run on GCE too)
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


def check_platform(details):
    name = details["name"]
    title = details["title"]
    how = "set by the user" if details.get("source") == "override" else "detected"
    ev = (details.get("detected") or {}).get("evidence") or []
    evidence = (" from " + "; ".join(ev[:3])) if ev and details.get("source") != "override" else ""
    if name in UNSUPPORTED_PLATFORMS:
        return verdict(FAIL, "%s (%s%s) does not support the eBPF data plane" % (title, how, evidence))
    if name == "aks":
        can = details.get("kube_proxy_can_be_disabled")
        if can is False:
            return verdict(WARN, "%s with Azure CNI (%s): kube-proxy cannot be disabled; the install must "
                                 "set bpfKubeProxyIptablesCleanupEnabled: false" % (title, details.get(
                                     "kube_proxy_evidence")))
        if can is None:
            return verdict(WARN, "%s: cannot tell the CNI from the API (%s); with Azure CNI kube-proxy "
                                 "cannot be disabled and the install must set "
                                 "bpfKubeProxyIptablesCleanupEnabled: false" % (
                                     title, details.get("kube_proxy_evidence")))
        return verdict(OK, "%s (%s): kube-proxy can be disabled (%s)" % (title, how, details.get(
            "kube_proxy_evidence")))
    if name == "eks" and details.get("installation", {}).get("flexVolumePath"):
        return verdict(WARN, "%s with Bottlerocket nodes (%d): the Installation must set "
                             "spec.flexVolumePath: %s" % (title, details.get("bottlerocket_nodes", 0),
                                                          FLEX_VOLUME_PATH))
    return verdict(OK, "%s (%s%s)" % (title, how, evidence))


# -- kube-proxy ------------------------------------------------------------------------------------

_MODE_YAML = re.compile(r"^mode:[ \t]*[\"']?([A-Za-z]*)[\"']?[ \t]*(?:#.*)?$", re.M)
_MODE_JSON = re.compile(r"\"mode\"\s*:\s*\"([A-Za-z]*)\"")
_MODE_FLAG = re.compile(r"^--proxy-mode(?:=|$)(.*)")


def kube_proxy_mode_from_config(text):
    """The top-level ``mode`` of a KubeProxyConfiguration (YAML or JSON text); None when absent."""
    if not isinstance(text, _STRING_TYPES):
        return None
    m = _MODE_YAML.search(text) or _MODE_JSON.search(text)
    return m.group(1).lower() if m else None


def kube_proxy_mode_from_args(args):
    """The ``--proxy-mode`` of a kube-proxy command line (list of strings); None when absent."""
    args = [a for a in (args or []) if isinstance(a, _STRING_TYPES)]
    for i, arg in enumerate(args):
        m = _MODE_FLAG.match(arg.strip())
        if m:
            value = m.group(1)
            if not value and arg.strip() == "--proxy-mode" and i + 1 < len(args):
                value = args[i + 1]
            return value.strip().strip("\"'").lower()
    return None


def check_kube_proxy(mode, source, present):
    """IPVS must be switched to iptables before kube-proxy is disabled."""
    if not present:
        return verdict(OK, "kube-proxy not found in kube-system (no DaemonSet or ConfigMap)", mode=None)
    where = " (%s)" % source if source else ""
    if mode == "ipvs":
        return verdict(FAIL, "kube-proxy runs in IPVS mode%s: switch it to iptables mode first" % where,
                       mode=mode)
    if mode in (None, "", "iptables"):
        return verdict(OK, "kube-proxy mode %s%s" % (mode or "default (iptables)", where), mode=mode or "")
    return verdict(WARN, "kube-proxy mode %s%s is not covered by the eBPF migration procedure "
                         "(iptables expected)" % (mode, where), mode=mode)


# -- feature findings --------------------------------------------------------------------------------

def object_ref(obj):
    """``Kind/namespace/name`` (``Kind/name`` when cluster-scoped)."""
    meta = obj.get("metadata") or {}
    parts = [obj.get("kind") or "?"]
    if meta.get("namespace"):
        parts.append(meta["namespace"])
    parts.append(meta.get("name") or "?")
    return "/".join(parts)


def findings(refs, fail_reason, ok_reason, max_objects=20, state=FAIL):
    """A verdict naming the objects found (``Kind/namespace/name``): the first ``max_objects`` and the count."""
    refs = list(refs)
    if not refs:
        return verdict(OK, ok_reason, objects=[], count=0)
    return verdict(state, "%s: %d (%s%s)" % (fail_reason, len(refs), ", ".join(refs[:3]),
                                             ", ..." if len(refs) > 3 else ""),
                   objects=refs[:max_objects], count=len(refs))


def service_has_sctp(svc):
    return any((p or {}).get("protocol") == "SCTP" for p in ((svc.get("spec") or {}).get("ports") or []))


def policy_has_log_action(policy):
    spec = policy.get("spec") or {}
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or []:
            if str((rule or {}).get("action") or "").lower() == "log":
                return True
    return False


FLOATING_IPS_ANNOTATION = "cni.projectcalico.org/floatingIPs"
L7_LOGGING_ANNOTATION = "projectcalico.org/l7-logging"


def pod_has_floating_ips(pod):
    return FLOATING_IPS_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {})


def service_l7_logging(svc):
    value = ((svc.get("metadata") or {}).get("annotations") or {}).get(L7_LOGGING_ANNOTATION)
    return str(value).lower() == "true"


def felix_floating_ips(felix):
    return str((felix.get("spec") or {}).get("floatingIPs") or "") == "Enabled"


def felix_policy_sync(felix):
    return bool((felix.get("spec") or {}).get("policySyncPathPrefix"))


def _enabled(value):
    return str(value or "") == "Enabled"


def application_layer_features(app_layer):
    """The eBPF-incompatible features an operator ApplicationLayer resource turns on:
    a subset of {application_layer_policy, web_application_firewall, l7_logs}."""
    spec = app_layer.get("spec") or {}
    out = set()
    if _enabled(spec.get("applicationLayerPolicy")) or _enabled(spec.get("sidecarInjection")):
        out.add("application_layer_policy")
    if _enabled(spec.get("webApplicationFirewall")):
        out.add("web_application_firewall")
    if _enabled((spec.get("logCollection") or {}).get("collectLogs")) or _enabled(
            (spec.get("l7LogCollection") or {}).get("collectL7Logs")):
        out.add("l7_logs")
    known = ("applicationLayerPolicy", "sidecarInjection", "webApplicationFirewall", "logCollection",
             "l7LogCollection")
    if not out and not any(k in spec for k in known):
        out.add("application_layer_policy")  # an ApplicationLayer that says nothing: count it as ALP
    return out
