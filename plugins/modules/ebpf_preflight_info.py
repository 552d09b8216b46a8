#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: ebpf_preflight_info
short_description: Tell whether a cluster can run Calico's eBPF data plane, node by node, from the API
version_added: 0.1.0
author:
  - calico_ops contributors (@calico-ops)
description:
  - Reads the cluster through the Kubernetes API only (no SSH) and judges, per node and per named check,
    whether the Calico eBPF data plane can run. Never writes to the cluster.
  - Requests made - one GET of C(/apis), one paginated LIST of Nodes, one LIST per feature (Services, Pods,
    FelixConfigurations, the four Calico policy types, operator ApplicationLayers), and GETs of the
    kube-proxy ConfigMap and DaemonSet in C(kube-system). A type whose group-version C(/apis) does not list is
    not asked for (it is not served), so a cluster without Calico or the operator costs six requests fewer. The
    number of requests does not grow with the number of nodes, except for pagination.
  - Per node - C(architecture) (amd64 and arm64 pass), C(os_kernel) (Ubuntu 20.04 or newer; RHEL, CentOS
    Stream, Rocky or Alma 8.2+ with kernel 4.18.0-193 or newer, 9.x; any other distribution kernel 5.3 or
    newer; Ubuntu older than 20.04 fails whatever its kernel), C(windows) (Windows nodes fail),
    C(immutable_os) (Talos, Bottlerocket, Flatcar, Fedora CoreOS warn until FelixConfiguration default
    C(spec.cgroupV2Path) is set).
  - Cluster-wide - C(platform) (detected from node labels, providerID and served API groups; GKE, TKG and RKE
    fail; AKS reports whether kube-proxy can be disabled; EKS with Bottlerocket nodes needs
    C(flexVolumePath)), C(kube_proxy_mode) (IPVS fails), C(sctp_services), C(policy_log_action),
    C(floating_ips), C(application_layer_policy), C(web_application_firewall), C(l7_logs). Findings name the
    objects (C(Kind/namespace/name), the first O(max_objects)) and count them.
  - C(api_endpoint_name) warns when the API server host Calico dials is a DNS name - the C(KUBERNETES_SERVICE_HOST) of
    ConfigMap C(kubernetes-services-endpoint) (in C(tigera-operator), else C(kube-system)), or without one the
    kubeconfig's server, which the install writes on kubeadm, generic, EKS and AKS - since calico-node in eBPF mode
    resolves it at boot and can hang there when only the cluster's DNS answers for it (Calico issue 10683).
  - Checks that need Calico's CRDs pass with "not installed" when Calico is not installed yet.
    C(projectcalico.org/v3) is read when the Calico API server serves it, else C(crd.projectcalico.org/v1).
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - calico_ops.lifecycle.attributes
  - calico_ops.lifecycle.attributes.read_only
options:
  platform:
    description:
      - The platform, instead of detecting it. V(auto) detects it.
    type: str
    default: auto
    choices: [auto, generic, kubeadm, openshift, kops, mke, eks, aks, gke, tkg, rke]
  ignore:
    description:
      - Check names whose failures are downgraded to warnings (the report marks them C(ignored)).
    type: list
    elements: str
    default: []
    choices: [architecture, os_kernel, windows, immutable_os, platform, kube_proxy_mode, sctp_services,
              policy_log_action, floating_ips, application_layer_policy, web_application_firewall, l7_logs,
              api_endpoint_name, host_facts, bpffs, cgroup_v2, vxlan_module, vlan_devices]
  max_objects:
    description:
      - How many objects a finding names (the count is always complete).
    type: int
    default: 20
  page_size:
    description:
      - Objects per page of each LIST.
    type: int
    default: 500
requirements:
  - PyYAML >= 3.11
notes:
  - Tagged VLAN devices, bpffs, cgroup v2 and the vxlan module are not visible through the API; the
    C(calico_ops.lifecycle.preflight) role checks them on the hosts when asked (C(preflight_host_group)).
seealso:
  - module: calico_ops.lifecycle.ebpf_host_preflight_info
"""

EXAMPLES = r"""
- name: Check the cluster for the eBPF data plane
  calico_ops.lifecycle.ebpf_preflight_info:
    kubeconfig: ~/.kube/config
  register: preflight

- name: Stop when the cluster is not eligible
  ansible.builtin.fail:
    msg: "{{ preflight.summary.message }}"
  when: not preflight.eligible

- name: Accept IPVS (it will be switched first) and name the platform
  calico_ops.lifecycle.ebpf_preflight_info:
    platform: eks
    ignore:
      - kube_proxy_mode
"""

RETURN = r"""
eligible:
  description: True when no check fails (after O(ignore)).
  returned: always
  type: bool
  sample: true
verdict:
  description: The worst verdict, V(ok), V(warn) or V(fail).
  returned: always
  type: str
  sample: warn
summary:
  description:
    - Counts, every failing node and check with its reason (C(failing)), warnings, and C(message), one text
      listing every failure.
  returned: always
  type: dict
  sample:
    verdict: fail
    eligible: false
    nodes: {total: 3, ok: 2, warn: 0, fail: 1}
    checks: {total: 8, ok: 8, warn: 0, fail: 0}
    by_check: {os_kernel: {ok: 2, warn: 0, fail: 1}}
    failing: ["node rhel-1: os_kernel: RHEL 8.1 is older than 8.2 (kernel 4.18.0-147.el8.x86_64)"]
    warnings: []
    ignored: []
    message: "The cluster is not eligible for the eBPF data plane (1 failing): ..."
platform:
  description:
    - The platform (detected, or O(platform)) and what other roles need to know of it - whether kube-proxy
      can be disabled and how, fields the Installation and FelixConfiguration must set, the operator's DNS.
  returned: always
  type: dict
  sample:
    name: aks
    title: Azure AKS
    source: detected
    supported: true
    kube_proxy_can_be_disabled: false
    kube_proxy_disable: null
    installation: {}
    felix_configuration: {bpfKubeProxyIptablesCleanupEnabled: false}
    operator_dns_nameservers: []
    notes: []
    detected: {name: aks, evidence: ["label kubernetes.azure.com/cluster (node aks-1)"], nodes: 3}
nodes:
  description: Per node name - its verdict, OS, kernel, architecture and each per-node check's verdict and reason.
  returned: always
  type: dict
  sample:
    node-1:
      verdict: ok
      os_image: Ubuntu 22.04.4 LTS
      os: ubuntu
      kernel: 5.15.0-105-generic
      architecture: amd64
      immutable: false
      checks:
        architecture: {verdict: ok, reason: amd64}
        os_kernel: {verdict: ok, reason: Ubuntu 22.04.4 LTS (20.04 or newer)}
        windows: {verdict: ok, reason: Linux}
        immutable_os: {verdict: ok, reason: not an immutable OS}
checks:
  description: Per cluster-wide check - verdict, reason and, for feature checks, C(objects) (first O(max_objects)) and C(count).
  returned: always
  type: dict
  sample:
    sctp_services:
      verdict: fail
      reason: "Services with protocol SCTP (unsupported in eBPF mode): 1 (Service/app/sctp-echo)"
      objects: [Service/app/sctp-echo]
      count: 1
kube_proxy:
  description: Whether kube-proxy was found in kube-system, its mode and where the mode was read.
  returned: always
  type: dict
  sample: {present: true, mode: ipvs, source: ConfigMap kube-system/kube-proxy config.conf, daemonset: true, configmap: kube-proxy}
calico:
  description: Which Calico API was read, whether Calico is installed, and FelixConfiguration default's cgroupV2Path.
  returned: always
  type: dict
  sample: {api_version: crd.projectcalico.org/v1, installed: false, cgroup_v2_path: null, felix_configurations: []}
read_errors:
  description: Optional reads that failed (for example 403), by resource; their checks warn.
  returned: always
  type: dict
  sample: {}
ignored:
  description: The check names of O(ignore).
  returned: always
  type: list
  elements: str
  sample: [kube_proxy_mode]
api_requests:
  description: How many API requests the module made (C(read), C(write); write is always 0).
  returned: always
  type: dict
  sample: {read: 12, write: 0}
"""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import K8sModule
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.facts import PLATFORM_CHOICES
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight.rules import CHECK_NAMES
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight.runner import run_preflight


def _preflight(m):
    p = m.params
    if p["max_objects"] < 0 or p["page_size"] < 1:
        m.fail("max_objects must be >= 0 and page_size >= 1")
    return run_preflight(m.client(), platform=p["platform"], ignore=p["ignore"], max_objects=p["max_objects"],
                         server_url=m.server_url(),
                         page_size=p["page_size"])


def main():
    K8sModule(dict(
        platform=dict(type="str", default="auto", choices=list(PLATFORM_CHOICES)),
        ignore=dict(type="list", elements="str", default=[], choices=list(CHECK_NAMES)),
        max_objects=dict(type="int", default=20),
        page_size=dict(type="int", default=500),
    ), error_prefix="eBPF preflight: ", subject=lambda p: "nodes and kube-system objects").run(_preflight)


if __name__ == "__main__":
    main()
