"""connectivity/rules.py (module connectivity_info, role connectivity): what is deployed, which pairs are dialled and
how, how an answer is read, the tables and the prober's figures. The dials themselves run against the real data
plane (tests/integration/test_dataplane.py, test_switch_under_traffic.py)."""

import json

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.connectivity import rules


try:
    from urllib.parse import parse_qs
except ImportError:  # pragma: no cover
    from urlparse import parse_qs


def node(name, ready=True, ip="10.0.0.1", labels=None):
    return {"metadata": {"name": name, "labels": dict({"kubernetes.io/os": "linux"}, **(labels or {}))},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                       "message": "kubelet stopped posting"}],
                       "addresses": [{"type": "InternalIP", "address": ip}] if ip else []}}


def test_a_selector_that_matches_no_ready_node_fails_naming_it_and_what_it_found():
    nodes = [node("a", labels={"role": "x"}), node("b", ready=False, labels={"role": "y"})]
    selected, skipped, problem = rules.select_nodes(nodes, {"role": "y"}, prefix="connectivity_")
    assert selected == [] and skipped == ["b: not Ready (kubelet stopped posting)"]
    assert problem.startswith('connectivity_node_selector {"role": "y"} matches no Ready Linux node (2 nodes, 1')
    selected, skipped, problem = rules.select_nodes(nodes + [node("c")], {}, max_nodes=1)
    assert [n["metadata"]["name"] for n in selected] == ["a"] and problem is None
    assert skipped == ["b: not Ready (kubelet stopped posting)", "c: beyond max_nodes (1)"]


def test_the_workload_is_three_pods_per_node_and_two_services_in_its_own_namespace():
    pods = rules.layout([node("node-1", ip="10.0.0.1"), node("Node.Two", ip="10.0.0.2"), node("x" * 70, ip="1.1.1.1")])
    assert [p["server"] for p in pods] == ["server-node-1", "server-node.two", "server-2"]
    docs = rules.manifests("probe", pods, "img", 8080, 8083, node_port=30500, service_port=8081)
    kinds = [d["kind"] for d in docs]
    assert kinds == ["Namespace"] + ["Pod"] * 9 + ["Service", "Service"]
    assert docs[0]["metadata"]["labels"][rules.PART_OF] == rules.PART_OF_VALUE
    host = next(d for d in docs if d["metadata"]["name"] == "host-node-1")
    assert host["spec"]["hostNetwork"] is True and host["spec"]["nodeName"] == "node-1"
    assert host["spec"]["containers"][0]["args"] == ["netexec", "--http-port=8083", "--udp-port=-1"]
    server = next(d for d in docs if d["metadata"]["name"] == "server-node-1")
    assert "hostNetwork" not in server["spec"] and server["spec"]["automountServiceAccountToken"] is False
    assert server["spec"]["tolerations"] == [{"operator": "Exists"}]
    # the Services' port apart from the direct one (Calico's eBPF conntrack, rules._pod says why)
    assert [c["args"][1] for c in server["spec"]["containers"]] == ["--http-port=8080", "--http-port=8081"]
    client = next(d for d in docs if d["metadata"]["name"] == "client-node-1")
    assert [c["args"][1] for c in client["spec"]["containers"]] == ["--http-port=8080"]
    assert {d["spec"]["ports"][0]["targetPort"] for d in docs if d["kind"] == "Service"} == {8081}
    nodeport = docs[-1]
    assert nodeport["spec"]["type"] == "NodePort" and nodeport["spec"]["ports"][0]["nodePort"] == 30500
    assert "nodePort" not in rules.manifests("probe", pods, "img", 8080, 8083)[-1]["spec"]["ports"][0]
    policy = rules.deny_policy("probe")
    assert policy["spec"] == {"podSelector": {"matchLabels": {rules.ROLE_LABEL: "server"}}, "policyTypes": ["Ingress"]}


def _layout():
    pods = rules.layout([node("n1", ip="10.0.0.1"), node("n2", ip="10.0.0.2")])
    ips = {}
    for i, p in enumerate(pods):
        ips[p["server"]], ips[p["client"]], ips[p["host"]] = "192.168.%d.10" % i, "192.168.%d.11" % i, p["ip"]
    return pods, ips


def test_the_plan_dials_every_pair_from_the_pods_through_their_node_and_from_the_host_network():
    pods, ips = _layout()
    services = {"cluster_ip": "10.96.0.50", "node_port": 30500}
    jobs = rules.plan(list(rules.CHECKS), pods, ips, services, 8080, api_server=("10.96.0.1", 443),
                      dns_name="server.probe.svc.cluster.local")
    count = {c: len([j for j in jobs if j["check"] == c]) for c in rules.CHECKS}
    assert count == {"pod_to_pod": 4, "pod_to_service": 2, "pod_to_nodeport": 4, "host_to_nodeport": 4,
                     "pod_to_api_server": 2, "dns": 2, "network_policy": 0, "kube_proxy_absent": 0}
    p2p = next(j for j in jobs if j["check"] == "pod_to_pod" and j["from"] == "n1" and j["to"] == "n2")
    # asked of n1's host pod, which asks n1's client pod to dial n2's server pod
    assert p2p["via"] == "host-n1" and p2p["nested"] and p2p["expect"] == "server-n2"
    assert p2p["query"]["host"] == "192.168.0.11" and p2p["query"]["port"] == "8080"
    inner = parse_qs(p2p["query"]["request"].split("?", 1)[1])
    assert inner["host"] == ["192.168.1.10"] and inner["port"] == ["8080"] and inner["request"] == ["hostname"]
    host = next(j for j in jobs if j["check"] == "host_to_nodeport" and j["to"] == "n2")
    assert not host["nested"] and host["query"]["host"] == "10.0.0.2" and host["query"]["port"] == "30500"
    assert not rules.plan(["dns"], pods, ips, services, 8080, dns_name=None)  # no DNS: no dial


def test_an_answer_is_read_as_ok_failed_or_unreached():
    job = {"via": "host-n1", "from": "n1", "nested": True, "expect": "server-n2"}

    def nested(inner):
        return json.dumps({"responses": [json.dumps(inner)]})

    assert rules.read_answer(job, nested({"responses": ["server-n2"]})) == ("ok", "server-n2")
    assert rules.read_answer(job, nested({"responses": ["server-n1"]}))[0] == "failed"
    assert rules.read_answer(job, nested({"errors": ["dial tcp: i/o timeout"]})) == ("failed", "dial tcp: i/o timeout")
    outcome, detail = rules.read_answer(job, json.dumps({"errors": ["connection refused"]}))
    assert outcome == "unreached" and "client pod" in detail
    outcome, detail = rules.read_answer(job, error=Exception("pods host-n1: 503 Service Unavailable"))
    assert outcome == "unreached" and "proxy to pod host-n1" in detail
    api = dict(job, nested=False, expect=rules.HTTPS_ANSWER)
    assert rules.read_answer(api, json.dumps({"responses": ["Client sent an HTTP request to an HTTPS server.\n"]}))[0] == "ok"
    any_server = dict(job, nested=False, expect="server-*")
    assert rules.read_answer(any_server, json.dumps({"responses": ["server-n1"]}))[0] == "ok"


def test_tables_show_a_matrix_per_pair_check_and_name_each_failed_pair():
    rows = [{"check": "pod_to_pod", "from": a, "to": b, "outcome": "failed" if (a, b) == ("n1", "n2") else "ok",
             "detail": "timeout" if (a, b) == ("n1", "n2") else "server-" + b} for a in ("n1", "n2") for b in ("n1", "n2")]
    rows.append({"check": "pod_to_service", "from": "n1", "to": "ClusterIP 10.96.0.50", "outcome": "ok",
                 "detail": "server-n2"})
    rows += rules.kube_proxy_rows({"n2": ["kube-proxy-abc"]}, [{"node": "n1"}, {"node": "n2"}], bpf=True)
    lines = rules.tables(rows)
    assert lines[0] == "pod_to_pod: 3/4 ok"
    assert lines[2].split() == ["n1", "ok", "failed"]
    assert "  FAILED n1 -> n2: timeout" in lines
    assert rules.failures(rows) == ["pod_to_pod n1 -> n2: timeout",
                                    "kube_proxy_absent n2 -> -: kube-proxy pod kube-proxy-abc runs on it with eBPF"]
    assert rules.kube_proxy_rows({}, [{"node": "n1"}], bpf=False)[0]["outcome"] == "skipped"


def test_the_prober_figures_count_failures_gaps_and_unmeasured_attempts_apart():
    recs = [{"t": t, "target": "pod_to_pod", "outcome": o, "detail": "timeout" if o == "failed" else ""}
            for t, o in ((0, "ok"), (1, "failed"), (2, "failed"), (3, "unreached"), (4, "ok"), (5, "ok"))]
    recs.append({"t": 0, "target": "pod_to_service", "outcome": "ok", "detail": ""})
    recs.append({"t": 9, "target": "pod_to_service", "outcome": "failed", "detail": "refused"})
    s = rules.summarize(recs)
    assert s["pod_to_pod"] == {"attempted": 5, "failed": 2, "unmeasured": 1, "longest_gap_s": 4.0,
                               "errors": ["timeout"], "recovered": True}
    assert s["pod_to_service"]["recovered"] is False and s["pod_to_service"]["longest_gap_s"] == 9.0
    assert rules.disruption_lines(s)[1].split() == ["pod_to_pod", "5", "2", "1", "4.00", "yes"]
    pods, ips = _layout()
    targets = rules.probe_targets(pods, ips, {"cluster_ip": "10.96.0.50", "node_port": 30500}, 8080)
    assert sorted((t["target"], t["to"]) for t in targets) == [
        ("host_to_nodeport", "n2"), ("pod_to_nodeport", "n2"), ("pod_to_pod", "n2"),
        ("pod_to_service", "ClusterIP 10.96.0.50")]


def test_pod_problem_and_readiness_reason_name_what_keeps_the_workload():
    assert rules.pod_problem(["ImagePullBackOff"], unschedulable=False) == "image pull"
    assert rules.pod_problem(["ErrImagePull", "ContainerCreating"], unschedulable=True) == "image pull"
    assert rules.pod_problem([], unschedulable=True) == "scheduling"
    assert rules.pod_problem(["ContainerCreating"], unschedulable=False) == "not ready"
    assert rules.readiness_reason([], []) == ""
    kinds = ["no answer", "image pull", "no answer"]
    waiting = ["host pod a on n1 to client pod b: timed out", "pod x", "host pod c"]
    assert rules.readiness_reason(kinds, waiting) == (
        "image pull: 1, no answer: 2 (first: host pod a on n1 to client pod b: timed out)")
