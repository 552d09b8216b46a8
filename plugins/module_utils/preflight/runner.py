# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: the runner of the ``ebpf_preflight_info`` module (read-only).

It reads, through the collection's ``Client``: the served API groups (one GET of ``/apis``), every Node in
one paginated LIST, and one LIST per feature (Services, Pods, FelixConfigurations, the four Calico policy
types, operator ApplicationLayers), plus the kube-proxy ConfigMap and DaemonSet in kube-system. A type of a
group-version that ``/apis`` does not list is not asked for (it is not served: the answer would be a 404), so a
cluster without Calico or the operator costs six requests fewer. Then it asks ``node_rules`` and
``cluster_rules`` for the verdicts. It never writes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.endpoint import dns_name_warning
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.discovery import served_group_versions
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.detect import detect_platform, platform_details
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.kube_proxy_mode import (
    kube_proxy_mode_from_args, kube_proxy_mode_from_config)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.nodes import node_facts
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight import rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight import cluster_rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight import node_rules

CALICO_CRD_API = "crd.projectcalico.org/v1"
CALICO_V3_API = "projectcalico.org/v3"
OPERATOR_API = "operator.tigera.io/v1"
CALICO_POLICY_TYPES = (
    ("networkpolicies", "NetworkPolicy"),
    ("globalnetworkpolicies", "GlobalNetworkPolicy"),
    ("stagednetworkpolicies", "StagedNetworkPolicy"),
    ("stagedglobalnetworkpolicies", "StagedGlobalNetworkPolicy"),
)
KUBE_PROXY_NAMESPACE = "kube-system"
KUBE_PROXY_CONFIGMAPS = ("kube-proxy", "kube-proxy-config")  # kubeadm & co; EKS


class _Reads(object):
    """Optional reads: a type that is not served is None; any other error is kept to report, not raised."""

    def __init__(self, client, page_size, served=None):
        self.client = client
        self.page_size = page_size
        # the group-versions /apis listed (None: not known, ask for every type); the core group is not among them
        self.served = None if served is None else frozenset(served)
        self.errors = {}

    def list(self, api_version, plural, kind=None):
        if self.served is not None and "/" in api_version and api_version not in self.served:
            return None  # not served: what a LIST would answer with a 404, without the request
        try:
            items = self.client.list_or_none(api_version, plural, page_size=self.page_size)
        except ClientError as exc:
            self.errors[plural] = str(exc)
            return None
        if items is not None and kind:
            for item in items:
                item["kind"] = kind
        return items

    def get(self, api_version, plural, name, namespace=None):
        try:
            return self.client.get(api_version, plural, name, namespace=namespace)
        except ClientError as exc:
            self.errors["%s/%s" % (plural, name)] = str(exc)
            return None


def _unreadable(what, error):
    return rules.verdict(rules.WARN, "could not read %s: %s" % (what, error), objects=[], count=0)


def kube_proxy_state(reads):
    """``{present, mode, source}`` from the kube-proxy ConfigMap (or EKS's kube-proxy-config) and the
    DaemonSet's ``--proxy-mode`` flag; IPVS anywhere wins (it is what must be switched)."""
    found = []  # (mode, source)
    configmap = None
    for name in KUBE_PROXY_CONFIGMAPS:
        configmap = reads.get("v1", "configmaps", name, namespace=KUBE_PROXY_NAMESPACE)
        if configmap is not None:
            for key in sorted((configmap.get("data") or {})):
                mode = kube_proxy_mode_from_config(configmap["data"][key])
                if mode is not None:
                    found.append((mode, "ConfigMap %s/%s %s" % (KUBE_PROXY_NAMESPACE, name, key)))
                    break
            break
    daemonset = reads.get("apps/v1", "daemonsets", "kube-proxy", namespace=KUBE_PROXY_NAMESPACE)
    if daemonset is not None:
        pod_spec = ((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}
        for container in pod_spec.get("containers") or []:
            mode = kube_proxy_mode_from_args((container.get("command") or []) + (container.get("args") or []))
            if mode is not None:
                found.append((mode, "DaemonSet %s/kube-proxy --proxy-mode" % KUBE_PROXY_NAMESPACE))
                break
    chosen = next((f for f in found if f[0] == "ipvs"), found[0] if found else (None, None))
    return {"present": configmap is not None or daemonset is not None, "mode": chosen[0],
            "source": chosen[1], "daemonset": daemonset is not None,
            "configmap": (configmap.get("metadata") or {}).get("name") if configmap else None}


def _felix_default(felix):
    for item in felix or []:
        if (item.get("metadata") or {}).get("name") == "default":
            return item
    return None


def feature_checks(reads, calico_api, felix, max_objects):
    """The unsupported-feature checks: SCTP Services, policies with a Log action, floating IPs,
    application layer policy, WAF and L7 logs."""
    calico_missing = "Calico is not installed (%s not served)" % calico_api
    services = reads.list("v1", "services", kind="Service")
    checks = {"sctp_services": _sctp_check(reads, services, max_objects),
              "policy_log_action": _policy_log_check(reads, calico_api, calico_missing, max_objects),
              "floating_ips": _floating_ips_check(reads, felix, calico_missing, max_objects)}
    checks.update(_application_layer_checks(reads, services, felix, calico_missing, max_objects))
    return checks


def _sctp_check(reads, services, max_objects):
    if services is None:
        return _unreadable("Services", reads.errors.get("services", "not served"))
    return cluster_rules.findings(
        (cluster_rules.object_ref(s) for s in services if cluster_rules.service_has_sctp(s)),
        "Services with protocol SCTP (unsupported in eBPF mode)",
        "no Service uses SCTP (%d Services)" % len(services), max_objects)


def _policy_log_check(reads, calico_api, calico_missing, max_objects):
    refs, listed, errors = [], [], []
    for plural, kind in CALICO_POLICY_TYPES:
        items = reads.list(calico_api, plural, kind=kind)
        if plural in reads.errors:
            errors.append(plural)
        if items is None:
            continue
        listed.append(kind)
        refs.extend(cluster_rules.object_ref(p) for p in items if cluster_rules.policy_has_log_action(p))
    if errors:
        return _unreadable("Calico policies", "; ".join(reads.errors[p] for p in errors))
    if not listed:
        return rules.verdict(rules.OK, "not installed: " + calico_missing, objects=[], count=0)
    return cluster_rules.findings(
        refs, "Calico policies with a Log action (unsupported in eBPF mode)",
        "no Calico policy uses the Log action (%s read from %s)" % (", ".join(listed), calico_api),
        max_objects)


def _floating_ips_check(reads, felix, calico_missing, max_objects):
    pods = reads.list("v1", "pods", kind="Pod")
    refs = ["FelixConfiguration/%s" % (f.get("metadata") or {}).get("name") for f in felix or []
            if cluster_rules.felix_floating_ips(f)]
    if pods is None:
        return _unreadable("Pods", reads.errors.get("pods", "not served"))
    refs.extend(cluster_rules.object_ref(p) for p in pods if cluster_rules.pod_has_floating_ips(p))
    return cluster_rules.findings(
        refs, "floating IPs in use (FelixConfiguration floatingIPs: Enabled or pods annotated %s)"
        % cluster_rules.FLOATING_IPS_ANNOTATION,
        "no floating IPs (%s; no pod annotated %s)" % (
            "FelixConfiguration floatingIPs not Enabled" if felix is not None else calico_missing,
            cluster_rules.FLOATING_IPS_ANNOTATION), max_objects)


def _application_layer_checks(reads, services, felix, calico_missing, max_objects):
    """application_layer_policy, web_application_firewall and l7_logs, from the ApplicationLayer resources,
    FelixConfiguration and the Services' annotations."""
    app_layers = reads.list(OPERATOR_API, "applicationlayers", kind="ApplicationLayer")
    features = {}
    for app in app_layers or []:
        for feature in cluster_rules.application_layer_features(app):
            features.setdefault(feature, []).append(cluster_rules.object_ref(app))
    app_note = ("ApplicationLayer not installed" if app_layers is None
                else "%d ApplicationLayer resources" % len(app_layers))
    if "applicationlayers" in reads.errors:
        app_note = "ApplicationLayer unreadable: %s" % reads.errors["applicationlayers"]
    alp = ["FelixConfiguration/%s" % (f.get("metadata") or {}).get("name") for f in felix or []
           if cluster_rules.felix_policy_sync(f)] + features.get("application_layer_policy", [])
    l7 = features.get("l7_logs", []) + [cluster_rules.object_ref(s) for s in services or []
                                        if cluster_rules.service_l7_logging(s)]
    return {
        "application_layer_policy": cluster_rules.findings(
            alp, "application layer policy in use (FelixConfiguration policySyncPathPrefix or ApplicationLayer)",
            "no application layer policy (%s; %s)" % (
                "no policySyncPathPrefix" if felix is not None else calico_missing, app_note), max_objects),
        "web_application_firewall": cluster_rules.findings(
            features.get("web_application_firewall", []),
            "web application firewall enabled (ApplicationLayer webApplicationFirewall)",
            "no web application firewall (%s)" % app_note, max_objects),
        "l7_logs": cluster_rules.findings(
            l7, "L7 logs enabled (ApplicationLayer logCollection or Services annotated %s)"
            % cluster_rules.L7_LOGGING_ANNOTATION,
            "no L7 log collection (%s; no Service annotated %s)" % (app_note, cluster_rules.L7_LOGGING_ANNOTATION),
            max_objects),
    }


ENDPOINT_CONFIGMAP = "kubernetes-services-endpoint"
ENDPOINT_NAMESPACES = ("tigera-operator", "kube-system")


def api_endpoint_name(reads, server_url):
    """Check ``api_endpoint_name``: the host calico-node will dial (the ConfigMap's, else the kubeconfig's server)
    and whether it is a DNS name (calico.endpoint.dns_name_warning)."""
    host, source = None, None
    for namespace in ENDPOINT_NAMESPACES:
        cm = reads.get("v1", "configmaps", ENDPOINT_CONFIGMAP, namespace=namespace)
        if cm is not None and (cm.get("data") or {}).get("KUBERNETES_SERVICE_HOST"):
            host = cm["data"]["KUBERNETES_SERVICE_HOST"]
            source = "ConfigMap %s/%s" % (namespace, ENDPOINT_CONFIGMAP)
            break
    if host is None and server_url:
        m = re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://(\[[^]]+\]|[^:/?#]+)", server_url.strip())
        if m:
            host = m.group(1).strip("[]")
            source = ("the kubeconfig's server (no ConfigMap %s yet: the install writes this host on kubeadm, "
                      "generic, EKS and AKS unless told otherwise)" % ENDPOINT_CONFIGMAP)
    if host is None:
        return rules.verdict(rules.OK, "no API server endpoint known yet (no ConfigMap %s, no kubeconfig server)"
                             % ENDPOINT_CONFIGMAP)
    warning = dns_name_warning(host)
    if warning:
        return rules.verdict(rules.WARN, "%s (from %s)" % (warning, source), host=host)
    return rules.verdict(rules.OK, "KUBERNETES_SERVICE_HOST %s is an IP address, nothing to resolve at boot (from %s)"
                         % (host, source), host=host)


def run_preflight(client, platform="auto", ignore=(), max_objects=20, page_size=500, server_url=None):
    """The whole preflight: per node and per check verdicts, the platform, summary and ``eligible``."""
    ignore = list(ignore or ())
    groups = served_group_versions(client)
    reads = _Reads(client, page_size, served=groups or None)  # an empty /apis answer proves nothing
    calico_api = CALICO_V3_API if CALICO_V3_API in groups else CALICO_CRD_API

    all_facts = [node_facts(n) for n in client.list("v1", "nodes", page_size=page_size)]

    felix = reads.list(calico_api, "felixconfigurations", kind="FelixConfiguration")
    felix_default = _felix_default(felix)
    cgroup_v2_path = ((felix_default or {}).get("spec") or {}).get("cgroupV2Path") or None

    nodes = {}
    for facts in all_facts:
        checks = rules.apply_ignore(node_rules.judge_node(facts, cgroup_v2_path), ignore)
        entry = node_rules.node_summary(facts)
        entry["verdict"] = rules.worst(checks.values())
        entry["checks"] = checks
        nodes[facts["name"]] = entry

    detection = detect_platform(all_facts, groups)
    if platform and platform != "auto":
        details = platform_details(platform, all_facts, source="override", detection=detection)
    else:
        details = platform_details(detection["name"], all_facts, source="detected", detection=detection)

    checks = {"platform": cluster_rules.check_platform(details)}
    kube_proxy = kube_proxy_state(reads)
    checks["kube_proxy_mode"] = cluster_rules.check_kube_proxy(kube_proxy["mode"], kube_proxy["source"],
                                                               kube_proxy["present"])
    checks.update(feature_checks(reads, calico_api, felix, max_objects))
    checks["api_endpoint_name"] = api_endpoint_name(reads, server_url)
    rules.apply_ignore(checks, ignore)

    summary = rules.summarise(nodes, checks)
    return {
        "eligible": summary["eligible"],
        "verdict": summary["verdict"],
        "summary": summary,
        "platform": details,
        "nodes": nodes,
        "checks": checks,
        "kube_proxy": kube_proxy,
        "calico": {
            "api_version": calico_api,
            "installed": felix is not None,
            "cgroup_v2_path": cgroup_v2_path,
            "felix_configurations": sorted((f.get("metadata") or {}).get("name") for f in felix or []),
        },
        "read_errors": reads.errors,
        "ignored": ignore,
        "api_requests": dict(client.requests),
    }
