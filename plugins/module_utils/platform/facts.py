# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The platforms the collection knows, and what each one is: its name and title, whether Calico's eBPF data plane
supports it, the API server's stable host and port on it (Calico's documentation: "Enable eBPF on an existing
cluster", section "Configure Calico to talk directly to the API server"), the AWS DNS address the operator needs on
AWS, Bottlerocket's FlexVolume path. Below the feature packages: the preflight, the endpoint and kube-proxy read
these facts here and nowhere else.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

UNSUPPORTED_PLATFORMS = ("gke", "tkg", "rke")
PLATFORMS = ("generic", "kubeadm", "openshift", "kops", "mke", "eks", "aks") + UNSUPPORTED_PLATFORMS
PLATFORM_CHOICES = ("auto",) + PLATFORMS
# the platforms the eBPF data plane and the collection's jobs support, and the jobs' choices of platform (the preflight
# alone also names the unsupported ones, to refuse them with a reason)
SUPPORTED_PLATFORMS = tuple(p for p in PLATFORMS if p not in UNSUPPORTED_PLATFORMS)
SUPPORTED_CHOICES = ("auto",) + SUPPORTED_PLATFORMS
PLATFORM_TITLES = {
    "generic": "generic Kubernetes", "kubeadm": "kubeadm", "openshift": "OpenShift", "kops": "kOps",
    "mke": "Mirantis Kubernetes Engine (MKE)", "eks": "Amazon EKS", "aks": "Azure AKS",
    "gke": "Google GKE", "tkg": "VMware Tanzu Kubernetes Grid (TKG)", "rke": "Rancher RKE",
}

FLEX_VOLUME_PATH = "/var/lib/kubelet/plugins"
AWS_DNS = "169.254.169.253"

# the API server's stable host and default port per platform (services_endpoint derives the endpoint from them)
MKE_HOST = "proxy.local"
KOPS_HOST_PREFIX = "api.internal."
DEFAULT_PORTS = {"kops": 443, "openshift": 6443, "eks": 443, "aks": 443, "mke": 6444}
AWS_PLATFORMS = ("eks", "kops")
# where kube-proxy is a DaemonSet of kube-system that a nodeSelector takes off every node (Calico's documentation,
# "Enable eBPF on an existing cluster", section "Configure kube-proxy"); elsewhere the platform's own config does it
KUBE_PROXY_DAEMONSET_PLATFORMS = ("kubeadm", "generic", "eks")
