#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: services_endpoint_info
short_description: Derive and validate the stable API server endpoint Calico should use (read-only)
version_added: 0.1.0
author:
  - calico_ops maintainers (@calico-ops)
description:
  - Reports the API server of the connection in use (the server URL of the kubeconfig, from kubernetes.core's
    client configuration) and derives, per platform, the stable host and port for ConfigMap
    C(kubernetes-services-endpoint) (C(KUBERNETES_SERVICE_HOST), C(KUBERNETES_SERVICE_PORT), both strings).
  - Explicit O(endpoint_host) and O(endpoint_port) win. Otherwise - kubeadm and generic - the kubeconfig's server; kOps -
    C(api.internal.<cluster name>), port 443; OpenShift - C(api.<cluster_name>.<base_domain>), else
    Infrastructure C(cluster) C(status.apiServerInternalURI), else the kubeconfig's server when it is
    C(api.*), port 6443; EKS and AKS - the FQDN of the cluster endpoint (the kubeconfig's server, as
    C(kubectl cluster-info) shows it), port 443; MKE - C(proxy.local), port 6444.
  - Validation - the host has no scheme, path, port or spaces and is a DNS name; a loopback host (C(localhost),
    C(127.0.0.0/8), C(::1)) only with O(allow_loopback=true) (calico-node reaches the API server through this
    endpoint before any Service works, and on a node a loopback address is the node itself); any other IP literal
    only with O(allow_ip=true) (a dynamic node IP changes on restart and Calico loses the API server); the port is
    1-65535; a DNS name on a cluster in eBPF mode, or about to be, only with O(nodes_resolve_host=true). Problems name
    the variable to set (O(names_prefix) followed by the option).
  - With O(platform=auto) the platform is the one the preflight detects (M(calico_ops.lifecycle.ebpf_preflight_info)'s
    detector, from node labels, providerID and served API groups).
  - Also reports the current ConfigMap and the operator's Deployment and pods (O(gather)). Never writes.
  - With O(wait=true) (and O(gather) V(operator)) it reads again every O(poll_interval) seconds until the operator's
    Deployment has rolled out (and, with O(previous_pods), a new pod replaced them), inside the one module run, for
    O(wait_timeout) seconds at most, and fails when it has not, quoting the Deployment's status line and the
    restart's (or the operator's pods).
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - calico_ops.lifecycle.attributes
  - calico_ops.lifecycle.wait
options:
  platform:
    description: The platform; V(auto) uses the preflight's detection.
    type: str
    default: auto
    choices: [auto, generic, kubeadm, openshift, kops, mke, eks, aks]
  endpoint_host:
    description: The API server host to use, instead of deriving it.
    type: str
  endpoint_port:
    description: The API server port to use, instead of the platform's.
    type: int
  allow_ip:
    description: Accept an IP literal as the host (only when that address is static).
    type: bool
    default: false
  allow_loopback:
    description:
      - Accept a loopback host (C(localhost), C(127.0.0.0/8), C(::1)) - only when every node serves the API server
        on its own loopback (a per-node API proxy, such as Talos' KubePrism).
      - Without it a loopback host is refused - a kubeconfig made on a control-plane node often names C(127.0.0.1),
        which no other node reaches, and calico-node would then never reach the API server.
    type: bool
    default: false
    version_added: 0.2.0
  nodes_resolve_host:
    description:
      - The user's statement that every node resolves the host through its own resolver or C(/etc/hosts), without the
        cluster's DNS. Without it a DNS name is refused on a cluster in eBPF mode (Installation C(default)
        C(spec.calicoNetwork.linuxDataplane=BPF) or FelixConfiguration C(default) C(spec.bpfEnabled=true)) or about
        to be (O(ebpf_planned)) - calico-node in eBPF mode resolves it when it starts, before it serves any Service,
        and hangs at boot where only the cluster's DNS answers (Calico issue 10683).
    type: bool
    default: false
    version_added: 0.2.0
  ebpf_planned:
    description:
      - The job switches the cluster to eBPF after writing the endpoint (install_ebpf, enable_ebpf on the ConfigMap
        path) - the DNS-name rule of O(nodes_resolve_host) applies whatever the cluster says now.
    type: bool
    default: false
    version_added: 0.2.0
  kops_cluster_name:
    description: kOps - the cluster name (default - from the kubeconfig's server C(api.<cluster name>)).
    type: str
  openshift_cluster_name:
    description: OpenShift - the cluster name of C(api.<cluster_name>.<base_domain>).
    type: str
  openshift_base_domain:
    description: OpenShift - the base domain of C(api.<cluster_name>.<base_domain>).
    type: str
  mke_host:
    description: MKE - the host of the reverse proxy on each node.
    type: str
    default: proxy.local
  kops_host_prefix:
    description: kOps - the prefix of the internal API name.
    type: str
    default: api.internal.
  ports:
    description: The port per platform, merged over the defaults C({kops 443, openshift 6443, eks 443, aks 443, mke 6444}).
    type: dict
    default: {}
  namespace:
    description: The operator's namespace (where the ConfigMap lives).
    type: str
    default: tigera-operator
  configmap:
    description: The ConfigMap's name.
    type: str
    default: kubernetes-services-endpoint
  operator_deployment:
    description: The operator's Deployment.
    type: str
    default: tigera-operator
  operator_selector:
    description: Label selector of the operator's pods.
    type: str
    default: k8s-app=tigera-operator
  previous_pods:
    description:
      - Names of operator pods that were deleted; C(operator.restart) tells whether they are gone and a new pod
        is Running and Ready.
    type: list
    elements: str
  aws_dns:
    description:
      - Whether the operator should use the AWS DNS server (C(aws_dns.wanted)); unset - true on EKS and kOps.
    type: bool
  gather:
    description:
      - What to read - the platform alone, the endpoint (platform, derivation, validation), the ConfigMap, the
        operator.
    type: list
    elements: str
    default: [platform, endpoint, configmap, operator]
    choices: [platform, endpoint, configmap, operator]
  names_prefix:
    description:
      - Prefix of the names in problem messages (the role passes C(services_endpoint_), so messages name its
        variables, for example C(services_endpoint_host)). Empty - the module's option names.
    type: str
    default: ""
  rollout_timeout:
    description:
      - The caller's wait for calico-node's rollout, in seconds; checked (positive, not shorter than O(poll_interval))
        and reported in RV(problems) like the endpoint, before anything is read. Unset - not checked.
    type: int
  aws_dns_nameservers:
    description:
      - The DNS servers the caller would give the operator; an empty list is a problem unless O(aws_dns=false).
        Unset - not checked.
    type: list
    elements: str
  fail_on_problems:
    description:
      - Fail when the endpoint is not valid, or O(rollout_timeout) or O(aws_dns_nameservers) are out of range
        (otherwise RV(problems) lists why).
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: Reads the platform, the ConfigMap and the operator's pods; writes nothing, so check mode reports the same.
  diff_mode:
    support: none
    description: The module changes nothing; the ConfigMap's diff comes from the merge patch that writes it.
seealso:
  - module: calico_ops.lifecycle.merge_patch
  - module: calico_ops.lifecycle.ebpf_preflight_info
"""

EXAMPLES = r"""
- name: Derive the endpoint for an EKS cluster
  calico_ops.lifecycle.services_endpoint_info:
    platform: eks
  register: endpoint

- name: A single control-plane kubeadm cluster whose node IP is static
  calico_ops.lifecycle.services_endpoint_info:
    platform: kubeadm
    allow_ip: true
"""

RETURN = r"""
server:
  description: The API server of the connection in use (the kubeconfig's server), parsed.
  returned: always
  type: dict
  sample: {url: "https://api.demo.example.com:6443", scheme: https, host: api.demo.example.com, port: 6443, path: "", ip: false}
platform:
  description: The platform used - C(name), C(source) (V(user) or V(detected)), C(title), C(details) (the preflight's).
  returned: when O(gather) has V(platform) or V(endpoint)
  type: dict
  sample: {name: kubeadm, source: user, title: kubeadm, details: null}
aws_dns:
  description: Whether the operator's Deployment should use the AWS DNS server, and its address.
  returned: when O(gather) has V(platform) or V(endpoint)
  type: dict
  sample: {wanted: true, setting: null, nameservers: [169.254.169.253]}
endpoint:
  description:
    - The host and port and where each came from.
    - C(dns_name_warning) - when the host is a DNS name, why that can hang calico-node at boot in eBPF mode
      (Calico issue 10683) and what to check; null for an IP address.
    - C(ebpf) - C(evidence), what says the cluster is (or is about to be) in eBPF mode, and C(read), whether the
      Installation and FelixConfiguration were read for it (only for a DNS name without O(nodes_resolve_host)).
  returned: when O(gather) has V(endpoint)
  type: dict
  sample:
    platform: eks
    host: ABC.gr7.eu-west-1.eks.amazonaws.com
    port: 443
    host_source: "the kubeconfig's server https://ABC.gr7.eu-west-1.eks.amazonaws.com"
    port_source: the Amazon EKS default
    dns_name_warning: "KUBERNETES_SERVICE_HOST ABC.gr7.eu-west-1.eks.amazonaws.com is a DNS name: ..."
    ebpf: {evidence: [], read: false}
data:
  description: The ConfigMap data to write (strings); null when not valid.
  returned: when O(gather) has V(endpoint)
  type: dict
  sample: {KUBERNETES_SERVICE_HOST: api.demo.example.com, KUBERNETES_SERVICE_PORT: "6443"}
valid:
  description: True when there is no problem.
  returned: when O(gather) has V(endpoint)
  type: bool
problems:
  description: Why the endpoint is not valid; each C(field) (the variable to set) and C(message).
  returned: always
  type: list
  elements: dict
  sample: [{field: services_endpoint_allow_ip, message: "services_endpoint_allow_ip: the API server host would be the IP address 10.0.0.5 ..."}]
configmap:
  description:
    - The namespace and ConfigMap as they are - C(namespace_exists), C(exists), C(data), C(up_to_date), and
      C(written_at), when it was last written (the latest time of its managed fields).
  returned: when O(gather) has V(configmap)
  type: dict
operator:
  description:
    - The operator's Deployment (C(exists), C(rolled_out), C(line) quoting its status and conditions) and pods
      (C(pods), C(pod_lines)); C(restart) when O(previous_pods) is given.
    - With O(gather) V(configmap) too, C(started_before_configmap), the pods created before the ConfigMap was last
      written (the operator reads it through C(envFrom) when it starts, so these run with an older endpoint), and
      C(restart_pending), true when there are any (a run cut between the ConfigMap and the operator's restart
      leaves them; the services_endpoint role restarts them).
  returned: when O(gather) has V(operator)
  type: dict
api_requests:
  description: How many API requests the module made (C(read), C(write); write is always 0).
  returned: always
  type: dict
  sample: {read: 5, write: 0}
waited:
  description: The seconds the module read for (with O(wait=true); 0 for one read).
  returned: always
  type: float
"""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.errors import describe_object
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import K8sModule
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.wait import argument_spec as wait_argument_spec
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.wait import problems as wait_problems
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.wait import until
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.facts import (
    KOPS_HOST_PREFIX, MKE_HOST, SUPPORTED_CHOICES)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.services_endpoint.rules import (
    MODULE_NAMES, operator_back, operator_not_back, settings_problems)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.services_endpoint.runner import (
    GATHER_CHOICES, run_services_endpoint_info)

_PASSED = ("platform", "allow_ip", "allow_loopback", "kops_cluster_name", "openshift_cluster_name",
           "openshift_base_domain", "mke_host", "kops_host_prefix", "ports", "namespace", "configmap", "operator_deployment",
           "operator_selector", "previous_pods", "gather", "aws_dns", "nodes_resolve_host", "ebpf_planned")


def _endpoint(m):
    p = m.params
    checked = p["rollout_timeout"] is not None  # the caller's waits, by the caller's names, before anything is read
    settings = settings_problems(p["names_prefix"] or dict(MODULE_NAMES), p["wait_timeout"] if checked else None,
                                 p["rollout_timeout"], p["poll_interval"] if checked else None, p["aws_dns"],
                                 p["aws_dns_nameservers"])
    if settings and p["fail_on_problems"]:
        m.fail("; ".join(x["message"] for x in settings))
    bad = wait_problems(p["wait_timeout"], p["poll_interval"]) + (
        ["wait: waits for the operator; give gather: [operator]"] if p["wait"] and "operator" not in p["gather"] else [])
    if bad:
        m.fail("; ".join(bad))
    server_url, client = m.server_url(), m.client()
    result, waited = until(lambda: run_services_endpoint_info(
        client, server_url, host=p["endpoint_host"], port=p["endpoint_port"],
        prefix=p["names_prefix"] or dict(MODULE_NAMES), **dict((k, p[k]) for k in _PASSED)),
        lambda r: operator_back(r.get("operator")), p)
    result["waited"] = waited
    if p["wait"] and not operator_back(result.get("operator")):
        m.fail(operator_not_back(result.get("operator"), p["wait_timeout"]), changed=False, **result)
    result["problems"] = settings + result["problems"]
    if p["fail_on_problems"] and result["problems"]:
        m.fail("; ".join(x["message"] for x in result["problems"]), changed=False, **result)
    return result


def main():
    K8sModule(dict(
        wait_argument_spec(),
        platform=dict(type="str", default="auto", choices=list(SUPPORTED_CHOICES)),
        endpoint_host=dict(type="str"),
        endpoint_port=dict(type="int"),
        allow_ip=dict(type="bool", default=False),
        allow_loopback=dict(type="bool", default=False),
        nodes_resolve_host=dict(type="bool", default=False),
        ebpf_planned=dict(type="bool", default=False),
        kops_cluster_name=dict(type="str"),
        openshift_cluster_name=dict(type="str"),
        openshift_base_domain=dict(type="str"),
        mke_host=dict(type="str", default=MKE_HOST),
        kops_host_prefix=dict(type="str", default=KOPS_HOST_PREFIX),
        ports=dict(type="dict", default={}),
        namespace=dict(type="str", default="tigera-operator"),
        configmap=dict(type="str", default="kubernetes-services-endpoint"),
        operator_deployment=dict(type="str", default="tigera-operator"),
        operator_selector=dict(type="str", default="k8s-app=tigera-operator"),
        previous_pods=dict(type="list", elements="str"),
        gather=dict(type="list", elements="str", default=list(GATHER_CHOICES), choices=list(GATHER_CHOICES)),
        names_prefix=dict(type="str", default=""),
        rollout_timeout=dict(type="int"),
        aws_dns_nameservers=dict(type="list", elements="str"),
        fail_on_problems=dict(type="bool", default=True),
        aws_dns=dict(type="bool"),
    ), error_prefix="services endpoint: ",
        subject=lambda p: describe_object("v1", "configmaps", p["namespace"], p["configmap"])).run(_endpoint)


if __name__ == "__main__":
    main()
