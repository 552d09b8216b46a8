#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: connectivity_info
short_description: Plan, check and probe the connectivity of a cluster's network through a probe workload
version_added: "0.2.0"
description:
  - The read side of the C(connectivity) role, which deploys and removes the probe workload in between. Every
    request is a GET through the API server; the module writes nothing to the cluster.
  - The probe workload is what Kubernetes' e2e network tests deploy, agnhost C(netexec) pods; on every selected
    node a server pod and a client pod in the pod network and a host pod in the node's host network, a ClusterIP
    and a NodePort Service to the server pods. The API server proxies each check to a host pod
    (C(pods/proxy)); the host pod dials, or asks its node's client pod to dial (agnhost C(/dial)), so each check is
    a new TCP connection from a pod or a node to its target.
  - O(stage=plan) selects the nodes and returns the workload's manifests. A selector that matches no Ready Linux
    node, or a namespace that exists and is not the check's, fails here, before anything is deployed.
  - O(stage=ready) says whether every pod of the workload is Running and Ready and every host pod answers and
    reaches its node's client pod (RV(waiting) says what is not, RV(reason) sums it up in one line - image pull,
    scheduling, not created, not ready, no answer; with O(serving), not served). With O(wait_timeout) it asks
    again every O(poll_interval) seconds until the workload is ready or the timeout has passed, inside the one
    module call.
  - O(stage=check) runs the checks and returns one row per check and node pair; O(expect=denied) passes a pod
    pair that does not answer (the role's NetworkPolicy applied), O(expect=restored) one that answers again.
  - O(stage=probe) opens new connections to four targets every O(probe_interval) seconds until O(stop_file) exists
    or O(probe_max_seconds) pass, writing each attempt to O(probe_file) (0600), and returns attempted, failed and the
    longest gap per target. The role runs it in the background (C(async)) around a job.
author:
  - calico_ops maintainers (@calico-ops)
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - calico_ops.lifecycle.attributes
  - calico_ops.lifecycle.variable_prefix
  - calico_ops.lifecycle.workers
options:
  stage:
    description: What to do (see the description).
    type: str
    choices: [plan, ready, check, probe]
    required: true
  namespace:
    description: The probe workload's own namespace (created and deleted by the role).
    type: str
    default: calico-ops-connectivity
  node_selector:
    description: Labels a node must have to be checked (every Ready Linux node when empty).
    type: dict
    default: {}
  max_nodes:
    description: Check at most this many of the selected nodes, by name (V(0) - all). Pair checks grow as its square.
    type: int
    default: 0
  image:
    description: The agnhost image of the workload's pods.
    type: str
    default: registry.k8s.io/e2e-test-images/agnhost:2.53
  http_port:
    description: The port the server and client pods serve on (the checks that dial a pod directly).
    type: int
    default: 8080
  service_port:
    description:
      - The port the server pods serve the ClusterIP and NodePort Services on, from a second container.
      - Apart from O(http_port) because Calico's eBPF conntrack drops a new connection from a pod to a Service's
        backend when the same pod reached that backend through the Service from the same source port (and the
        other way round).
    type: int
    default: 8081
  host_port:
    description: The port the host pods serve on, in each node's host network (it must be free on the nodes).
    type: int
    default: 8083
  node_port:
    description: The NodePort of the workload's NodePort Service (V(0) - the API server picks one).
    type: int
    default: 0
  checks:
    description:
      - The checks to run. V(pod_to_pod) (every pod to every node's server pod), V(pod_to_service) (the
        ClusterIP), V(pod_to_nodeport) (every node's NodePort from a pod), V(host_to_nodeport) (from each node's
        host network), V(pod_to_api_server) (the C(kubernetes) Service), V(dns) (the server Service by name, when
        the cluster has O(dns_service)), V(network_policy) (a policy that denies is enforced, and removing it
        restores traffic; run by the role in two O(expect) stages), V(kube_proxy_absent) (with eBPF, no kube-proxy
        pod on a checked node).
    type: list
    elements: str
    default: [pod_to_pod, pod_to_service, pod_to_nodeport, host_to_nodeport, pod_to_api_server, dns, network_policy,
              kube_proxy_absent]
  expect:
    description: In O(stage=check), what the pod pairs must do (V(denied) and V(restored) run only the pod pairs).
    type: str
    choices: [allowed, denied, restored]
    default: allowed
  attempts:
    description: How many times a failing pair is tried before it counts as failed (1 or more).
    type: int
    default: 2
  policy_timeout:
    description: Seconds a NetworkPolicy's effect (V(denied), V(restored)) may take to show.
    type: int
    default: 60
  dns_service:
    description: The cluster DNS Service, C(namespace/name); the V(dns) check runs when it exists.
    type: str
    default: kube-system/kube-dns
  cluster_domain:
    description: The cluster's DNS domain.
    type: str
    default: cluster.local
  kube_proxy_namespace:
    description: Namespace of kube-proxy's pods.
    type: str
    default: kube-system
  kube_proxy_selector:
    description: The label selector of kube-proxy's pods.
    type: str
    default: k8s-app=kube-proxy
  probe_file:
    description: In O(stage=probe), the JSON-lines file of the attempts (written 0600; replaced).
    type: path
  stop_file:
    description: In O(stage=probe), the file whose existence stops the prober.
    type: path
  probe_interval:
    description: In O(stage=probe), seconds between two attempts to a target.
    type: float
    default: 1.0
  probe_max_seconds:
    description: In O(stage=probe), seconds after which the prober stops without its stop file.
    type: int
    default: 3600
  wait_timeout:
    description: In O(stage=ready), seconds to keep asking until the workload is ready (V(0) - ask once).
    type: int
    default: 0
  poll_interval:
    description: In O(stage=ready), seconds between two looks while O(wait_timeout) runs.
    type: int
    default: 5
  serving:
    description:
      - In O(stage=ready), also dial each target of the prober once (a pod on another node, the ClusterIP, the
        NodePort from a pod and from the host network); the workload is ready only when each answers. A job that
        changes the data plane asks this before its first write, so a network that already fails is known then,
        naming each target that did not answer (kind C(not served)).
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: Every stage only reads; the role deploys nothing in check mode.
  diff_mode:
    support: none
    description: Nothing is changed.
seealso:
  - module: calico_ops.lifecycle.manifest_apply
"""

EXAMPLES = r"""
- name: Plan the probe workload on the worker nodes
  calico_ops.lifecycle.connectivity_info:
    stage: plan
    node_selector:
      node-role.kubernetes.io/worker: ""
  register: plan

- name: Wait at most 90 s for the probe workload (deployed by the role) to be ready
  calico_ops.lifecycle.connectivity_info:
    stage: ready
    wait_timeout: 90
  register: ready

- name: Check every pair
  calico_ops.lifecycle.connectivity_info:
    stage: check
  register: checked
"""

RETURN = r"""
nodes:
  description: The nodes checked.
  returned: always
  type: list
  elements: str
skipped_nodes:
  description: Nodes the selector matched but that are not checked, and why.
  returned: always
  type: list
  elements: str
manifests:
  description: The probe workload (O(stage=plan)).
  returned: when stage is plan
  type: list
  elements: dict
policy:
  description: The NetworkPolicy of the V(network_policy) check (O(stage=plan)).
  returned: when stage is plan
  type: dict
bpf:
  description: Whether the data plane is eBPF (the Installation, else FelixConfiguration C(bpfEnabled)).
  returned: when stage is plan or check
  type: bool
ready:
  description: Whether the workload is ready to check (O(stage=ready)).
  returned: when stage is ready
  type: bool
waiting:
  description: What the workload still waits for, one line each, quoting the pods' own status.
  returned: when stage is ready
  type: list
  elements: str
reason:
  description:
    - One line - how many pods each problem keeps (image pull, scheduling, not created, not ready, no answer) or
      how many targets did not answer (not served, with O(serving)) and the first of RV(waiting); empty when ready.
  returned: when stage is ready
  type: str
waited:
  description: Seconds the module waited for the workload (O(wait_timeout)).
  returned: when stage is ready
  type: float
rows:
  description: One row per check and pair, C(check), C(from), C(to), C(outcome) (ok, failed, unreached, skipped), C(detail).
  returned: when stage is check
  type: list
  elements: dict
failures:
  description: The rows that did not pass, C(check from -> to - detail).
  returned: when stage is check
  type: list
  elements: str
targets:
  description: Per prober target, C(attempted), C(failed), C(unmeasured), C(longest_gap_s), C(recovered), C(errors).
  returned: when stage is probe
  type: dict
lines:
  description: What to show, one line each (the tables of a check, the prober's table).
  returned: always
  type: list
  elements: str
api_requests:
  description: How many API requests the module made.
  returned: always
  type: dict
"""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.connectivity import rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.connectivity.runner import (
    ConnectivityError, run_stage, validate)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import K8sModule


def _run(m):
    validate(m.params, m.params["variable_prefix"])  # before any request
    return run_stage(m.client(), m.params, m.params["variable_prefix"])


def main():
    K8sModule(dict(
        stage=dict(type="str", required=True, choices=["plan", "ready", "check", "probe"]),
        namespace=dict(type="str", default=rules.DEFAULT_NAMESPACE),
        node_selector=dict(type="dict", default={}),
        max_nodes=dict(type="int", default=0),
        image=dict(type="str", default=rules.DEFAULT_IMAGE),
        http_port=dict(type="int", default=8080),
        service_port=dict(type="int", default=8081),
        host_port=dict(type="int", default=8083),
        node_port=dict(type="int", default=0),
        checks=dict(type="list", elements="str", default=list(rules.CHECKS)),
        expect=dict(type="str", default="allowed", choices=["allowed", "denied", "restored"]),
        attempts=dict(type="int", default=2),
        policy_timeout=dict(type="int", default=60),
        dns_service=dict(type="str", default="kube-system/kube-dns"),
        cluster_domain=dict(type="str", default="cluster.local"),
        kube_proxy_namespace=dict(type="str", default="kube-system"),
        kube_proxy_selector=dict(type="str", default="k8s-app=kube-proxy"),
        probe_file=dict(type="path"),
        stop_file=dict(type="path"),
        probe_interval=dict(type="float", default=1.0),
        probe_max_seconds=dict(type="int", default=3600),
        wait_timeout=dict(type="int", default=0),
        poll_interval=dict(type="int", default=5),
        serving=dict(type="bool", default=False),
        workers=dict(type="int", default=8),
        variable_prefix=dict(type="str", default=""),
    ), error_prefix="connectivity: ", errors=(ConnectivityError,),
        subject=lambda p: "the connectivity check in namespace %s" % p.get("namespace")).run(_run)


if __name__ == "__main__":
    main()
