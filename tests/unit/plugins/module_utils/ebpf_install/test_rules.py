"""ebpf_install/rules.py: the two v3.31 eBPF paths and the mixes the Tigera operator refuses (pure rules; the real
operator's refusals are in tests/integration/test_install_ebpf.py)."""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.ebpf_install import rules as eb


def inst(**net):
    return {"kind": "Installation", "spec": {"calicoNetwork": dict({"linuxDataplane": "BPF"}, **net)}}


SLICE = [{"endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": True}}]}]
KP = {"metadata": {"name": "kube-proxy", "labels": {"k8s-app": "kube-proxy"}}}
OK_OPERATOR = dict(configmap=None, endpoint_slices=SLICE, kube_proxy=KP, version="v3.31.4")


def facts(**changes):
    """The facts of a cluster where the operator path may go on, with ``changes``."""
    out = dict(OK_OPERATOR)
    out.update(changes)
    return out


def test_configmap_path_with_a_plain_installation_is_fine():
    assert eb.problems("configmap", inst()) == []


def test_configmap_path_refuses_bootstrap_enabled_naming_both_ways_out():
    out = eb.problems("configmap", inst(bpfNetworkBootstrap="Enabled"))
    assert len(out) == 1 and "bpfNetworkBootstrap: Enabled" in out[0] and "ebpf_install_bootstrap: operator" in out[0]
    assert "tigera-operator/kubernetes-services-endpoint" in out[0]


def test_configmap_path_refuses_kube_proxy_managed_twice_unless_the_collection_leaves_it():
    assert eb.problems("configmap", inst(kubeProxyManagement="Enabled"))
    assert eb.problems("configmap", inst(kubeProxyManagement="Enabled"), disable_kube_proxy=False) == []


def test_operator_path_with_everything_in_place_is_fine():
    assert eb.problems("operator", inst(**eb.OPERATOR_FIELDS), **OK_OPERATOR) == []


def test_operator_path_refuses_the_configmap():
    out = eb.problems("operator", inst(**eb.OPERATOR_FIELDS), **facts(configmap={"data": {}}),
                      configmap_namespace="calico-ops")
    assert len(out) == 1 and "ConfigMap calico-ops/kubernetes-services-endpoint exists" in out[0]


def test_operator_path_needs_a_ready_kubernetes_endpoint_slice():
    not_ready = [{"endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": False}}]}]
    for slices in (None, [], not_ready):
        out = eb.problems("operator", inst(**eb.OPERATOR_FIELDS), **facts(endpoint_slices=slices))
        assert len(out) == 1 and "EndpointSlice" in out[0]


def test_operator_path_needs_an_unmanaged_kube_proxy_daemonset():
    out = eb.problems("operator", inst(**eb.OPERATOR_FIELDS), **facts(kube_proxy=None))
    assert len(out) == 1 and "kubeproxy-monitor Degraded" in out[0]
    managed = {"metadata": {"labels": {"addonmanager.kubernetes.io/mode": "Reconcile"}}}
    out = eb.problems("operator", inst(**eb.OPERATOR_FIELDS), **facts(kube_proxy=managed))
    assert len(out) == 1 and "addonmanager.kubernetes.io/mode=Reconcile" in out[0]
    argo = {"metadata": {"annotations": {"argocd.argoproj.io/tracking-id": "x"}}}
    assert eb.problems("operator", inst(**eb.OPERATOR_FIELDS), **facts(kube_proxy=argo))


def test_operator_path_refuses_old_releases_and_contradicting_overrides():
    out = eb.problems("operator", inst(**eb.OPERATOR_FIELDS), **facts(version="v3.30.5"))
    assert len(out) == 1 and "v3.31.0 or later" in out[0] and "v3.30.5" in out[0]
    assert eb.problems("operator", inst(**eb.OPERATOR_FIELDS), **facts(version="v3.22.2"),
                       variant="TigeraSecureEnterprise") == []
    out = eb.problems("operator", inst(bpfNetworkBootstrap="Enabled", kubeProxyManagement="Disabled"), **OK_OPERATOR)
    assert len(out) == 1 and "kubeProxyManagement: Disabled" in out[0]


def test_unknown_mode_names_the_variable_and_the_choices():
    assert eb.problems("Operator", inst()) == ["ebpf_install_bootstrap: must be one of configmap, operator "
                                               "(got 'Operator')"]


def test_overrides_and_expected_status_per_mode():
    assert eb.installation_overrides("configmap") == {}
    assert eb.installation_overrides("operator") == {"bpfNetworkBootstrap": "Enabled", "kubeProxyManagement": "Enabled"}
    assert eb.expected_status("operator") == ["kubeproxy-monitor"] and eb.expected_status("configmap") == []


def test_cluster_report_says_what_the_operator_rendered():
    node = {"metadata": {"namespace": "calico-system", "name": "calico-node"},
            "status": {"numberReady": 3, "desiredNumberScheduled": 3},
            "spec": {"template": {"spec": {
                "containers": [{"name": "calico-node", "env": [{"name": "KUBERNETES_SERVICE_HOST", "value": "api.x"},
                                                               {"name": "KUBERNETES_SERVICE_PORT", "value": "6443"}]}],
                "initContainers": [{"name": "ebpf-bootstrap", "env": [
                    {"name": "KUBERNETES_APISERVER_ENDPOINTS", "value": "10.0.0.1:6443"}]}]}}}}
    kp = {"spec": {"template": {"spec": {"nodeSelector": {"non-calico": "true"}}}},
          "status": {"desiredNumberScheduled": 0, "numberReady": 0}}
    lines = eb.cluster_report({"spec": {"calicoNetwork": {"linuxDataplane": "BPF"}},
                               "status": {"variant": "Calico", "calicoVersion": "v3.31.4"}},
                              {"spec": {"bpfEnabled": True}}, node, kp)
    assert lines[0] == ("Installation default: linuxDataplane BPF, bpfNetworkBootstrap (unset), kubeProxyManagement "
                        "(unset); operator reports variant Calico, Calico v3.31.4")
    assert lines[1] == "FelixConfiguration default: bpfEnabled true"
    assert "3/3 pods ready" in lines[2] and "API server for calico-node api.x:6443" in lines[2]
    assert "KUBERNETES_APISERVER_ENDPOINTS=10.0.0.1:6443" in lines[2]
    assert lines[3] == "kube-proxy DaemonSet: 0 pods scheduled, 0 ready (nodeSelector non-calico=true)"
    assert eb.cluster_report() == ["Installation default: not found", "FelixConfiguration default: not created (yet)",
                                   "calico-node: not rendered (yet)", "kube-proxy DaemonSet: none in kube-system"]


def test_enable_pending_compares_the_spec_the_merge_patch_makes_and_kube_proxy():
    """Nothing left to change only when the merge patch would leave the spec as it is (a null removes a field: a
    spec that still has it is pending) and kube-proxy no longer runs where the job disables it."""
    done = {"spec": {"calicoNetwork": {"linuxDataplane": "BPF", "ipPools": [{"cidr": "192.168.0.0/16"}]}}}
    assert eb.enable_pending(done, {"calicoNetwork": {"linuxDataplane": "BPF"}}) is False
    assert eb.enable_pending(done, {"calicoNetwork": {"linuxDataplane": "BPF"}}, kube_proxy_running=True) is True
    iptables = {"spec": {"calicoNetwork": {"linuxDataplane": "Iptables"}}}
    assert eb.enable_pending(iptables, {"calicoNetwork": {"linuxDataplane": "BPF"}}) is True
    with_ports = {"spec": {"calicoNetwork": {"linuxDataplane": "BPF", "hostPorts": "Enabled"}}}
    assert eb.enable_pending(with_ports, {"calicoNetwork": {"linuxDataplane": "BPF", "hostPorts": None}}) is True
    assert eb.enable_pending(None, {"calicoNetwork": {"linuxDataplane": "BPF"}}) is True
