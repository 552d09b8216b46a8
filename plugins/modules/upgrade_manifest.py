#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: upgrade_manifest
short_description: Prepare a downloaded Calico release manifest for an upgrade (user patches, etcd settings)
version_added: 0.1.0
description:
  - Reads a downloaded release manifest (for example C(calico.yaml) of the target release), sets the etcd
    settings of the etcd flavors (C(etcd_endpoints) in the ConfigMap; the TLS key, certificate and CA in
    Secret C(calico-etcd-secrets) and their mount paths in the ConfigMap), then applies the user's patches
    - the changes they made to the original manifest - to the documents they select.
  - Each patch selects documents by C(kind) and C(name) (and optionally C(namespace), C(apiVersion)) and is
    either C(patch), merged like C(kubectl patch --type strategic) (maps merge, C(null) deletes, containers,
    env, volumes, ports ... merge by their key, an item with C($patch) set to C(delete) removes it), or C(json_patch), a list
    of RFC 6902 operations. A patch that selects no document, or a JSON patch path that does not exist, fails
    the module before anything is applied.
  - Writes the result to O(dest) as the artifact to review (only the edited documents are re-serialised; the
    Secret's data is redacted there) and returns the documents to apply (the Secret's data redacted there too)
    and the workloads to wait for. Works
    on the host that runs it (the controller); it does not talk to the cluster.
author:
  - calico_ops maintainers (@calico-ops)
options:
  src:
    description: The downloaded manifest. One of O(src) and O(content) is required.
    type: path
  content:
    description: The text of the downloaded manifest.
    type: str
  dest:
    description: Where to write the prepared manifest (created or replaced only when its content changes).
    type: path
    required: true
  patches:
    description:
      - The user's changes, each a dict with C(kind), C(name), optional C(namespace) and C(apiVersion), and
        exactly one of C(patch) (dict, strategic-merge-like) and C(json_patch) (list of RFC 6902 operations).
    type: list
    elements: dict
    default: []
  etcd_endpoints:
    description: etcd URLs for C(etcd_endpoints) (etcd flavors only).
    type: list
    elements: str
    default: []
  etcd_key:
    description: PEM text of the etcd client key (with O(etcd_cert)).
    type: str
  etcd_cert:
    description: PEM text of the etcd client certificate (with O(etcd_key)).
    type: str
  etcd_ca:
    description: PEM text of the etcd CA certificate.
    type: str
  etcd_live:
    description:
      - The live etcd datastore settings, as the C(etcd) fact of M(calico_ops.lifecycle.calico_facts) reports them
        (C(configmap) with its C(data); C(secret) with C(exists) and the names of its C(keys), never values).
      - When given, what the user did not give is carried into the new manifest, as Calico's upgrade guide for
        manifest installs on the etcd datastore asks - C(etcd_endpoints) and each TLS path of the ConfigMap - and
        without O(etcd_key), O(etcd_cert) and O(etcd_ca) the live Secret C(calico-etcd-secrets) is left out of the
        documents (kept as it is) instead of being replaced by the release's empty one.
      - The module fails, before anything is applied, naming the variable to set, when a setting cannot be
        carried (a TLS path whose file is not in the live Secret; no endpoints but the placeholder; a Secret key
        the given material would drop) or when the result would empty a non-empty live setting.
    type: dict
attributes:
  check_mode:
    support: full
    description: Returns the documents and reports whether O(dest) would change; writes nothing.
  diff_mode:
    support: full
    description: Shows the change of O(dest).
"""

EXAMPLES = r"""
- name: Prepare upgrade.yaml with the changes made to the original manifest
  calico_ops.lifecycle.upgrade_manifest:
    src: ./calico-artifacts/v3.31.4-calico.yaml
    dest: ./calico-artifacts/upgrade.yaml
    patches:
      - kind: DaemonSet
        name: calico-node
        namespace: kube-system
        patch:
          spec:
            template:
              spec:
                containers:
                  - name: calico-node
                    env:
                      - name: CALICO_IPV4POOL_CIDR
                        value: 10.244.0.0/16
      - kind: ConfigMap
        name: calico-config
        json_patch:
          - {op: replace, path: /data/veth_mtu, value: "1440"}
  register: prepared
"""

RETURN = r"""
documents:
  description:
    - The documents to apply. The values of the etcd Secret's data are redacted (its keys are kept); give them to
      M(calico_ops.lifecycle.manifest_apply) in its O(calico_ops.lifecycle.manifest_apply#module:secret_data), as
      the upgrade role does.
  returned: always
  type: list
  elements: dict
workloads:
  description: The manifest's DaemonSets and Deployments (namespace and name), to wait for after the apply.
  returned: always
  type: dict
  sample: {daemonsets: [{namespace: kube-system, name: calico-node}],
           deployments: [{namespace: kube-system, name: calico-kube-controllers}]}
patches:
  description: One entry per patch with the number of documents it matched.
  returned: always
  type: list
  elements: dict
  sample: [{index: 0, target: DaemonSet kube-system/calico-node, type: strategic, matched: 1}]
etcd_carried:
  description: What was carried from the live etcd settings (names and paths, never a value).
  returned: always
  type: list
  elements: str
  sample: ["etcd_endpoints kept from ConfigMap kube-system/calico-config"]
etcd_endpoints:
  description: The etcd endpoints written into the new manifest (given or carried); empty without etcd.
  returned: always
  type: list
  elements: str
dest:
  description: The path of the prepared manifest.
  returned: always
  type: str
"""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.artifact import artifact_result, read_source
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.manifest import ManifestError
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import FileModule
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.upgrade.manifest import (
    etcd_endpoints, render_upgrade, workloads)


def _render(m):
    p = m.params
    text = read_source(m.module)
    tls = {"etcd_key": p["etcd_key"], "etcd_cert": p["etcd_cert"], "etcd_ca": p["etcd_ca"]}
    notes = []
    try:
        artifact, documents, report = render_upgrade(text, p["patches"], p["etcd_endpoints"], tls,
                                                     etcd_live=p["etcd_live"], etcd_notes=notes)
    except ManifestError as exc:
        m.fail(str(exc))
    return artifact_result(m.module, artifact, documents=documents, workloads=workloads(documents),
                           patches=report, etcd_carried=notes, etcd_endpoints=etcd_endpoints(documents))


def main():
    FileModule(dict(
        src=dict(type="path"),
        content=dict(type="str"),
        dest=dict(type="path", required=True),
        patches=dict(type="list", elements="dict", default=[]),
        etcd_endpoints=dict(type="list", elements="str", default=[]),
        etcd_key=dict(type="str", no_log=True),
        etcd_cert=dict(type="str", no_log=True),
        etcd_ca=dict(type="str", no_log=True),
        etcd_live=dict(type="dict"),
    ), required_one_of=[("src", "content")], mutually_exclusive=[("src", "content")]).run(_render)


if __name__ == "__main__":
    main()
