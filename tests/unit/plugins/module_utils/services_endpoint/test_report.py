"""services_endpoint/report.py: what the services_endpoint role did, from what its steps registered - the published
result and the report's lines (the ConfigMap, the operator, the AWS DNS server, calico-node, the host's warning)."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.services_endpoint.report import report


def info(pods=("tigera-operator-1",), wanted=False, warning=None, restart_pending=False):
    return {"platform": {"name": "kubeadm", "source": "detected"},
            "data": {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "6443"},
            "endpoint": {"host_source": "kubeconfig", "port_source": "kubeconfig", "dns_name_warning": warning},
            "operator": {"pods": list(pods), "restart_pending": restart_pending,
                         "started_before_configmap": ["tigera-operator-1"]},
            "aws_dns": {"wanted": wanted}}


def steps(**over):
    out = {"info": info(), "configmap": {"changed": True, "created": False}, "restart": {"changed": True},
           "aws_dns": {"skipped": True, "changed": False},
           "calico_node": {"ready": True, "found": True, "lines": ["calico-system/calico-node: 2/2 ready"]},
           "check_mode": False, "nameservers": ["169.254.169.253"], "namespace": "tigera-operator",
           "name": "kubernetes-services-endpoint"}
    out.update(over)
    return out


def test_a_changed_endpoint_restarts_the_operator_and_rolls_calico_node_out():
    r = report(steps())
    assert {k: r[k] for k in ("platform", "host", "port", "changed", "operator_restarted", "aws_dns",
                              "calico_node_rolled_out", "dns_name_warning")} == {
        "platform": "kubeadm", "host": "10.0.0.1", "port": "6443", "changed": True, "operator_restarted": True,
        "aws_dns": False, "calico_node_rolled_out": True, "dns_name_warning": None}
    assert r["lines"] == [
        "ConfigMap tigera-operator/kubernetes-services-endpoint: KUBERNETES_SERVICE_HOST=10.0.0.1 (kubeconfig), "
        "KUBERNETES_SERVICE_PORT=6443 (kubeconfig): updated (platform kubeadm, detected)",
        "Operator: restarted", "AWS DNS: not used on this platform",
        "calico-node: rolled out with the new endpoint: calico-system/calico-node: 2/2 ready",
        "Host: an IP address (no name to resolve at boot)"]


@pytest.mark.parametrize("over, operator", [
    (dict(configmap={"changed": False}, info=info(restart_pending=True)),
     "restarted (tigera-operator-1 had started before the ConfigMap was last written)"),
    (dict(restart={"skipped": True}, check_mode=True), "restart skipped in check mode"),
    (dict(restart={}, info=info(pods=())), "not running yet: it reads the ConfigMap when it starts"),
    (dict(restart={}, configmap={"changed": False}), "not restarted: nothing changed"),
    (dict(restart={}), "not restarted (services_endpoint_restart_operator is false, or the DNS change rolled it)"),
])
def test_what_the_operator_line_says(over, operator):
    assert report(steps(**over))["lines"][1] == "Operator: " + operator


@pytest.mark.parametrize("aws_dns, line", [
    ({"changed": True, "exists": True}, "dnsConfig.nameservers 169.254.169.253: patched"),
    ({"changed": False, "exists": True}, "dnsConfig.nameservers 169.254.169.253: already set"),
    ({"changed": False, "exists": False}, "dnsConfig.nameservers 169.254.169.253: the operator Deployment is not "
                                          "there yet"),
])
def test_the_aws_dns_line_where_the_platform_wants_it(aws_dns, line):
    r = report(steps(info=info(wanted=True), aws_dns=aws_dns))
    assert r["lines"][2] == "AWS DNS: " + line and r["aws_dns"] == aws_dns["changed"]


def test_calico_node_not_waited_for_or_not_created_yet_and_the_host_warning():
    r = report(steps(calico_node={}, configmap={"changed": True, "created": True},
                     info=info(warning="a DNS name: every node must resolve it")))
    assert r["lines"][3] == "calico-node: not waited for: the operator did not restart"
    assert r["lines"][4] == "WARNING: a DNS name: every node must resolve it" and not r["calico_node_rolled_out"]
    assert ": created (platform" in r["lines"][0]
    r = report(steps(calico_node={"ready": True, "found": False, "lines": []}))
    assert r["lines"][3] == "calico-node: not created yet" and not r["calico_node_rolled_out"]
