#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: merge_patch
short_description: Patch one Kubernetes object, only when the API server says the patch changes it
version_added: 0.1.0
author:
  - calico_ops maintainers (@calico-ops)
description:
  - Reads the object and sends the patch as a server-side dry run (C(dryRun=All)), so the merge is the
    API server's own. When the server's answer equals the live object nothing is written (C(changed=false) and no
    write request). Otherwise the same PATCH is sent for real; a V(null) value removes a key, other keys stay.
  - The patch is a strategic merge patch for the built-in API groups (lists merge on the keys the API declares,
    so a patch of one Service port, or one container, leaves the others) and a JSON merge patch (RFC 7386, lists
    replaced whole) for custom resources, which have no strategic merge (O(patch_type)).
  - A missing object is an error (O(missing=fail)), skipped (O(missing=skip)) or created from O(create) with
    the patch merged in (O(missing=create); the creation is dry-run first).
  - In check mode only the dry run is sent; nothing is written.
  - The diff is the live object against the server's dry-run answer, on the paths the patch touches.
  - The values of a Secret's C(data) and C(stringData) are never returned nor shown in the diff (the keys are).
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - calico_ops.lifecycle.attributes
options:
  api_version:
    description: The object's C(apiVersion), for example V(apps/v1) or V(v1).
    type: str
    required: true
  resource:
    description: The resource name (plural, lower case), for example V(daemonsets), V(configmaps).
    type: str
    required: true
  name:
    description: The object's name.
    type: str
    required: true
  namespace:
    description: The namespace (omit for cluster-scoped objects).
    type: str
  patch:
    description: The patch (strategic merge or JSON merge patch, see O(patch_type)).
    type: dict
    default: {}
  patch_type:
    description:
      - V(strategic) (C(application/strategic-merge-patch+json)) or V(merge) (C(application/merge-patch+json),
        RFC 7386).
      - V(auto) is V(strategic) for the built-in API groups (core, V(apps), C(*.k8s.io)) and V(merge) for the
        others (custom resources), and V(merge) when the API server refuses a strategic merge (415).
    type: str
    default: auto
    choices: [auto, strategic, merge]
  missing:
    description: What to do when the object does not exist.
    type: str
    default: fail
    choices: [fail, skip, create]
  create:
    description:
      - The object to create when it is missing and O(missing=create).
      - O(patch) is merged into it as a JSON merge patch (RFC 7386) of the two dicts.
    type: dict
  lock:
    description: Send the read C(metadata.resourceVersion) with the patch so a concurrent change is refused (409).
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: Decides and reports what would change from the API server's dry run; sends no write.
  diff_mode:
    support: full
    description: >-
      The live object and the API server's dry-run answer, on the paths the patch touches (the whole object when
      it is created).
"""

EXAMPLES = r"""
- name: Keep kube-proxy off every node (a nodeSelector that matches none)
  calico_ops.lifecycle.merge_patch:
    api_version: apps/v1
    resource: daemonsets
    namespace: kube-system
    name: kube-proxy
    patch:
      spec: {template: {spec: {nodeSelector: {non-calico: "true"}}}}

- name: Remove only that key again
  calico_ops.lifecycle.merge_patch:
    api_version: apps/v1
    resource: daemonsets
    namespace: kube-system
    name: kube-proxy
    patch:
      spec: {template: {spec: {nodeSelector: {non-calico: null}}}}

- name: Create the ConfigMap or update its two keys
  calico_ops.lifecycle.merge_patch:
    api_version: v1
    resource: configmaps
    namespace: tigera-operator
    name: kubernetes-services-endpoint
    patch:
      data: {KUBERNETES_SERVICE_HOST: api.example.com, KUBERNETES_SERVICE_PORT: "443"}
    missing: create
    create: {apiVersion: v1, kind: ConfigMap}
"""

RETURN = r"""
exists:
  description: Whether the object existed before.
  returned: always
  type: bool
created:
  description: Whether it was (or in check mode would be) created.
  returned: always
  type: bool
before:
  description: The parts of the object the patch touches, before.
  returned: when the object existed or was created
  type: dict
  sample: {spec: {template: {spec: {nodeSelector: {kubernetes.io/os: linux}}}}}
after:
  description: The same parts after the patch.
  returned: when the object existed or was created
  type: dict
  sample: {spec: {template: {spec: {nodeSelector: {kubernetes.io/os: linux, non-calico: "true"}}}}}
patch:
  description: The patch.
  returned: always
  type: dict
patch_type:
  description: The patch type sent (V(strategic) or V(merge)).
  returned: when the object existed
  type: str
  sample: strategic
object:
  description: The object after the change (in check mode, as it would be); null when missing and skipped.
  returned: always
  type: dict
resource:
  description: What was patched (C(<resource>[.<group>] <namespace>/<name>)).
  returned: always
  type: str
  sample: daemonsets.apps kube-system/kube-proxy
api_requests:
  description: How many API requests the module made (C(read), C(write), C(dry_run)).
  returned: always
  type: dict
  sample: {read: 1, write: 1, dry_run: 1}
"""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.errors import describe_object
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.objects.merge_patch import (
    MISSING_CHOICES, PATCH_TYPES, run_merge_patch)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import K8sModule
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.redact import redact_secret_parts


def _patch(m):
    p = m.params
    result = run_merge_patch(m.client(), p["api_version"], p["resource"], p["name"], p["patch"],
                             namespace=p["namespace"], missing=p["missing"], create=p["create"], lock=p["lock"],
                             want_diff=m.diff, patch_type=p["patch_type"])
    if p["resource"] == "secrets":
        # the patch and the views of the paths it touches carry no kind: redacted as parts of a Secret
        for key in ("object", "before", "after", "patch"):
            if result.get(key) is not None:
                result[key] = redact_secret_parts(result[key])
        for key in ("before", "after"):
            if (result.get("diff") or {}).get(key) is not None:
                result["diff"][key] = redact_secret_parts(result["diff"][key])
    return result


def main():
    K8sModule(dict(
        api_version=dict(type="str", required=True),
        resource=dict(type="str", required=True),
        name=dict(type="str", required=True),
        namespace=dict(type="str"),
        patch=dict(type="dict", default={}),
        patch_type=dict(type="str", default="auto", choices=list(PATCH_TYPES)),
        missing=dict(type="str", default="fail", choices=list(MISSING_CHOICES)),
        create=dict(type="dict"),
        lock=dict(type="bool", default=False),
    ), error_prefix="merge patch: ", required_if=[("missing", "create", ("create",))],
        subject=lambda p: describe_object(p["api_version"], p["resource"], p["namespace"], p["name"])).run(_patch)


if __name__ == "__main__":
    main()
