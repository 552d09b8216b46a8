"""connectivity/runner.py: bad input refused before any request, and the plan and ready stages behind the real
``Client`` over the in-memory API server."""

import json
from urllib.parse import parse_qsl

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.connectivity import rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.connectivity.runner import (
    ConnectivityError, run_stage, validate, wait_ready)

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_k8s import client, standard_api


def node(name, ready=True, ip="10.0.0.1", labels=None):
    return {"metadata": {"name": name, "labels": dict({"kubernetes.io/os": "linux"}, **(labels or {}))},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                       "message": "kubelet stopped posting"}],
                       "addresses": [{"type": "InternalIP", "address": ip}] if ip else []}}


def params(**kw):
    p = {"stage": "plan", "namespace": rules.DEFAULT_NAMESPACE, "node_selector": {}, "max_nodes": 0,
         "image": rules.DEFAULT_IMAGE, "http_port": 8080, "service_port": 8081, "host_port": 8083, "node_port": 0,
         "checks": list(rules.CHECKS), "expect": "allowed", "attempts": 2, "policy_timeout": 60,
         "dns_service": "kube-system/kube-dns", "cluster_domain": "cluster.local",
         "kube_proxy_namespace": "kube-system", "kube_proxy_selector": "k8s-app=kube-proxy", "probe_file": None,
         "stop_file": None, "probe_interval": 1.0, "probe_max_seconds": 60, "workers": 4, "variable_prefix": "",
         "wait_timeout": 0, "poll_interval": 5}
    p.update(kw)
    return p


def test_bad_input_names_each_variable_before_any_request():
    with pytest.raises(ConnectivityError) as err:
        validate(params(checks=["pod_to_pod", "ping"], policy_timeout=-1, attempts=0, node_port=80, http_port=70000,
                        namespace="Not_A_Name", workers=0), prefix="connectivity_")
    text = str(err.value)
    for part in ("connectivity_checks names unknown checks ping", "connectivity_policy_timeout is -1",
                 "connectivity_attempts is 0", "connectivity_node_port is 80", "connectivity_http_port is 70000",
                 "connectivity_namespace is 'Not_A_Name'", "connectivity_workers is 0", "nothing was deployed"):
        assert part in text, text


def test_the_three_ports_must_differ():
    with pytest.raises(ConnectivityError) as err:
        validate(params(service_port=8083), prefix="connectivity_")
    assert "connectivity_service_port and connectivity_host_port are both 8083: give two ports" in str(err.value)
    with pytest.raises(ConnectivityError, match="connectivity_checks is empty"):
        validate(params(checks=[]), prefix="connectivity_")
    with pytest.raises(ConnectivityError, match="probe_file is not set.*stop_file is not set"):
        validate(params(stage="probe"))


def _cluster(namespace_labels=None):
    dyn = standard_api()
    dyn.add_type("v1", "nodes", "Node", namespaced=False)
    dyn.add_type("v1", "namespaces", "Namespace", namespaced=False)
    dyn.put("v1", "nodes", node("n1", ip="10.0.0.1"))
    dyn.put("v1", "nodes", node("n2", ip="10.0.0.2", labels={"pool": "b"}))
    dyn.put("v1", "pods", {"metadata": {"name": "kube-proxy-1", "namespace": "kube-system",
                                        "labels": {"k8s-app": "kube-proxy"}},
                           "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}})
    if namespace_labels is not None:
        dyn.put("v1", "namespaces", {"metadata": {"name": rules.DEFAULT_NAMESPACE, "labels": namespace_labels}})
    return dyn


def test_the_plan_stage_reads_only_and_refuses_a_namespace_that_is_not_its_own():
    dyn = _cluster()
    out = run_stage(client(dyn), params(node_selector={"pool": "b"}))
    assert out["nodes"] == ["n2"] and out["changed"] is False and out["leftover"] is False
    assert out["bpf"] is False and out["dns"] is False
    assert out["api_requests"]["write"] == 0
    assert len(out["manifests"]) == 6
    with pytest.raises(ConnectivityError, match="connectivity_node_selector .* matches no Ready Linux node"):
        run_stage(client(_cluster()), params(node_selector={"pool": "z"}), prefix="connectivity_")
    with pytest.raises(ConnectivityError, match="namespace calico-ops-connectivity exists and is not the"):
        run_stage(client(_cluster({"team": "a"})), params())
    left = run_stage(client(_cluster({rules.PART_OF: rules.PART_OF_VALUE})), params())
    assert left["leftover"] is True


def test_the_ready_stage_says_what_it_waits_for_and_reads_no_cluster_facts():
    """Polled every 5 s by the role: it quotes each missing pod, and does not read the data plane, DNS or kube-proxy
    (the plan and check stages do)."""
    dyn = _cluster()
    c = client(dyn)
    planned = run_stage(c, params(stage="plan"))
    plan_reads = planned["api_requests"]["read"]
    c = client(dyn)
    out = run_stage(c, params(stage="ready"))
    assert out["ready"] is False and "bpf" not in out
    assert "pod calico-ops-connectivity/server-n1 on n1: not created" in out["waiting"]
    assert "Services server and server-nodeport in calico-ops-connectivity: {}" in out["waiting"]
    # nodes, the namespace, the workload's pods and its three Services - not Installation, FelixConfiguration,
    # kube-dns nor kube-proxy's pods
    assert out["api_requests"]["read"] == plan_reads - 4 + 1 + 3, (plan_reads, out["api_requests"])


def _workload_pods(dyn, waiting_reason=None, unschedulable=False):
    """The probe workload's pods on n1 and n2 as the plan lays them out, each waiting for ``waiting_reason`` (or
    not scheduled)."""
    planned = run_stage(client(dyn), params(stage="plan"))
    for doc in planned["manifests"]:
        if doc["kind"] != "Pod":
            continue
        status = {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}]}
        if waiting_reason:
            status["containerStatuses"] = [{"name": "agnhost", "state": {"waiting": {
                "reason": waiting_reason, "message": "Back-off pulling image %s" % rules.DEFAULT_IMAGE}}}]
        if unschedulable:
            status["conditions"].append({"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                         "message": "0/2 nodes are available: 2 node(s) had untolerated taint"})
        dyn.put("v1", "pods", dict(doc, status=status))
    return planned


def test_the_ready_stage_says_why_in_one_line_image_pull_or_scheduling():
    dyn = _cluster()
    _workload_pods(dyn, waiting_reason="ImagePullBackOff")
    out = run_stage(client(dyn), params(stage="ready"))
    assert out["ready"] is False and out["waited"] == 0
    assert out["reason"].startswith("image pull: 6, not created: 1 (first: pod calico-ops-connectivity/"), out["reason"]
    assert "ImagePullBackOff: Back-off pulling image" in out["reason"]
    assert out["lines"][0] == "not ready after 0.0s: " + out["reason"], out["lines"][0]
    dyn = _cluster()
    _workload_pods(dyn, unschedulable=True)
    out = run_stage(client(dyn), params(stage="ready"))
    assert out["reason"].startswith("scheduling: 6"), out["reason"]
    assert "not scheduled: 0/2 nodes are available" in out["waiting"][0]


def test_wait_ready_asks_again_until_its_timeout_inside_one_call():
    """Without a sleep of its own: a fake clock that moves by each sleep; asked at 0, 5, 10 s with a 12 s timeout
    (a fourth look at 15 s would pass the timeout), the answer quotes what was still missing."""
    dyn = _cluster()
    planned = _workload_pods(dyn, waiting_reason="ErrImagePull")
    now, slept = [0.0], []

    def sleep(seconds):
        slept.append(seconds)
        now[0] += seconds

    state = wait_ready(client(dyn), params(stage="ready", wait_timeout=12, poll_interval=5), planned_layout(dyn),
                       sleep=sleep, clock=lambda: now[0])
    assert planned["nodes"] == ["n1", "n2"]
    assert slept == [5, 5] and state["waited"] == 10 and state["ready"] is False
    assert state["reason"].startswith("image pull: 6")
    state = wait_ready(client(dyn), params(stage="ready", wait_timeout=0), planned_layout(dyn),
                       sleep=sleep, clock=lambda: now[0])
    assert slept == [5, 5], "wait_timeout 0 looks once"


def planned_layout(_dyn):
    """The layout of ``_cluster``'s two nodes (as the plan stage makes it)."""
    return rules.layout([node("n1", ip="10.0.0.1"), node("n2", ip="10.0.0.2", labels={"pool": "b"})])


def test_the_wait_options_are_checked_by_the_shared_wait_rule():
    with pytest.raises(ConnectivityError, match="poll_interval is 0: give whole seconds, at least 1"):
        validate(params(stage="ready", poll_interval=0))


def _ready_workload(dyn):
    """Every pod of the workload Running and Ready with an address, and its two Services (as the API server has them
    once the workload is up); returns pod IP -> pod name."""
    planned = run_stage(client(dyn), params(stage="plan"))
    names = {}
    for i, doc in enumerate(d for d in planned["manifests"] if d["kind"] == "Pod"):
        names["10.244.0.%d" % (i + 10)] = doc["metadata"]["name"]
        dyn.put("v1", "pods", dict(doc, status={"phase": "Running", "podIP": "10.244.0.%d" % (i + 10),
                                                "conditions": [{"type": "Ready", "status": "True"}]}))
    ns = rules.DEFAULT_NAMESPACE
    dyn.add_type("v1", "services", "Service")
    dyn.put("v1", "services", {"metadata": {"name": "server", "namespace": ns},
                               "spec": {"clusterIP": "10.96.0.50", "ports": [{"port": 80}]}})
    dyn.put("v1", "services", {"metadata": {"name": "server-nodeport", "namespace": ns},
                               "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30500}]}})
    return names


def test_with_serving_the_ready_stage_dials_each_target_of_the_prober_and_names_those_not_served(monkeypatch):
    """The host pods reach their client pods (the workload is ready), but nothing answers the ClusterIP nor the
    NodePort: without ``serving`` the workload counts as ready; with it, each of the prober's four targets is dialled
    once and each that does not answer is named with what its dial met (agnhost's own error), kind ``not served``.
    The API server's pod proxy is stood in here (agnhost's /dial answers); the real path: test_switch_under_traffic."""
    from ansible_collections.calico_ops.lifecycle.plugins.module_utils.connectivity import runner
    dyn = _cluster()
    names = _ready_workload(dyn)
    asked = []

    def answer(host, port):
        if host == "10.96.0.50" or port == "30500":
            return {"errors": ["dial tcp %s:%s: i/o timeout" % (host, port)]}
        return {"responses": [names[host]]}

    def proxy(_client, _namespace, pod, _port, query, path="dial"):
        asked.append(pod)
        if query["request"].startswith("dial?"):  # a host pod asked to have its client pod dial
            inner = dict(parse_qsl(query["request"].split("?", 1)[1]))
            return json.dumps({"responses": [json.dumps(answer(inner["host"], inner["port"]))]})
        return json.dumps(answer(query["host"], query["port"]))
    monkeypatch.setattr(runner, "_proxy", proxy)
    assert run_stage(client(dyn), params(stage="ready"))["ready"] is True
    hops = len(asked)
    out = run_stage(client(dyn), params(stage="ready", serving=True))
    assert len(asked) == 2 * hops + 4, asked  # the host pods' hops, then the prober's four targets once each
    assert out["ready"] is False
    assert sorted(w.split(":")[0] for w in out["waiting"]) == [
        "host_to_nodeport n1 -> n2", "pod_to_nodeport n1 -> n2", "pod_to_service n1 -> ClusterIP 10.96.0.50"]
    assert out["reason"].startswith("not served: 3 (first: "), out["reason"]
    assert "i/o timeout" in out["reason"]
