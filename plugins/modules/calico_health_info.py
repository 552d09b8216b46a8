#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: calico_health_info
short_description: Tell whether Calico is healthy as a job should leave it, or wait until it is (read-only)
version_added: 0.1.0
description:
  - One read of every check, in the cluster's own words - every TigeraStatus of O(tigerastatus) reported and every
    component Available; the calico-node DaemonSet rolled out (every pod updated and ready); Installation
    O(installation) present, with the data plane O(dataplane); kube-proxy's DaemonSet emptied (V(disabled)) or full
    and ready (V(enabled)), as O(kube_proxy) says; the Calico version C(calico_facts) detects is O(version).
  - O(job) gives the data plane and kube-proxy state the job leaves (BPF and kube-proxy disabled after
    V(install_ebpf) and V(enable_ebpf), Iptables and kube-proxy enabled after V(disable_ebpf), neither checked after
    V(upgrade)); O(dataplane) and O(kube_proxy) override it.
  - With O(wait=true) every check is read again every O(poll_interval) seconds until all pass or O(wait_timeout)
    seconds have passed; the action plugin prints a progress line (what is not there yet) at least every 30 seconds.
    It does not fail when the cluster is not healthy - RV(passed) and RV(line) say so, for the caller to decide (the
    fleet rollout's gate).
  - A check that cannot read the cluster reports that as its problem. Never writes.
author:
  - calico_ops maintainers (@calico-ops)
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - calico_ops.lifecycle.attributes
  - calico_ops.lifecycle.attributes.read_only
  - calico_ops.lifecycle.wait
options:
  job:
    description: The job just run; sets what O(dataplane) and O(kube_proxy) default to.
    type: str
    choices: [install_ebpf, enable_ebpf, disable_ebpf, upgrade]
  tigerastatus:
    description: TigeraStatus components that must be reported and Available.
    type: list
    elements: str
    default: [calico]
  calico_node_namespace:
    description: The namespace of the calico-node DaemonSet.
    type: str
    default: calico-system
  calico_node_daemonset:
    description: The calico-node DaemonSet.
    type: str
    default: calico-node
  installation:
    description: The operator's Installation, which must exist.
    type: str
    default: default
  dataplane:
    description: The Installation's C(linuxDataplane) wanted (unset - from O(job); empty - not checked).
    type: str
    choices: [BPF, Iptables, ""]
  kube_proxy:
    description: kube-proxy's DaemonSet wanted emptied (V(disabled)) or full and ready (V(enabled)); unset - from O(job); empty - not checked.
    type: str
    choices: [disabled, enabled, ""]
  kube_proxy_namespace:
    description: kube-proxy's namespace.
    type: str
    default: kube-system
  kube_proxy_daemonset:
    description: kube-proxy's DaemonSet (none at all counts as emptied).
    type: str
    default: kube-proxy
  version:
    description: The Calico version (vX.Y.Z) the cluster must report, as C(calico_facts) detects it; unset - not checked.
    type: str
attributes:
  action:
    support: full
    description: A long wait runs in parts from an action plugin on the controller, so progress is shown.
seealso:
  - module: calico_ops.lifecycle.tigerastatus_info
  - module: calico_ops.lifecycle.calico_rollout_info
  - module: calico_ops.lifecycle.calico_facts
"""

EXAMPLES = r"""
- name: Gate a cluster after enable_ebpf, waiting up to 10 minutes
  calico_ops.lifecycle.calico_health_info:
    job: enable_ebpf
    wait: true
    wait_timeout: 600
  register: gate

- name: Fail quoting what the cluster reports
  ansible.builtin.fail:
    msg: "{{ gate.line }}"
  when: not gate.passed
"""

RETURN = r"""
passed:
  description: Whether every check passed.
  returned: always
  type: bool
problems:
  description: What is not there yet, one line per check, in the cluster's own words.
  returned: always
  type: list
  elements: str
  sample: ["Installation default has linuxDataplane Iptables, not BPF"]
line:
  description: The problems on one line, or what was found healthy.
  returned: always
  type: str
  sample: "healthy: TigeraStatus calico Available, calico-node rolled out, BPF, kube-proxy disabled"
waited:
  description: Seconds waited (0 for one read).
  returned: always
  type: float
"""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.health import expected, read
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import K8sModule
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.wait import argument_spec as wait_argument_spec
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.wait import problems as wait_problems
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.wait import until

_PASSED = ("tigerastatus", "calico_node_namespace", "calico_node_daemonset", "installation", "kube_proxy_namespace",
           "kube_proxy_daemonset")


def _health(m):
    p = m.params
    bad = wait_problems(p["wait_timeout"], p["poll_interval"])
    if bad:
        m.fail("; ".join(bad))
    dataplane, kube_proxy = expected(p["job"], p["dataplane"], p["kube_proxy"])
    settings = dict(((k, p[k]) for k in _PASSED), dataplane=dataplane, kube_proxy=kube_proxy, version=p["version"] or "")
    client = m.client()
    result, waited = until(lambda: read(client, settings), lambda r: r["passed"], p)
    result["waited"] = waited
    return result


def main():
    K8sModule(dict(
        wait_argument_spec(),
        job=dict(type="str", choices=["install_ebpf", "enable_ebpf", "disable_ebpf", "upgrade"]),
        tigerastatus=dict(type="list", elements="str", default=["calico"]),
        calico_node_namespace=dict(type="str", default="calico-system"),
        calico_node_daemonset=dict(type="str", default="calico-node"),
        installation=dict(type="str", default="default"),
        dataplane=dict(type="str", choices=["BPF", "Iptables", ""]),
        kube_proxy=dict(type="str", choices=["disabled", "enabled", ""]),
        kube_proxy_namespace=dict(type="str", default="kube-system"),
        kube_proxy_daemonset=dict(type="str", default="kube-proxy"),
        version=dict(type="str"),
    ), error_prefix="reading Calico's health failed: ",
        subject=lambda p: "Calico's health (TigeraStatus, calico-node, Installation %s, kube-proxy)" % p["installation"]
    ).run(_health)


if __name__ == "__main__":
    main()
