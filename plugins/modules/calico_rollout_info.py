#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: calico_rollout_info
short_description: Tell whether Calico's DaemonSet and Deployments have rolled out, or wait until they have
version_added: "0.1.0"
description:
  - Reads a DaemonSet (for example C(calico-node)), its pods and some Deployments (for example
    C(calico-kube-controllers), C(calico-typha)) and says whether they have rolled out. When they have not,
    RV(message) quotes the DaemonSet's and Deployments' own status and conditions and the pods that are not ready,
    each with why in its own words (the containers' waiting or last termination reason and message, restarts, the
    Ready condition's message, and with O(log_lines) the telling line of its log).
  - With O(wait=true) it reads again every O(poll_interval) seconds until they have, inside the task (no C(until)
    loop, no retry lines), and fails after O(wait_timeout) seconds quoting that status. Its action plugin prints a
    progress line (the status lines) every 30 seconds of a long wait.
  - With O(hold) it watches instead that everything stays rolled out for that many seconds (for example while
    each Felix restarts), reading every O(poll_interval) seconds, and fails at the first read where it is not.
  - A DaemonSet has rolled out when its controller saw the latest spec (observed generation), every scheduled
    pod is updated and available, and every pod of the current template is Running with all its containers
    ready. With O(datastore=etcd) a pod with one container not ready (calico-node READY C(1/2)) is accepted, as
    long as one container is ready.
  - A Deployment has rolled out when its controller saw the latest spec, every replica is updated and
    available, and its C(Available) condition is C(True).
author:
  - calico_ops maintainers (@calico-ops)
options:
  namespace:
    description: Namespace of the DaemonSet and the Deployments.
    type: str
    required: true
  daemonset:
    description: Name of the DaemonSet; omit to check Deployments only.
    type: str
  deployments:
    description: Names of the Deployments.
    type: list
    elements: str
    default: []
  hold:
    description: Seconds everything must stay rolled out (V(0) - no hold); O(wait) is not used with it.
    type: int
    default: 0
  datastore:
    description: The datastore, which sets the pod readiness rule (V(etcd) accepts READY 1/2).
    type: str
    choices: [kubernetes, etcd]
    default: kubernetes
  container:
    description: The DaemonSet's container that O(env) and O(log_lines) look at; unset - the DaemonSet's name.
    type: str
    version_added: "0.2.0"
  env:
    description:
      - Values the template of O(container) must carry before the DaemonSet counts as rolled out - after a change the
        operator renders (the API server endpoint of ConfigMap C(kubernetes-services-endpoint)), the old template may
        still look rolled out until the operator has written the new one.
    type: dict
    default: {}
    version_added: "0.2.0"
  log_lines:
    description:
      - Read the last N lines of the log of O(container) of each pod of the DaemonSet that is not ready (3 pods at
        most), and quote the telling line (the last one that says error, failed, lookup, refused, ...) beside the
        pod's own reason. V(0) reads no log. A log the API does not give (the container has not started, the
        C(pods/log) read is not allowed) is left out.
    type: int
    default: 0
    version_added: "0.2.0"
  absent_ok:
    description: A DaemonSet that does not exist is nothing to wait for (RV(ready) true, RV(found) false).
    type: bool
    default: false
    version_added: "0.2.0"
  felix_bpf:
    description:
      - The DaemonSet (calico-node) counts as rolled out only once the operator has switched Felix to eBPF -
        FelixConfiguration C(default) has C(spec.bpfEnabled) true (operators v1.36 and later), or O(container)
        carries C(FELIX_BPFENABLED=true) (before) - read on every poll with the DaemonSet.
    type: bool
    default: false
    version_added: "0.2.0"
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - calico_ops.lifecycle.attributes
  - calico_ops.lifecycle.attributes.read_only
  - calico_ops.lifecycle.wait
"""

EXAMPLES = r"""
- name: Wait for calico-node and calico-kube-controllers to roll out
  calico_ops.lifecycle.calico_rollout_info:
    namespace: kube-system
    daemonset: calico-node
    deployments: [calico-kube-controllers]
    wait: true
    wait_timeout: 600
    poll_interval: 10
  register: rollout  # on a timeout the task fails with msg: the workloads' own status
"""

RETURN = r"""
ready:
  description: Whether everything has rolled out.
  returned: always
  type: bool
lines:
  description: One status line per workload.
  returned: always
  type: list
  elements: str
  sample: ["DaemonSet kube-system/calico-node: desired 3, updated 3, ready 3, available 3, unavailable 0, observed generation 2/2"]
problems:
  description: What is not rolled out yet, one entry per finding.
  returned: always
  type: list
  elements: str
found:
  description: Whether the DaemonSet exists (null when O(daemonset) is not given).
  returned: always
  type: bool
  version_added: "0.2.0"
message:
  description: The problems (or the lines when ready) as one sentence.
  returned: always
  type: str
msg:
  description: RV(message), prefixed with C(not rolled out:) when not ready (a wait that gave up adds how long it waited).
  returned: always
  type: str
waited:
  description: Seconds the task waited (O(wait=true)).
  returned: always
  type: float
polls:
  description: How many times the workloads were read.
  returned: always
  type: int
"""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.rollout import read, watch
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.errors import describe_object
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import K8sModule
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.wait import argument_spec as wait_argument_spec
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.wait import problems as wait_problems


def _rollout(m):
    p = m.params
    bad = wait_problems(p["wait_timeout"], p["poll_interval"]) + (
        ["hold is %r: give whole seconds, at least 0" % p["hold"]] if p["hold"] < 0 else []) + (
        ["log_lines: %d is negative: give 0 (no log) or a number of lines" % p["log_lines"]]
        if p["log_lines"] < 0 else [])
    if bad:
        m.fail("; ".join(bad), changed=False)
    client = m.client()
    env = dict((k, "%s" % v) for k, v in (p["env"] or {}).items())

    def once(log_lines):
        return read(client, p["namespace"], p["daemonset"], p["deployments"], p["datastore"],
                    container=p["container"], env=env, log_lines=log_lines, absent_ok=p["absent_ok"],
                    felix_bpf=p["felix_bpf"])
    result = watch(once, p["wait"], p["wait_timeout"], p["hold"], p["poll_interval"], p["log_lines"])
    waited = result["waited"]
    if result["ready"]:
        result["msg"] = result["message"]
    elif p["hold"] or p["wait"]:
        m.fail("not rolled out: %s (%s)" % (result["message"], ("%ss into a hold of %ss" % (waited, p["hold"]))
                                            if p["hold"] else "waited %ss" % waited), **result)
    else:
        result["msg"] = "not rolled out: " + result["message"]
    return result


def main():
    K8sModule(dict(
        wait_argument_spec(),
        namespace=dict(type="str", required=True),
        daemonset=dict(type="str"),
        deployments=dict(type="list", elements="str", default=[]),
        datastore=dict(type="str", choices=["kubernetes", "etcd"], default="kubernetes"),
        hold=dict(type="int", default=0),
        container=dict(type="str"),
        env=dict(type="dict", default={}),
        log_lines=dict(type="int", default=0),
        absent_ok=dict(type="bool", default=False),
        felix_bpf=dict(type="bool", default=False),
    ), subject=lambda p: describe_object("apps/v1", "daemonsets" if p["daemonset"] else "deployments", p["namespace"],
                                         p["daemonset"] or ",".join(p["deployments"]) or None)).run(_rollout)


if __name__ == "__main__":
    main()
