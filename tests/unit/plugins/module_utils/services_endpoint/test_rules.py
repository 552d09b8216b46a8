"""services_endpoint/rules.py, the stable API server endpoint: validation and the derivation for every platform (no
cluster)."""

from pathlib import Path

import pytest
import yaml

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import endpoint
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform import facts, server
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.services_endpoint import rules as r


REPO = Path(__file__).resolve().parents[5]
P = "services_endpoint_"


def fields(problems):
    return [p["field"] for p in problems]


# -- validation --------------------------------------------------------------------------------------

@pytest.mark.parametrize("host, words", [
    ("https://api.example.com", "has a scheme"),
    ("api.example.com/path", "has a path"),
    ("api example.com", "contains spaces"),
    (" api.example.com", "contains spaces"),
    ("api.example.com:6443", "contains a port"),
    ("", "is empty"),
    ("api_.example.com", "not a valid DNS name"),
    ("-api.example.com", "not a valid DNS name"),
    ("a" * 64 + ".example.com", "not a valid DNS name"),
    ("[fd00::1]", "without brackets"),
])
def test_validate_host_refuses(host, words):
    problems = r.validate_host(host, prefix=P)
    assert fields(problems) == ["services_endpoint_host"]
    assert words in problems[0]["message"]
    assert problems[0]["message"].startswith("services_endpoint_host: ")


@pytest.mark.parametrize("host", ["api.example.com", "api.example.com.", "proxy.local", "10.0.0.5", "fd00::1",
                                  "ABC123.gr7.eu-west-1.eks.amazonaws.com", "localhost"])
def test_validate_host_accepts(host):
    assert r.validate_host(host, prefix=P) == []


@pytest.mark.parametrize("value", [0, 65536, -1, "x", "", True, 1.5, None])
def test_validate_port_refuses(value):
    assert fields(r.validate_port(value, prefix=P)) == ["services_endpoint_port"]


@pytest.mark.parametrize("value, port", [(1, 1), (443, 443), ("6443", 6443), (65535, 65535)])
def test_validate_port_accepts(value, port):
    assert r.validate_port(value, prefix=P) == []
    assert r.to_port(value) == port


def test_ip_literal_needs_allow_ip():
    problems = r.check_ip("10.0.0.5", False, "from the kubeconfig's server https://10.0.0.5:6443", prefix=P)
    assert fields(problems) == ["services_endpoint_allow_ip"]
    assert "services_endpoint_allow_ip: true" in problems[0]["message"]
    assert "services_endpoint_host" in problems[0]["message"]
    assert r.check_ip("10.0.0.5", True, "x", prefix=P) == []
    assert r.check_ip("api.example.com", False, "x", prefix=P) == []


def test_a_loopback_host_needs_allow_loopback_not_allow_ip():
    # found with the real calico-node (issue 37): a ConfigMap endpoint of 127.0.0.1 is the node itself on every
    # node; calico-node in the node's namespaces got "connection refused" and never started
    for host in ("localhost", "api.localhost", "127.0.0.1", "127.3.2.1", "::1", "[::1]"):
        for allow_ip in (False, True):
            problems = r.check_ip(host, allow_ip, "from the kubeconfig's server", prefix=P)
            assert fields(problems) == ["services_endpoint_allow_loopback"], (host, allow_ip)
            msg = problems[0]["message"]
            assert "services_endpoint_host" in msg and "the node itself" in msg, msg
        assert r.check_ip(host, False, "x", prefix=P, allow_loopback=True) == []


def test_allow_loopback_does_not_allow_other_ip_literals():
    assert fields(r.check_ip("10.0.0.5", False, "x", prefix=P, allow_loopback=True)) == ["services_endpoint_allow_ip"]


def test_a_derived_loopback_endpoint_is_refused_before_any_write():
    out = r.derive_endpoint("kubeadm", server=r.parse_server("https://127.0.0.1:6443"), allow_ip=True, prefix=P)
    assert fields(out["problems"]) == ["services_endpoint_allow_loopback"]
    out = r.derive_endpoint("kubeadm", server=r.parse_server("https://127.0.0.1:6443"), allow_loopback=True,
                            prefix=P)
    assert (out["host"], out["port"], out["problems"]) == ("127.0.0.1", 6443, [])


# -- derivation, per platform -------------------------------------------------------------------------

def derive(platform, url=None, **kwargs):
    return r.derive_endpoint(platform, server=r.parse_server(url) if url else None, prefix=P, **kwargs)


def test_kubeadm_uses_the_kubeconfig_server():
    out = derive("kubeadm", "https://k8s-lb.example.com:6443")
    assert (out["host"], out["port"], out["problems"]) == ("k8s-lb.example.com", 6443, [])
    assert out["host_source"] == "the kubeconfig's server https://k8s-lb.example.com:6443"


def test_generic_refuses_an_ip_server_without_allow_ip():
    out = derive("generic", "https://192.168.1.10:6443")
    assert fields(out["problems"]) == ["services_endpoint_allow_ip"]
    assert "192.168.1.10" in out["problems"][0]["message"]
    assert "from the kubeconfig's server https://192.168.1.10:6443" in out["problems"][0]["message"]


def test_generic_accepts_an_ip_server_with_allow_ip():
    out = derive("generic", "https://192.168.1.10:6443", allow_ip=True)
    assert (out["host"], out["port"], out["problems"]) == ("192.168.1.10", 6443, [])


def test_kops_from_the_cluster_name():
    out = derive("kops", "https://api.k8s.example.com", kops_cluster_name="prod.k8s.local")
    assert (out["host"], out["port"], out["problems"]) == ("api.internal.prod.k8s.local", 443, [])
    assert out["host_source"] == "services_endpoint_kops_cluster_name"


@pytest.mark.parametrize("url", ["https://api.k8s.example.com", "https://api.internal.k8s.example.com:443"])
def test_kops_cluster_name_from_the_server(url):
    out = derive("kops", url)
    assert (out["host"], out["port"], out["problems"]) == ("api.internal.k8s.example.com", 443, [])


def test_kops_without_a_name_names_the_variable():
    out = derive("kops", "https://10.1.2.3")
    assert fields(out["problems"]) == ["services_endpoint_kops_cluster_name"]


def test_kops_port_and_prefix_are_variables():
    out = derive("kops", kops_cluster_name="c.example.com", ports={"kops": 8443}, kops_host_prefix="internal-api.")
    assert (out["host"], out["port"]) == ("internal-api.c.example.com", 8443)


def test_openshift_from_names():
    out = derive("openshift", "https://api.ocp.example.com:6443", openshift_cluster_name="ocp4",
                 openshift_base_domain="corp.example.com")
    assert (out["host"], out["port"], out["problems"]) == ("api.ocp4.corp.example.com", 6443, [])


def test_openshift_from_the_infrastructure_status():
    out = derive("openshift", "https://10.0.0.1:6443",
                 openshift_internal_uri="https://api-int.ocp4.corp.example.com:6443")
    assert (out["host"], out["port"], out["problems"]) == ("api-int.ocp4.corp.example.com", 6443, [])
    assert "apiServerInternalURI" in out["host_source"]


def test_openshift_from_the_server():
    out = derive("openshift", "https://api.ocp4.corp.example.com:6443")
    assert (out["host"], out["port"], out["problems"]) == ("api.ocp4.corp.example.com", 6443, [])


def test_openshift_half_named_names_the_missing_variable():
    out = derive("openshift", "https://api.ocp4.corp.example.com:6443", openshift_cluster_name="ocp4")
    assert fields(out["problems"]) == ["services_endpoint_openshift_base_domain"]


def test_openshift_underivable():
    out = derive("openshift", "https://10.0.0.1:6443")
    assert fields(out["problems"]) == ["services_endpoint_openshift_cluster_name"]


@pytest.mark.parametrize("platform", ["eks", "aks"])
def test_managed_clouds_use_the_endpoint_fqdn_and_443(platform):
    url = {"eks": "https://ABC123.gr7.eu-west-1.eks.amazonaws.com",
           "aks": "https://demo-dns-1a2b3c.hcp.westeurope.azmk8s.io:443"}[platform]
    out = derive(platform, url)
    assert out["host"] == r.parse_server(url)["host"]
    assert out["port"] == 443
    assert out["problems"] == []


def test_mke_uses_the_local_proxy():
    out = derive("mke", "https://10.0.0.9:443")
    assert (out["host"], out["port"], out["problems"]) == ("proxy.local", 6444, [])


def test_explicit_host_and_port_win():
    out = derive("eks", "https://ABC.eks.amazonaws.com", host="calico-api.example.com", port=8443)
    assert (out["host"], out["port"], out["problems"]) == ("calico-api.example.com", 8443, [])
    assert (out["host_source"], out["port_source"]) == ("services_endpoint_host", "services_endpoint_port")


def test_explicit_bad_host_and_port_are_refused():
    out = derive("kubeadm", "https://lb.example.com", host="https://lb.example.com/", port=70000)
    assert fields(out["problems"]) == ["services_endpoint_host", "services_endpoint_port"]


def test_explicit_ip_host_needs_allow_ip():
    out = derive("kubeadm", "https://lb.example.com", host="10.0.0.5")
    assert fields(out["problems"]) == ["services_endpoint_allow_ip"]


def test_a_derived_bad_host_says_where_it_came_from():
    out = derive("kubeadm", "https://bad_name.example.com:6443")
    assert fields(out["problems"]) == ["services_endpoint_host"]
    assert "derived from the kubeconfig's server" in out["problems"][0]["message"]


@pytest.mark.parametrize("platform", ["gke", "tkg", "rke", "nope"])
def test_unsupported_platforms(platform):
    assert fields(derive(platform, "https://api.example.com")["problems"]) == ["services_endpoint_platform"]


def test_no_server_and_no_host():
    assert fields(derive("kubeadm")["problems"]) == ["services_endpoint_host"]


def test_configmap_data_is_strings():
    assert r.configmap_data("api.example.com", 6443) == {"KUBERNETES_SERVICE_HOST": "api.example.com",
                                                         "KUBERNETES_SERVICE_PORT": "6443"}


@pytest.mark.parametrize("setting, platform, wanted", [
    (None, "eks", True), (None, "kops", True), (None, "kubeadm", False), (None, "aks", False),
    (False, "eks", False), (True, "kubeadm", True), ("", "kops", True),
])
def test_aws_dns_wanted(setting, platform, wanted):
    assert r.aws_dns_wanted(setting, platform) is wanted


# -- the operator ---------------------------------------------------------------------------------------

def deployment(replicas=1, updated=1, ready=1, available=1, total=1, generation=2, observed=2, conditions=()):
    return {"metadata": {"name": "tigera-operator", "namespace": "tigera-operator", "generation": generation},
            "spec": {"replicas": replicas},
            "status": {"updatedReplicas": updated, "readyReplicas": ready, "availableReplicas": available,
                       "replicas": total, "observedGeneration": observed, "conditions": list(conditions)}}


def test_deployment_rolled_out():
    assert r.deployment_progress(deployment())["rolled_out"] is True


@pytest.mark.parametrize("kwargs", [dict(observed=1), dict(updated=0), dict(ready=0), dict(available=0),
                                    dict(total=2)])
def test_deployment_not_rolled_out(kwargs):
    assert r.deployment_progress(deployment(**kwargs))["rolled_out"] is False


def test_deployment_line_quotes_conditions():
    line = r.deployment_progress(deployment(ready=0, conditions=[
        {"type": "Available", "status": "False", "message": "Deployment does not have minimum availability."}]))["line"]
    assert "0 ready" in line
    assert "Available=False (Deployment does not have minimum availability.)" in line


def test_deployment_absent():
    assert r.deployment_progress(None) == {"exists": False, "rolled_out": False, "line": "Deployment not found",
                                           "status": {}}


def pod(name, phase="Running", ready=True, deleting=False):
    meta = {"name": name}
    if deleting:
        meta["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"phase": phase, "conditions": [
        {"type": "Ready", "status": "True" if ready else "False"}]}}


def test_restart_done_when_old_pod_gone_and_new_ready():
    assert r.restart_progress([pod("op-new")], ["op-old"])["restarted"] is True


def test_restart_not_done_while_the_old_pod_is_still_there():
    out = r.restart_progress([pod("op-old", deleting=True), pod("op-new")], ["op-old"])
    assert out["restarted"] is False
    assert out["old_left"] == ["op-old"]
    assert "op-old (Running, terminating, not ready)" in out["line"]


def test_restart_not_done_while_the_new_pod_is_not_ready():
    assert r.restart_progress([pod("op-new", phase="Pending", ready=False)], ["op-old"])["restarted"] is False


# -- the role's choices follow the preflight's platforms ---------------------------------------------------

def test_platform_choices_follow_the_preflight():
    assert r.SUPPORTED_PLATFORMS == facts.SUPPORTED_PLATFORMS == tuple(p for p in facts.PLATFORMS
                                                                       if p not in facts.UNSUPPORTED_PLATFORMS)
    for role, var, entry in (("services_endpoint", "services_endpoint_platform", "main"),
                             ("services_endpoint", "services_endpoint_platform", "aws_dns"),
                             ("kube_proxy", "kube_proxy_platform", "main")):
        spec = yaml.safe_load((REPO / "roles" / role / "meta" / "argument_specs.yml").read_text())
        choices = spec["argument_specs"][entry]["options"][var]["choices"]
        assert tuple(choices) == facts.SUPPORTED_CHOICES, (role, entry)


def test_role_defaults_are_the_rules_defaults():
    defaults = yaml.safe_load((REPO / "roles" / "services_endpoint" / "defaults" / "main.yml").read_text())
    assert defaults["services_endpoint_ports"] == r.DEFAULT_PORTS
    assert defaults["services_endpoint_mke_host"] == r.MKE_HOST
    assert defaults["services_endpoint_kops_host_prefix"] == r.KOPS_HOST_PREFIX
    assert defaults["services_endpoint_aws_dns_nameservers"] == list(r.AWS_NAMESERVERS)


def test_the_longest_dns_name_is_accepted():
    name = ".".join(["a" * 63, "b" * 63, "c" * 63, "d" * 61])
    assert len(name) == 253
    assert r.validate_host(name, prefix=P) == []
    assert fields(r.validate_host(name + "e", prefix=P)) == ["services_endpoint_host"]


def test_a_bad_derived_port_says_where_it_came_from():
    out = derive("kops", kops_cluster_name="c.example.com", ports={"kops": 0})
    assert fields(out["problems"]) == ["services_endpoint_port"]
    assert out["problems"][0]["message"].endswith("(from the kOps default: set services_endpoint_port)")
    out = derive("kubeadm", "https://lb.example.com", port=0)
    assert not out["problems"][0]["message"].endswith(")")


def test_a_port_given_as_a_string_becomes_an_int():
    out = derive("kubeadm", "https://lb.example.com", port="8443")
    assert out["port"] == 8443 and out["problems"] == []


def test_configmap_data_is_strings_even_from_a_string_port():
    data = r.configmap_data("api.example.com", "443")
    assert data == {"KUBERNETES_SERVICE_HOST": "api.example.com", "KUBERNETES_SERVICE_PORT": "443"}
    assert all(isinstance(v, str) for v in data.values())


def test_deployment_progress_says_it_exists():
    assert r.deployment_progress(deployment())["exists"] is True


def test_pod_ready_needs_the_ready_condition():
    p = {"metadata": {"name": "x"}, "status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "False"}, {"type": "Initialized", "status": "True"}]}}
    assert r.pod_ready(p) is False


def test_restart_names_the_new_pod():
    assert r.restart_progress([pod("op-new")], ["op-old"])["new_ready"] == ["op-new"]


# -- operator pods that started before the ConfigMap's last write (a run cut before its restart) -------------------

def _cm(created, *times):
    return {"metadata": {"name": "kubernetes-services-endpoint", "creationTimestamp": created,
                         "managedFields": [{"manager": m, "time": t} for m, t in zip(("calico-ops", "kubectl"), times)]}}


def _pod(name, created, deleting=False):
    meta = {"name": name, "creationTimestamp": created}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-26T10:00:00Z"
    return {"metadata": meta}


def test_the_configmap_was_written_at_its_latest_managed_fields_time():
    assert r.configmap_written_at(_cm("2026-11-26T08:00:00Z", "2026-11-26T09:00:00Z", "2026-11-26T09:30:00Z")) \
        == "2026-11-26T09:30:00Z"
    assert r.configmap_written_at(_cm("2026-11-26T08:00:00Z")) == "2026-11-26T08:00:00Z"
    assert r.configmap_written_at(None) is None


def test_pods_created_before_the_last_write_run_with_an_older_endpoint():
    pods = [_pod("old", "2026-11-26T09:00:00Z"), _pod("same-second", "2026-11-26T09:30:00Z"),
            _pod("new", "2026-11-26T09:31:00Z"), _pod("going", "2026-11-26T08:00:00Z", deleting=True)]
    assert r.pods_started_before(pods, "2026-11-26T09:30:00Z") == ["old"]
    assert r.pods_started_before(pods, None) == []


def test_standalone_messages_name_the_module_options():
    out = r.derive_endpoint("kubeadm", server=r.parse_server("https://10.0.0.1:6443"),
                            prefix=dict(r.MODULE_NAMES))
    assert [p["field"] for p in out["problems"]] == ["allow_ip"]
    assert "Set endpoint_host to a stable DNS name" in out["problems"][0]["message"]
    out = r.derive_endpoint("kubeadm", server=None, host="https://x", prefix=dict(r.MODULE_NAMES))
    assert out["problems"][0]["message"].startswith("endpoint_host: 'https://x' has a scheme")


def test_one_definition_each():
    """The endpoint rules name the platform package's objects, they do not define their own."""
    assert r.parse_server is server.parse_server and r.AWS_DNS == facts.AWS_DNS
    assert r.is_ip_literal is endpoint.is_ip_literal


# -- a DNS name on a cluster in eBPF mode (Calico issue 10683) ----------------------------------------------------

BPF = ["Installation default has spec.calicoNetwork.linuxDataplane BPF"]


@pytest.mark.parametrize("host, needs", [
    ("api.example.com", True), ("kubernetes", True), ("api.cluster.local.", True),
    ("10.0.0.5", False), ("fd00::1", False), ("localhost", False), ("kube.localhost", False), ("", False),
    (None, False)])
def test_which_hosts_a_node_must_resolve(host, needs):
    assert r.needs_resolving(host) is needs


def test_a_dns_name_in_ebpf_mode_is_refused_naming_the_variable_and_its_values():
    found = r.dns_name_in_ebpf("api.example.com", "services_endpoint_host", BPF, False, P)
    assert fields(found) == ["services_endpoint_nodes_resolve_host"]
    msg = found[0]["message"]
    assert msg.startswith("services_endpoint_nodes_resolve_host: the API server host would be the DNS name "
                          "api.example.com (from services_endpoint_host) on a cluster in eBPF mode (Installation "
                          "default has spec.calicoNetwork.linuxDataplane BPF): calico-node resolves it when it "
                          "starts"), msg
    assert ("Set services_endpoint_nodes_resolve_host: true (true or false, default false) once every node resolves "
            "api.example.com through its own resolver or /etc/hosts, or set services_endpoint_host to a static IP "
            "address with services_endpoint_allow_ip: true; nothing was written") in msg
    assert "Calico issue 10683" in msg and "\n" not in msg


@pytest.mark.parametrize("host, evidence, stated", [
    ("api.example.com", BPF, True),        # the user says every node resolves it
    ("api.example.com", [], False),        # not in eBPF mode, nor about to be
    ("10.0.0.5", BPF, False),              # an address: nothing to resolve
    ("localhost", BPF, False),             # each node's /etc/hosts (allow_loopback decides)
])
def test_no_refusal(host, evidence, stated):
    assert r.dns_name_in_ebpf(host, "x", evidence, stated, P) == []


def test_the_operator_is_back_once_rolled_out_and_restarted_and_otherwise_quoted_in_one_line():
    """The wait of services_endpoint_info (wait: true) ends on operator_back, and fails with operator_not_back."""
    line = "Deployment tigera-operator/tigera-operator: replicas 1, available 0"
    assert r.operator_back({"rolled_out": True}) is True  # no restart asked for
    assert r.operator_back({"rolled_out": True, "restart": {"restarted": False}}) is False
    assert r.operator_back({"rolled_out": False, "restart": {"restarted": True}}) is False
    assert r.operator_back(None) is False
    restart = r.restart_progress([pod("op-old", deleting=True)], ["op-old"])
    msg = r.operator_not_back({"rolled_out": False, "line": line, "restart": restart}, 900)
    assert msg == "the operator did not come back within 900s: %s; %s" % (line, restart["line"])
    assert r.operator_not_back({"line": line, "pod_lines": ["op-1 Pending"]}, 60).endswith("; operator pods: op-1 Pending")
    assert r.operator_not_back({}, 60) == ("the operator did not come back within 60s: its Deployment was not found; "
                                           "operator pods: none")


# -- the role's waits and DNS servers, checked with the endpoint ------------------------------------------------------

@pytest.mark.parametrize("args, words", [
    ((300, 600, 5, None, ["169.254.169.253"]), None),
    ((0, 600, 5, None, None), "services_endpoint_timeout (0), services_endpoint_rollout_timeout (600) and "
                              "services_endpoint_poll_interval (5) must be positive"),
    ((300, 3, 5, None, None), "the interval not longer than either timeout"),
    ((300, 600, 0, None, None), "must be positive"),
    ((300, 600, 5, None, []), "services_endpoint_aws_dns_nameservers is an empty list"),
    ((300, 600, 5, True, []), "services_endpoint_aws_dns_nameservers is an empty list"),
    ((300, 600, 5, False, []), None),  # no AWS DNS wanted: no servers needed
    ((None, None, None, None, None), None),  # nothing given, nothing checked
])
def test_settings_problems_name_the_role_variable(args, words):
    found = r.settings_problems("services_endpoint_", *args)
    assert [p["message"] for p in found if words and words in p["message"]] == [p["message"] for p in found]
    assert bool(found) is bool(words), found


def test_settings_problems_name_the_module_options_without_a_prefix():
    found = r.settings_problems(dict(r.MODULE_NAMES), 0, 600, 5, None, None)
    assert found[0]["field"] == "wait_timeout" and found[0]["message"].startswith("wait_timeout (0), rollout_timeout")
