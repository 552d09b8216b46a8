#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: kube_proxy_info
short_description: Tell how kube-proxy runs and what turns it off (or on) on this platform (read-only)
version_added: 0.1.0
author:
  - calico_ops maintainers (@calico-ops)
description:
  - Reads the platform (O(platform), or the preflight's detection with V(auto)), DaemonSet
    C(kube-system/kube-proxy), its pods and mode (ConfigMap C(kube-proxy) or C(kube-proxy-config), or the
    C(--proxy-mode) flag) and, per platform, the object that turns kube-proxy off - OpenShift's
    C(networks.operator.openshift.io) C(cluster), AKS's FelixConfiguration C(default) (through
    C(projectcalico.org/v3) when served, else C(crd.projectcalico.org/v1)) - or the kOps commands.
  - Returns the merge patches for O(state) and, for the waits, whether the DaemonSet has settled (0 scheduled
    pods when disabled, every desired pod updated and ready when enabled) with a line quoting its status.
  - With O(wait=true) it reads again every O(poll_interval) seconds until the DaemonSet has settled, inside the one
    module run (no retried task), for O(wait_timeout) seconds at most; it does not fail when it has not settled
    (the caller quotes C(line) of RV(daemonset)).
  - Never writes.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - calico_ops.lifecycle.attributes
  - calico_ops.lifecycle.wait
options:
  state:
    description: The state wanted; the patches and C(daemonset.settled) are for it.
    type: str
    default: disabled
    choices: [disabled, enabled]
  platform:
    description: The platform; V(auto) uses the preflight's detection.
    type: str
    default: auto
    choices: [auto, generic, kubeadm, openshift, kops, mke, eks, aks]
  namespace:
    description: kube-proxy's namespace.
    type: str
    default: kube-system
  daemonset:
    description: kube-proxy's DaemonSet.
    type: str
    default: kube-proxy
  configmaps:
    description: ConfigMaps that may hold kube-proxy's configuration (the first that exists is read).
    type: list
    elements: str
    default: [kube-proxy, kube-proxy-config]
  pod_selector:
    description: Label selector of kube-proxy pods when there is no DaemonSet (for example on MKE).
    type: str
    default: k8s-app=kube-proxy
  node_selector:
    description: The nodeSelector that matches no node (added to disable, its keys removed to enable).
    type: dict
    default: {non-calico: "true"}
  target_mode:
    description: The mode an IPVS kube-proxy is switched to.
    type: str
    default: iptables
  openshift_name:
    description: OpenShift - the Network operator config's name.
    type: str
    default: cluster
  openshift_field:
    description: OpenShift - the field under C(spec) that deploys kube-proxy.
    type: str
    default: deployKubeProxy
  felix_name:
    description: AKS - the FelixConfiguration's name.
    type: str
    default: default
  felix_field:
    description: AKS - the FelixConfiguration field set to false.
    type: str
    default: bpfKubeProxyIptablesCleanupEnabled
  kops_cluster_name:
    description: kOps - the cluster name (default - from the kubeconfig's server C(api.<cluster name>)).
    type: str
  kops_state_store:
    description: kOps - the state store (for example V(s3://bucket)).
    type: str
  kops_binary:
    description: kOps - the CLI, as the commands should name it.
    type: str
    default: kops
  kops_spec_file:
    description: kOps - the file the commands write the cluster spec to.
    type: str
    default: cluster.yaml
  calico_node:
    description:
      - calico-node DaemonSets (C(namespace/name)) whose way to the API server is read into RV(calico_api); the
        first that exists is used (the operator's, then a manifest install's).
    type: list
    elements: str
    default: [calico-system/calico-node, kube-system/calico-node]
  switch_ipvs_to_iptables:
    description:
      - Whether an IPVS kube-proxy may be switched to O(target_mode) before it is disabled; without it RV(plan)
        refuses to disable an IPVS kube-proxy.
    type: bool
    default: false
  require_calico_api:
    description:
      - Refuse (in RV(plan)) to disable kube-proxy while calico-node reaches the API server through the
        C(kubernetes) Service, which kube-proxy serves.
    type: bool
    default: true
  kops_timeout:
    description: kOps - the seconds each kops command may take; checked to be positive for RV(plan).
    type: int
  names_prefix:
    description:
      - The prefix of the caller's variables (for example V(kube_proxy_) for the role), so that RV(plan)'s problems
        name C(kube_proxy_timeout) instead of O(wait_timeout). Empty - the options' own names.
    type: str
    default: ""
  fail_on_problems:
    description:
      - Fail, before the caller writes anything, when RV(plan) lists problems (one line naming each variable or
        object); with O(wait=true), fail when the DaemonSet has not settled within O(wait_timeout), quoting its
        status. Otherwise the caller reads them.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: Reads kube-proxy's DaemonSet, ConfigMaps, pods and the platform's objects; writes nothing, so check mode reports the same.
  diff_mode:
    support: none
    description: The module changes nothing; the role's merge patches carry the diff.
seealso:
  - module: calico_ops.lifecycle.merge_patch
  - module: calico_ops.lifecycle.ebpf_preflight_info
"""

EXAMPLES = r"""
- name: Read kube-proxy on a kubeadm cluster
  calico_ops.lifecycle.kube_proxy_info:
    platform: kubeadm
  register: kube_proxy

- name: Wait until kube-proxy runs nowhere
  calico_ops.lifecycle.kube_proxy_info:
    platform: kubeadm
    state: disabled
  register: poll
  until: poll.daemonset.settled
  retries: 60
  delay: 5
"""

RETURN = r"""
platform:
  description: The platform used - C(name), C(source) (V(user) or V(detected)), C(title), C(details) (the preflight's).
  returned: always
  type: dict
daemonset:
  description:
    - C(present), C(node_selector), C(selector_applied) (the non-matching selector is in place), C(pods),
      C(settled) for O(state), C(line) (the status numbers), C(status), C(patch) (the merge patch for O(state)).
  returned: always
  type: dict
  sample:
    present: true
    node_selector: {kubernetes.io/os: linux}
    selector_applied: false
    pods: 3
    settled: false
    line: >-
      DaemonSet kube-system/kube-proxy: desired 3, current 3, updated 3, ready 3, available 3, unavailable 0,
      misscheduled 0, pods 3 (generation 1, observed 1)
    patch: {spec: {template: {spec: {nodeSelector: {non-calico: "true"}}}}}
running:
  description: Whether kube-proxy runs (live pods, or a DaemonSet that wants pods and is not disabled).
  returned: always
  type: bool
mode:
  description:
    - kube-proxy's mode and where it is set (C(configmap) and C(key), or C(container) for the flag); C(ipvs);
      C(switch) - the ConfigMap merge patch or the DaemonSet patch that sets O(target_mode); C(roll_pending) - the
      ConfigMap's mode was switched by this collection and the DaemonSet not rolled since (a run cut in between).
  returned: always
  type: dict
openshift:
  description: OpenShift - whether the Network API is served, the object exists, the current value and the patch.
  returned: when the platform is openshift
  type: dict
felix:
  description: AKS - the FelixConfiguration API version used, whether C(default) exists, its value, the patch and the body to create.
  returned: when the platform is aks
  type: dict
kops:
  description: kOps - the cluster name, the state store and the exact commands for O(state).
  returned: when the platform is kops
  type: dict
mke:
  description: MKE - whether the role must fail and the message naming the install flags.
  returned: when the platform is mke
  type: dict
calico_api:
  description:
    - How calico-node reaches the API server - C(daemonset) (C(namespace/name), null when Calico is not
      installed), C(direct) (KUBERNETES_SERVICE_HOST and _PORT are set, so it does not need kube-proxy), C(host),
      C(port), C(source) (the container's env, or the ConfigMap it takes its environment from).
  returned: always
  type: dict
  sample: {daemonset: calico-system/calico-node, direct: true, host: 10.0.0.10, port: "6443",
           source: "the container's env (rendered from ConfigMap kubernetes-services-endpoint)"}
plan:
  description:
    - What the role does (module_utils C(kube_proxy/plan.py)) - C(problems) (why it must stop before any write,
      each naming the variable or object), C(ipvs) (switch an IPVS kube-proxy to iptables first), C(writes) (the
      merge patches, in order, each with C(api_version), C(resource), C(namespace), C(name), C(patch), C(missing),
      C(create) and C(label)), C(wait) (the state the DaemonSet settles in after them, or null), C(kops) (the change
      is kOps's cluster spec, made with its CLI), C(notes) (what the report says besides the result), C(serves)
      (kube-proxy may still serve Services - its pods run, or the platform keeps it where the DaemonSet does not
      tell - so a job waits for Calico before it goes).
  returned: always
  type: dict
  sample:
    problems: []
    ipvs: false
    writes:
      - api_version: apps/v1
        resource: daemonsets
        namespace: kube-system
        name: kube-proxy
        patch: {spec: {template: {spec: {nodeSelector: {non-calico: "true"}}}}}
        missing: fail
        create: null
        label: 'DaemonSet''s nodeSelector - kube-system/kube-proxy: add {"non-calico": "true"}'
    wait: disabled
    kops: false
    notes: []
    serves: true
waited:
  description: The seconds the module read for (with O(wait=true); 0 for one read).
  returned: always
  type: float
api_requests:
  description: How many API requests the module made (C(read), C(write); write is always 0).
  returned: always
  type: dict
"""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.errors import describe_object
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import K8sModule
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.wait import argument_spec as wait_argument_spec
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.wait import problems as wait_problems
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.wait import until
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.kube_proxy.plan import plan, settings_problems
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.kube_proxy.rules import (
    DEFAULT_NODE_SELECTOR, FELIX_FIELD, STATES)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.kube_proxy.runner import run_kube_proxy_info
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.facts import SUPPORTED_CHOICES

_PASSED = ("state", "platform", "namespace", "daemonset", "configmaps", "pod_selector", "node_selector",
           "target_mode", "openshift_name", "openshift_field", "felix_name", "felix_field", "kops_cluster_name",
           "kops_state_store", "kops_binary", "kops_spec_file", "calico_node")


_PLANNED = ("state", "namespace", "daemonset", "configmaps", "node_selector", "wait_timeout", "poll_interval",
            "switch_ipvs_to_iptables", "require_calico_api", "openshift_name", "openshift_field", "felix_name",
            "felix_field")


def _kube_proxy(m):
    p = m.params
    settings = dict(((k, p[k]) for k in _PLANNED), prefix=p["names_prefix"])
    if p["kops_timeout"] is not None:
        settings["kops_timeout"] = p["kops_timeout"]
    bad = ([] if p["node_selector"] else ["node_selector: must have at least one key (a label no node carries)"]
           ) + wait_problems(p["wait_timeout"], p["poll_interval"])
    if p["fail_on_problems"] and not p["wait"]:  # the caller's checks, by the caller's names, before any read
        bad = settings_problems(settings) or bad
    if bad:
        m.fail("; ".join(bad))
    server_url, client = m.server_url(), m.client()
    result, waited = until(
        lambda: run_kube_proxy_info(client, server_url=server_url, **dict((k, p[k]) for k in _PASSED)),
        lambda r: r["daemonset"]["settled"], p)
    result["waited"] = waited
    result["plan"] = plan(result, settings)
    if p["fail_on_problems"] and p["wait"] and not result["daemonset"]["settled"]:
        m.fail("DaemonSet %s/%s did not reach %s within %ss. %s" % (
            p["namespace"], p["daemonset"], "0 scheduled pods" if p["state"] == "disabled" else
            "all pods updated and ready", p["wait_timeout"], result["daemonset"]["line"]), changed=False, **result)
    if p["fail_on_problems"] and not p["wait"] and result["plan"]["problems"]:
        m.fail(" ".join(result["plan"]["problems"]), changed=False, **result)
    return result


def main():
    K8sModule(dict(
        wait_argument_spec(),
        state=dict(type="str", default="disabled", choices=list(STATES)),
        platform=dict(type="str", default="auto", choices=list(SUPPORTED_CHOICES)),
        namespace=dict(type="str", default="kube-system"),
        daemonset=dict(type="str", default="kube-proxy"),
        configmaps=dict(type="list", elements="str", default=["kube-proxy", "kube-proxy-config"]),
        pod_selector=dict(type="str", default="k8s-app=kube-proxy"),
        node_selector=dict(type="dict", default=dict(DEFAULT_NODE_SELECTOR)),
        target_mode=dict(type="str", default="iptables"),
        openshift_name=dict(type="str", default="cluster"),
        openshift_field=dict(type="str", default="deployKubeProxy"),
        felix_name=dict(type="str", default="default"),
        felix_field=dict(type="str", default=FELIX_FIELD),
        kops_cluster_name=dict(type="str"),
        kops_state_store=dict(type="str", no_log=False),
        kops_binary=dict(type="str", default="kops"),
        kops_spec_file=dict(type="str", default="cluster.yaml"),
        calico_node=dict(type="list", elements="str", default=["calico-system/calico-node", "kube-system/calico-node"]),
        switch_ipvs_to_iptables=dict(type="bool", default=False),
        require_calico_api=dict(type="bool", default=True),
        kops_timeout=dict(type="int"),
        names_prefix=dict(type="str", default=""),
        fail_on_problems=dict(type="bool", default=False),
    ), error_prefix="kube-proxy: ",
        subject=lambda p: describe_object("apps/v1", "daemonsets", p["namespace"], p["daemonset"])).run(_kube_proxy)


if __name__ == "__main__":
    main()
