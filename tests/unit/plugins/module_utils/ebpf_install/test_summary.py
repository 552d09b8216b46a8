"""ebpf_install/summary.py: the summary's steps of one run, from what the steps registered - in the job's order, and
nothing of a step that did not run in this run (the role forgets earlier results: empty, or a skipped result)."""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.ebpf_install.summary import steps, warnings

SKIPPED = {"skipped": True, "changed": False}
INCLUDED = {"include": "calico_ops.lifecycle.services_endpoint", "changed": False}  # an include_role that ran


def forgotten():
    """What validate.yml leaves before any step ran."""
    return {"endpoint": {"ran": {}, "result": {}}, "enterprise": {"pull_secret": {}, "license": {}}, "operator": {"crds": {}, "operator": {}},
            "patch": {}, "custom_resources": {"apply": {}, "documents": []},
            "rollout": {"ran": {}, "serves": False, "window": 0, "hold": {}, "rollout": {}},
            "kube_proxy": {"ran": {}, "result": {}}}


def test_nothing_ran_nothing_listed():
    assert steps(forgotten()) == [] and steps({}) == [] and steps(None) == []


def test_an_install_on_the_configmap_path_in_the_jobs_order():
    r = forgotten()
    r["endpoint"] = {"ran": INCLUDED, "result": {"host": "10.0.0.10", "port": "6443", "changed": True}}
    r["operator"] = {"crds": {"changed": False, "results": [{}] * 3}, "operator": {"changed": True}}
    r["custom_resources"] = {"apply": {"changed": True}, "documents": [{"kind": "Installation"}, {"kind": "APIServer"}]}
    r["rollout"] = {"ran": {"plan": {"serves": True}}, "serves": True, "window": 31, "hold": {"lines": ["3/3 ready"]},
                    "rollout": {"lines": ["rolled out"]}}
    r["kube_proxy"] = {"ran": INCLUDED, "result": {"state": "disabled", "platform": "kubeadm", "changed": True}}
    assert steps(r) == [
        {"step": "ConfigMap kubernetes-services-endpoint (10.0.0.10:6443)", "changed": True},
        {"step": "operator CRDs (3 CustomResourceDefinitions)", "changed": False},
        {"step": "operator (tigera-operator.yaml)", "changed": True},
        {"step": "custom resources (Installation, APIServer)", "changed": True},
        {"step": "calico-node rolled out and ready on every node, Felix switched to eBPF and every pod still Ready after "
                 "31s: 3/3 ready", "changed": False},
        {"step": "kube-proxy disabled (kubeadm)", "changed": True}]


def test_the_rollout_step_says_when_kube_proxy_was_already_gone_and_quotes_the_rollout_without_a_hold():
    r = forgotten()
    r["rollout"] = {"ran": {"plan": {"serves": False}}, "serves": False, "window": 0, "hold": {}, "rollout": {}}
    assert steps(r) == [{"step": "kube-proxy already out of the way: no wait before it", "changed": False}]
    r["rollout"] = {"ran": {"plan": {}}, "serves": True, "window": 0, "hold": SKIPPED, "rollout": {"lines": ["a", "b"]}}
    assert steps(r)[0]["step"].endswith("after 0s: a; b")


def test_an_enable_lists_its_patch_in_the_words_of_its_path():
    r = forgotten()
    r["patch"] = {"changed": True}
    assert steps(r, {"old_release": True, "bootstrap": "configmap"}) == [
        {"step": "Installation default: linuxDataplane BPF, hostPorts null", "changed": True}]
    assert steps(r, {"bootstrap": "operator"})[0]["step"] == (
        "Installation default: linuxDataplane BPF, bpfNetworkBootstrap and kubeProxyManagement Enabled")


def test_enterprise_lists_the_pull_secret_and_the_license_when_the_secret_was_applied():
    r = forgotten()
    r["enterprise"] = {"pull_secret": {"censored": "no_log", "changed": True}, "license": SKIPPED}
    assert steps(r, {"pull_secret_name": "tigera-pull-secret"}) == [
        {"step": "pull secret tigera-pull-secret", "changed": True}, {"step": "license", "changed": False}]


def test_skipped_results_are_steps_that_did_not_run():
    r = forgotten()
    r["patch"] = SKIPPED
    r["custom_resources"] = {"apply": SKIPPED, "documents": [{"kind": "Installation"}]}
    r["operator"] = {"crds": {"changed": True, "results": []}, "operator": SKIPPED}  # the step hinges on the manifest
    assert steps(r) == []


def test_a_sub_roles_result_counts_only_when_its_include_ran_in_this_run():
    r = forgotten()
    earlier = {"host": "10.0.0.10", "port": "6443", "changed": True, "dns_name_warning": "a DNS name"}
    r["endpoint"] = {"ran": SKIPPED, "result": earlier}  # the operator path: the sub-role did not run
    r["kube_proxy"] = {"ran": {}, "result": {"state": "disabled", "platform": "kubeadm", "changed": False}}
    assert steps(r) == [] and warnings(r) == []
    r["endpoint"]["ran"] = INCLUDED
    assert [x["step"] for x in steps(r)] == ["ConfigMap kubernetes-services-endpoint (10.0.0.10:6443)"]
    assert warnings(r) == ["a DNS name"]
    r["endpoint"]["result"] = dict(earlier, dns_name_warning=None)
    assert warnings(r) == [] and warnings({}) == []
