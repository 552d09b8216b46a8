#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: operator_migration_info
short_description: Where a move of a Calico manifest install to the Tigera operator stands (read-only)
version_added: "0.2.0"
description:
  - Reads what Calico's documentation ("Migrate Calico to an operator-managed installation") changes on the way, and
    decides the next step in RV(plan) - C(migrate) from a phase, C(nothing) or C(refuse) with the reason.
  - Compares the running manifest install with the release's own manifest (O(release_manifest)) - calico-node's
    env, images, volumes, init containers, args, node selector, affinity, tolerations, annotations and resources,
    calico-kube-controllers' env and node selector, the CNI configuration - and returns each change with what it
    becomes under the operator, or why the operator cannot carry it (RV(customisations)); the ones it cannot carry
    make the plan C(refuse) unless named in O(accept).
  - Derives the Installation C(spec) the install amounts to (RV(derived)) - IP pools as the datastore has them, MTU,
    encapsulation, BGP, node address autodetection, registry and image path, control plane node selector,
    FlexVolume path, CNI and IPAM, Linux data plane - as the operator's own converter does.
  - Reads every policy-like kind (Calico's policies, staged policies, network sets and tiers, Kubernetes
    NetworkPolicies) with one paginated C(LIST) each and returns a hash of what each object enforces
    (RV(policy_digest)); with a record holding the digest of before, RV(policy_changes) lists what differs.
author:
  - calico_ops maintainers (@calico-ops)
options:
  release_manifest:
    description:
      - The text of the running release's manifest (C(calico.yaml) or C(calico-typha.yaml) of that version). Needed
        while a manifest calico-node runs; the module fails without it then.
    type: str
  version:
    description: The running Calico version (C(vX.Y.Z)); empty - calico-node's image tag.
    type: str
  namespace:
    description: Namespace of the manifest install (calico-node, calico-kube-controllers, calico-config).
    type: str
    default: kube-system
  daemonset:
    description: Name of calico-node's DaemonSet (the same in the manifest's namespace and in O(calico_namespace)).
    type: str
    default: calico-node
  kube_controllers:
    description: Name of calico-kube-controllers' Deployment in O(namespace).
    type: str
    default: calico-kube-controllers
  config_map:
    description: Name of the install's ConfigMap in O(namespace).
    type: str
    default: calico-config
  operator_namespace:
    description: Namespace of the Tigera operator.
    type: str
    default: tigera-operator
  operator_deployment:
    description: Name of the Tigera operator's Deployment.
    type: str
    default: tigera-operator
  calico_namespace:
    description: Namespace where the operator runs Calico.
    type: str
    default: calico-system
  record_namespace:
    description: Namespace of the migration's record ConfigMap.
    type: str
    default: kube-system
  record_name:
    description: Name of the migration's record ConfigMap.
    type: str
    default: calico-ops-operator-migration
  accept:
    description:
      - Names of customisations (RV(customisations) C(name)) the operator cannot carry that may be lost - the
        migration goes on without them.
    type: list
    elements: str
    default: []
  leftovers:
    description:
      - Also list the manifest's objects still there with no owner (RV(leftovers), RV(kept)) - what the operator
        leaves to the user once calico-node has moved. One C(LIST) per type and namespace.
    type: bool
    default: false
  policies:
    description:
      - Read every policy-like kind (one C(LIST) each) for RV(policies), RV(policy_digest) and RV(policy_changes).
        V(false) where they are not needed (the role's clean-up and summary).
    type: bool
    default: true
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - calico_ops.lifecycle.attributes
  - calico_ops.lifecycle.attributes.read_only
"""

EXAMPLES = r"""
- name: Download the running release's manifest
  ansible.builtin.uri:
    url: https://raw.githubusercontent.com/projectcalico/calico/v3.31.4/manifests/calico.yaml
    return_content: true
  register: manifest

- name: Where the move to the operator stands
  calico_ops.lifecycle.operator_migration_info:
    release_manifest: "{{ manifest.content }}"
  register: migration

- name: Show what the install changed and what each becomes
  ansible.builtin.debug:
    msg: "{{ migration.lines }}"
"""

RETURN = r"""
plan:
  description:
    - C(phase) (C(manifest), C(recorded), C(operator), C(installation), C(migrated), C(verified), C(done),
      C(operator-managed)), C(action) (C(migrate), C(nothing), C(refuse)) and C(reason).
  returned: always
  type: dict
  sample: {phase: manifest, action: migrate, reason: a manifest install of Calico v3.31.4}
lines:
  description: What was read, each customisation and the plan, one line each.
  returned: always
  type: list
  elements: str
calico_node:
  description: C(exists), C(version) and C(datastore) of the manifest's calico-node.
  returned: always
  type: dict
operator:
  description: C(exists) (the operator's Deployment) and C(node_ds) (calico-node in O(calico_namespace)).
  returned: always
  type: dict
installation:
  description: C(exists), C(spec) and C(computed) (the operator's status.computed) of Installation C(default).
  returned: always
  type: dict
nodes:
  description: C(total) Nodes, C(desired) and C(ready) pods of the operator's calico-node, C(labelled) (Nodes still
    carrying the operator's migration label).
  returned: always
  type: dict
customisations:
  description:
    - Each change of the running install against the release's manifest - C(where), C(name), C(value),
      C(release_value), and C(maps_to) (what it becomes) or C(refused) and C(fix).
  returned: always
  type: list
  elements: dict
refusals:
  description: The customisations the operator cannot carry and O(accept) does not name (they make the plan refuse).
  returned: always
  type: list
  elements: dict
derived:
  description: The Installation C(spec) of the running install; C(null) when there is no manifest install.
  returned: always
  type: dict
policies:
  description: How many objects of each policy-like kind (C(<apiVersion>/<plural>)).
  returned: always
  type: dict
policy_digest:
  description: Per kind, C(<namespace/name>) -> a hash of its labels and spec (empty with O(policies=false)).
  returned: always
  type: dict
policy_changes:
  description: Against the digest in the record - each object gone, new or changed, one line each.
  returned: when the record holds a digest and O(policies) is true
  type: list
  elements: str
manifest_era:
  description: calico-node, calico-kube-controllers and the ConfigMap as they are, cleaned to be applied again.
  returned: while a manifest calico-node runs
  type: list
  elements: dict
leftovers:
  description:
    - Each object of the manifest's namespace still there with no owner - C(ref) (C([apiVersion, kind, namespace,
      name])) and C(object), cleaned to be applied again.
  returned: with O(leftovers)
  type: list
  elements: dict
kept:
  description:
    - C([apiVersion, kind, null, name]) of each cluster-scoped object of the manifest still there with no owner (RBAC
      another component may still use; listed, never removed).
  returned: with O(leftovers)
  type: list
  elements: list
record:
  description: C(exists), C(phase) and C(data) (all its keys) of the record ConfigMap.
  returned: always
  type: dict
"""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.errors import describe_object
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import K8sModule
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.operator_migration.runner import (
    ReleaseManifestError, run_operator_migration_info)

_PASSED = ("release_manifest", "version", "namespace", "daemonset", "kube_controllers", "config_map",
           "operator_namespace", "operator_deployment", "calico_namespace", "record_namespace", "record_name",
           "accept", "leftovers", "policies")


def main():
    K8sModule(dict(
        release_manifest=dict(type="str"),
        version=dict(type="str"),
        namespace=dict(type="str", default="kube-system"),
        daemonset=dict(type="str", default="calico-node"),
        kube_controllers=dict(type="str", default="calico-kube-controllers"),
        config_map=dict(type="str", default="calico-config"),
        operator_namespace=dict(type="str", default="tigera-operator"),
        operator_deployment=dict(type="str", default="tigera-operator"),
        calico_namespace=dict(type="str", default="calico-system"),
        record_namespace=dict(type="str", default="kube-system"),
        record_name=dict(type="str", default="calico-ops-operator-migration"),
        accept=dict(type="list", elements="str", default=[]),
        leftovers=dict(type="bool", default=False),
        policies=dict(type="bool", default=True),
    ), error_prefix="operator migration: ", errors=(ReleaseManifestError,),
        subject=lambda p: describe_object("apps/v1", "daemonsets", p["namespace"], p["daemonset"])).run(
        lambda m: run_operator_migration_info(m.client(), **dict((k, m.params[k]) for k in _PASSED)))


if __name__ == "__main__":
    main()
