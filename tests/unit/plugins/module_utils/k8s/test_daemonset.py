"""k8s/daemonset.py: a DaemonSet's pod selector, and when it has settled - emptied (``disabled``: nothing scheduled,
no pod left) or full (``enabled``: every desired pod scheduled, updated and ready, the generation observed)."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.daemonset import (
    daemonset_status, live_pods, pod_selector, progress, read)
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.daemonsets import daemonset, pods

SEL = {"non-calico": "true"}


def test_counts_that_are_missing_are_zero_and_deleted_pods_are_not_live():
    assert daemonset_status({"metadata": {}, "status": {"numberReady": "2"}})["numberReady"] == 2
    assert daemonset_status(None)["desiredNumberScheduled"] == 0
    assert [p["metadata"]["name"] for p in live_pods(pods(3, deleting=1))] == ["kp-1", "kp-2"]


def test_pod_selector_is_the_whole_selector():
    assert pod_selector(daemonset()) == "k8s-app=kube-proxy,tier=node"
    assert pod_selector(None) == ""
    ds = {"spec": {"selector": {"matchLabels": {"app": "x"}, "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["node", "edge"]},
        {"key": "zone", "operator": "NotIn", "values": ["a"]},
        {"key": "managed", "operator": "Exists"}, {"key": "legacy", "operator": "DoesNotExist"}]}}}
    assert pod_selector(ds) == "app=x,tier in (node,edge),zone notin (a),managed,!legacy"


class Client(object):
    def __init__(self, ds):
        self.ds, self.lists = ds, []

    def get(self, api_version, plural, name, namespace=None):
        return self.ds

    def list(self, api_version, plural, namespace=None, label_selector=None):
        self.lists.append(label_selector)
        return pods(2)


def test_read_lists_the_pods_by_the_daemonsets_selector_or_the_one_given_without_it():
    c = Client(daemonset())
    assert read(c, "kube-system", "kube-proxy", "k8s-app=other") == (c.ds, pods(2), "k8s-app=kube-proxy,tier=node")
    c = Client(None)
    assert read(c, "kube-system", "kube-proxy", "k8s-app=kube-proxy")[1:] == (pods(2), "k8s-app=kube-proxy")
    c = Client(None)
    assert read(c, "kube-system", "kube-proxy") == (None, [], None) and c.lists == []


# -- settling --------------------------------------------------------------------------------------------

def test_disabled_settles_at_zero():
    ds = daemonset(SEL, generation=2, observed=2, desiredNumberScheduled=0, currentNumberScheduled=0,
                   updatedNumberScheduled=0, numberReady=0, numberAvailable=0)
    out = progress(ds, [], "disabled")
    assert out["settled"] is True
    assert out["line"] == ("DaemonSet kube-system/kube-proxy: desired 0, current 0, updated 0, ready 0, available 0, "
                           "unavailable 0, misscheduled 0, pods 0 (generation 2, observed 2)")


@pytest.mark.parametrize("kwargs, pod_count", [
    (dict(observed=1), 0),                                   # the controller has not seen the patch yet
    (dict(desiredNumberScheduled=3), 0),
    (dict(currentNumberScheduled=1), 0),
    (dict(numberReady=1), 0),
    (dict(numberMisscheduled=1), 0),
    ({}, 1),                                                 # a pod is still being deleted
])
def test_disabled_not_settled(kwargs, pod_count):
    base = dict(generation=2, observed=2, desiredNumberScheduled=0, currentNumberScheduled=0,
                updatedNumberScheduled=0, numberReady=0, numberAvailable=0)
    base.update(kwargs)
    assert progress(daemonset(SEL, **base), pods(pod_count, deleting=pod_count), "disabled")[
        "settled"] is False


def test_enabled_settles_when_all_ready():
    assert progress(daemonset(), pods(3), "enabled")["settled"] is True


@pytest.mark.parametrize("kwargs, pod_count", [
    (dict(generation=3, observed=2), 3),
    (dict(currentNumberScheduled=2), 3),
    (dict(updatedNumberScheduled=2), 3),
    (dict(numberReady=2), 3),
    (dict(numberUnavailable=1), 3),
    ({}, 2),
])
def test_enabled_not_settled(kwargs, pod_count):
    assert progress(daemonset(**kwargs), pods(pod_count), "enabled")["settled"] is False


def test_no_daemonset_is_settled():
    assert progress(None, [], "disabled")["settled"] is True


def test_no_daemonset_counts_stray_pods():
    assert progress(None, pods(2), "disabled")["pods"] == 2
