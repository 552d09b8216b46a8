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
  - calico_ops.lifecycle.wait
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
  wait_condition:
    description:
      - The status condition every object of every entry must have (C(type), and C(status), default C("True")), as
        C(kubernetes.core.k8s_info)'s C(wait_condition). An entry that finds no object does not have it.
        RV(satisfied) says whether they have it, RV(unmet) what is missing in the objects' own conditions. With
        O(wait=true), read again every O(poll_interval) seconds inside the one module run (no retried task) until
        they have it, for O(wait_timeout) seconds at most; the module does not fail when they do not (the caller
        decides).
    type: dict
    version_added: "0.2.0"
  wait_absent:
    description:
      - Instead of O(wait_condition), whether no entry finds any object (each deleted, as a controller removes what
        it no longer wants); with O(wait=true), until then. RV(unmet) names what is still there.
    type: bool
    default: false
    version_added: "0.2.0"
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
satisfied:
  description:
    - With O(wait_condition), whether every object had the condition by the end of the wait; with O(wait_absent),
      whether every object was gone.
  returned: when wait_condition or wait_absent is set
  type: bool
waited:
  description: With O(wait_condition) or O(wait_absent), the seconds the wait took (0 for one read).
  returned: when wait_condition or wait_absent is set
  type: float
unmet:
  description:
    - With O(wait_condition), one line per entry that found nothing or object without the condition, with the
      object's own conditions (type=status and message); with O(wait_absent), one per object still there; empty
      when satisfied.
  returned: when wait_condition or wait_absent is set
  type: list
  elements: str
api_requests:
  description: How many API requests the module made (C(read), C(write); write is always 0).
  returned: always
  type: dict
"""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import K8sModule
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.objects.read import (
    condition_problem, entry_problem, read_objects, subject, wait_objects)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.parallel import DEFAULT_WORKERS, workers_problem
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.wait import argument_spec as wait_argument_spec
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.wait import problems as wait_problems


def _read(m):
    p = m.params
    entries, wanted = p["objects"], p["wait_condition"]
    problems = [workers_problem(p["workers"])] + [entry_problem(i, e) for i, e in enumerate(entries)]
    if wanted is not None:
        problems.append(condition_problem(wanted))
    if wanted is not None and p["wait_absent"]:
        problems.append("wait_condition and wait_absent: give one of them")
    if p["wait"] and wanted is None and not p["wait_absent"]:
        problems.append("wait: give what to wait for, wait_condition or wait_absent")
    problems = [x for x in problems + wait_problems(p["wait_timeout"], p["poll_interval"]) if x]
    if problems:
        m.fail("; ".join(problems))
    if wanted is None and not p["wait_absent"]:
        return read_objects(m.client(), entries, p["workers"], allow_forbidden=p["allow_forbidden"])
    return wait_objects(m.client(), entries, wanted, p["wait_timeout"] if p["wait"] else 0, p["poll_interval"],
                        p["workers"], allow_forbidden=p["allow_forbidden"])


def main():
    K8sModule(dict(
        wait_argument_spec(),
        objects=dict(type="list", elements="dict", required=True),
        allow_forbidden=dict(type="bool", default=False),
        workers=dict(type="int", default=DEFAULT_WORKERS),
        wait_condition=dict(type="dict"),
        wait_absent=dict(type="bool", default=False),
    ), error_prefix="reading objects failed: ", subject=subject).run(_read)


if __name__ == "__main__":
    main()
