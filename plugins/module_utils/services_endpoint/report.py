# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: what the services_endpoint role did, from what its steps registered (pure).

``report(steps)`` is the role's published result ``services_endpoint_result`` (the endpoint and where each part came
from, what changed, whether the operator restarted and calico-node rolled out) with ``lines``, the report it shows:
the ConfigMap, the operator, the AWS DNS server, calico-node and the host's warning (Calico issue 10683).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def _changed(result):
    return isinstance(result, dict) and bool(result.get("changed"))


def _operator(info, s):
    operator, configmap = info.get("operator") or {}, s.get("configmap") or {}
    pods = operator.get("pods") or []
    if _changed(s.get("restart")):
        before = operator.get("started_before_configmap") or []
        return "restarted" + ("" if _changed(configmap) else " (%s had started before the ConfigMap was last written)"
                              % ", ".join(before))
    if s.get("check_mode") and (_changed(configmap) or operator.get("restart_pending")) and pods:
        return "restart skipped in check mode"
    if not pods:
        return "not running yet: it reads the ConfigMap when it starts"
    if not _changed(configmap):
        return "not restarted: nothing changed"
    return "not restarted (services_endpoint_restart_operator is false, or the DNS change rolled it)"


def _calico_node(calico_node, rolled_out):
    lines = calico_node.get("lines") or []
    if rolled_out:
        return "rolled out with the new endpoint: " + "; ".join(lines)
    if calico_node.get("ready"):
        return (lines or ["not created yet"])[0]
    return "not waited for: the operator did not restart"


def _aws_dns(info, s):
    if not (info.get("aws_dns") or {}).get("wanted"):
        return "not used on this platform"
    patch = s.get("aws_dns") or {}
    state = "patched" if _changed(patch) else ("already set" if patch.get("exists") else
                                               "the operator Deployment is not there yet")
    return "dnsConfig.nameservers %s: %s" % (", ".join(s.get("nameservers") or []), state)


def report(steps):
    """``steps``: ``info`` (services_endpoint_info's result), the registered results ``configmap``, ``restart``,
    ``aws_dns`` and ``calico_node``, ``check_mode``, ``nameservers`` (services_endpoint_aws_dns_nameservers),
    ``namespace`` and ``name`` (the ConfigMap's)."""
    s = dict(steps or {})
    info, configmap = s.get("info") or {}, s.get("configmap") or {}
    calico_node = s.get("calico_node") or {}
    data, endpoint, platform = info.get("data") or {}, info.get("endpoint") or {}, info.get("platform") or {}
    rolled_out = bool(calico_node.get("ready") and calico_node.get("found"))
    warning = endpoint.get("dns_name_warning") or None
    host, port = data.get("KUBERNETES_SERVICE_HOST"), data.get("KUBERNETES_SERVICE_PORT")
    state = "created" if configmap.get("created") else ("updated" if _changed(configmap) else "unchanged")
    lines = [
        "ConfigMap %s/%s: KUBERNETES_SERVICE_HOST=%s (%s), KUBERNETES_SERVICE_PORT=%s (%s): %s (platform %s, %s)" % (
            s.get("namespace"), s.get("name"), host, endpoint.get("host_source"), port, endpoint.get("port_source"),
            state, platform.get("name"), platform.get("source")),
        "Operator: " + _operator(info, s),
        "AWS DNS: " + _aws_dns(info, s),
        "calico-node: " + _calico_node(calico_node, rolled_out),
        ("WARNING: " + warning) if warning else "Host: an IP address (no name to resolve at boot)",
    ]
    return {"platform": platform.get("name"), "host": host, "port": port,
            "host_source": endpoint.get("host_source"), "port_source": endpoint.get("port_source"),
            "changed": _changed(configmap), "operator_restarted": _changed(s.get("restart")),
            "aws_dns": _changed(s.get("aws_dns")), "dns_name_warning": warning,
            "calico_node_rolled_out": rolled_out, "lines": lines}
