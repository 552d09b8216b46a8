#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: record_location_info
short_description: Prove, writing nothing, that a job can keep its record where it was told
version_added: "0.2.0"
description:
  - A job that records what it removes must be able to write that record before it changes anything. The roles
    run this module before their first write; the modules that keep a record themselves
    (M(calico_ops.lifecycle.owner_references), M(calico_ops.lifecycle.host_endpoint_migration)) make the same
    check when they open it.
  - The record ConfigMap O(namespace)/O(name) - a server-side dry run (C(dryRun=All)) of the write the job will
    make (O(write)). The API server answers it as it would the real write - the namespace does not exist (404),
    the identity may not write ConfigMaps there (403), the name is invalid (422).
  - The record file, with O(path) or O(keeps_file) - the path is not a directory, and the file, or the nearest
    existing directory above it, is writable by the module's process (on a file system that is not read-only).
    Nothing is created.
  - Fails, naming each variable to fix (see O(variable_prefix)) and saying that nothing was written, when the record
    cannot be kept. Never writes.
author:
  - calico_ops maintainers (@calico-ops)
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - calico_ops.lifecycle.attributes
  - calico_ops.lifecycle.attributes.read_only
  - calico_ops.lifecycle.variable_prefix
options:
  namespace:
    description:
      - Namespace of the record ConfigMap.
    type: str
    required: true
  name:
    description:
      - Name of the record ConfigMap.
    type: str
    required: true
  write:
    description:
      - How the job writes the record. V(apply) - server-side apply (the roles' own records). V(store) - as
        M(calico_ops.lifecycle.owner_references) and M(calico_ops.lifecycle.host_endpoint_migration) keep theirs, a
        create of a new record or a replace of the one that exists (which needs C(get) too).
    type: str
    default: apply
    choices: [apply, store]
  path:
    description:
      - The record's file on the host that runs the module (the controller), when the job keeps one.
    type: path
  keeps_file:
    description:
      - The job keeps a record file, at O(path) or, when that is not set, at the default path of the record store
        (C(~/.calico_ops/records/<name>-<cluster id>.json)).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Prove the upgrade's record location before the first write
  calico_ops.lifecycle.record_location_info:
    namespace: kube-system
    name: calico-ops-upgrade
    variable_prefix: upgrade_

- name: And the owner references record the upgrade will keep (ConfigMaps and the controller file)
  calico_ops.lifecycle.record_location_info:
    namespace: kube-system
    name: calico-ops-owner-references
    write: store
    keeps_file: true
    variable_prefix: upgrade_owner_references_
"""

RETURN = r"""
record:
  description: What was proven - the ConfigMap (C(namespace), C(name); C(exists) with O(write=store)) and the file
    (C(path), null when none).
  returned: always
  type: dict
  sample: {"namespace": "kube-system", "name": "calico-ops-upgrade", "exists": null, "path": null}
"""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.errors import describe_object
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import K8sModule
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records.files import RecordStoreError
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records.location import check_record_location


def _check(m):
    p = m.params
    try:
        record = check_record_location(m.client(), p["namespace"], p["name"], how=p["write"], path=p["path"],
                                       keeps_file=p["keeps_file"], variable_prefix=p["variable_prefix"])
    except RecordStoreError as exc:
        m.fail(str(exc))
    return {"changed": False, "record": record}


def main():
    K8sModule(dict(
        namespace=dict(type="str", required=True),
        name=dict(type="str", required=True),
        write=dict(type="str", default="apply", choices=["apply", "store"]),
        path=dict(type="path"),
        keeps_file=dict(type="bool", default=False),
        variable_prefix=dict(type="str", default=""),
    ), subject=lambda p: "the record location (%s)" % describe_object("v1", "configmaps", p["namespace"],
                                                                      p["name"])).run(_check)


if __name__ == "__main__":
    main()
