"""services_endpoint/runner.py (services_endpoint_info) behind the real ``Client``, over a small read-only in-memory
transport (``helpers/read_only_transport.py``): which platform it acts for (the preflight's detection), what it
reads, and that it never sends a write."""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.services_endpoint.runner import run_services_endpoint_info

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.read_only_transport import Transport, client, node, nodes


# -- services_endpoint_info --------------------------------------------------------------------------------------

def test_endpoint_detects_eks_from_the_nodes():
    t = Transport(nodes(node("ip-10-0-0-1", {"eks.amazonaws.com/nodegroup": "ng-1"}, "aws:///eu-west-1a/i-1")))
    c = client(t)
    out = run_services_endpoint_info(c, "https://ABC.gr7.eu-west-1.eks.amazonaws.com", platform="auto",
                                     prefix="services_endpoint_")
    assert out["platform"]["name"] == "eks" and out["platform"]["source"] == "detected"
    assert out["data"] == {"KUBERNETES_SERVICE_HOST": "ABC.gr7.eu-west-1.eks.amazonaws.com",
                           "KUBERNETES_SERVICE_PORT": "443"}
    assert out["aws_dns"]["wanted"] is True
    assert out["server"]["ip"] is False
    assert out["configmap"] == {"namespace": "tigera-operator", "namespace_exists": False,
                                "name": "kubernetes-services-endpoint", "exists": False, "data": None,
                                "up_to_date": False, "written_at": None}
    assert out["operator"]["exists"] is False
    assert out["operator"]["restart_pending"] is False
    assert c.requests["write"] == 0


def test_endpoint_refuses_a_detected_unsupported_platform():
    t = Transport(nodes(node("gke-1", {"cloud.google.com/gke-nodepool": "default-pool"})))
    out = run_services_endpoint_info(client(t), "https://34.1.2.3", prefix="services_endpoint_")
    assert [p["field"] for p in out["problems"]] == ["services_endpoint_platform"]
    assert "label cloud.google.com/gke-nodepool" in out["problems"][0]["message"]
    assert out["valid"] is False and out["data"] is None


def test_endpoint_openshift_reads_the_infrastructure():
    t = Transport({"/apis/config.openshift.io/v1/infrastructures/cluster": {
        "metadata": {"name": "cluster"},
        "status": {"apiServerInternalURI": "https://api-int.ocp.example.com:6443"}}},
        groups=["config.openshift.io/v1"])
    out = run_services_endpoint_info(client(t), "https://api.ocp.example.com:6443", platform="openshift")
    assert (out["endpoint"]["host"], out["endpoint"]["port"]) == ("api-int.ocp.example.com", 6443)
    assert out["openshift_internal_uri"] == "https://api-int.ocp.example.com:6443"


def test_endpoint_given_platform_reads_no_nodes():
    t = Transport()
    run_services_endpoint_info(client(t), "https://lb.example.com:6443", platform="kubeadm", gather=["endpoint"])
    # no node, no discovery: only whether the cluster is in eBPF mode (the host is a DNS name)
    assert t.log == [("GET", "/apis/operator.tigera.io/v1/installations/default"),
                     ("GET", "/apis/crd.projectcalico.org/v1/felixconfigurations/default")]


# -- a DNS name on a cluster in eBPF mode (Calico issue 10683) ---------------------------------------------------

INSTALLATION = "/apis/operator.tigera.io/v1/installations/default"
FELIX = "/apis/crd.projectcalico.org/v1/felixconfigurations/default"


def _bpf_installation(plane="BPF"):
    return {INSTALLATION: {"metadata": {"name": "default"}, "spec": {"calicoNetwork": {"linuxDataplane": plane}}}}


def test_a_dns_name_is_refused_on_a_cluster_whose_installation_is_bpf():
    out = run_services_endpoint_info(client(Transport(_bpf_installation())), "https://lb.example.com:6443",
                                     platform="kubeadm", gather=["endpoint"], prefix="services_endpoint_")
    assert [p["field"] for p in out["problems"]] == ["services_endpoint_nodes_resolve_host"]
    message = out["problems"][0]["message"]
    assert message.startswith("services_endpoint_nodes_resolve_host: the API server host would be the DNS name "
                              "lb.example.com (from the kubeconfig's server https://lb.example.com:6443) on a cluster "
                              "in eBPF mode (Installation default has spec.calicoNetwork.linuxDataplane BPF)"), message
    assert "Set services_endpoint_nodes_resolve_host: true (true or false, default false)" in message
    assert "Calico issue 10683" in message and message.endswith("nothing was written")
    assert out["valid"] is False and out["data"] is None
    assert out["endpoint"]["ebpf"] == {"evidence": ["Installation default has spec.calicoNetwork.linuxDataplane BPF"],
                                       "read": True}


def test_a_dns_name_is_refused_when_felix_has_bpf_enabled_a_manifest_install():
    t = Transport({FELIX: {"metadata": {"name": "default"}, "spec": {"bpfEnabled": True}}})
    out = run_services_endpoint_info(client(t), "https://10.0.0.5:6443", host="api.example.com", port=6443,
                                     platform="kubeadm", gather=["endpoint"], prefix="services_endpoint_")
    assert [p["field"] for p in out["problems"]] == ["services_endpoint_nodes_resolve_host"]
    assert "(from services_endpoint_host)" in out["problems"][0]["message"]
    assert "FelixConfiguration default has spec.bpfEnabled true" in out["problems"][0]["message"]


def test_a_dns_name_is_refused_when_the_job_switches_to_ebpf_without_reading_the_cluster():
    t = Transport()
    out = run_services_endpoint_info(client(t), "https://lb.example.com:6443", platform="kubeadm",
                                     gather=["endpoint"], prefix="services_endpoint_", ebpf_planned=True)
    assert [p["field"] for p in out["problems"]] == ["services_endpoint_nodes_resolve_host"]
    assert "services_endpoint_ebpf_planned is true: this job switches it to eBPF" in out["problems"][0]["message"]
    assert t.log == []


def test_a_dns_name_is_accepted_when_every_node_resolves_it_and_the_cluster_is_not_read():
    t = Transport(_bpf_installation())
    out = run_services_endpoint_info(client(t), "https://lb.example.com:6443", platform="kubeadm",
                                     gather=["endpoint"], nodes_resolve_host=True)
    assert out["problems"] == [] and out["data"]["KUBERNETES_SERVICE_HOST"] == "lb.example.com"
    assert out["endpoint"]["ebpf"] == {"evidence": [], "read": False}
    assert "Calico issue 10683" in out["endpoint"]["dns_name_warning"]  # still said
    assert t.log == []


def test_a_dns_name_on_an_iptables_cluster_or_an_ip_on_a_bpf_one_is_accepted():
    iptables = run_services_endpoint_info(client(Transport(_bpf_installation("Iptables"))),
                                          "https://lb.example.com:6443", platform="kubeadm", gather=["endpoint"])
    assert iptables["problems"] == [] and iptables["endpoint"]["ebpf"] == {"evidence": [], "read": True}
    t = Transport(_bpf_installation())
    ip = run_services_endpoint_info(client(t), "https://10.0.0.5:6443", platform="kubeadm", gather=["endpoint"],
                                    allow_ip=True)
    assert ip["problems"] == [] and t.log == []
    # the module's own option names when no prefix is given
    refused = run_services_endpoint_info(client(Transport(_bpf_installation())), "https://lb.example.com:6443",
                                         platform="kubeadm", gather=["endpoint"],
                                         prefix={"host": "endpoint_host", "port": "endpoint_port"})
    assert refused["problems"][0]["message"].startswith("nodes_resolve_host: ")


def test_endpoint_configmap_up_to_date_and_operator_restart():
    ns = "/api/v1/namespaces/tigera-operator"
    t = Transport({
        ns: {"metadata": {"name": "tigera-operator"}},
        ns + "/configmaps/kubernetes-services-endpoint": {
            "metadata": {"name": "kubernetes-services-endpoint", "creationTimestamp": "2026-11-26T08:00:00Z",
                         "managedFields": [{"manager": "calico-ops", "time": "2026-11-26T09:00:00Z"}]},
            "data": {"KUBERNETES_SERVICE_HOST": "lb.example.com", "KUBERNETES_SERVICE_PORT": "6443"}},
        "/apis/apps/v1/namespaces/tigera-operator/deployments/tigera-operator": {
            "metadata": {"name": "tigera-operator", "namespace": "tigera-operator", "generation": 1},
            "spec": {"replicas": 1},
            "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1,
                       "availableReplicas": 1}},
        ns + "/pods/op-2": {"metadata": {"name": "op-2", "labels": {"k8s-app": "tigera-operator"},
                                         "creationTimestamp": "2026-11-26T09:00:05Z"},
                            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
    })
    out = run_services_endpoint_info(client(t), "https://lb.example.com:6443", platform="kubeadm",
                                     previous_pods=["op-1"])
    assert out["configmap"]["up_to_date"] is True
    assert out["operator"]["rolled_out"] is True
    assert out["operator"]["pods"] == ["op-2"]
    assert out["operator"]["restart"]["restarted"] is True
    # the new pod started after the ConfigMap's last write: it runs with this endpoint
    assert out["configmap"]["written_at"] == "2026-11-26T09:00:00Z"
    assert out["operator"]["started_before_configmap"] == [] and out["operator"]["restart_pending"] is False
