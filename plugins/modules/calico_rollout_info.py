#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: calico_rollout_info
short_description: Tell whether Calico's DaemonSet and Deployments have rolled out (read-only, one poll)
version_added: "0.1.0"
description:
  - Reads a DaemonSet (for example C(calico-node)), its pods and some Deployments (for example
    C(calico-kube-controllers), C(calico-typha)) once and says whether they have rolled out. Use it with
    C(until)/C(retries)/C(delay) to wait; on a timeout RV(message) quotes the DaemonSet's and Deployments'
    own status and conditions and the pods that are not ready.
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
  datastore:
    description: The datastore, which sets the pod readiness rule (V(etcd) accepts READY 1/2).
    type: str
    choices: [kubernetes, etcd]
    default: kubernetes
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - calico_ops.lifecycle.attributes
  - calico_ops.lifecycle.attributes.read_only
"""

EXAMPLES = r"""
- name: Wait for calico-node and calico-kube-controllers to roll out
  calico_ops.lifecycle.calico_rollout_info:
    namespace: kube-system
    daemonset: calico-node
    deployments: [calico-kube-controllers]
  register: rollout
  until: rollout.ready
  retries: 60
  delay: 10
  failed_when: not rollout.ready  # on a timeout, fails with msg: the workloads' own status
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
message:
  description: The problems (or the lines when ready) as one sentence.
  returned: always
  type: str
msg:
  description: RV(message), prefixed with C(not rolled out:) when not ready; shown when a wait gives up.
  returned: always
  type: str
"""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.rollout import read
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.errors import describe_object
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import K8sModule


def _rollout(m):
    p = m.params
    result = read(m.client(), p["namespace"], p["daemonset"], p["deployments"], p["datastore"])
    result["msg"] = result["message"] if result["ready"] else "not rolled out: " + result["message"]
    return result


def main():
    K8sModule(dict(
        namespace=dict(type="str", required=True),
        daemonset=dict(type="str"),
        deployments=dict(type="list", elements="str", default=[]),
        datastore=dict(type="str", choices=["kubernetes", "etcd"], default="kubernetes"),
    ), subject=lambda p: describe_object("apps/v1", "daemonsets" if p["daemonset"] else "deployments", p["namespace"],
                                         p["daemonset"] or ",".join(p["deployments"]) or None)).run(_rollout)


if __name__ == "__main__":
    main()
