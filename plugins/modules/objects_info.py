#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: objects_info
short_description: Read several Kubernetes objects in one task (read-only)
version_added: "0.2.0"
description:
  - Reads every entry of O(objects) - one named object, or the objects of a kind that match label selectors - in
    one module run, in the order given. It replaces a looped C(kubernetes.core.k8s_info) (one module start-up and
    one discovery per item) where a role reads a few objects to decide or to report.
  - Each group-version is discovered once (one GET of its resource list); the reads are sent a few at a time.
  - A type the API server does not serve (a CRD not installed yet, as in check mode on a new cluster) is reported
    as C(served=false) with no resources, and an object that does not exist as C(found=false); any other error
    (forbidden, the API server not reachable) fails the task naming the object and the API's reason.
  - Secrets' C(data) and C(stringData) are redacted in the result.
  - Never writes.
author:
  - calico_ops maintainers (@calico-ops)
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - calico_ops.lifecycle.attributes
  - calico_ops.lifecycle.attributes.read_only
  - calico_ops.lifecycle.workers
options:
  objects:
    description:
      - The objects to read. Each entry has C(api_version) and C(kind), and either C(name) (one object; with
        C(namespace) for a namespaced kind) or C(label_selectors) (a list of C(key=value) or C(key); every object of
        the kind that matches, in C(namespace) or in every namespace), or neither (every object of the kind).
    type: list
    elements: dict
    required: true
  allow_forbidden:
    description:
      - Report an object the credentials may not read (HTTP 403) as C(forbidden=true) with no resources instead of
        failing - for a summary that shows what it may see under a narrow RBAC role.
    type: bool
    default: false
seealso:
  - module: kubernetes.core.k8s_info
"""

EXAMPLES = r"""
- name: Read what the cluster reports after an install
  calico_ops.lifecycle.objects_info:
    objects:
      - {api_version: operator.tigera.io/v1, kind: Installation, name: default}
      - {api_version: apps/v1, kind: DaemonSet, namespace: calico-system, name: calico-node}
      - {api_version: discovery.k8s.io/v1, kind: EndpointSlice, namespace: default,
         label_selectors: ["kubernetes.io/service-name=kubernetes"]}
  register: reads

- name: The Installation, or none
  ansible.builtin.set_fact:
    installation: "{{ reads.objects[0].resources | first | default(none) }}"
"""

RETURN = r"""
objects:
  description:
    - One entry per O(objects) entry, in the same order - C(api_version), C(kind), C(namespace) (none for a
      cluster-scoped kind), C(name), C(label) (how the entry is shown), C(served) (the type is served), C(forbidden) (a 403, with
      O(allow_forbidden)), C(found) (at least one object) and C(resources) (the object, or the matching objects; empty when none), as
      C(kubernetes.core.k8s_info) returns them.
  returned: always
  type: list
  elements: dict
  sample:
    - api_version: operator.tigera.io/v1
      kind: Installation
      namespace: null
      name: default
      label: operator.tigera.io/v1 Installation default
      served: true
      forbidden: false
      found: true
      resources: [{apiVersion: operator.tigera.io/v1, kind: Installation, metadata: {name: default}}]
api_requests:
  description: How many API requests the module made (C(read), C(write); write is always 0).
  returned: always
  type: dict
"""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import K8sModule
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.objects.read import (
    entry_problem, read_objects, subject)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.parallel import DEFAULT_WORKERS, workers_problem


def _read(m):
    entries = m.params["objects"]
    problems = [p for p in [workers_problem(m.params["workers"])] + [entry_problem(i, e) for i, e in enumerate(entries)]
                if p]
    if problems:
        m.fail("; ".join(problems))
    return read_objects(m.client(), entries, m.params["workers"], allow_forbidden=m.params["allow_forbidden"])


def main():
    K8sModule(dict(
        objects=dict(type="list", elements="dict", required=True),
        allow_forbidden=dict(type="bool", default=False),
        workers=dict(type="int", default=DEFAULT_WORKERS),
    ), error_prefix="reading objects failed: ", subject=subject).run(_read)


if __name__ == "__main__":
    main()
