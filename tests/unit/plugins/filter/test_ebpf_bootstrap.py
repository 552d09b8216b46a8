"""The ebpf_install role's filters (plugins/filter/ebpf_bootstrap.py): each passes the role's facts to the pure
rules of module_utils/ebpf_install/rules.py with the role's defaults for what the play leaves out."""

from pathlib import Path

from ansible_collections.calico_ops.lifecycle.plugins.filter.ebpf_bootstrap import FilterModule
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.ebpf_install import rules

F = FilterModule().filters()
FILTERS = Path(__file__).resolve().parents[4] / "plugins" / "filter"
SLICE = [{"endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": True}}]}]
KP = {"metadata": {"name": "kube-proxy", "labels": {"k8s-app": "kube-proxy"}}}


def inst(**net):
    return {"kind": "Installation", "spec": {"calicoNetwork": dict({"linuxDataplane": "BPF"}, **net)}}


def test_the_filters_are_the_documented_ones():
    assert sorted(F) == ["ebpf_bootstrap_overrides", "ebpf_bootstrap_problems", "ebpf_cluster_report",
                         "ebpf_enable_pending", "ebpf_install_settings_problems", "ebpf_install_steps",
                         "ebpf_install_warnings", "ebpf_operator_bpf_problem", "ebpf_rollback_plan",
                         "ebpf_rollback_settings_problems", "ebpf_rollback_steps"]
    assert all((FILTERS / (name + ".yml")).is_file() for name in F)


def test_the_operator_bpf_problem_filter_is_the_rule():
    felix = {"metadata": {}, "spec": {"bpfEnabled": False}}
    assert F["ebpf_operator_bpf_problem"](felix, "it stops").startswith(
        "FelixConfiguration default: spec.bpfEnabled is false but the operator's annotation")
    assert F["ebpf_operator_bpf_problem"](None, "it stops") == ""


def test_problems_take_the_facts_and_default_to_what_the_role_does():
    twice = {"mode": "configmap", "installation": inst(kubeProxyManagement="Enabled")}
    out = F["ebpf_bootstrap_problems"](twice)
    assert out == rules.problems("configmap", inst(kubeProxyManagement="Enabled"))
    assert len(out) == 1 and "kube-proxy would be managed twice" in out[0]  # disable_kube_proxy defaults to true
    assert F["ebpf_bootstrap_problems"](dict(twice, disable_kube_proxy=False)) == []


def test_problems_name_the_configmap_in_its_namespace_default_tigera_operator():
    facts = {"mode": "operator", "installation": inst(**rules.OPERATOR_FIELDS), "configmap": {}, "endpoint_slices": SLICE,
             "kube_proxy": None, "version": "v3.31.4"}
    assert "ConfigMap tigera-operator/kubernetes-services-endpoint exists" in F["ebpf_bootstrap_problems"](facts)[0]
    moved = F["ebpf_bootstrap_problems"](dict(facts, configmap_namespace="calico-ops"))
    assert "ConfigMap calico-ops/kubernetes-services-endpoint exists" in moved[0]


def test_an_unset_variant_is_calico():
    facts = {"mode": "operator", "installation": inst(**rules.OPERATOR_FIELDS), "endpoint_slices": SLICE,
             "kube_proxy": KP, "version": "v3.30.2", "variant": None}
    assert "needs Calico v3.31.0 or later" in F["ebpf_bootstrap_problems"](facts)[0]
    enterprise = dict(facts, variant="TigeraSecureEnterprise", version="v3.22.1")
    assert F["ebpf_bootstrap_problems"](enterprise) == []


def test_no_facts_is_an_unknown_mode():
    assert F["ebpf_bootstrap_problems"](None) == ["ebpf_install_bootstrap: must be one of configmap, operator (got None)"]


def test_overrides_and_cluster_report_are_the_rules():
    assert F["ebpf_bootstrap_overrides"]("operator") == rules.OPERATOR_FIELDS
    assert F["ebpf_bootstrap_overrides"]("configmap") == {}
    installation = {"spec": {"calicoNetwork": {"linuxDataplane": "BPF"}}, "status": {"variant": "Calico"}}
    assert F["ebpf_cluster_report"]({"installation": installation}) == rules.cluster_report(installation)
    assert F["ebpf_cluster_report"](None) == rules.cluster_report()


def test_the_cluster_report_takes_objects_infos_result_by_kind_and_the_daemonsets_in_order():
    installation = {"spec": {"calicoNetwork": {"linuxDataplane": "BPF"}}}
    calico_node = {"metadata": {"namespace": "calico-system", "name": "calico-node"}, "status": {"numberReady": 2}}
    reads = {"objects": [{"kind": "Installation", "resources": [installation]},
                         {"kind": "FelixConfiguration", "resources": []},
                         {"kind": "DaemonSet", "resources": [calico_node]},
                         {"kind": "DaemonSet", "resources": [KP]}]}
    assert rules.report_objects(reads["objects"]) == {"installation": installation, "felix": None,
                                                      "calico_node": calico_node, "kube_proxy": KP}
    assert F["ebpf_cluster_report"](reads) == rules.cluster_report(installation, None, calico_node, KP)
    assert rules.report_objects([]) == {"installation": None, "felix": None, "calico_node": None, "kube_proxy": None}


def test_the_rollback_filters_are_the_rules():
    from ansible_collections.calico_ops.lifecycle.plugins.module_utils.ebpf_install import rollback
    variables = {"ebpf_rollback_timeout": 0, "ebpf_rollback_poll_interval": 10,
                 "ebpf_rollback_kube_proxy_node_selector": {"a": "b"}}
    assert F["ebpf_rollback_settings_problems"](variables) == rollback.settings_problems(variables) != []
    reads = {"objects": [{"kind": "Installation", "resources": [inst()]}]}
    kube_proxy = {"platform": {"name": "kubeadm"}, "running": True, "daemonset": {"present": True}}
    plan = F["ebpf_rollback_plan"](reads, kube_proxy, {"node_selector": {"a": "b"}})
    assert plan == rollback.plan(reads, kube_proxy, {"node_selector": {"a": "b"}}) and plan["bpf"]
    assert F["ebpf_rollback_steps"]({"switch": {"changed": True}}, plan) == [
        {"step": "Installation default: linuxDataplane Iptables", "changed": True}]


def test_ebpf_enable_pending_is_the_rule_with_kube_proxy_left_out_as_not_running():
    patch = {"calicoNetwork": {"linuxDataplane": "BPF"}}
    assert F["ebpf_enable_pending"](inst(), patch) is False
    assert F["ebpf_enable_pending"](inst(), patch, True) is True
    assert F["ebpf_enable_pending"](inst(linuxDataplane="Iptables"), patch) is True


def test_the_settings_filter_is_the_rules():
    from ansible_collections.calico_ops.lifecycle.plugins.module_utils.ebpf_install import settings
    bad = {"ebpf_install_variant": "TigeraSecureEnterprise", "ebpf_install_timeout": 0}
    assert F["ebpf_install_settings_problems"](bad, "ftp://x") == settings.problems(bad, "ftp://x")
    assert len(settings.problems(bad, "ftp://x")) >= 3
