# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: the runner of the ``services_endpoint_info`` module (read-only).

Reads, through the collection's ``Client``: the served API groups (when the platform must be detected or is
OpenShift), the Nodes (detection only, through the preflight's detector), Infrastructure ``cluster``
(``config.openshift.io/v1``, OpenShift only, when served), the namespace and ConfigMap
``kubernetes-services-endpoint``, the operator's Deployment and pods, and - for a DNS name the user has not said every
node resolves - Installation and FelixConfiguration ``default`` (is the cluster in eBPF mode?). Then
``services_endpoint_rules`` derives and validates the endpoint. It never writes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import dataplane
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.endpoint import dns_name_warning, is_ip_literal
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.facts import (
    KOPS_HOST_PREFIX, MKE_HOST, SUPPORTED_PLATFORMS)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.server import parse_server
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.services_endpoint import rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.detect import choose_platform
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.discovery import served_group_versions

OPENSHIFT_CONFIG_API = "config.openshift.io/v1"
GATHER_CHOICES = ("platform", "endpoint", "configmap", "operator")


def openshift_internal_uri(client, group_versions):
    """Infrastructure ``cluster`` ``status.apiServerInternalURI`` when config.openshift.io is served."""
    if OPENSHIFT_CONFIG_API not in group_versions:
        return None
    infra = client.get(OPENSHIFT_CONFIG_API, "infrastructures", "cluster")
    return ((infra or {}).get("status") or {}).get("apiServerInternalURI") or None


def run_services_endpoint_info(client, server_url, platform="auto", host=None, port=None, allow_ip=False,
                               allow_loopback=False, kops_cluster_name=None, openshift_cluster_name=None, openshift_base_domain=None,
                               mke_host=MKE_HOST, kops_host_prefix=KOPS_HOST_PREFIX, ports=None,
                               namespace="tigera-operator", configmap="kubernetes-services-endpoint",
                               operator_deployment="tigera-operator", operator_selector="k8s-app=tigera-operator",
                               previous_pods=None, gather=GATHER_CHOICES, prefix="", aws_dns=None,
                               nodes_resolve_host=False, ebpf_planned=False):
    gather = tuple(gather or GATHER_CHOICES)
    server = parse_server(server_url)
    result = {"server": dict(server or {}, ip=bool(server) and is_ip_literal(server["host"])),
              "problems": []}
    if "endpoint" in gather or "platform" in gather:
        groups = None
        if platform in (None, "", "auto") or (platform == "openshift" and "endpoint" in gather):
            groups = served_group_versions(client)
        chosen = _gather_platform(client, platform, groups, aws_dns, prefix, result)
    if "endpoint" in gather:
        if not result["problems"]:
            internal = openshift_internal_uri(client, groups) if chosen["name"] == "openshift" else None
            endpoint = rules.derive_endpoint(
                chosen["name"], server=server, host=host, port=port, allow_ip=allow_ip, allow_loopback=allow_loopback,
                kops_cluster_name=kops_cluster_name, openshift_cluster_name=openshift_cluster_name,
                openshift_base_domain=openshift_base_domain, openshift_internal_uri=internal, mke_host=mke_host,
                kops_host_prefix=kops_host_prefix, ports=ports, prefix=prefix)
            result["problems"] = endpoint.pop("problems")
            endpoint["dns_name_warning"] = dns_name_warning(endpoint.get("host"))
            if not result["problems"]:
                endpoint["ebpf"] = _ebpf_check(client, endpoint, nodes_resolve_host, ebpf_planned, prefix, result)
            result["endpoint"] = endpoint
            if chosen["name"] == "openshift":
                result["openshift_internal_uri"] = internal
        result["valid"] = not result["problems"]
        result["data"] = (rules.configmap_data(result["endpoint"]["host"], result["endpoint"]["port"])
                          if result["valid"] else None)
    if "configmap" in gather:
        result["configmap"] = _gather_configmap(client, namespace, configmap, result.get("data"))
    if "operator" in gather:
        result["operator"] = _gather_operator(client, namespace, operator_deployment, operator_selector,
                                              result.get("configmap"), previous_pods)
    result["api_requests"] = dict(client.requests)
    return result


def _ebpf_check(client, endpoint, nodes_resolve_host, ebpf_planned, prefix, result):
    """Refuse a DNS name on a cluster in eBPF mode, or about to be (``ebpf_planned``: the job switches it), unless the
    user says every node resolves it (rules.dns_name_in_ebpf). The cluster is read only when that could refuse: a
    DNS name, no such statement, no switch planned. ``{evidence, read}``."""
    if nodes_resolve_host or not rules.needs_resolving(endpoint.get("host")):
        return {"evidence": [], "read": False}
    if ebpf_planned:
        evidence = ["%s is true: this job switches it to eBPF" % rules.var_name(prefix, "ebpf_planned")]
    else:
        evidence = dataplane.ebpf_evidence(dataplane.read(client))
    result["problems"].extend(rules.dns_name_in_ebpf(endpoint["host"], endpoint.get("host_source"), evidence,
                                                     nodes_resolve_host, prefix))
    return {"evidence": evidence, "read": not ebpf_planned}


def _gather_platform(client, platform, groups, aws_dns, prefix, result):
    """The platform chosen (detected or given), the AWS DNS wish, and a problem when eBPF does not support it."""
    chosen = choose_platform(client, platform or "auto", group_versions=groups)
    result["platform"] = chosen
    result["aws_dns"] = {"wanted": rules.aws_dns_wanted(aws_dns, chosen["name"]),
                         "setting": aws_dns, "nameservers": list(rules.AWS_NAMESERVERS)}
    if chosen["name"] not in SUPPORTED_PLATFORMS:
        result["problems"].append(rules.problem(
            prefix, "platform", "%s is not supported by the eBPF data plane (detected from %s); set %s "
            "to override" % (chosen["title"], "; ".join(((chosen["details"] or {}).get("detected") or {}).get(
                "evidence") or []) or "the nodes", rules.var_name(prefix, "platform"))))
    return chosen


def _gather_configmap(client, namespace, configmap, data):
    """The ConfigMap as it is (and whether it holds ``data``, the endpoint wanted, when that is known)."""
    ns = client.get("v1", "namespaces", namespace)
    cm = client.get("v1", "configmaps", configmap, namespace=namespace) if ns is not None else None
    current = None if cm is None else dict((cm.get("data") or {}))
    found = {"namespace": namespace, "namespace_exists": ns is not None, "name": configmap,
             "exists": cm is not None, "data": current}
    if data is not None:
        found["up_to_date"] = current is not None and all(current.get(k) == v for k, v in data.items())
    found["written_at"] = rules.configmap_written_at(cm)
    return found


def _gather_operator(client, namespace, operator_deployment, operator_selector, configmap, previous_pods):
    """The operator's Deployment and pods: rolled out, started before the ConfigMap's last write, restart progress."""
    dep = client.get("apps/v1", "deployments", operator_deployment, namespace=namespace)
    pods = client.list("v1", "pods", namespace=namespace, label_selector=operator_selector)
    progress = rules.deployment_progress(dep)
    operator = {
        "deployment": operator_deployment, "namespace": namespace, "selector": operator_selector,
        "exists": progress["exists"], "rolled_out": progress["rolled_out"], "line": progress["line"],
        "status": progress["status"], "conditions": progress.get("conditions", []),
        "pods": sorted((p.get("metadata") or {}).get("name") for p in pods),
        "pod_lines": [rules.pod_line(p) for p in pods],
    }
    if configmap is not None:
        # pods started before the ConfigMap's last write run with an older endpoint (a run cut between the
        # ConfigMap and the restart leaves them): the role restarts them even when the ConfigMap is unchanged
        stale = rules.pods_started_before(pods, configmap["written_at"])
        operator["started_before_configmap"] = stale
        operator["restart_pending"] = bool(stale)
    if previous_pods is not None:
        operator["restart"] = rules.restart_progress(pods, previous_pods)
    return operator
