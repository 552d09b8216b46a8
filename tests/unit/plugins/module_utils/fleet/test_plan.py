"""fleet/plan.py: the fleet rollout's plan on the controller - the input checked, each problem naming the variable
(and the host), credentials checked by key and never shown, the canary, the batch as Ansible's serial, the scope."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.fleet.plan import canary_given, plan

TOKEN = "sekret-token-value"


def settings(**over):
    out = {"job": "enable_ebpf", "group": "calico_fleet",
           "connections": [["cluster-1", "/k/1", "", {}], ["cluster-2", "", "ctx-2", {}],
                           ["cluster-3", "", "", {"K8S_AUTH_HOST": "https://x", "K8S_AUTH_API_KEY": TOKEN}]],
           "canary": "", "batch": "25%", "max_fail_percentage": 0, "gate_timeout": 600, "poll_interval": 10,
           "rollback_failed": False, "scope": "all"}
    out.update(over)
    return out


def test_the_defaults_plan_the_first_host_as_canary_then_the_rest():
    p = plan(settings())
    assert p["problems"] == [] and p["canary"] == ["cluster-1"] and p["serial"] == "25%"
    assert p["in_canary"] == ["cluster-1"] and p["in_rest"] == ["cluster-2", "cluster-3"]
    assert p["line"] == ("enable_ebpf on 3 of the 3 clusters of group calico_fleet (scope all): canary cluster-1, then 2 "
                         "more in batches of 25%; later batches stop when more than 0% of a batch fails its gate (a "
                         "failed canary stops all of them)")


@pytest.mark.parametrize("scope, canary, rest", [("canary", ["cluster-2"], []),
                                                 ("rest", [], ["cluster-1", "cluster-3"])])
def test_the_scope_picks_the_clusters_of_this_run(scope, canary, rest):
    p = plan(settings(scope=scope, canary="cluster-2", batch=2))
    assert (p["in_canary"], p["in_rest"], p["serial"]) == (canary, rest, 2)
    assert "none in this run" in p["line"] or scope == "canary"


def test_the_canary_is_a_comma_separated_string_or_a_list():
    assert canary_given(" a, b ,,c") == ["a", "b", "c"] and canary_given(["a"]) == ["a"] and canary_given(None) == []


@pytest.mark.parametrize("over, words", [
    (dict(job="rollback"), 'fleet_rollout_job is "rollback": choose one of install_ebpf, enable_ebpf, upgrade, '
                           'disable_ebpf'),
    (dict(connections=[]), 'fleet_rollout_group "calico_fleet" has no hosts in the inventory'),
    (dict(canary=["cluster-9"]), "fleet_rollout_canary names cluster-9, not a host of group calico_fleet"),
    (dict(batch=0), 'fleet_rollout_batch is "0": give a count of clusters (1 or more)'),
    (dict(batch="150%"), 'fleet_rollout_batch is "150%"'),
    (dict(batch="0%"), 'fleet_rollout_batch is "0%"'),
    (dict(batch="ten"), 'fleet_rollout_batch is "ten"'),
    (dict(max_fail_percentage=101), 'fleet_rollout_max_fail_percentage is "101": give a percentage, 0 to 100'),
    (dict(max_fail_percentage="-1"), 'fleet_rollout_max_fail_percentage is "-1"'),
    (dict(gate_timeout=0), 'fleet_rollout_gate_timeout is "0": give seconds, 1 or more'),
    (dict(poll_interval="1.5"), 'fleet_rollout_poll_interval is "1.5": give seconds, 1 or more'),
    (dict(job="upgrade", rollback_failed=True), "fleet_rollout_rollback_failed is true, but job upgrade has no "
                                                "rollback here"),
    (dict(connections=[["cluster-1", "", "", {"K8S_AUTH_API_KEY": TOKEN}]]),
     "cluster host cluster-1 of group calico_fleet has no connection settings"),
])
def test_each_bad_input_is_named(over, words):
    found = plan(settings(**over))["problems"]
    assert len(found) == 1 and words in found[0], found


def test_good_numbers_pass():
    for over in (dict(batch="100%"), dict(batch="12.5%"), dict(batch=1), dict(max_fail_percentage="33.3"),
                 dict(max_fail_percentage=100), dict(job="install_ebpf", rollback_failed=True)):
        assert plan(settings(**over))["problems"] == [], over


def test_a_hosts_credentials_are_checked_by_key_and_never_shown():
    bad = {"K8S_AUTH_HOST": "https://x", "K8S_AUTH_API_KEY": TOKEN, "K8S_AUTH_PASSWORD": TOKEN}
    p = plan(settings(connections=[["cluster-1", "", "", bad]]))
    assert len(p["problems"]) == 1
    assert p["problems"][0].startswith("cluster host cluster-1: calico_k8s_auth: K8S_AUTH_PASSWORD not taken")
    assert TOKEN not in repr(p)


def test_every_problem_is_reported_at_once_in_order():
    found = plan(settings(job="x", canary="nowhere", batch=0, gate_timeout=0))["problems"]
    assert [f.split(" ")[0] for f in found] == ["fleet_rollout_job", "fleet_rollout_canary", "fleet_rollout_batch",
                                                "fleet_rollout_gate_timeout"]
