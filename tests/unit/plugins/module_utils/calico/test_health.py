"""calico/health.py (calico_health_info, the fleet rollout's gate) behind the real ``Client`` over a read-only in-memory
transport: each check in the cluster's own words, what each job leaves, and a cluster that cannot be read."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import health
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import FirstContactFailed

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.read_only_transport import Transport, client

TS = "/apis/operator.tigera.io/v1/tigerastatuses"
INSTALLATION = "/apis/operator.tigera.io/v1/installations/default"
CALICO_NODE = "/apis/apps/v1/namespaces/calico-system/daemonsets/calico-node"
KUBE_PROXY = "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy"


def tigerastatus(name, available="True", degraded="False"):
    return {"metadata": {"name": name}, "status": {"conditions": [
        {"type": "Available", "status": available}, {"type": "Progressing", "status": "False"},
        {"type": "Degraded", "status": degraded, "reason": "PodFailure" if degraded == "True" else "",
         "message": "calico-node-x not ready" if degraded == "True" else ""}]}}


def daemonset(namespace, name, desired=0, available=0, labels=None):
    return {"metadata": {"name": name, "namespace": namespace, "generation": 1},
            "spec": {"selector": {"matchLabels": dict(labels or {"k8s-app": name})}},
            "status": {"desiredNumberScheduled": desired, "currentNumberScheduled": desired,
                       "updatedNumberScheduled": desired, "numberReady": available, "numberAvailable": available,
                       "numberUnavailable": desired - available, "observedGeneration": 1}}


def cluster(plane="BPF", kube_proxy_desired=0, calico_available=0, calico_desired=0, statuses=("calico",)):
    objects = {TS + "/" + n: tigerastatus(n) for n in statuses}
    objects[INSTALLATION] = {"metadata": {"name": "default", "generation": 1},
                             "spec": {"calicoNetwork": {"linuxDataplane": plane}}}
    objects[CALICO_NODE] = daemonset("calico-system", "calico-node", calico_desired, calico_available)
    objects[KUBE_PROXY] = daemonset("kube-system", "kube-proxy", kube_proxy_desired, kube_proxy_desired)
    for i in range(kube_proxy_desired):  # kube-proxy's pods, running
        objects["/api/v1/namespaces/kube-system/pods/kube-proxy-%d" % i] = {
            "metadata": {"name": "kube-proxy-%d" % i, "labels": {"k8s-app": "kube-proxy"}}}
    return objects


def settings(job="enable_ebpf", **over):
    dataplane, kube_proxy = health.expected(job, over.pop("dataplane", None), over.pop("kube_proxy", None))
    out = {"tigerastatus": ["calico"], "calico_node_namespace": "calico-system", "calico_node_daemonset": "calico-node",
           "installation": "default", "kube_proxy_namespace": "kube-system", "kube_proxy_daemonset": "kube-proxy",
           "dataplane": dataplane, "kube_proxy": kube_proxy, "version": ""}
    out.update(over)
    return out


def test_what_each_job_leaves():
    assert health.expected("install_ebpf") == ("BPF", "disabled") == health.expected("enable_ebpf")
    assert health.expected("disable_ebpf") == ("Iptables", "enabled")
    assert health.expected("upgrade") == ("", "") == health.expected(None)
    assert health.expected("enable_ebpf", dataplane="", kube_proxy="enabled") == ("", "enabled")


def test_a_healthy_cluster_after_enable_ebpf_passes_in_one_line():
    out = health.read(client(Transport(cluster())), settings())
    healthy = "healthy: TigeraStatus calico Available, calico-node rolled out, BPF, kube-proxy disabled"
    assert out == {"passed": True, "problems": [], "line": healthy}


def test_each_check_fails_in_the_clusters_words():
    objects = cluster(plane="Iptables", kube_proxy_desired=2, calico_desired=2, calico_available=1,
                      statuses=("calico", "apiserver"))
    objects[TS + "/apiserver"] = tigerastatus("apiserver", available="False", degraded="True")
    out = health.read(client(Transport(objects)), settings(tigerastatus=["calico", "apiserver", "goldmane"]))
    assert not out["passed"]
    problems = out["problems"]
    assert problems[0] == ("TigeraStatus: goldmane not reported; apiserver: Degraded (PodFailure: calico-node-x not "
                           "ready)")
    assert problems[1].startswith("calico-node: ") and "1 of 2 pods available" in problems[1]
    assert problems[2] == "Installation default has linuxDataplane Iptables, not BPF"
    assert problems[3].startswith("kube-proxy not disabled: DaemonSet kube-system/kube-proxy: desired 2")
    assert out["line"] == "; ".join(problems)


def test_after_disable_ebpf_kube_proxy_must_be_back_and_the_plane_iptables():
    assert health.read(client(Transport(cluster(plane="Iptables", kube_proxy_desired=2))),
                       settings("disable_ebpf"))["passed"] is True
    out = health.read(client(Transport(cluster(plane="Iptables", kube_proxy_desired=0))), settings("disable_ebpf"))
    assert out["passed"] is True  # none desired is a full DaemonSet too
    objects = cluster(plane="Iptables")
    del objects[INSTALLATION]
    assert health.read(client(Transport(objects)), settings("disable_ebpf"))["problems"] == [
        "Installation default not found"]


def test_no_kube_proxy_daemonset_is_disabled_and_nothing_is_checked_after_an_upgrade():
    objects = cluster()
    del objects[KUBE_PROXY]
    assert health.read(client(Transport(objects)), settings())["passed"] is True
    out = health.read(client(Transport(cluster(plane="Iptables", kube_proxy_desired=3))), settings("upgrade"))
    healthy = "healthy: TigeraStatus calico Available, calico-node rolled out"
    assert out == {"passed": True, "problems": [], "line": healthy}


def test_the_version_after_an_upgrade(monkeypatch):
    monkeypatch.setattr(health.calico_facts, "run", lambda c, params: {"facts": {"version": "v3.29.7"}})
    out = health.read(client(Transport(cluster())), settings("upgrade", version="v3.31.4"))
    assert out["problems"] == ["Calico version v3.29.7, not v3.31.4"]
    monkeypatch.setattr(health.calico_facts, "run", lambda c, params: {"facts": {"version": "v3.31.4"}})
    assert health.read(client(Transport(cluster())), settings("upgrade", version="v3.31.4"))["passed"] is True


def test_a_cluster_that_does_not_answer_is_one_problem():
    class Refused(Transport):
        def request(self, method, path, body=None, **params):
            raise ConnectionRefusedError(111, "Connection refused")

    out = health.read(client(Refused()), settings())  # the client makes it a ClientError (status 0)
    assert not out["passed"] and len(out["problems"]) == 1
    assert out["problems"][0].startswith("reading the cluster: ") and "not reached" in out["problems"][0]


def test_a_first_contact_that_fails_is_one_problem(monkeypatch):
    def refused(c, expected=()):
        raise FirstContactFailed(ConnectionRefusedError(111, "Connection refused"))

    monkeypatch.setattr(health.tigerastatus, "read", refused)
    out = health.read(client(Transport(cluster())), settings())
    assert len(out["problems"]) == 1 and out["problems"][0].startswith("reading the cluster: ")


@pytest.mark.parametrize("job", ["install_ebpf", "enable_ebpf", "disable_ebpf", "upgrade"])
def test_the_module_choices_are_the_jobs(job):
    assert job in health.EXPECTED
