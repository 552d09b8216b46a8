#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: diagnostics_archive
short_description: Collect what Calico support asks for into one archive on the controller
version_added: "0.2.0"
description:
  - Reads, with the credentials given, what Calico's support asks for and writes it into one gzipped tar archive,
    mode C(0600) from the moment it exists (a temporary file renamed into place).
  - The operator's Installation, APIServer and TigeraStatus; Calico's FelixConfiguration,
    KubeControllersConfiguration and IP pools (through C(crd.projectcalico.org/v1), served without Calico's API
    server); the ConfigMap C(kubernetes-services-endpoint); kube-proxy's DaemonSet and ConfigMaps; the pods of
    O(namespaces) with the last O(log_lines) lines of each container's log, and those namespaces' events; every
    node's conditions, addresses, taints and nodeInfo; the collection's records (ConfigMaps labelled
    O(record_label), and the record files of O(record_paths)); and C(summary.json) (when, which server, the job and
    its failure, counts, what could not be read).
  - Never reads a Secret. A Secret's data that turns up anyway, the literal value of a container's environment
    variable named as a credential (C(*TOKEN*), C(*PASSWORD*), C(*SECRET*), C(*API_KEY*), ...), any bearer token
    (JSON Web Token) and the secret values given to the module are replaced by C(<redacted>) before anything is
    written.
  - A read the credentials are not allowed (403), a type the cluster does not serve or a log the API server cannot
    get is written down in C(summary.json) and returned in RV(problems); the archive is written all the same. The
    API server not answering fails the module.
  - Reads only from the cluster. Writes the archive on the host that runs the module (the controller, with this
    collection's C(connection=local) plays); in check mode nothing is written.
author:
  - calico_ops maintainers (@calico-ops)
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - calico_ops.lifecycle.attributes
  - calico_ops.lifecycle.variable_prefix
  - calico_ops.lifecycle.workers
options:
  path:
    description:
      - The archive to write, ending in C(.tar.gz) or C(.tgz). A missing directory is created (C(0700)); an existing
        file is replaced. Refused before any read when it cannot be written.
    type: path
    required: true
  namespaces:
    description: The namespaces whose pods, logs and events are collected.
    type: list
    elements: str
    default: [calico-system, tigera-operator]
  log_lines:
    description: The last lines of each container's current log (V(0) - no logs; at most 100000).
    type: int
    default: 300
  services_endpoint_namespace:
    description: Namespace of the ConfigMap C(kubernetes-services-endpoint).
    type: str
    default: tigera-operator
  services_endpoint_name:
    description: Name of the API server endpoint ConfigMap.
    type: str
    default: kubernetes-services-endpoint
  kube_proxy_namespace:
    description: Namespace of kube-proxy's DaemonSet and ConfigMaps.
    type: str
    default: kube-system
  kube_proxy_daemonset:
    description: kube-proxy's DaemonSet.
    type: str
    default: kube-proxy
  kube_proxy_configmaps:
    description: kube-proxy's ConfigMaps (kubeadm's C(kube-proxy), EKS's C(kube-proxy-config)).
    type: list
    elements: str
    default: [kube-proxy, kube-proxy-config]
  record_label:
    description: The label of the collection's record ConfigMaps (in every namespace).
    type: str
    default: lifecycle.calico-ops.io/record
  record_paths:
    description: Record files on the controller to add (a missing one is noted, not an error).
    type: list
    elements: path
    default: []
  job:
    description: The job the archive is collected for (shown in C(summary.json)).
    type: str
    default: ""
  reason:
    description: Why it is collected (a failed task's message), shown in C(summary.json).
    type: str
    default: ""
attributes:
  check_mode:
    support: full
    description: Reads everything and reports what the archive would hold; writes nothing.
  diff_mode:
    support: none
    description: The archive is new each time; there is nothing to diff.
seealso:
  - module: calico_ops.lifecycle.objects_info
"""

EXAMPLES = r"""
- name: Collect a diagnostics archive
  calico_ops.lifecycle.diagnostics_archive:
    path: ./calico-diagnostics/cluster-a.tar.gz
    log_lines: 500
    job: enable_ebpf
    reason: "{{ ansible_failed_result.msg | default('') }}"
  register: diag
"""

RETURN = r"""
path:
  description: The archive's absolute path.
  returned: always
  type: str
written:
  description: Whether the archive was written (false in check mode).
  returned: always
  type: bool
size:
  description: The archive's size in bytes (0 when not written).
  returned: always
  type: int
members:
  description: The files in the archive, below its top directory (the archive's name without C(.tar.gz)).
  returned: always
  type: list
  elements: str
  sample: [summary.json, nodes.json, objects/installations.json, namespaces/calico-system/logs/calico-node-x/calico-node.log]
objects:
  description: How many objects of each entry were collected (C(installations), C(felixconfigurations), ...).
  returned: always
  type: dict
pods:
  description: How many pods per namespace.
  returned: always
  type: dict
problems:
  description: What could not be collected, one line each (forbidden, not served, a log not available).
  returned: always
  type: list
  elements: str
lines:
  description: A summary to show, one line each.
  returned: always
  type: list
  elements: str
api_requests:
  description: How many API requests the module made (C(read); C(write) is always 0).
  returned: always
  type: dict
"""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.diagnostics.rules import object_entries
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.diagnostics.runner import (
    DiagnosticsError, run_diagnostics, validate)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import K8sModule


def _collect(m):
    p = m.params
    validate(p["path"], p["namespaces"], p["log_lines"], p["workers"], p["variable_prefix"])  # before any request
    entries = object_entries((p["services_endpoint_namespace"], p["services_endpoint_name"]),
                             p["kube_proxy_namespace"], p["kube_proxy_daemonset"], p["kube_proxy_configmaps"],
                             p["record_label"])
    return run_diagnostics(m.client(), p["path"], p["namespaces"], p["log_lines"], p["workers"], entries,
                           p["record_paths"], p["job"], p["reason"], server=m.server_url(),
                           check_mode=m.check_mode, redact_text=m.redactor.text, prefix=p["variable_prefix"])


def main():
    K8sModule(dict(
        path=dict(type="path", required=True),
        namespaces=dict(type="list", elements="str", default=["calico-system", "tigera-operator"]),
        log_lines=dict(type="int", default=300),
        services_endpoint_namespace=dict(type="str", default="tigera-operator"),
        services_endpoint_name=dict(type="str", default="kubernetes-services-endpoint"),
        kube_proxy_namespace=dict(type="str", default="kube-system"),
        kube_proxy_daemonset=dict(type="str", default="kube-proxy"),
        kube_proxy_configmaps=dict(type="list", elements="str", default=["kube-proxy", "kube-proxy-config"]),
        record_label=dict(type="str", default="lifecycle.calico-ops.io/record"),
        record_paths=dict(type="list", elements="path", default=[]),
        job=dict(type="str", default=""),
        reason=dict(type="str", default=""),
        workers=dict(type="int", default=8),
        variable_prefix=dict(type="str", default=""),
    ), error_prefix="diagnostics archive: ", errors=(DiagnosticsError,),
        subject=lambda p: "the diagnostics archive %s" % p.get("path")).run(_collect)


if __name__ == "__main__":
    main()
