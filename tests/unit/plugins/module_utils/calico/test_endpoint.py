"""calico/endpoint.py: the DNS-name warning (Calico issue 10683) for the API server host calico-node dials, and what
counts as an IP literal."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.endpoint import dns_name_warning, is_ip_literal


@pytest.mark.parametrize("host", ["10.0.0.10", "fd00::1", "[fd00::1]", "", None, "  "])
def test_no_warning_for_an_address_or_nothing(host):
    assert dns_name_warning(host) is None


def test_a_public_name_is_warned_about_with_what_to_check():
    text = dns_name_warning("api.example.com")
    assert text.startswith("KUBERNETES_SERVICE_HOST api.example.com is a DNS name")
    assert "Calico issue 10683" in text and "/etc/hosts" in text and "cluster-internal" not in text


@pytest.mark.parametrize("host", ["kubernetes.default.svc", "kubernetes.default.svc.cluster.local.", "apiserver"])
def test_a_cluster_internal_name_is_called_so(host):
    assert "looks cluster-internal" in dns_name_warning(host)


@pytest.mark.parametrize("host, ip", [
    ("10.0.0.5", True), ("127.0.0.1", True), ("fd00::1", True), ("[fd00::1]", True), ("::1", True),
    ("api.example.com", False), ("999.1.1.1", False), ("10.0.0", False), ("", False), (None, False),
])
def test_is_ip_literal(host, ip):
    assert is_ip_literal(host) is ip


# -- edge cases found by mutation runs ----------------------------------------------------------------------------------

def test_half_bracketed_ipv6_is_not_an_ip():
    assert is_ip_literal("[fd00::1") is False
