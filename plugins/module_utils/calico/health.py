# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Calico's health as a job should leave it, read from the cluster (GETs and LISTs only): the gate of a fleet rollout
(``calico_health_info``), each check in the cluster's own words.

- TigeraStatus: every expected component reported and every component Available;
- calico-node: the DaemonSet rolled out (every pod updated and ready: ``calico/rollout.py``);
- the data plane: Installation ``default`` exists and, after an eBPF job, its ``linuxDataplane`` is the one the job
  leaves (BPF after install_ebpf and enable_ebpf, Iptables after disable_ebpf);
- kube-proxy: its DaemonSet emptied after an eBPF job, full and ready after disable_ebpf (``k8s/daemonset.py``);
- the version: after an upgrade, the Calico version ``calico_facts`` detects is the target.

A check that cannot read the cluster says so as its problem; the others are still made.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import facts as calico_facts
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import rollout, tigerastatus
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.facts_rules import OVERRIDABLE
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.objects import DEFAULT_NAMES
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import FirstContactFailed
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.daemonset import progress
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.daemonset import read as read_daemonset
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.errors import ClientError, failure_message

# what each job leaves: the Installation's data plane and kube-proxy's state (an upgrade leaves both as they were)
EXPECTED = {
    "install_ebpf": {"dataplane": "BPF", "kube_proxy": "disabled"},
    "enable_ebpf": {"dataplane": "BPF", "kube_proxy": "disabled"},
    "disable_ebpf": {"dataplane": "Iptables", "kube_proxy": "enabled"},
    "upgrade": {"dataplane": "", "kube_proxy": ""},
}


def expected(job=None, dataplane=None, kube_proxy=None):
    """The data plane and kube-proxy state to check: the options given, else what ``job`` leaves ('' - not checked)."""
    leaves = EXPECTED.get(job or "", {})
    return (dataplane if dataplane is not None else leaves.get("dataplane", ""),
            kube_proxy if kube_proxy is not None else leaves.get("kube_proxy", ""))


def _tigerastatus(client, s):
    found = tigerastatus.read(client, s["tigerastatus"])
    if found["ready"]:
        return []
    waiting = ["%s not reported" % m for m in found["missing"]]
    waiting += [x for x in found["lines"] if not x.endswith(": Available")]
    return ["TigeraStatus: " + "; ".join(waiting)]


def _calico_node(client, s):
    found = rollout.read(client, s["calico_node_namespace"], daemonset=s["calico_node_daemonset"])
    return [] if found["ready"] else ["calico-node: %s" % found["message"]]


def _dataplane(client, s):
    name = s["installation"]
    installation = client.get("operator.tigera.io/v1", "installations", name)
    if installation is None:
        return ["Installation %s not found" % name]
    plane = (((installation.get("spec") or {}).get("calicoNetwork") or {}).get("linuxDataplane")) or "Iptables"
    if s["dataplane"] and plane != s["dataplane"]:
        return ["Installation %s has linuxDataplane %s, not %s" % (name, plane, s["dataplane"])]
    return []


def _kube_proxy(client, s):
    if not s["kube_proxy"]:
        return []
    ds, pods, _selector = read_daemonset(client, s["kube_proxy_namespace"], s["kube_proxy_daemonset"])
    settled = progress(ds, pods, s["kube_proxy"])
    return [] if settled["settled"] else ["kube-proxy not %s: %s" % (s["kube_proxy"], settled["line"])]


def _version(client, s):
    if not s["version"]:
        return []
    params = dict(dict((k, None) for k in OVERRIDABLE), **DEFAULT_NAMES)
    found = calico_facts.run(client, params)["facts"].get("version")
    return [] if found == s["version"] else ["Calico version %s, not %s" % (found or "unknown", s["version"])]


CHECKS = (("TigeraStatus", _tigerastatus), ("calico-node", _calico_node), ("Installation", _dataplane),
          ("kube-proxy", _kube_proxy), ("Calico version", _version))


def healthy_line(s):
    return ("healthy: TigeraStatus %s Available, calico-node rolled out%s%s" % (
        ", ".join(s["tigerastatus"]), (", " + s["dataplane"]) if s["dataplane"] else "",
        (", kube-proxy " + s["kube_proxy"]) if s["kube_proxy"] else ""))


def read(client, settings):
    """One read of every check. ``settings``: ``tigerastatus`` (expected components), ``calico_node_namespace``,
    ``calico_node_daemonset``, ``installation``, ``dataplane`` ('' - not checked), ``kube_proxy`` (``disabled``,
    ``enabled`` or ''), ``kube_proxy_namespace``, ``kube_proxy_daemonset``, ``version`` ('' - not checked).
    Returns ``passed``, ``problems`` (the cluster's own words) and ``line`` (what is not there yet, or healthy)."""
    problems = []
    for what, check in CHECKS:
        try:
            problems.extend(check(client, settings))
        except ClientError as exc:
            if getattr(exc, "status", None) == 0:  # nothing answers: no other check can read either
                problems.append("reading the cluster: %s" % failure_message(exc))
                break
            problems.append("%s: reading the cluster: %s" % (what, failure_message(exc)))
        except FirstContactFailed as exc:
            problems.append("reading the cluster: %s" % failure_message(exc.cause, what="the API server"))
            break
    return {"passed": not problems, "problems": problems,
            "line": "; ".join(problems) if problems else healthy_line(settings)}
