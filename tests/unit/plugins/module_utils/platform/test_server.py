"""platform/server.py: the API server URL parsed, and the kOps cluster name read from its host."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform import server
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.server import kops_cluster_name_from_host, parse_server


def test_server_url_and_kops_cluster_name():
    assert server.parse_server("https://[fd00::1]:6443")["host"] == "fd00::1"
    assert server.parse_server("http://api.example.com")["port"] == 80
    assert server.kops_cluster_name_from_host("api.internal.prod.example.com") == "prod.example.com"
    assert server.kops_cluster_name_from_host("10.0.0.1") is None


# -- parsing ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("url, host, port", [
    ("https://api.demo.example.com:6443", "api.demo.example.com", 6443),
    ("https://ABC123.gr7.eu-west-1.eks.amazonaws.com", "ABC123.gr7.eu-west-1.eks.amazonaws.com", 443),
    ("http://plain.example.com", "plain.example.com", 80),
    ("https://10.0.0.5:6443/", "10.0.0.5", 6443),
    ("https://[fd00::1]:6443", "fd00::1", 6443),
    ("https://lb.example.com/k8s/clusters/c-1", "lb.example.com", 443),
    ("api.example.com:6443", "api.example.com", 6443),
])
def test_parse_server(url, host, port):
    server = parse_server(url)
    assert (server["host"], server["port"]) == (host, port)
    assert server["url"] == url


@pytest.mark.parametrize("url", ["", None, "https://host:abc", "https://:443"])
def test_parse_server_refuses_non_urls(url):
    assert parse_server(url) is None


def test_parse_server_keeps_the_path():
    assert parse_server("https://lb.example.com/k8s/clusters/c-1")["path"] == "/k8s/clusters/c-1"


def test_kops_name_needs_something_after_api():
    assert kops_cluster_name_from_host("api.") is None
    assert kops_cluster_name_from_host("10.0.0.1") is None
