#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: custom_resources
short_description: Edit Calico's custom-resources.yaml for the eBPF data plane
version_added: 0.1.0
description:
  - Reads a downloaded C(custom-resources.yaml), sets on its C(Installation) document
    C(spec.calicoNetwork.linuxDataplane), C(spec.variant) and (EKS with Bottlerocket nodes only)
    C(spec.flexVolumePath), merges O(installation_spec) into C(spec), and writes the result to O(dest) as the
    artifact to review. Every other document keeps its original text.
  - Returns the documents to create, so a following C(kubernetes.core.k8s) task applies exactly what was
    written. Works on the host that runs it (the controller); it does not talk to the cluster.
author:
  - calico_ops maintainers (@calico-ops)
options:
  src:
    description: The downloaded custom-resources file. One of O(src) and O(content) is required.
    type: path
  content:
    description: The text of the custom-resources file (as downloaded with C(ansible.builtin.uri)).
    type: str
  dest:
    description: Where to write the edited file (created or replaced only when its content changes).
    type: path
    required: true
  linux_dataplane:
    description: Value of C(spec.calicoNetwork.linuxDataplane).
    type: str
    choices: [BPF, Iptables, Nftables, VPP]
    default: BPF
  variant:
    description: Value of C(spec.variant); left as in the file when omitted.
    type: str
    choices: [Calico, TigeraSecureEnterprise]
  flex_volume_path:
    description: Value of C(spec.flexVolumePath); set only when given (EKS with Bottlerocket nodes).
    type: str
  installation_spec:
    description:
      - Overrides merged into the Installation's C(spec) last (dicts merge, other values replace, C(null)
        removes the key).
    type: dict
    default: {}
  exclude_kinds:
    description: Kinds left out of RV(documents) (they stay in the artifact), for example V(Goldmane).
    type: list
    elements: str
    default: []
requirements:
  - PyYAML
attributes:
  check_mode:
    support: full
    description: Reports whether O(dest) would change and returns the documents; writes nothing.
  diff_mode:
    support: full
    description: Shows the change of O(dest).
"""

EXAMPLES = r"""
- name: Edit the Installation for eBPF
  calico_ops.lifecycle.custom_resources:
    src: /tmp/calico/custom-resources.yaml
    dest: ./artifacts/custom-resources.ebpf.yaml
    linux_dataplane: BPF
    variant: TigeraSecureEnterprise
  register: cr

- name: Create the resources
  kubernetes.core.k8s:
    definition: "{{ cr.documents }}"
    apply: true
    server_side_apply:
      field_manager: calico-ops
      force_conflicts: true
"""

RETURN = r"""
documents:
  description: The documents to create (the edited Installation and every other document, less O(exclude_kinds)).
  returned: always
  type: list
  elements: dict
installation:
  description: The edited Installation document.
  returned: always
  type: dict
dest:
  description: The path of the edited file.
  returned: always
  type: str
"""

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.artifact import artifact_result, read_source
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.manifest import (
    DATAPLANES, HAS_YAML, VARIANTS, ManifestError, render_custom_resources)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import FileModule


def _render(m):
    if not HAS_YAML:
        m.fail(missing_required_lib("PyYAML"))
    p = m.params
    text = read_source(m.module)
    try:
        edited, documents, installation = render_custom_resources(
            text, linux_dataplane=p["linux_dataplane"], variant=p["variant"],
            flex_volume_path=p["flex_volume_path"], spec_overrides=p["installation_spec"],
            exclude_kinds=p["exclude_kinds"])
    except ManifestError as exc:
        m.fail("%s: %s" % (p["src"] or "content", exc))
    return artifact_result(m.module, edited, documents=documents, installation=installation)


def main():
    FileModule(dict(
        src=dict(type="path"),
        content=dict(type="str"),
        dest=dict(type="path", required=True),
        linux_dataplane=dict(type="str", choices=list(DATAPLANES), default="BPF"),
        variant=dict(type="str", choices=list(VARIANTS)),
        flex_volume_path=dict(type="str"),
        installation_spec=dict(type="dict", default={}),
        exclude_kinds=dict(type="list", elements="str", default=[]),
    ), required_one_of=[("src", "content")], mutually_exclusive=[("src", "content")]).run(_render)


if __name__ == "__main__":
    main()
