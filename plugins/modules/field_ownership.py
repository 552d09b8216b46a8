#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: field_ownership
short_description: Hand the fields of other field managers over to one manager before a server-side apply
version_added: "0.1.0"
description:
  - Server-side apply removes a field only when the applying field manager owned it and no longer applies
    it. Objects installed with C(kubectl apply), C(kubectl create) or any other manager keep, after a
    server-side apply of a newer manifest under another manager, everything the newer release dropped (an
    init container, an env var, a volume) - still pointing at the old release.
  - For each object of O(objects) that exists, this module merges the C(metadata.managedFields) entries of
    O(from_managers) (main resource only; C(status) entries stay) into one C(Apply) entry of O(to_manager),
    with a JSON patch guarded by the object's resourceVersion. A following server-side apply by
    O(to_manager) then removes what the new manifest no longer has. This is what
    C(kubectl apply --server-side) does for client-side-applied objects.
  - A handover is a write of its own, so it is made only where it matters. When an object of O(objects) is a
    whole document (more than C(apiVersion), C(kind) and C(metadata)), a server-side dry run of its apply
    (forced, by O(to_manager)) shows who would own which field afterwards. When every field O(from_managers)
    would still own is set by the document too (shared, so nothing would be left behind), the object is
    reported as C(covered by the apply) and not written; the apply alone is enough. A dry run that fails
    changes nothing, and the handover is made.
  - Objects that do not exist, and types the server does not serve yet, are reported and skipped. Fields of
    managers not listed (user changes made with C(kubectl edit), controllers) are left alone.
author:
  - calico_ops maintainers (@calico-ops)
options:
  objects:
    description:
      - The manifests whose live objects to adopt. C(apiVersion), C(kind) and C(metadata) name the object; a whole
        document is also dry-run applied to see whether the handover is needed at all.
      - A list of dicts, one dict, or multi-document YAML text (a release file as downloaded, parsed by the module
        with libyaml; cheaper than passing megabytes of parsed documents through a task's arguments).
    type: raw
    required: true
  from_managers:
    description: Field managers whose fields are handed over (for example V(kubectl-client-side-apply)).
    type: list
    elements: str
    required: true
  to_manager:
    description: The field manager of the following server-side apply.
    type: str
    default: calico-ops
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - calico_ops.lifecycle.attributes
attributes:
  check_mode:
    support: full
    description: Reports what would be adopted; writes nothing.
  diff_mode:
    support: full
    description: The field managers of each changed object, before and after.
"""

EXAMPLES = r"""
- name: Take over the fields kubectl applied, so the apply below prunes what v3.31 dropped
  calico_ops.lifecycle.field_ownership:
    objects: "{{ prepared.documents }}"
    from_managers: [kubectl-client-side-apply, kubectl-create]
    to_manager: calico-ops

- name: Apply the new release
  kubernetes.core.k8s:
    definition: "{{ prepared.documents }}"
    apply: true
    server_side_apply:
      field_manager: calico-ops
      force_conflicts: true
"""

RETURN = r"""
objects:
  description:
    - Each object with the action taken (adopted, would adopt, covered by the apply, nothing to adopt, absent,
      type not served yet).
  returned: always
  type: list
  elements: dict
  sample: [{apiVersion: apps/v1, kind: DaemonSet, namespace: kube-system, name: calico-node, action: adopted,
            adopted_from: [kubectl-client-side-apply]}]
counts:
  description: Objects seen, adopted, covered by the apply (no handover needed), absent, unchanged and of types
    not served.
  returned: always
  type: dict
  sample: {objects: 42, adopted: 3, covered: 37, absent: 2, unchanged: 0, unknown_type: 0}
"""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s import yaml_text
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import FIELD_MANAGER
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.objects.field_ownership import run
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import K8sModule


def _documents(objects):
    docs = yaml_text.documents(objects)
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict):
            raise ValueError("document %d is a %s, not an object with apiVersion, kind and metadata"
                             % (i + 1, type(doc).__name__))
    return docs


def _subject(params):
    """``Kind namespace/name`` of the first few objects."""
    try:
        docs = _documents(params["objects"])
    except (yaml_text.YAMLError, ValueError):  # reported by _objects
        docs = []
    names = []
    for obj in docs[:3]:
        meta = obj.get("metadata") or {}
        names.append("%s %s" % (obj.get("kind"), "/".join(x for x in (meta.get("namespace"), meta.get("name")) if x)))
    return ", ".join(names) + (" and %d more" % (len(docs) - 3) if len(docs) > 3 else "")


def _objects(m):
    """The documents of O(objects), parsed here when they come as YAML text; one line naming the option if not."""
    try:
        return _documents(m.params["objects"])
    except (yaml_text.YAMLError, ValueError) as exc:
        m.fail("objects: not valid: %s (nothing was sent)" % exc)


def main():
    K8sModule(dict(
        objects=dict(type="raw", required=True),
        from_managers=dict(type="list", elements="str", required=True),
        to_manager=dict(type="str", default=FIELD_MANAGER),
    ), subject=_subject).run(lambda m: run(m.client(), _objects(m), m.params["from_managers"],
                                           m.params["to_manager"], diff=m.diff))


if __name__ == "__main__":
    main()
