#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: calico_facts
short_description: Tell how Calico is installed, from the cluster alone (read-only)
version_added: "0.1.0"
description:
  - Detects the install method, the datastore, the manifest flavor, the Calico version and variant, whether
    application layer policy is on, the TigeraStatus summary and a few upgrade-related facts, and says for
    each value where it came from (RV(sources)).
  - A facts module - it sets the fact C(calico) (RV(ansible_facts.calico)), the same dict as RV(facts), so later
    tasks can read C(calico.method) without C(register).
  - B(method) is V(helm) when a deployed Helm release of chart O(helm_chart) is stored in O(operator_namespace);
    V(operator) when Installation C(default) or the operator Deployment exists without such a release;
    V(manifest) when DaemonSet C(calico-node) (or C(canal), C(canal-node)) runs in O(manifest_namespace)
    without an operator; V(none) otherwise.
  - B(datastore) is V(kubernetes) for operator installs; for manifests it is read from calico-node's
    C(DATASTORE_TYPE), else V(etcd) when ConfigMap C(calico-config) (C(canal-config)) has C(etcd_endpoints).
  - B(flavor) (manifest installs) is the release file the install came from - C(calico.yaml),
    C(calico-typha.yaml) (a C(calico-typha) Deployment or Typha service name), C(canal.yaml) (DaemonSet
    C(canal) or a flannel container), C(calico-policy-only.yaml) (C(CALICO_NETWORKING_BACKEND=none) without
    flannel), C(calico-etcd.yaml) or C(canal-etcd.yaml) (etcd datastore).
  - B(version) is Installation C(default) C(status.calicoVersion), else ClusterInformation C(default)
    C(spec.calicoVersion), else the tag of the calico-node image, else the Helm chart's version.
  - A value given in an option (O(method), O(datastore), O(flavor), O(version), O(variant), O(alp),
    O(istio_version)) overrides the detected one; the detected one is still returned in RV(detected).
  - Makes about a dozen requests (LIST/GET of the objects above) and never writes.
  - With O(wait=true) and O(wait_version), it reads again every O(poll_interval) seconds, inside the one module run,
    until the cluster reports that version (the detected version and ClusterInformation's, or no ClusterInformation
    unless O(wait_cluster_information)), for O(wait_timeout) seconds at most, and fails when it does not, quoting
    both versions and where each was read.
author:
  - calico_ops maintainers (@calico-ops)
options:
  method:
    description: Override the detected install method.
    type: str
    choices: [helm, operator, manifest, none]
  datastore:
    description: Override the detected datastore.
    type: str
    choices: [kubernetes, etcd]
  flavor:
    description: Override the detected manifest flavor (the release file name).
    type: str
    choices: [calico.yaml, calico-typha.yaml, canal.yaml, calico-policy-only.yaml, calico-etcd.yaml, canal-etcd.yaml]
  version:
    description: Override the detected Calico version (C(vX.Y.Z)).
    type: str
  variant:
    description: Override the detected variant.
    type: str
    choices: [Calico, TigeraSecureEnterprise]
  alp:
    description: Override whether application layer policy is on.
    type: bool
  istio_version:
    description: Override the detected Istio version (C(<major>.<minor>), as in the release's file names).
    type: str
  operator_namespace:
    description: Namespace of the Tigera operator and of its Helm release.
    type: str
    default: tigera-operator
  operator_deployment:
    description: Deployment of the Tigera operator.
    type: str
    default: tigera-operator
  helm_chart:
    description: Chart name of the Helm release.
    type: str
    default: tigera-operator
  manifest_namespace:
    description: Namespace of a manifest install's DaemonSet and Deployments.
    type: str
    default: kube-system
  operator_node_namespace:
    description: Namespace of the calico-node DaemonSet of an operator install.
    type: str
    default: calico-system
  istio_namespace:
    description: Namespace of Istio's control plane (looked at only when application layer policy is on).
    type: str
    default: istio-system
  istiod_deployment:
    description: Deployment of Istio's control plane; its image tag gives the Istio version.
    type: str
    default: istiod
  wait_version:
    description:
      - The Calico version (C(vX.Y.Z)) to wait for with O(wait=true), as a rollout ends on it (the upgrade's
        verification, the fleet rollout's gate). Required with O(wait=true).
    type: str
    version_added: "0.2.0"
  wait_cluster_information:
    description:
      - With O(wait_version), ClusterInformation C(default) must report the version too (a manifest install with the
        Kubernetes API datastore, whose calico-node writes it); otherwise a missing ClusterInformation is accepted.
    type: bool
    default: false
    version_added: "0.2.0"
extends_documentation_fragment:
  - calico_ops.lifecycle.wait
  - kubernetes.core.k8s_auth_options
  - calico_ops.lifecycle.attributes
  - calico_ops.lifecycle.attributes.read_only
"""

EXAMPLES = r"""
- name: Find out how Calico is installed
  calico_ops.lifecycle.calico_facts:
  register: calico

- name: Show it
  ansible.builtin.debug:
    msg: "{{ calico.facts.method }} / {{ calico.facts.datastore }} / {{ calico.facts.version }} ({{ calico.sources.version }})"

- name: The cluster has no ClusterInformation yet; say which version is installed
  calico_ops.lifecycle.calico_facts:
    version: v3.27.5

- name: Wait up to 10 minutes until the cluster reports Calico v3.31.4 (fails quoting what it reports)
  calico_ops.lifecycle.calico_facts:
    wait: true
    wait_version: v3.31.4
    wait_timeout: 600
"""

RETURN = r"""
ansible_facts:
  description: The facts this module sets.
  returned: always
  type: dict
  contains:
    calico:
      description: The same dict as RV(facts).
      returned: always
      type: dict
facts:
  description:
    - C(method), C(datastore), C(flavor), C(version), C(variant), C(alp), C(istio_version) (each overridable),
      and C(node_daemonset) (namespace and name), C(helm_release), C(cluster_version) (ClusterInformation),
      C(installation_version), C(tigerastatus) (installed, ready, lines, components), C(allow_all_upgrade)
      (present, api_version, name, selector), C(installer_field_managers) (who applied the workload) and
      C(etcd), the live etcd datastore settings of a manifest install (C(configmap) with the C(etcd_endpoints),
      C(etcd_ca), C(etcd_cert) and C(etcd_key) of its data; C(secret) Secret C(calico-etcd-secrets), whether it
      exists and the names of its keys, never their values; null without an etcd ConfigMap).
  returned: always
  type: dict
  sample:
    method: manifest
    datastore: kubernetes
    flavor: calico.yaml
    version: v3.27.5
    variant: Calico
    alp: false
    istio_version: null
    node_daemonset: {namespace: kube-system, name: calico-node}
    helm_release: null
    cluster_version: v3.27.5
    installation_version: null
    tigerastatus: {installed: false, ready: false, lines: [], components: []}
    allow_all_upgrade: {present: false}
    installer_field_managers: [kubectl-client-side-apply]
    etcd: null
sources:
  description: For each key of RV(facts), where the value came from.
  returned: always
  type: dict
  sample:
    method: "DaemonSet kube-system/calico-node exists; no Tigera operator (no Installation default, ...)"
    version: "ClusterInformation default spec.calicoVersion v3.27.5 (crd.projectcalico.org/v1)"
detected:
  description: For each overridden fact, the detected value and its source.
  returned: always
  type: dict
  sample: {version: {value: null, source: "none found: ..."}}
requests:
  description: How many read (and write, always 0) requests the module made.
  returned: always
  type: dict
  sample: {read: 13, write: 0}
waited:
  description: The seconds the module read for (with O(wait=true); 0 for one read).
  returned: always
  type: float
"""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.facts import run
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.facts_rules import (
    reports_version, version_not_reported)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.objects import DEFAULT_NAMES
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import K8sModule, k8s_argument_spec
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.wait import argument_spec as wait_argument_spec
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.wait import problems as wait_problems
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.wait import until


def argument_spec():
    spec = k8s_argument_spec(dict(
        wait_argument_spec(),
        wait_version=dict(type="str"),
        wait_cluster_information=dict(type="bool", default=False),
        method=dict(type="str", choices=["helm", "operator", "manifest", "none"]),
        datastore=dict(type="str", choices=["kubernetes", "etcd"]),
        flavor=dict(type="str", choices=["calico.yaml", "calico-typha.yaml", "canal.yaml",
                                         "calico-policy-only.yaml", "calico-etcd.yaml", "canal-etcd.yaml"]),
        version=dict(type="str"),
        variant=dict(type="str", choices=["Calico", "TigeraSecureEnterprise"]),
        alp=dict(type="bool"),
        istio_version=dict(type="str"),
    ))
    for name, default in DEFAULT_NAMES.items():
        spec[name] = dict(type="str", default=default)
    return spec


def _facts(m):
    p = m.params
    bad = wait_problems(p["wait_timeout"], p["poll_interval"]) + (
        ["wait: waits for a version; give wait_version"] if p["wait"] and not p["wait_version"] else [])
    if bad:
        m.fail("; ".join(bad))
    client = m.client()

    def read():
        try:
            return run(client, p)
        except ClientError as exc:  # while a rollout goes on a read may fail: with wait, read again until the timeout
            if not p["wait"]:
                raise
            return {"error": exc}

    def done(r):
        return "error" not in r and reports_version(r["facts"], p["wait_version"], p["wait_cluster_information"])

    result, waited = until(read, done, p)
    if "error" in result:
        raise result["error"]
    result["ansible_facts"] = {"calico": result["facts"]}
    result["waited"] = waited
    if p["wait"] and not done(result):
        m.fail(version_not_reported(result["facts"], result["sources"], p["wait_version"],
                                    p["wait_cluster_information"], p["wait_timeout"]), **result)
    return result


def main():
    K8sModule(argument_spec(), errors=(ValueError,),
              subject=lambda p: "the Calico install (Installation, DaemonSets, ConfigMaps of calico_facts)").run(_facts)


if __name__ == "__main__":
    main()
