#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: owner_references
short_description: Detach and re-attach owner references to projectcalico.org/v3 objects across an upgrade
version_added: "0.1.0"
description:
  - Calico v3.28 changed the UID of every C(projectcalico.org/v3) object. Objects whose C(ownerReferences)
    point at such an object by its old UID are deleted by the Kubernetes garbage collector after an upgrade
    from a release earlier than v3.28. The upgrade guide says to remove those references before the
    upgrade and to add them back, with the new UIDs, after it. This module does both, for the whole
    cluster, and records every reference before it removes it.
  - With O(state=detached) the module discovers every listable resource type (cluster-scoped and
    namespaced, custom resources included, subresources excluded), lists each one (paginated) and finds
    every object holding an owner reference whose C(apiVersion) is in O(owner_api_versions). It first
    writes a record of each such reference (the dependent's apiVersion, kind, namespace, name and UID,
    and the full reference), then removes those references with a JSON patch that tests the object's
    current references first, so that a concurrent change is never overwritten (the object is re-read and
    the patch retried). References to other owners are left as they are.
  - With O(state=attached) the module reads the record, looks up each owner by apiVersion, kind and name
    (in the dependent's namespace when the owner kind is namespaced, as discovery tells) and adds the
    reference back with the owner's current UID and every other field as recorded. Each entry of the
    record is marked done as the run goes. An owner that no longer exists is reported and left out; the
    failure (O(fail_on_missing_owner)) names each dependent left without its reference and the owner it lost.
    No record at the given location is a failure unless O(require_record=false).
  - The record is kept in two places, and either one is enough to resume. In the cluster, as ConfigMaps
    named O(record_name) (and O(record_name)C(-1), C(-2), ... when the record is larger than about
    900 KiB) in O(record_namespace), updated with resourceVersion preconditions. On the host that runs the
    module, as the JSON file O(record_path), written atomically (this collection runs its modules on the
    Ansible controller with the C(local) connection, so that is the controller). When both exist they are
    merged entry by entry and the more advanced state wins.
  - The module is idempotent and resumable. Detaching again records nothing new and keeps the record.
    Attaching after an interrupted run finishes the remaining entries (a reference found already in place
    is just marked done). Attaching twice changes nothing. The record is never deleted by the module.
  - Resource types that cannot be listed (forbidden, or an aggregated API that is unavailable) are
    reported by name and counted; with O(fail_on_unlistable=true) the module stops before any write.
  - Objects are read as metadata only (C(PartialObjectMetadata), as the garbage collector and
    C(kubectl) read them), and each patch asks for the patched object's metadata only in return. The module
    never receives an object's content (a Secret's data is never sent to it), and the scan moves a fraction
    of the bytes. An API server that cannot answer in that form
    answers with whole objects, of which only the metadata is used.
author:
  - calico_ops contributors (@calico-ops)
options:
  state:
    description:
      - V(detached) records and removes the owner references; V(attached) adds them back with the owners'
        current UIDs.
    type: str
    required: true
    choices: [detached, attached]
  owner_api_versions:
    description:
      - Owner references whose C(apiVersion) is one of these are detached and re-attached.
    type: list
    elements: str
    default: [projectcalico.org/v3]
  record_name:
    description:
      - Name of the record ConfigMap (further chunks are named C(<record_name>-1), C(-2), ...) and of the
        record in the file.
    type: str
    default: calico-ops-owner-references
  fail_on_unlistable:
    description:
      - Stop, before any write, when a resource type cannot be listed (forbidden, or an unavailable
        aggregated API). With V(false) such types are reported in RV(unlistable) and skipped.
    type: bool
    default: true
  require_record:
    description:
      - With O(state=attached), fail when no record is found at O(record_namespace)/O(record_name) nor in
        O(record_path) (a name, namespace or path that does not match the detach's), naming where the module
        looked and any record of this module it finds elsewhere (record ConfigMaps of other namespaces, record
        files beside O(record_path) and in C(~/.calico_ops/records)); nothing is written.
      - Set V(false) only when there is nothing to attach (the detach recorded nothing); the module then reports
        ok, with nothing changed.
    type: bool
    default: true
  fail_on_missing_owner:
    description:
      - Fail when an owner recorded at detach time cannot be found at attach time. Every other reference
        is attached first either way; the missing ones stay pending in the record and are reported in
        RV(missing_owners).
    type: bool
    default: true
  page_size:
    description:
      - Objects per LIST request.
    type: int
    default: 500
  workers:
    description:
      - Dependents patched at a time (the record is saved before the first detach patch either way). An attach
        marks each dependent done in the record's order as its patch returns and checkpoints the record every
        100 dependents done, at most once a second, while the next patches are in flight; with C(1) each
        dependent is patched only after the previous one is booked. The reports, counts and diff are in the
        job's order whatever the order the patches went out in.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - calico_ops.lifecycle.records
  - calico_ops.lifecycle.report
  - calico_ops.lifecycle.variable_prefix
  - calico_ops.lifecycle.workers
attributes:
  check_mode:
    support: full
    description: Reports what would be detached or attached; nothing is written, not even the record.
  diff_mode:
    support: full
    description: One diff of C(metadata.ownerReferences) per changed object.
notes:
  - Run O(state=detached) before an upgrade from a Calico release earlier than v3.28, and
    O(state=attached) after it, once the Calico API server serves C(projectcalico.org/v3) again.
  - The record file path is on the host that runs the module. Keep the ConfigMaps and the file until the
    references are verified; delete them by hand afterwards.
requirements:
  - kubernetes >= 24.2.0
"""

EXAMPLES = r"""
- name: Remove owner references to projectcalico.org/v3 objects before the upgrade
  calico_ops.lifecycle.owner_references:
    state: detached
    record_namespace: kube-system

- name: Preview what attach would do
  calico_ops.lifecycle.owner_references:
    state: attached
  check_mode: true
  diff: true

- name: Add them back with the new UIDs after the upgrade
  calico_ops.lifecycle.owner_references:
    state: attached
    fail_on_missing_owner: false
  register: attach

- name: Show owners that no longer exist
  ansible.builtin.debug:
    var: attach.missing_owners
"""

RETURN = r"""
counts:
  description:
    - C(scanned_types) types listed, C(unlistable_types) types that could not be, C(objects) distinct objects
      seen (detach), C(affected) objects holding (detach) or waiting for (attach) owner references,
      C(recorded) new record entries, C(detached) references removed (or that would be),
      C(attached) references added back (or that would be), C(already_attached) references found in
      place, C(missing_owners) references whose owner is missing, C(dependents_gone) record entries whose
      object no longer exists, C(failed) objects that could not be patched.
  returned: always
  type: dict
  sample: {"scanned_types": 61, "unlistable_types": 0, "objects": 812, "affected": 12, "recorded": 14,
           "detached": 14, "attached": 0, "already_attached": 0, "missing_owners": 0, "dependents_gone": 0,
           "failed": 0}
objects:
  description:
    - Each object acted upon, with the owner references concerned and what happened - the first O(report_limit),
      in the job's order; RV(not_listed) says how many more there were (each is counted in RV(counts) and kept
      with its outcome in the record).
  returned: always
  type: list
  elements: dict
  sample:
    - apiVersion: v1
      kind: ConfigMap
      resource: configmaps
      namespace: demo
      name: cfg
      uid: 3f0c5b8e-0000-4000-8000-000000000001
      action: detached
      owners:
        - {apiVersion: projectcalico.org/v3, kind: NetworkPolicy, name: allow-dns,
           uid: 9a1d2c3e-0000-4000-8000-000000000002}
not_listed:
  description: How many objects RV(objects) left out (O(report_limit)).
  returned: always
  type: dict
  sample: {"objects": 4900}
unlistable:
  description: Resource types (or group-versions) that could not be listed or discovered, with the reason.
  returned: always
  type: list
  elements: dict
  sample:
    - {type: metrics.k8s.io/v1beta1, status: 503, stage: discovery, reason: "GET /apis/metrics.k8s.io/v1beta1: 503 ..."}
missing_owners:
  description:
    - References left out at attach time because their owner cannot be found - one per reference, with the
      C(dependent) (apiVersion, kind, namespace, name, uid), the C(owner) it lost, the C(reason) and C(lost), a
      line naming both.
  returned: always
  type: list
  elements: dict
  sample:
    - dependent: {apiVersion: v1, kind: ConfigMap, resource: configmaps, namespace: demo, name: cfg, uid: 3f0c5b8e}
      owner: {apiVersion: projectcalico.org/v3, kind: NetworkPolicy, name: allow-dns, uid: 9a1d2c3e}
      reason: NetworkPolicy demo/allow-dns not found
      lost: "ConfigMap demo/cfg: owner NetworkPolicy demo/allow-dns not found"
records_found:
  description: With O(state=attached) and no record at the given location, the records of this module found
    elsewhere (C(where), C(entries), C(pending)).
  returned: when attach found no record
  type: list
  elements: dict
notes:
  description: Remarks, such as no record found with O(require_record=false).
  returned: when there are some
  type: list
  elements: str
failures:
  description: Objects that could not be patched, with the error.
  returned: always
  type: list
  elements: dict
record:
  description: Where the record is kept and how many of its entries are done.
  returned: when the record was opened
  type: dict
  sample: {"namespace": "kube-system", "name": "calico-ops-owner-references",
           "configmaps": ["calico-ops-owner-references"],
           "path": "/root/.calico_ops/records/calico-ops-owner-references-5a8c.json",
           "entries": 14, "done": 0, "pending": 14}
"""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.errors import describe_object
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import K8sModule, k8s_argument_spec
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.report import report_limit_spec
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.owner_references.rules import (
    DEFAULT_OWNER_API_VERSIONS, DEFAULT_RECORD_NAME, DEFAULT_RECORD_NAMESPACE, OwnerReferencesError)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.owner_references.runner import run


def argument_spec():
    return k8s_argument_spec(dict(
        state=dict(type="str", required=True, choices=["detached", "attached"]),
        owner_api_versions=dict(type="list", elements="str", default=list(DEFAULT_OWNER_API_VERSIONS)),
        record_namespace=dict(type="str", default=DEFAULT_RECORD_NAMESPACE),
        record_name=dict(type="str", default=DEFAULT_RECORD_NAME),
        record_path=dict(type="path"),
        fail_on_unlistable=dict(type="bool", default=True),
        fail_on_missing_owner=dict(type="bool", default=True),
        require_record=dict(type="bool", default=True),
        page_size=dict(type="int", default=500),
        workers=dict(type="int", default=8),
        report_limit=report_limit_spec(),
        variable_prefix=dict(type="str", default=""),
    ))


def main():
    K8sModule(argument_spec(), errors=(OwnerReferencesError,),
              subject=lambda p: "owner references (record %s)" % describe_object("v1", "configmaps", p["record_namespace"],
                                                                                 p["record_name"])).run(
        lambda m: run(m.client(), m.params, diff=m.diff))


if __name__ == "__main__":
    main()
