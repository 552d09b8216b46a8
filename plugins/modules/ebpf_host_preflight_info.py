#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: ebpf_host_preflight_info
short_description: Check one host for Calico's eBPF data plane (kernel, OS, bpffs, cgroup v2, vxlan, VLANs)
version_added: 0.1.0
author:
  - calico_ops contributors (@calico-ops)
description:
  - Runs on a Kubernetes node and reads, without changing anything and without root - the kernel release
    (C(/proc/sys/kernel/osrelease)), C(/etc/os-release), C(/proc/mounts) and C(/proc/filesystems) (bpffs
    mounted at C(/sys/fs/bpf) or mountable, cgroup v2), the C(vxlan) kernel module (loaded, built in or
    present under C(/lib/modules)), and tagged VLAN devices (C(DEVTYPE=vlan) in C(/sys/class/net/*/uevent)).
  - Judges them with the same rules as M(calico_ops.lifecycle.ebpf_preflight_info) judges the nodes of the API -
    C(architecture), C(os_kernel), C(windows), C(immutable_os) - plus the host-only checks C(bpffs),
    C(cgroup_v2), C(vxlan_module), C(vlan_devices) and C(host_facts) (whether the facts could be read).
  - Does not need the Kubernetes API; it is not part of the C(group/calico_ops.lifecycle.k8s) action group.
options:
  cgroup_v2_path:
    description:
      - FelixConfiguration default C(spec.cgroupV2Path), as the API-side preflight found it (its
        C(calico.cgroup_v2_path)); an immutable OS warns while it is empty.
    type: str
  ignore:
    description:
      - Check names whose failures are downgraded to warnings.
    type: list
    elements: str
    default: []
    choices: [architecture, os_kernel, windows, immutable_os, platform, kube_proxy_mode, sctp_services,
              policy_log_action, floating_ips, application_layer_policy, web_application_firewall, l7_logs,
              api_endpoint_name, host_facts, bpffs, cgroup_v2, vxlan_module, vlan_devices]
extends_documentation_fragment:
  - calico_ops.lifecycle.attributes.read_only
seealso:
  - module: calico_ops.lifecycle.ebpf_preflight_info
"""

EXAMPLES = r"""
- name: Check the nodes themselves
  calico_ops.lifecycle.ebpf_host_preflight_info:
    cgroup_v2_path: /run/calico/cgroup
  register: host_preflight
"""

RETURN = r"""
verdict:
  description: The worst verdict of the host's checks, V(ok), V(warn) or V(fail).
  returned: always
  type: str
  sample: ok
checks:
  description: Per check name - verdict and reason (C(vlan_devices) also lists C(objects) and C(count)).
  returned: always
  type: dict
  sample:
    os_kernel: {verdict: ok, reason: "Ubuntu 22.04.4 LTS (20.04 or newer)"}
    bpffs: {verdict: ok, reason: bpffs mounted at /sys/fs/bpf}
    vxlan_module: {verdict: ok, reason: vxlan module available (module kernel/drivers/net/vxlan/vxlan.ko.zst)}
facts:
  description: What was read.
  returned: always
  type: dict
  sample:
    os_image: Ubuntu 22.04.4 LTS
    os: ubuntu
    kernel: 5.15.0-105-generic
    architecture: amd64
    immutable: false
    bpffs_mounted: true
    bpffs_supported: true
    cgroup2_mount: /sys/fs/cgroup
    cgroup2_supported: true
    vxlan_loaded: false
    vxlan_available: module kernel/drivers/net/vxlan/vxlan.ko.zst
    vlan_devices: []
    os_release_found: true
"""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import FileModule
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight.host import run_host_preflight
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight.rules import CHECK_NAMES


def main():
    FileModule(dict(
        cgroup_v2_path=dict(type="str"),
        ignore=dict(type="list", elements="str", default=[], choices=list(CHECK_NAMES)),
    )).run(lambda m: run_host_preflight(cgroup_v2_path=m.params["cgroup_v2_path"] or None, ignore=m.params["ignore"]))


if __name__ == "__main__":
    main()
