"""platform/kube_proxy_mode.py: kube-proxy's mode from its configuration and from its command line."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform import kube_proxy_mode


def test_kube_proxy_mode():
    assert kube_proxy_mode.kube_proxy_mode_from_config("mode: ipvs\n") == "ipvs"
    assert kube_proxy_mode.kube_proxy_mode_from_args(["kube-proxy", "--proxy-mode", "iptables"]) == "iptables"


# -- kube-proxy ---------------------------------------------------------------------------------------

KUBEADM_CONF = """apiVersion: kubeproxy.config.k8s.io/v1alpha1
bindAddress: 0.0.0.0
ipvs:
  scheduler: ""
  strictARP: false
kind: KubeProxyConfiguration
mode: %s
winkernel:
  enableDSR: false
"""


@pytest.mark.parametrize("text, expected", [
    (KUBEADM_CONF % "ipvs", "ipvs"),
    (KUBEADM_CONF % '"iptables"', "iptables"),
    (KUBEADM_CONF % '""', ""),
    (KUBEADM_CONF % "IPVS  # switched later", "ipvs"),
    ('{"kind":"KubeProxyConfiguration","mode":"ipvs"}', "ipvs"),
    ("kind: KubeProxyConfiguration\ndetectLocalMode: ClusterCIDR\n", None),
    ("nested:\n  mode: ipvs\n", None),
    (None, None),
])
def test_kube_proxy_mode_from_config(text, expected):
    assert kube_proxy_mode.kube_proxy_mode_from_config(text) == expected


def test_kube_proxy_mode_from_args():
    assert kube_proxy_mode.kube_proxy_mode_from_args(["kube-proxy", "--proxy-mode=ipvs"]) == "ipvs"
    assert kube_proxy_mode.kube_proxy_mode_from_args(["kube-proxy", "--proxy-mode", "iptables"]) == "iptables"
    assert kube_proxy_mode.kube_proxy_mode_from_args(["kube-proxy", "--config=/var/lib/kube-proxy/config.conf"]) is None
