"""calico/rollout.py, the rollout rules: DaemonSet, its pods (READY 1/2 accepted with etcd only), Deployments."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import rollout


def ds(generation=2, observed=2, desired=3, updated=3, available=3, ready=3, unavailable=0, conditions=None):
    return {"metadata": {"name": "calico-node", "namespace": "kube-system", "uid": "ds-uid",
                         "generation": generation},
            "spec": {"selector": {"matchLabels": {"k8s-app": "calico-node"}}},
            "status": {"observedGeneration": observed, "desiredNumberScheduled": desired,
                       "updatedNumberScheduled": updated, "numberAvailable": available, "numberReady": ready,
                       "numberUnavailable": unavailable, "conditions": conditions or []}}


def pod(name, ready=(True,), phase="Running", generation=2, terminating=False, owner="ds-uid", revision=None):
    meta = {"name": name, "labels": {"pod-template-generation": str(generation)},
            "ownerReferences": [{"uid": owner, "controller": True}]}
    if revision:
        meta["labels"]["controller-revision-hash"] = revision
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


def test_a_template_changed_back_counts_the_pods_of_that_revision_current_as_the_controller_does():
    """Seen on the real data plane (2026-12-06): calico-node's template changed (generation 2, revision b), one pod
    replaced, then changed back (generation 3, the first template again: revision a). The controller replaced the
    pod of revision b and left the two of revision a, created at generation 1: all three are up to date."""
    pods = [pod("a1", generation=1, revision="a"), pod("a2", generation=1, revision="a"),
            pod("a3", generation=3, revision="a")]
    current, stale = rollout.current_pods(ds(generation=3, observed=3), pods)
    assert [p["metadata"]["name"] for p in current] == ["a1", "a2", "a3"] and stale == []
    assert rollout.daemonset_state(ds(generation=3, observed=3), pods)[0] is True
    # while the pod of revision b is still there, it alone is stale
    pods = [pod("a1", generation=1, revision="a"), pod("a2", generation=1, revision="a"),
            pod("b3", generation=2, revision="b"), pod("a4", generation=3, revision="a")]
    current, stale = rollout.current_pods(ds(generation=3, observed=3, desired=4, updated=3), pods)
    assert [p["metadata"]["name"] for p in stale] == ["b3"]


def test_a_template_changed_back_before_any_pod_was_replaced_is_rolled_out_by_the_controllers_count():
    """Changed and changed back before the controller replaced a pod: no pod carries the new generation; the
    controller counts every pod updated (their hash is the current revision's), and so does the rollout."""
    pods = [pod("a%d" % i, generation=1, revision="a") for i in range(3)]
    assert rollout.daemonset_state(ds(generation=3, observed=3), pods)[0] is True
    # not before the controller has seen the generation, nor while it counts pods to update
    assert rollout.current_pods(ds(generation=3, observed=2), pods)[0] == []
    assert rollout.current_pods(ds(generation=3, observed=3, updated=2), pods)[0] == []


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


# -- why a pod is not ready, in its own words; the template carrying a rendered change; the stuck pods' logs ---------

def stuck(name="calico-node-x", node="node-1"):
    """A calico-node pod as the kubelet shows one that cannot start: restarting, its last run failed."""
    p = pod(name, ready=(False,))
    p["spec"]["nodeName"] = node
    p["spec"]["containers"] = [{"name": "calico-node"}]
    p["status"]["containerStatuses"] = [{
        "name": "calico-node", "ready": False, "restartCount": 4,
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s restarting failed container"}},
        "lastState": {"terminated": {"reason": "Error", "exitCode": 1}}}]
    p["status"]["conditions"] = [{"type": "Ready", "status": "False", "reason": "ContainersNotReady",
                                  "message": "containers with unready status: [calico-node]"}]
    return p


def test_a_stuck_pod_is_quoted_with_its_reasons_and_its_log_line():
    ok, text = rollout.pod_state(stuck(), log_line="lookup api.example.invalid on 127.0.0.1:53: connection refused")
    assert not ok
    assert text.startswith("calico-node-x Running 0/1 (not ready: calico-node) on node-1 - calico-node waiting "
                           "CrashLoopBackOff: back-off 40s restarting failed container, last exit Error (code 1), "
                           "4 restarts; Ready=False: containers with unready status: [calico-node]; last log line: "
                           "lookup api.example.invalid on 127.0.0.1:53: connection refused"), text


def test_a_pending_pod_names_its_waiting_init_container():
    p = pod("p", ready=(False,), phase="Pending")
    p["status"]["initContainerStatuses"] = [{"name": "install-cni", "ready": False,
                                             "state": {"waiting": {"reason": "ImagePullBackOff"}}}]
    ok, text = rollout.pod_state(p)
    assert not ok and "install-cni waiting ImagePullBackOff" in text


@pytest.mark.parametrize("text, line", [
    ("", None),
    ("starting\nready\n", "ready"),
    ("2026 [INFO] start\n2026 [ERROR] lookup api.x on 127.0.0.1:53: no such host\n2026 [INFO] retrying\n",
     "2026 [ERROR] lookup api.x on 127.0.0.1:53: no such host"),
])
def test_the_telling_line_of_a_log(text, line):
    assert rollout.telling_line(text) == line


def test_a_long_log_line_is_cut():
    assert len(rollout.telling_line("error " + "x" * 500)) == 300


def with_env(d, **env):
    d["spec"] = dict(d.get("spec") or {}, template={"spec": {"containers": [{"name": "calico-node", "env": [
        {"name": k, "value": v} for k, v in env.items()]}]}})
    return d


def test_a_template_without_the_rendered_values_is_not_rolled_out():
    pods = [pod("calico-node-%d" % i) for i in range(3)]
    old = with_env(ds(), KUBERNETES_SERVICE_HOST="10.0.0.1", KUBERNETES_SERVICE_PORT="6443")
    want = {"KUBERNETES_SERVICE_HOST": "api.example.com", "KUBERNETES_SERVICE_PORT": "6443"}
    done, _line, problems = rollout.daemonset_state(old, pods, container="calico-node", env=want)
    assert not done
    assert problems[0] == ("the template's container calico-node does not carry KUBERNETES_SERVICE_HOST=api.example.com "
                           "(it has 10.0.0.1) yet: the change is not rendered into it"), problems
    new = with_env(ds(), KUBERNETES_SERVICE_HOST="api.example.com", KUBERNETES_SERVICE_PORT="6443")
    assert rollout.daemonset_state(new, pods, container="calico-node", env=want)[0] is True
    assert rollout.template_problem(new, "calico-node", {}) is None


class LogClient(object):
    """GET of the DaemonSet, LIST of its pods, the pods' logs (a 400 for a container that has not started)."""

    def __init__(self, ds_obj, pods, logs):
        self.ds, self.pods, self.logs, self.paths = ds_obj, pods, logs, []

    def get(self, api_version, plural, name, namespace=None):
        return self.ds if plural == "daemonsets" else None

    def list(self, api_version, plural, namespace=None, label_selector=None):
        return self.pods

    def text(self, path, query=None):
        self.paths.append((path, dict(query or {})))
        name = path.split("/")[-2]
        if name not in self.logs:
            from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.errors import ClientError
            raise ClientError("pods %s: 400 Bad Request: container is waiting to start" % name, status=400)
        return self.logs[name]


def test_read_quotes_the_log_of_the_stuck_pods_only():
    pods = [pod("calico-node-0"), stuck("calico-node-1"), stuck("calico-node-2", node="node-2")]
    c = LogClient(ds(), pods, {"calico-node-1": "start\n[ERROR] lookup api.x on 127.0.0.1:53: refused\n"})
    out = rollout.read(c, "calico-system", "calico-node", log_lines=20)
    assert not out["ready"] and out["found"] is True
    assert [p for p, _q in c.paths] == ["/api/v1/namespaces/calico-system/pods/calico-node-1/log",
                                        "/api/v1/namespaces/calico-system/pods/calico-node-2/log"]
    assert c.paths[0][1] == {"container": "calico-node", "tailLines": 20}
    assert "last log line: [ERROR] lookup api.x on 127.0.0.1:53: refused" in out["message"]
    assert "calico-node-2 Running 0/1 (not ready: calico-node) on node-2 - calico-node waiting" in out["message"]
    quiet = LogClient(ds(), pods, {})
    rollout.read(quiet, "calico-system", "calico-node")
    assert quiet.paths == []  # no log_lines: no log read


def test_read_an_absent_daemonset_is_nothing_to_wait_for_when_allowed():
    out = rollout.read(LogClient(None, [], {}), "calico-system", "calico-node", absent_ok=True)
    assert out["ready"] is True and out["found"] is False and "nothing to wait for" in out["message"]
    out = rollout.read(LogClient(None, [], {}), "calico-system", "calico-node")
    assert out["ready"] is False and out["found"] is False


class _Reads:
    """A workload whose reads answer ``states`` in turn (the last one for ever), counting the log reads."""

    def __init__(self, *states):
        self.states, self.calls, self.now = list(states), [], 0.0

    def once(self, log_lines):
        self.calls.append(log_lines)
        ready = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        return {"ready": ready, "message": "with logs" if log_lines else "no logs"}

    def sleep(self, seconds):
        self.now += seconds

    def clock(self):
        return self.now


def test_watch_reads_the_logs_once_after_the_wait_not_on_every_poll():
    reads = _Reads(False)
    result = rollout.watch(reads.once, wait=True, wait_timeout=30, poll_interval=10, log_lines=50,
                           sleep=reads.sleep, clock=reads.clock)
    assert reads.calls == [0, 0, 0, 0, 50]  # polls at 0, 10, 20 and 30 s without logs, then one read with them
    assert result == {"ready": False, "message": "with logs", "waited": 30.0, "polls": 4}


def test_watch_that_rolls_out_reads_no_log():
    reads = _Reads(False, True)
    result = rollout.watch(reads.once, wait=True, wait_timeout=30, poll_interval=10, log_lines=50,
                           sleep=reads.sleep, clock=reads.clock)
    assert reads.calls == [0, 0] and result["ready"] is True and result["polls"] == 2


def test_a_hold_that_broke_stays_broken_when_the_log_read_finds_it_ready_again():
    reads = _Reads(True, False, True)
    result = rollout.watch(reads.once, hold=60, poll_interval=10, log_lines=50, sleep=reads.sleep,
                           clock=reads.clock)
    assert reads.calls == [0, 0, 50]
    assert result["ready"] is False and result["message"] == "no logs" and result["waited"] == 10.0


def test_watch_without_wait_reads_once():
    reads = _Reads(False)
    result = rollout.watch(reads.once, sleep=reads.sleep, clock=reads.clock)
    assert reads.calls == [0] and result["polls"] == 1 and result["waited"] == 0.0


class FelixClient(LogClient):
    """LogClient with FelixConfiguration default (None: not created yet)."""

    def __init__(self, ds_obj, pods, felix):
        super(FelixClient, self).__init__(ds_obj, pods, {})
        self.felix = felix

    def get(self, api_version, plural, name, namespace=None):
        if plural == "felixconfigurations":
            assert (api_version, name) == ("crd.projectcalico.org/v1", "default")
            return self.felix
        return super(FelixClient, self).get(api_version, plural, name, namespace)


def test_felix_bpf_waits_for_the_operators_switch_either_way_it_makes_it():
    """Operators v1.36 and later set FelixConfiguration default bpfEnabled; before, FELIX_BPFENABLED in calico-node's
    environment. Until one of them says true, a rolled-out calico-node is not done, naming what each shows."""
    pods = [pod("calico-node-%d" % i) for i in range(3)]
    rolled = with_env(ds(), FELIX_BPFENABLED="false")
    out = rollout.read(FelixClient(rolled, pods, {"spec": {"bpfEnabled": False}}), "calico-system", "calico-node",
                       felix_bpf=True)
    assert out["ready"] is False
    assert out["problems"] == ["DaemonSet calico-system/calico-node: Felix not switched to eBPF yet: "
                               "FelixConfiguration default has spec.bpfEnabled False, and container calico-node "
                               "carries FELIX_BPFENABLED=false"], out["problems"]
    assert out["message"] == out["problems"][0]
    none = rollout.read(FelixClient(ds(), pods, None), "calico-system", "calico-node", felix_bpf=True)
    assert none["problems"][0].endswith("FelixConfiguration default has not been created, and container "
                                        "calico-node carries no FELIX_BPFENABLED"), none["problems"]
    assert rollout.read(FelixClient(ds(), pods, {"spec": {"bpfEnabled": True}}), "calico-system", "calico-node",
                        felix_bpf=True)["ready"] is True
    assert rollout.read(FelixClient(with_env(ds(), FELIX_BPFENABLED="true"), pods, {"spec": {}}), "calico-system",
                        "calico-node", felix_bpf=True)["ready"] is True
    # without felix_bpf FelixConfiguration is not read
    assert rollout.read(FelixClient(rolled, pods, {"spec": {"bpfEnabled": False}}), "calico-system",
                        "calico-node")["ready"] is True
