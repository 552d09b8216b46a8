# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The eBPF preflight rules of the cluster, as pure functions: the verdict on the platform (detected by the platform
package, platform/detect.py) and on kube-proxy's mode (read there too, platform/kube_proxy_mode.py), and the features
eBPF mode does not support (SCTP services, policy Log actions, floating IPs, application layer features).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.facts import (
    FLEX_VOLUME_PATH, UNSUPPORTED_PLATFORMS)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight.rules import FAIL, OK, WARN, verdict


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


# -- kube-proxy (its mode read by the platform package) ---------------------------------------------


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
