#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: datastore_migration_info
short_description: Where an etcd -> Kubernetes datastore migration of Calico stands, and what to do next (read-only)
version_added: "0.2.0"
description:
  - Reads what Calico's documentation ("Migrate Calico data from an etcdv3 datastore to a Kubernetes datastore")
    changes on the way, and decides the next step in RV(plan) - C(migrate) from a phase, C(nothing), C(abort) or
    C(refuse) with the reason.
  - From the Kubernetes API - calico-node's DaemonSet (its C(DATASTORE_TYPE)), the C(crd.projectcalico.org) CRDs
    and which of them hold objects (one C(LIST) with C(limit=1) each), ClusterInformation C(default) of the
    Kubernetes datastore (its lock), and the migration's record ConfigMap.
  - With real calicoctl (O(calicoctl)), configured by O(etcd_config) - the etcd datastore's ClusterInformation
    (its lock), its Calico Nodes (each needs a C(k8s) orchestrator reference, which the export requires) and the
    namespaced objects calicoctl's export leaves out (the C(not_exported) of RV(etcd)).
  - With O(compare), every kind the export carries is read from both datastores (O(kubernetes_config) for the
    Kubernetes one) and compared per kind (RV(comparison)); each etcd object must be in the Kubernetes datastore
    under the name the export gives it, with every label and every spec field the same.
author:
  - calico_ops maintainers (@calico-ops)
options:
  calicoctl:
    description: Path of calicoctl, of the running Calico version (calicoctl refuses another cluster version).
    type: path
    required: true
  etcd_config:
    description:
      - calicoctl's configuration file for the etcd datastore (C(datastoreType etcdv3)). Needed whenever etcd must be
        read (calico-node on etcd, or the Kubernetes datastore still locked); the module fails then without it.
    type: path
  kubernetes_config:
    description: calicoctl's configuration file for the Kubernetes datastore; required with O(compare).
    type: path
  namespace:
    description: Namespace of calico-node's DaemonSet.
    type: str
    default: kube-system
  daemonset:
    description: Name of calico-node's DaemonSet.
    type: str
    default: calico-node
  record_namespace:
    description: Namespace of the migration's record ConfigMap.
    type: str
    default: kube-system
  record_name:
    description: Name of the migration's record ConfigMap.
    type: str
    default: calico-ops-datastore-migration
  compare:
    description: Compare every kind the export carries between the two datastores.
    type: bool
    default: false
  abort:
    description: Plan a way back to etcd instead of the migration.
    type: bool
    default: false
  take_over_lock:
    description: Go on from a lock of the etcd datastore this migration has no record of taking.
    type: bool
    default: false
  deployments:
    description: The Deployments of the install in O(namespace), returned in RV(workloads) with the DaemonSet.
    type: list
    elements: str
    default: [calico-kube-controllers]
  config_map:
    description: The install's ConfigMap in O(namespace) (its C(etcd_endpoints)), returned in RV(workloads).
    type: str
    default: calico-config
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - calico_ops.lifecycle.attributes
  - calico_ops.lifecycle.attributes.read_only
"""

EXAMPLES = r"""
- name: Where the migration stands
  calico_ops.lifecycle.datastore_migration_info:
    calicoctl: /usr/local/bin/calicoctl
    etcd_config: /etc/calico/calicoctl-etcd.cfg
  register: migration

- name: Verify the import, kind by kind
  calico_ops.lifecycle.datastore_migration_info:
    calicoctl: /usr/local/bin/calicoctl
    etcd_config: /etc/calico/calicoctl-etcd.cfg
    kubernetes_config: /etc/calico/calicoctl-kdd.cfg
    compare: true
  register: verified
  failed_when: not verified.comparison.ok
"""

RETURN = r"""
plan:
  description:
    - C(phase) (C(etcd), C(locked), C(partial), C(imported), C(switched), C(done), C(kubernetes)), C(action)
      (C(migrate), C(nothing), C(abort), C(refuse)) and C(reason).
  returned: always
  type: dict
  sample: {phase: locked, action: migrate, reason: etcd is locked}
lines:
  description: What was read and the plan, one line each (calico-node, etcd, Kubernetes datastore, record, plan).
  returned: always
  type: list
  elements: str
calico_node:
  description: C(exists) and C(datastore) (C(etcdv3) or C(kubernetes), from C(DATASTORE_TYPE)).
  returned: always
  type: dict
etcd:
  description:
    - C(locked), C(cluster_version) of the etcd datastore (C(null) when not read), C(nodes_without_k8s_name)
      (Calico Nodes the export refuses) and C(not_exported), the objects calicoctl's export leaves out (namespaced
      staged policies outside namespace C(default)), ready for C(calicoctl apply).
  returned: always
  type: dict
kubernetes:
  description: C(crds) (how many C(crd.projectcalico.org) CRDs), C(held) (plural -> objects) and C(locked).
  returned: always
  type: dict
record:
  description: C(exists), C(phase) and C(data) (all its keys) of the record ConfigMap.
  returned: always
  type: dict
workloads:
  description:
    - While calico-node uses etcd, its DaemonSet, O(deployments) and O(config_map) as they are, cleaned to be applied
      again (no status, managedFields, uid, resourceVersion or kubectl's last-applied copy), which the way back
      restores.
  returned: while calico-node uses etcd
  type: list
  elements: dict
comparison:
  description:
    - C(ok), C(problems) (one line per kind not carried over whole), C(lines) (counts of each kind etcd holds)
      and C(kinds), per plural C(source) and
      C(target) counts, C(missing), C(different) (name -> first differing path) and C(extra).
  returned: with O(compare)
  type: dict
"""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.errors import describe_object
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import K8sModule
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.datastore_migration.runner import (
    CalicoctlError, run_datastore_migration_info)

_PASSED = ("calicoctl", "etcd_config", "kubernetes_config", "namespace", "daemonset", "record_namespace",
           "record_name", "compare", "abort", "take_over_lock", "deployments", "config_map")


def _info(m):
    p = m.params
    if p["compare"] and not p["kubernetes_config"]:
        m.fail("datastore migration: compare needs kubernetes_config (calicoctl's Kubernetes datastore configuration)")

    def run(argv):
        return getattr(m.module, "_module", m.module).run_command(argv, check_rc=False)
    return run_datastore_migration_info(m.client(), run, **dict((k, p[k]) for k in _PASSED))


def main():
    K8sModule(dict(
        calicoctl=dict(type="path", required=True),
        etcd_config=dict(type="path"),
        kubernetes_config=dict(type="path"),
        namespace=dict(type="str", default="kube-system"),
        daemonset=dict(type="str", default="calico-node"),
        record_namespace=dict(type="str", default="kube-system"),
        record_name=dict(type="str", default="calico-ops-datastore-migration"),
        compare=dict(type="bool", default=False),
        abort=dict(type="bool", default=False),
        take_over_lock=dict(type="bool", default=False),
        deployments=dict(type="list", elements="str", default=["calico-kube-controllers"]),
        config_map=dict(type="str", default="calico-config"),
    ), error_prefix="datastore migration: ", errors=(CalicoctlError,),
        subject=lambda p: describe_object("apps/v1", "daemonsets", p["namespace"], p["daemonset"])).run(_info)


if __name__ == "__main__":
    main()
