"""calico.endpoint: the DNS-name warning (Calico issue 10683) for the API server host calico-node dials."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.endpoint import dns_name_warning


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
