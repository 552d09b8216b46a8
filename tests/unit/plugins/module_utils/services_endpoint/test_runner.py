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
    assert t.log == []


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
