"""preflight/runner.py, through the real Client, against the in-memory API of fake_k8s (no cluster)."""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight.runner import run_preflight

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_k8s import client
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.preflight_cluster import add_node, api


def reads_of(dyn):
    return [(m, p) for m, p, _q in dyn.log]


def test_all_good_cluster_without_calico_is_eligible_and_read_only():
    dyn = api()
    for i in range(3):
        add_node(dyn, "node-%d" % i)
    result = run_preflight(client(dyn))
    assert result["eligible"] is True and result["verdict"] == "ok"
    assert set(result["nodes"]) == {"node-0", "node-1", "node-2"}
    assert result["nodes"]["node-1"]["checks"]["os_kernel"]["verdict"] == "ok"
    assert result["checks"]["policy_log_action"]["verdict"] == "ok"
    assert result["checks"]["policy_log_action"]["reason"].startswith("not installed")
    assert result["checks"]["floating_ips"]["verdict"] == "ok"
    assert result["checks"]["kube_proxy_mode"]["reason"].startswith("kube-proxy not found")
    assert result["platform"]["name"] == "generic" and result["platform"]["source"] == "detected"
    assert result["calico"]["installed"] is False
    assert dyn.writes() == []
    assert result["api_requests"]["write"] == 0
    # one LIST of nodes, not one request per node
    assert reads_of(dyn).count(("GET", "/api/v1/nodes")) == 1
    assert not any(p.startswith("/api/v1/nodes/") for _m, p in reads_of(dyn))


def test_request_count_does_not_grow_with_nodes_except_pagination():
    small, big = api("crd"), api("crd")
    for i in range(3):
        add_node(small, "n-%d" % i)
    for i in range(1200):
        add_node(big, "n-%d" % i)
    r_small = run_preflight(client(small), page_size=500)
    r_big = run_preflight(client(big), page_size=500)
    assert len(r_big["nodes"]) == 1200
    assert r_big["api_requests"]["read"] - r_small["api_requests"]["read"] == 2  # 3 pages instead of 1
    assert r_small["api_requests"]["read"] <= 15


def test_every_feature_check_names_its_objects():
    dyn = api("crd")
    add_node(dyn, "node-1")
    dyn.put("v1", "services", {"metadata": {"name": "sctp-echo", "namespace": "app"},
                               "spec": {"ports": [{"port": 9, "protocol": "SCTP"}]}})
    dyn.put("v1", "services", {"metadata": {"name": "web", "namespace": "app",
                                            "annotations": {"projectcalico.org/l7-logging": "true"}},
                               "spec": {"ports": [{"port": 80, "protocol": "TCP"}]}})
    dyn.put("v1", "pods", {"metadata": {"name": "fip", "namespace": "app",
                                        "annotations": {"cni.projectcalico.org/floatingIPs": '["1.2.3.4"]'}}})
    dyn.put("crd.projectcalico.org/v1", "globalnetworkpolicies",
            {"metadata": {"name": "default.log-all"}, "spec": {"ingress": [{"action": "Log"}, {"action": "Allow"}]}})
    dyn.put("crd.projectcalico.org/v1", "networkpolicies",
            {"metadata": {"name": "default.quiet", "namespace": "app"}, "spec": {"ingress": [{"action": "Allow"}]}})
    dyn.put("crd.projectcalico.org/v1", "stagednetworkpolicies",
            {"metadata": {"name": "default.staged-log", "namespace": "app"}, "spec": {"egress": [{"action": "Log"}]}})
    dyn.put("crd.projectcalico.org/v1", "felixconfigurations",
            {"metadata": {"name": "default"}, "spec": {"floatingIPs": "Enabled",
                                                       "policySyncPathPrefix": "/var/run/nodeagent"}})
    dyn.add_type("operator.tigera.io/v1", "applicationlayers", "ApplicationLayer", namespaced=False)
    dyn.put("operator.tigera.io/v1", "applicationlayers",
            {"metadata": {"name": "tigera-secure"}, "spec": {"webApplicationFirewall": "Enabled"}})
    dyn.put("v1", "configmaps", {"metadata": {"name": "kube-proxy", "namespace": "kube-system"},
                                 "data": {"config.conf": "kind: KubeProxyConfiguration\nmode: ipvs\n"}})
    result = run_preflight(client(dyn))
    checks = result["checks"]
    assert result["eligible"] is False
    assert checks["sctp_services"]["objects"] == ["Service/app/sctp-echo"]
    assert checks["policy_log_action"]["objects"] == ["GlobalNetworkPolicy/default.log-all",
                                                      "StagedNetworkPolicy/app/default.staged-log"]
    assert checks["policy_log_action"]["count"] == 2
    assert checks["floating_ips"]["objects"] == ["FelixConfiguration/default", "Pod/app/fip"]
    assert checks["application_layer_policy"]["objects"] == ["FelixConfiguration/default"]
    assert checks["web_application_firewall"]["objects"] == ["ApplicationLayer/tigera-secure"]
    assert checks["l7_logs"]["objects"] == ["Service/app/web"]
    assert checks["kube_proxy_mode"]["verdict"] == "fail"
    assert result["kube_proxy"]["source"] == "ConfigMap kube-system/kube-proxy config.conf"
    for name in ("sctp_services", "policy_log_action", "floating_ips", "application_layer_policy",
                 "web_application_firewall", "l7_logs", "kube_proxy_mode"):
        assert checks[name]["verdict"] == "fail", name
        assert any(line.startswith(name + ": ") for line in result["summary"]["failing"]), name
    assert dyn.writes() == []


def test_projectcalico_v3_is_read_when_served():
    dyn = api("v3")
    add_node(dyn, "node-1")
    dyn.put("projectcalico.org/v3", "globalnetworkpolicies",
            {"metadata": {"name": "log-all"}, "spec": {"ingress": [{"action": "Log"}]}})
    result = run_preflight(client(dyn))
    assert result["calico"]["api_version"] == "projectcalico.org/v3"
    assert result["checks"]["policy_log_action"]["objects"] == ["GlobalNetworkPolicy/log-all"]
    assert not any("crd.projectcalico.org" in p for _m, p in reads_of(dyn))


def test_immutable_nodes_read_the_cgroup_path_of_felix_default():
    dyn = api("crd")
    add_node(dyn, "talos-1", osImage="Talos (v1.6.4)", kernelVersion="6.1.74-talos")
    assert run_preflight(client(dyn))["nodes"]["talos-1"]["checks"]["immutable_os"]["verdict"] == "warn"
    dyn.put("crd.projectcalico.org/v1", "felixconfigurations",
            {"metadata": {"name": "default"}, "spec": {"cgroupV2Path": "/sys/fs/cgroup"}})
    result = run_preflight(client(dyn))
    assert result["nodes"]["talos-1"]["checks"]["immutable_os"]["verdict"] == "ok"
    assert result["calico"]["cgroup_v2_path"] == "/sys/fs/cgroup"


def test_a_forbidden_list_warns_instead_of_failing_the_run():
    dyn = api()
    add_node(dyn, "node-1")
    dyn.list_failing["v1/pods"] = (403, "Forbidden")
    result = run_preflight(client(dyn))
    assert result["checks"]["floating_ips"]["verdict"] == "warn"
    assert "could not read Pods" in result["checks"]["floating_ips"]["reason"]
    assert "403" in result["read_errors"]["pods"]


def test_platform_override_and_ignore():
    dyn = api()
    add_node(dyn, "gke-1", labels={"cloud.google.com/gke-nodepool": "p"})
    add_node(dyn, "z-1", architecture="s390x")
    detected = run_preflight(client(dyn))
    assert detected["platform"]["name"] == "gke"
    assert detected["checks"]["platform"]["verdict"] == "fail"
    assert detected["nodes"]["z-1"]["checks"]["architecture"]["verdict"] == "fail"
    overridden = run_preflight(client(dyn), platform="kubeadm", ignore=["architecture"])
    assert overridden["platform"]["name"] == "kubeadm" and overridden["platform"]["source"] == "override"
    assert overridden["platform"]["detected"]["name"] == "gke"
    assert overridden["checks"]["platform"]["verdict"] == "ok"
    arch = overridden["nodes"]["z-1"]["checks"]["architecture"]
    assert arch["verdict"] == "warn" and arch["ignored"] is True
    assert overridden["eligible"] is True
    assert overridden["summary"]["ignored"] == ["architecture"]


def test_kube_proxy_flag_in_the_daemonset():
    dyn = api()
    add_node(dyn, "node-1")
    dyn.put("apps/v1", "daemonsets", {"metadata": {"name": "kube-proxy", "namespace": "kube-system"},
                                      "spec": {"template": {"spec": {"containers": [
                                          {"name": "kube-proxy", "command": ["kube-proxy", "--proxy-mode=ipvs"]}]}}}})
    result = run_preflight(client(dyn))
    assert result["checks"]["kube_proxy_mode"]["verdict"] == "fail"
    assert result["kube_proxy"]["source"] == "DaemonSet kube-system/kube-proxy --proxy-mode"


def test_types_of_groups_not_served_are_not_asked_for():
    """A cluster without Calico or the operator: /apis does not list their group-versions, so their six LISTs
    (FelixConfigurations, four policy types, ApplicationLayers) are not sent; the verdicts are those of 'not
    installed'. With Calico installed every one of its types is read."""
    bare, calico = api(), api("crd")
    for dyn in (bare, calico):
        add_node(dyn, "node-1")
    r_bare, r_calico = run_preflight(client(bare)), run_preflight(client(calico))
    asked = [p for _m, p in reads_of(bare)]
    assert not [p for p in asked if "projectcalico.org" in p or "operator.tigera.io" in p], asked
    assert r_bare["calico"]["installed"] is False
    assert r_bare["checks"]["policy_log_action"]["reason"].startswith("not installed")
    assert r_bare["read_errors"] == {}
    calico_reads = [p for _m, p in reads_of(calico) if "/crd.projectcalico.org/v1/" in p]
    assert len(calico_reads) == 5, calico_reads  # FelixConfigurations and the four policy types
    assert r_calico["api_requests"]["read"] - r_bare["api_requests"]["read"] == 5


def test_api_endpoint_name_warns_for_a_dns_name_and_reads_the_configmap_first():
    """Calico issue 10683: calico-node in eBPF mode resolves KUBERNETES_SERVICE_HOST at boot."""
    dyn = api()
    add_node(dyn, "node-1")
    by_server = run_preflight(client(dyn), server_url="https://api.example.com:6443")["checks"]["api_endpoint_name"]
    assert by_server["verdict"] == "warn" and by_server["host"] == "api.example.com"
    assert "10683" in by_server["reason"] and "kubeconfig's server" in by_server["reason"]
    ip = run_preflight(client(dyn), server_url="https://[fd00::1]:6443")["checks"]["api_endpoint_name"]
    assert ip["verdict"] == "ok" and ip["host"] == "fd00::1"
    dyn.put("v1", "configmaps", {"metadata": {"name": "kubernetes-services-endpoint", "namespace": "tigera-operator"},
                                 "data": {"KUBERNETES_SERVICE_HOST": "10.0.0.10", "KUBERNETES_SERVICE_PORT": "6443"}})
    result = run_preflight(client(dyn), server_url="https://api.example.com:6443")
    check = result["checks"]["api_endpoint_name"]
    assert check["verdict"] == "ok" and "ConfigMap tigera-operator/kubernetes-services-endpoint" in check["reason"]
    assert result["eligible"] is True  # a warning, not a failure
    assert run_preflight(client(api()))["checks"]["api_endpoint_name"]["verdict"] == "ok"
