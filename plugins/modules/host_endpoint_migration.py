#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: host_endpoint_migration
short_description: Replace manual all-interfaces Calico host endpoints with automatic ones, without a gap
version_added: "0.1.0"
description:
  - Moves a cluster from manually created all-interfaces host endpoints (C(spec.interfaceName) V(*)) to the
    automatic host endpoints that calico-kube-controllers creates, keeping the labels that policies select on.
  - Automatic host endpoints are those with the label C(projectcalico.org/created-by=calico-kube-controllers) or
    a name ending in C(-auto-hep). They are never changed or deleted. Host endpoints of named interfaces are
    left alone too.
  - It reads every HostEndpoint (through C(projectcalico.org/v3) when the Calico API server serves it, else
    through the C(crd.projectcalico.org/v1) CRDs; with O(datastore=etcd) through
    C(calicoctl get hostendpoints -o json)), every Node (one paginated LIST) and KubeControllersConfiguration
    C(default), and plans before any write.
  - The plan copies every label of each old endpoint onto its node (C(spec.node)). A node that already has one
    of those keys with another value is a conflict, and so are two old endpoints of one node that disagree on a
    key. All conflicts are listed, and nothing at all is written unless O(label_conflicts) says what to do. An
    old endpoint whose node does not exist is reported (a warning) and left as it is.
  - Then (1) the labels are copied (a merge patch of the node's C(metadata.labels), guarded by its
    resourceVersion, only where a label is missing or differs); (2) KubeControllersConfiguration C(default) gets
    C(spec.controllers.node.hostEndpoint.autoCreate=Enabled) (it is created with Calico's defaults when it
    does not exist); (3) the host endpoints are polled until each node's automatic all-interfaces endpoint
    exists and carries every copied label. Only then are that node's old endpoints recorded and deleted
    (with a UID precondition). A node whose automatic endpoint does not appear within O(wait_timeout) keeps its
    old endpoint and is listed in RV(not_replaced); the module fails at the end with that list.
  - Every old endpoint that may be deleted is recorded before the first one is deleted (and recorded again
    should it change before its turn), in two places, either one enough to restore it.
    In the cluster, as ConfigMaps named O(record_name) (and O(record_name)C(-1), ... when large) in
    O(record_namespace). On the host that runs the module, as the JSON file O(record_path), written atomically
    (this collection runs its modules on the Ansible controller with the C(local) connection).
    O(state=restored) creates again every recorded endpoint that is not back yet.
  - Idempotent and resumable. A re-run after a complete migration reads and writes nothing. A re-run after a
    partial one (interrupted, or nodes that timed out) finds the copied labels in place and carries on.
author:
  - calico_ops maintainers (@calico-ops)
options:
  state:
    description:
      - V(migrated) copies the labels, enables automatic host endpoints and deletes the old endpoints as their
        replacements appear. V(restored) creates the recorded (deleted) endpoints again.
    type: str
    default: migrated
    choices: [migrated, restored]
  datastore:
    description:
      - Where Calico keeps its resources. V(kubernetes) reads and writes them through the Kubernetes API.
        V(etcd) runs O(calicoctl_path) for HostEndpoints and KubeControllersConfiguration; Nodes and the record
        stay in the Kubernetes API either way.
      - With V(etcd), every calicoctl command runs with C(DATASTORE_TYPE=etcdv3) in its environment, and before its
        first read the module proves that calicoctl reaches etcd - its configuration (O(calicoctl_config), else
        C(/etc/calico/calicoctl.cfg) when it exists, else C(ETCD_ENDPOINTS) in the environment) is of the etcd
        datastore with an endpoint, and the ClusterInformation calicoctl reads is not the Kubernetes API's. A
        calicoctl without etcd settings would otherwise fall back to the Kubernetes datastore. Any mismatch fails
        the module, naming the option to fix, before anything is written.
    type: str
    default: kubernetes
    choices: [kubernetes, etcd]
  api_version:
    description:
      - With O(datastore=kubernetes), the API of the Calico resources. V(auto) uses C(projectcalico.org/v3)
        when it serves HostEndpoints, else C(crd.projectcalico.org/v1). A C(projectcalico.org/v3) that is
        registered but unavailable (the Calico API server is down) stops the module before any write.
    type: str
    default: auto
    choices: [auto, projectcalico.org/v3, crd.projectcalico.org/v1]
  calicoctl_path:
    description:
      - With O(datastore=etcd), the calicoctl binary (a name is looked up in C(PATH)).
    type: str
    default: calicoctl
  calicoctl_config:
    description:
      - With O(datastore=etcd), calicoctl's configuration file (passed as C(--config)); calicoctl's own default
        (C(/etc/calico/calicoctl.cfg)) when not set and that file exists, else C(ETCD_ENDPOINTS) (and the other
        C(ETCD_*) settings) of the module's environment. It must be a C(CalicoAPIConfig) with
        C(datastoreType) V(etcdv3) and C(etcdEndpoints).
    type: path
  calicoctl_extra_args:
    description:
      - With O(datastore=etcd), arguments added to every calicoctl command (for example
        C(--allow-version-mismatch)).
    type: list
    elements: str
    default: []
  calicoctl_timeout:
    description:
      - Seconds one calicoctl command may take.
    type: int
    default: 120
  label_conflicts:
    description:
      - What to do when a node already has a label key of its old endpoint with another value.
      - V(fail) lists every conflict and writes nothing.
      - V(overwrite) gives the node the endpoint's value.
      - V(skip) leaves the node's value and does not copy that key (the automatic endpoint will carry the node's
        value).
      - When two old endpoints of one node disagree on a key there is no value to prefer, so only V(skip)
        resolves it.
    type: str
    default: fail
    choices: [fail, overwrite, skip]
  wait_timeout:
    description:
      - Seconds to wait, from when automatic host endpoints are enabled, for every node's automatic endpoint.
        Nodes are waited for together; each is replaced as soon as its own endpoint is there.
    type: int
    default: 300
  poll_interval:
    description:
      - Seconds between two reads of the host endpoints while waiting (one LIST each).
    type: float
    default: 2.0
  progress_path:
    description:
      - A file on the host that runs the module to which a line is appended for each step and each replaced or
        timed-out node, to follow a long wait (C(tail -f)). Not written in check mode.
    type: path
  record_name:
    description:
      - Name of the record ConfigMap (further chunks are named C(<record_name>-1), C(-2), ...) and of the record
        in the file.
    type: str
    default: calico-ops-host-endpoint-migration
  page_size:
    description:
      - Objects per LIST request.
    type: int
    default: 500
  workers:
    description:
      - Requests sent at a time for the per-node writes (label patches of the nodes, deletes of the old
        endpoints of the nodes that are ready). Each node is still handled in order (labels, then wait, then
        delete).
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - calico_ops.lifecycle.records
  - calico_ops.lifecycle.report
  - calico_ops.lifecycle.variable_prefix
  - calico_ops.lifecycle.workers
attributes:
  check_mode:
    support: full
    description:
      - Plans and reports the labels to copy, the conflicts, the change to KubeControllersConfiguration and the
        endpoints that would be deleted once their automatic endpoint exists. Nothing is written, not even the
        record; nothing is waited for.
  diff_mode:
    support: full
    description:
      - One diff per node whose labels change (C(metadata.labels)), one for KubeControllersConfiguration
        C(default) (C(spec)) and one per deleted (or restored) host endpoint.
notes:
  - calico-kube-controllers must run the node controller for the automatic endpoints to appear. When they do not,
    the failure message says what KubeControllersConfiguration C(status.runningConfig) reports.
  - With O(label_conflicts=skip) the skipped key is not copied, so policies that select the old endpoint by that
    key's value no longer select the node's automatic endpoint. Review RV(conflicts) first.
  - O(state=restored) only creates the old endpoints again. Automatic host endpoints stay enabled and the
    copied labels stay on the nodes.
  - Keep the record ConfigMaps and the file until the migration is verified; delete them by hand afterwards.
requirements:
  - kubernetes >= 24.2.0
  - calicoctl, with O(datastore=etcd)
"""

EXAMPLES = r"""
- name: Preview the migration (labels, conflicts, endpoints that would go)
  calico_ops.lifecycle.host_endpoint_migration:
  check_mode: true
  diff: true

- name: Move to automatic host endpoints, the endpoints' label values win over the nodes'
  calico_ops.lifecycle.host_endpoint_migration:
    label_conflicts: overwrite
    wait_timeout: 600
    progress_path: /tmp/host-endpoint-migration.log
  register: migration

- name: Nodes whose automatic endpoint did not appear
  ansible.builtin.debug:
    var: migration.not_replaced

- name: The etcd datastore, through calicoctl
  calico_ops.lifecycle.host_endpoint_migration:
    datastore: etcd
    calicoctl_path: /usr/local/bin/calicoctl
    calicoctl_config: /etc/calico/calicoctl.cfg

- name: Put the deleted endpoints back
  calico_ops.lifecycle.host_endpoint_migration:
    state: restored
"""

RETURN = r"""
datastore:
  description: How Calico's resources were read and written.
  returned: always
  type: dict
  sample: {"datastore": "kubernetes", "api_version": "crd.projectcalico.org/v1"}
counts:
  description:
    - C(host_endpoints) read, C(old) all-interfaces manual ones, C(automatic) ones, C(other) (named interfaces),
      C(nodes) nodes with old endpoints, C(nodes_labelled) nodes whose labels were (would be) written,
      C(labels_set) labels written, C(conflicts), C(missing_nodes) old endpoints whose node does not exist,
      C(deleted) old endpoints deleted, C(already_gone) ones gone before their turn, C(not_replaced) nodes whose
      automatic endpoint did not appear, C(failed).
    - For O(state=restored), C(restored), C(already_present) (another endpoint of that name exists),
      C(not_deleted) (the recorded endpoint itself is still there) and C(failed).
  returned: always
  type: dict
  sample: {"host_endpoints": 6, "old": 3, "automatic": 3, "other": 0, "nodes": 3, "nodes_labelled": 3,
           "labels_set": 6, "conflicts": 0, "missing_nodes": 0, "deleted": 3, "already_gone": 0,
           "not_replaced": 0, "failed": 0, "restored": 0, "already_present": 0, "not_deleted": 0}
endpoints:
  description:
    - Each old endpoint (each recorded one for O(state=restored)) and what happened to it - the first
      O(report_limit); RV(not_listed) says how many more there were (each is counted in RV(counts) and kept in the
      record).
  returned: always
  type: list
  elements: dict
  sample:
    - {name: node-1-eth-all, node: node-1, labels: {env: prod}, uid: 0b4f2c1e-0000-4000-8000-000000000001,
       action: deleted, automatic_endpoint: node-1-auto-hep}
labels:
  description:
    - Node name -> the labels written (planned, in check mode or when blocked) to it - the first O(report_limit)
      nodes by name (every one is in the diff in diff mode).
  returned: when O(state=migrated)
  type: dict
  sample: {"node-1": {"env": "prod", "zone": "a"}}
conflicts:
  description:
    - Every label conflict, with C(kind) V(node) (the node holds another value) or V(endpoints) (the node's old
      endpoints disagree) and C(resolution) V(blocking), V(overwrite) or V(skip).
  returned: when O(state=migrated)
  type: list
  elements: dict
  sample:
    - {node: node-2, key: env, node_value: prod, endpoint_values: {node-2-eth-all: staging}, kind: node,
       resolution: blocking}
missing_nodes:
  description: Old endpoints whose node does not exist (left as they are).
  returned: when O(state=migrated)
  type: list
  elements: dict
  sample: [{endpoint: old-hep, node: gone-node}]
not_listed:
  description: How many items RV(endpoints), RV(labels) and RV(nodes) left out (O(report_limit)).
  returned: always
  type: dict
  sample: {"endpoints": 0, "labels": 0, "nodes": 0}
kube_controllers:
  description: KubeControllersConfiguration C(default) before and what was done to it.
  returned: when O(state=migrated)
  type: dict
  sample: {name: default, api_version: crd.projectcalico.org/v1, exists: true, auto_create_before: Disabled,
           auto_create_after: Enabled, action: patched}
nodes:
  description: Per node with old endpoints, the labels copied and skipped, its automatic endpoint, the status
    and how long it was waited for - the first O(report_limit), in the job's order.
  returned: when O(state=migrated)
  type: list
  elements: dict
  sample:
    - {node: node-1, endpoints: [node-1-eth-all], copied_labels: {env: prod}, skipped_labels: [],
       automatic_endpoint: node-1-auto-hep, status: replaced, deleted: [node-1-eth-all], waited_s: 2.1}
not_replaced:
  description: Nodes whose automatic endpoint did not appear (with the copied labels) in time; they keep their old
    endpoints.
  returned: when O(state=migrated)
  type: list
  elements: dict
  sample: [{node: node-3, endpoints: [node-3-eth-all], reason: no automatic host endpoint}]
failures:
  description: Writes that failed, with the error.
  returned: always
  type: list
  elements: dict
timings:
  description: Seconds spent reading and planning (C(read_s)), copying labels (C(labels_s)), on
    KubeControllersConfiguration (C(kube_controllers_s)) and waiting and deleting (C(wait_and_delete_s)).
  returned: always
  type: dict
  sample: {"read_s": 0.4, "labels_s": 1.2, "kube_controllers_s": 0.01, "wait_and_delete_s": 6.3}
record:
  description: Where the record is kept and how many of its entries are done (restored).
  returned: when the record was opened
  type: dict
  sample: {"namespace": "kube-system", "name": "calico-ops-host-endpoint-migration",
           "configmaps": ["calico-ops-host-endpoint-migration"],
           "path": "/root/.calico_ops/records/calico-ops-host-endpoint-migration-5a8c.json",
           "entries": 3, "done": 0, "pending": 3}
"""

from ansible.module_utils.common.process import get_bin_path
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.datastore import API_VERSIONS
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.rules import (
    CONFLICT_POLICIES, HostEndpointMigrationError)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.runner import (
    DATASTORES, DEFAULT_POLL_INTERVAL, DEFAULT_RECORD_NAME, DEFAULT_RECORD_NAMESPACE, DEFAULT_WAIT_TIMEOUT,
    DEFAULT_WORKERS, STATES, run)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.errors import describe_object
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import K8sModule, k8s_argument_spec
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.report import report_limit_spec


def argument_spec():
    return k8s_argument_spec(dict(
        state=dict(type="str", default="migrated", choices=list(STATES)),
        datastore=dict(type="str", default="kubernetes", choices=list(DATASTORES)),
        api_version=dict(type="str", default="auto", choices=list(API_VERSIONS)),
        calicoctl_path=dict(type="str", default="calicoctl"),
        calicoctl_config=dict(type="path"),
        calicoctl_extra_args=dict(type="list", elements="str", default=[]),
        calicoctl_timeout=dict(type="int", default=120),
        label_conflicts=dict(type="str", default="fail", choices=list(CONFLICT_POLICIES)),
        wait_timeout=dict(type="int", default=DEFAULT_WAIT_TIMEOUT),
        poll_interval=dict(type="float", default=DEFAULT_POLL_INTERVAL),
        progress_path=dict(type="path"),
        record_namespace=dict(type="str", default=DEFAULT_RECORD_NAMESPACE),
        record_name=dict(type="str", default=DEFAULT_RECORD_NAME),
        record_path=dict(type="path"),
        page_size=dict(type="int", default=500),
        workers=dict(type="int", default=DEFAULT_WORKERS),
        report_limit=report_limit_spec(),
        variable_prefix=dict(type="str", default=""),
    ))


def _migrate(m):
    params = dict(m.params)
    if params["datastore"] == "etcd" and "/" not in params["calicoctl_path"]:
        try:
            params["calicoctl_path"] = get_bin_path(params["calicoctl_path"])
        except ValueError as exc:  # AnsibleK8SModule has no get_bin_path
            m.fail("calicoctl_path: %s (the etcd datastore is read and written with calicoctl)" % exc)
    return run(m.client(), params, diff=m.diff, command=m.run_command)


def main():
    K8sModule(argument_spec(), errors=(HostEndpointMigrationError,),
              subject=lambda p: "host endpoints (record %s)" % describe_object("v1", "configmaps", p["record_namespace"],
                                                                               p["record_name"])).run(_migrate)


if __name__ == "__main__":
    main()
