# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: the eBPF preflight rules, as pure functions (no Ansible, no Kubernetes client): their vocabulary.

Every rule returns a *verdict*: ``{"verdict": "ok"|"warn"|"fail", "reason": "..."}`` (plus details for some).
This file holds the verdicts, the check names and platform names, and the summary; the rules themselves are
in ``node_rules`` (one node or host) and ``cluster_rules`` (platform, kube-proxy, features).

The list of known check names lives here, once (``CHECK_NAMES``): the modules' ``ignore`` option and the
preflight role's ``preflight_ignore`` validation use it (a unit test keeps the role's argument_specs equal).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

OK = "ok"
WARN = "warn"
FAIL = "fail"
_RANK = {OK: 0, WARN: 1, FAIL: 2}

# -- check names (the one place they are defined) ---------------------------------------------------

NODE_CHECKS = ("architecture", "os_kernel", "windows", "immutable_os")
CLUSTER_CHECKS = ("platform", "kube_proxy_mode", "sctp_services", "policy_log_action", "floating_ips",
                  "application_layer_policy", "web_application_firewall", "l7_logs", "api_endpoint_name")
HOST_CHECKS = ("host_facts", "bpffs", "cgroup_v2", "vxlan_module", "vlan_devices")
CHECK_NAMES = NODE_CHECKS + CLUSTER_CHECKS + HOST_CHECKS


def verdict(state, reason, **details):
    """A verdict dict: ``state`` is ok/warn/fail; ``details`` are merged in (objects, count, ...)."""
    out = {"verdict": state, "reason": reason}
    out.update(details)
    return out


def worst(states):
    """The worst of verdict strings (or verdict dicts): fail > warn > ok; ok for none."""
    result = OK
    for s in states:
        if isinstance(s, dict):
            s = s.get("verdict", OK)
        if _RANK.get(s, 0) > _RANK[result]:
            result = s
    return result


# -- ignore, summary -------------------------------------------------------------------------------

def apply_ignore(checks, ignore):
    """Downgrade failing checks named in ``ignore`` to warnings (in place); return ``checks``."""
    ignore = set(ignore or ())
    for name, v in checks.items():
        if name in ignore and v.get("verdict") == FAIL:
            v["verdict"] = WARN
            v["ignored"] = True
            v["reason"] = "ignored by request: " + v["reason"]
    return checks


def _count(states):
    out = {OK: 0, WARN: 0, FAIL: 0}
    for s in states:
        out[s] = out.get(s, 0) + 1
    return out


def summarise(nodes, checks, hosts=None):
    """The summary of a preflight: counts, the verdict, ``eligible``, each failing node/host/check
    with its reason, and ``message`` (one text listing every failure)."""
    hosts = hosts or {}
    by_check = {}
    failing, warnings, ignored = [], [], set()

    def note(kind, name, check, v):
        row = by_check.setdefault(check, {OK: 0, WARN: 0, FAIL: 0})
        row[v["verdict"]] += 1
        if v.get("ignored"):
            ignored.add(check)
        if v["verdict"] == OK:
            return
        line = "%s %s: %s: %s" % (kind, name, check, v["reason"]) if kind else "%s: %s" % (check, v["reason"])
        (failing if v["verdict"] == FAIL else warnings).append(line)

    for name in sorted(nodes):
        for check in NODE_CHECKS:
            if check in nodes[name]["checks"]:
                note("node", name, check, nodes[name]["checks"][check])
    for name in sorted(hosts):
        for check in CHECK_NAMES:
            if check in hosts[name].get("checks", {}):
                note("host", name, check, hosts[name]["checks"][check])
    for check in CLUSTER_CHECKS:
        if check in checks:
            note("", "", check, checks[check])
    overall = FAIL if failing else (WARN if warnings else OK)
    summary = {
        "verdict": overall,
        "eligible": overall != FAIL,
        "nodes": dict(_count(n["verdict"] for n in nodes.values()), total=len(nodes)),
        "checks": dict(_count(c["verdict"] for c in checks.values()), total=len(checks)),
        "by_check": by_check,
        "failing": failing,
        "warnings": warnings,
        "ignored": sorted(ignored),
    }
    if hosts:
        summary["hosts"] = dict(_count(h["verdict"] for h in hosts.values()), total=len(hosts))
    if failing:
        summary["message"] = ("The cluster is not eligible for the eBPF data plane (%d failing):\n- %s"
                              % (len(failing), "\n- ".join(failing)))
    else:
        summary["message"] = "The cluster is eligible for the eBPF data plane (%d warnings)." % len(warnings)
    return summary
