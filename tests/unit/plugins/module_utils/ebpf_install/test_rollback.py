"""ebpf_install/rollback.py: what disable_ebpf (the ebpf_rollback role) does, decided before any write - the variables,
the refusals naming what to change, each write, and the summary's steps of one run."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.dataplane import BPF_ANNOTATION
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.ebpf_install.rollback import (
    NAMES, plan, settings_problems, steps)

CLEANUP, RECORD = NAMES["cleanup_field"], NAMES["cleanup_record"]
ANNOTATION = BPF_ANNOTATION


def variables(**over):
    out = {"ebpf_rollback_timeout": 900, "ebpf_rollback_poll_interval": 10,
           "ebpf_rollback_kube_proxy_node_selector": {"non-calico": "true"}, "ebpf_rollback_installation_spec": {}}
    out.update(over)
    return out


def test_the_defaults_pass():
    assert settings_problems(variables()) == []


@pytest.mark.parametrize("over, words", [
    (dict(ebpf_rollback_timeout=0), "ebpf_rollback_timeout (0) and ebpf_rollback_poll_interval (10) must be positive"),
    (dict(ebpf_rollback_poll_interval=1000), "the interval not longer than the timeout"),
    (dict(ebpf_rollback_timeout="soon"), "ebpf_rollback_timeout (soon)"),
    (dict(ebpf_rollback_kube_proxy_node_selector={}), "ebpf_rollback_kube_proxy_node_selector: must name the nodeSelector"),
    (dict(ebpf_rollback_installation_spec={"calicoNetwork": {"linuxDataplane": "BPF"}}),
     'ebpf_rollback_installation_spec.calicoNetwork.linuxDataplane: must be Iptables (or unset), got "BPF"'),
])
def test_each_bad_variable_is_named(over, words):
    found = settings_problems(variables(**over))
    assert len(found) == 1 and words in found[0], found


def test_an_installation_override_of_iptables_or_other_fields_passes():
    assert settings_problems(variables(ebpf_rollback_installation_spec={
        "calicoNetwork": {"linuxDataplane": "Iptables", "mtu": 1400}})) == []


def reads(installation=None, manifest=False, felix=None):
    def entry(kind, obj):
        return {"kind": kind, "found": obj is not None, "resources": [obj] if obj else []}
    return {"objects": [entry("Installation", installation),
                        entry("DaemonSet", {"metadata": {"name": "calico-node"}} if manifest else None),
                        entry("FelixConfiguration", felix)]}


def installation(dataplane="BPF", **network):
    return {"spec": {"calicoNetwork": dict({"linuxDataplane": dataplane}, **network)}}


def kube_proxy(platform="kubeadm", present=True, running=True, **extra):
    out = {"platform": {"name": platform, "title": platform, "source": "detected"}, "running": running,
           "daemonset": {"present": present, "namespace": "kube-system", "name": "kube-proxy", "line": "0/2 ready"}}
    out.update(extra)
    return out


SETTINGS = {"node_selector": {"non-calico": "true"}, "installation_spec": {}, "kops_binary": "kops"}


def test_a_bpf_install_on_kubeadm_switches_back_with_kube_proxy_first():
    p = plan(reads(installation()), kube_proxy(), SETTINGS)
    assert p["problems"] == [] and p["bpf"] and p["note"] == ""
    assert p["switch"] == {"calicoNetwork": {"linuxDataplane": "Iptables"}} and not p["bootstrap_disabled"]
    assert p["node_selector"] == {"non-calico": "true", "operator.tigera.io/disable-kube-proxy": "true"}
    assert p["kube_proxy_checked"] and not p["take_kube_proxy_back"] and p["coexist"] is None  # no FelixConfiguration


def test_bootstrap_enabled_is_disabled_with_the_switch_and_the_override_merged_in():
    p = plan(reads(installation(bpfNetworkBootstrap="Enabled", kubeProxyManagement="Enabled")), kube_proxy(),
             dict(SETTINGS, installation_spec={"calicoNetwork": {"mtu": 1400}}))
    assert p["switch"] == {"calicoNetwork": {"linuxDataplane": "Iptables", "bpfNetworkBootstrap": "Disabled",
                                             "mtu": 1400}}
    assert p["bootstrap_disabled"] and p["take_kube_proxy_back"]


@pytest.mark.parametrize("spec, before, patch", [
    ({}, None, {"metadata": {"annotations": {RECORD: "unset"}}, "spec": {CLEANUP: False}}),
    ({CLEANUP: True}, None, {"metadata": {"annotations": {RECORD: "true"}}, "spec": {CLEANUP: False}}),
    ({CLEANUP: False}, None, None),  # the user's own false: nothing to keep, nothing to restore
    ({CLEANUP: False}, "unset", {"metadata": {"annotations": {RECORD: "unset"}}, "spec": {CLEANUP: False}}),
])
def test_felix_keeps_kube_proxys_rules_recording_the_value_before(spec, before, patch):
    felix = {"spec": dict(spec), "metadata": {"annotations": {RECORD: before} if before else {}}}
    p = plan(reads(installation(), felix=felix), kube_proxy(), SETTINGS)
    assert p["coexist"] == patch and p["cleanup"]["restore"] == (before is not None)


def test_nothing_to_roll_back_says_so_and_that_kube_proxy_does_not_run():
    p = plan(reads(installation("Iptables")), kube_proxy(running=False), SETTINGS)
    assert p["problems"] == [] and not p["bpf"] and p["coexist"] is None
    assert p["note"].startswith("Installation default already uses linuxDataplane Iptables: nothing to roll back")
    assert "kube-proxy is not running (0/2 ready)" in p["note"]
    assert "not running" not in plan(reads(installation("Iptables")), kube_proxy(), SETTINGS)["note"]


def test_a_manifest_install_and_no_installation_are_refused():
    p = plan(reads(manifest=True), kube_proxy(), SETTINGS)
    assert len(p["problems"]) == 1 and p["problems"][0].startswith("Calico runs from a manifest") and not p["bpf"]
    p = plan(reads(), kube_proxy(), SETTINGS)
    assert p["problems"] == ["No Installation 'default' (operator.tigera.io/v1) in this cluster: there is no operator "
                             "installation to take off the eBPF data plane."]


@pytest.mark.parametrize("info, kops_rc, words", [
    (kube_proxy("gke"), None, "do not support this platform; set ebpf_rollback_platform"),
    (kube_proxy(present=False, running=False), None, "there is no DaemonSet kube-system/kube-proxy"),
    (kube_proxy("openshift", openshift={"exists": False}), None, "networks.operator.openshift.io cluster was not found"),
    (kube_proxy("kops", kops={"state_store": "s3://x", "cluster_name": "c"}), 1, "the kops CLI (kops) was not found"),
    (kube_proxy("kops", kops={"cluster_name": "c"}), 0, "kube_proxy_kops_state_store (or KOPS_STATE_STORE) is not set"),
    (kube_proxy("kops", kops={"state_store": "s3://x"}), 0, "kube_proxy_kops_cluster_name is not set"),
    (kube_proxy("mke", running=False), None, "set ebpf_rollback_mke_kube_proxy_restored: true"),
    (kube_proxy("aks", felix={"api_version": None}), None, "AKS: FelixConfiguration is served neither"),
])
def test_kube_proxy_that_cannot_come_back_is_refused_before_any_write(info, kops_rc, words):
    p = plan(reads(installation()), info, SETTINGS, kops_rc)
    assert len(p["problems"]) == 1, p["problems"]
    assert p["problems"][0].startswith("kube-proxy cannot be restored on %s (detected)" % info["platform"]["name"])
    assert words in p["problems"][0]


def test_platforms_that_can_bring_kube_proxy_back_pass():
    for info, rc in ((kube_proxy("openshift", openshift={"exists": True}), None),
                     (kube_proxy("kops", kops={"state_store": "s3://x", "cluster_name": "c"}), 0),
                     (kube_proxy("mke", running=True), None), (kube_proxy("aks", felix={"api_version": "v1"}), None)):
        p = plan(reads(installation()), info, SETTINGS, rc)
        assert p["problems"] == [] and not p["kube_proxy_checked"], (info, p["problems"])
    assert plan(reads(installation()), kube_proxy("mke", running=False), dict(SETTINGS, mke_kube_proxy_restored=True),
                None)["problems"] == []


def test_the_platform_is_not_judged_when_there_is_nothing_to_roll_back():
    assert plan(reads(installation("Iptables")), kube_proxy("gke"), SETTINGS)["problems"] == []


@pytest.mark.parametrize("field, annotation, refused", [
    (True, "true", False), (None, None, False), (False, "false", False),
    (True, None, True), (None, "true", True), (False, "true", True),
])
def test_a_bpf_enabled_the_operator_did_not_set_is_refused(field, annotation, refused):
    felix = {"spec": {} if field is None else {"bpfEnabled": field},
             "metadata": {"annotations": {ANNOTATION: annotation} if annotation else {}}}
    p = plan(reads(installation(), felix=felix), kube_proxy(), SETTINGS)
    assert bool(p["problems"]) == refused, p["problems"]
    if refused:
        assert "someone other than the operator set bpfEnabled" in p["problems"][0]


def test_names_given_replace_the_defaults():
    p = plan(reads(installation(), felix={"spec": {}}), kube_proxy(),
             dict(SETTINGS, cleanup_field="otherField", cleanup_record="x/rec", operator_kube_proxy_key="k"))
    assert p["coexist"] == {"metadata": {"annotations": {"x/rec": "unset"}}, "spec": {"otherField": False}}
    assert p["node_selector"] == {"non-calico": "true", "k": "true"}


def test_steps_list_what_ran_in_this_run_in_the_jobs_order():
    facts = plan(reads(installation(bpfNetworkBootstrap="Enabled"), felix={"spec": {}}), kube_proxy(), SETTINGS)
    results = {"coexist": {"changed": True}, "kube_proxy_management": {"skipped": True},
               "kube_proxy": {"ran": {"changed": False}, "result": {"platform": "kubeadm", "changed": True},
                              "ready": {"daemonset": {"line": "2/2 ready"}}},
               "switch": {"changed": True}, "restore": {}, "endpoint": {"read": {}, "removed": {}}}
    assert steps(results, facts) == [
        {"step": "FelixConfiguration default: %s false while kube-proxy comes back (was unset)" % CLEANUP,
         "changed": True},
        {"step": "kube-proxy enabled (kubeadm): 2/2 ready", "changed": True},
        {"step": "Installation default: linuxDataplane Iptables, bpfNetworkBootstrap Disabled", "changed": True}]


def test_steps_of_the_restore_and_the_endpoint():
    facts = plan(reads(installation()), kube_proxy(), SETTINGS)
    results = {"restore": {"changed": False}, "kube_proxy": {"ran": {"skipped": True}},
               "endpoint": {"read": {"configmap": {}}, "removed": {"changed": True}, "restarted": True}}
    assert steps(results, facts) == [
        {"step": "FelixConfiguration default: %s restored (calico-node rolled out, no Felix on eBPF)" % CLEANUP,
         "changed": False},
        {"step": "ConfigMap kubernetes-services-endpoint removed, operator restarted", "changed": True}]
    assert steps({}, facts) == []


def test_a_null_in_the_installation_override_is_sent_to_remove_the_field():
    p = plan(reads(installation()), kube_proxy(), dict(SETTINGS, installation_spec={"calicoNetwork": {"mtu": None}}))
    assert p["switch"] == {"calicoNetwork": {"linuxDataplane": "Iptables", "mtu": None}}
