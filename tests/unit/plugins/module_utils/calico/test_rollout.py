"""calico/rollout.py, the rollout rules: DaemonSet, its pods (READY 1/2 accepted with etcd only), Deployments."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import rollout


def ds(generation=2, observed=2, desired=3, updated=3, available=3, ready=3, unavailable=0, conditions=None):
    return {"metadata": {"name": "calico-node", "namespace": "kube-system", "uid": "ds-uid",
                         "generation": generation},
            "status": {"observedGeneration": observed, "desiredNumberScheduled": desired,
                       "updatedNumberScheduled": updated, "numberAvailable": available, "numberReady": ready,
                       "numberUnavailable": unavailable, "conditions": conditions or []}}


def pod(name, ready=(True,), phase="Running", generation=2, terminating=False, owner="ds-uid"):
    meta = {"name": name, "labels": {"pod-template-generation": str(generation)},
            "ownerReferences": [{"uid": owner, "controller": True}]}
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    statuses = [{"name": "c%d" % i, "ready": r} for i, r in enumerate(ready)]
    return {"metadata": meta, "spec": {"containers": [{"name": "c%d" % i} for i in range(len(ready))]},
            "status": {"phase": phase, "containerStatuses": statuses}}


@pytest.mark.parametrize("total, datastore, needed", [
    (1, "kubernetes", 1), (2, "kubernetes", 2), (1, "etcd", 1), (2, "etcd", 1), (3, "etcd", 2), (0, "etcd", 0)])
def test_required_ready(total, datastore, needed):
    assert rollout.required_ready(total, datastore) == needed


def test_one_of_two_ready_is_accepted_with_etcd_only():
    half = pod("calico-node-a", ready=(True, False))
    assert rollout.pod_state(half, "etcd")[0] is True
    ok, text = rollout.pod_state(half, "kubernetes")
    assert ok is False and "1/2" in text and "not ready: c1" in text


def test_none_ready_is_refused_even_with_etcd():
    assert rollout.pod_state(pod("p", ready=(False, False)), "etcd")[0] is False


def test_pending_and_terminating_pods_are_not_ready():
    assert rollout.pod_state(pod("p", phase="Pending"))[0] is False
    ok, text = rollout.pod_state(pod("p", terminating=True))
    assert not ok and "terminating" in text


def test_rolled_out_daemonset():
    pods = [pod("calico-node-%d" % i) for i in range(3)]
    done, line, problems = rollout.daemonset_state(ds(), pods)
    assert done and problems == []
    assert "desired 3, updated 3" in line


@pytest.mark.parametrize("kwargs, word", [
    ({"observed": 1}, "has not seen generation 2"), ({"updated": 2}, "2 of 3 pods updated"),
    ({"available": 2, "unavailable": 1}, "2 of 3 pods available")])
def test_daemonset_not_rolled_out(kwargs, word):
    pods = [pod("calico-node-%d" % i) for i in range(3)]
    done, _line, problems = rollout.daemonset_state(ds(**kwargs), pods)
    assert not done and any(word in p for p in problems), problems


def test_pods_of_an_older_template_or_missing_pods_block_the_rollout():
    pods = [pod("a"), pod("b"), pod("old", generation=1)]
    done, _line, problems = rollout.daemonset_state(ds(), pods)
    assert not done and any("older template: old" in p for p in problems)
    assert any("2 of 3 pods exist" in p for p in problems)
    other = [pod("x", owner="someone-else")] + [pod("p%d" % i) for i in range(3)]
    assert rollout.daemonset_state(ds(), other)[0] is True


def test_not_ready_pods_and_conditions_are_quoted():
    pods = [pod("a"), pod("b"), pod("c", ready=(False,))]
    conds = [{"type": "Weird", "status": "True", "reason": "R", "message": "something"}]
    done, _line, problems = rollout.daemonset_state(ds(conditions=conds), pods)
    assert not done
    assert any("pods not ready: c Running 0/1 (not ready: c0)" in p for p in problems)
    assert any("Weird=True (R: something)" in p for p in problems)


def deployment(replicas=1, updated=1, available=1, total=1, available_cond="True", generation=3, observed=3):
    return {"metadata": {"name": "calico-kube-controllers", "namespace": "kube-system", "generation": generation},
            "spec": {"replicas": replicas},
            "status": {"observedGeneration": observed, "updatedReplicas": updated, "availableReplicas": available,
                       "replicas": total, "conditions": [{"type": "Available", "status": available_cond,
                                                          "reason": "MinimumReplicasAvailable",
                                                          "message": "Deployment has minimum availability."}]}}


def test_deployment_rules():
    assert rollout.deployment_state(deployment())[0]
    done, _line, problems = rollout.deployment_state(deployment(available=0, available_cond="False", total=2))
    assert not done and any("0 of 1 replicas available (2 in total)" in p for p in problems)
    assert any("Available=False" in p for p in problems)
    assert not rollout.deployment_state(deployment(observed=2))[0]


def test_judge_reports_missing_objects_and_everything_at_once():
    result = rollout.judge((("kube-system", "calico-node"), None), [],
                           [(("kube-system", "calico-kube-controllers"), deployment())])
    assert not result["ready"]
    assert result["problems"] == ["DaemonSet kube-system/calico-node: not found"]
    pods = [pod("calico-node-%d" % i) for i in range(3)]
    ok = rollout.judge((("kube-system", "calico-node"), ds()), pods,
                       [(("kube-system", "calico-kube-controllers"), deployment())])
    assert ok["ready"] and ok["message"].startswith("rolled out: DaemonSet kube-system/calico-node")
