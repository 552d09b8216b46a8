"""disable_ebpf.yml (role ebpf_rollback) against the real Tigera operator: an eBPF install taken back to Iptables.

An install on each of v3.31's two eBPF paths is made with install_ebpf.yml, then rolled back. The order is read from
the API server's audit log (the playbooks' identity, ``admin``): the kube-proxy DaemonSet's change, then reads of
it until its pods are ready, then the Installation's switch to Iptables; and every kube-proxy pod was Ready before
the switch was received. What the operator did afterwards is read from what it wrote: FelixConfiguration
bpfEnabled false, calico-node re-rendered for Iptables (its ebpf-bootstrap init container in best-effort mode),
TigeraStatus calico Available for the switched generation.

Uses test_install_ebpf.py's fixtures (a kubeadm-shaped control plane of this file's own: pytest-xdist runs it on a
worker of its own).
"""

import calendar
import json
import re
import time

import pytest

from test_install_ebpf import (_container, _env, _get, _maybe, _operator_writes, _ts_states, _vars,  # noqa: F401
                               calico_clean, op_ansible, operator_cluster)

pytestmark = pytest.mark.integration

OPERATOR_KEY = "operator.tigera.io/disable-kube-proxy"
CLEANUP_RECORD = "calico-ops.io/kube-proxy-iptables-cleanup-before"


def _rollback_vars(**extra):
    out = {"ebpf_rollback_platform": "kubeadm", "ebpf_rollback_timeout": 240, "ebpf_rollback_poll_interval": 5,
           "kube_proxy_timeout": 120, "kube_proxy_poll_interval": 5}
    out.update(extra)
    return out


def _install(cluster, op_ansible, tmp_path, **extra):
    res = op_ansible.playbook("playbooks/install_ebpf.yml", _vars(
        cluster, tmp_path, ebpf_install_apiserver=False, ebpf_install_goldmane=False, ebpf_install_whisker=False,
        **extra))
    assert res.rc == 0, res.stdout[-5000:] + res.stderr[-2000:]
    assert _get(cluster, "installation", "default")["spec"]["calicoNetwork"]["linuxDataplane"] == "BPF"
    assert _get(cluster, "felixconfiguration", "default")["spec"]["bpfEnabled"] is True


def _ts(value):
    """An audit or object timestamp (RFC 3339, UTC) as seconds since the epoch."""
    base, _, frac = value.rstrip("Z").partition(".")
    return calendar.timegm(time.strptime(base, "%Y-%m-%dT%H:%M:%S")) + (float("0." + frac) if frac else 0.0)


def _steps(cluster, mark):
    """The admin's requests since ``mark`` (server-side dry runs left out), in order."""
    return [e for e in cluster.audit.events_since(mark) if "dryRun=" not in (e.get("requestURI") or "")]


def _index(events, verb, resource, name, start=0):
    for i, e in enumerate(events[start:], start):
        ref = e.get("objectRef") or {}
        if e["verb"] == verb and ref.get("resource") == resource and ref.get("name") == name \
                and not ref.get("subresource"):
            return i
    raise AssertionError("no %s of %s/%s after request %d: %s" % (verb, resource, name, start, [
        (e["verb"], (e.get("objectRef") or {}).get("resource"), (e.get("objectRef") or {}).get("name"))
        for e in events]))


def _bootstrap_command(cluster):
    node = _get(cluster, "daemonset", "calico-node", "-n", "calico-system")
    return _container(node, "ebpf-bootstrap", init=True)["command"]


def _assert_kube_proxy_ready_before(cluster, switch_time):
    """Every kube-proxy pod, one per node, was Ready before the switch was received."""
    ds = _get(cluster, "daemonset", "kube-proxy", "-n", "kube-system")
    nodes = _get(cluster, "nodes")["items"]
    assert ds["status"]["desiredNumberScheduled"] == ds["status"]["numberReady"] == len(nodes) > 0, ds["status"]
    pods = _get(cluster, "pods", "-n", "kube-system", "-l", "k8s-app=kube-proxy")["items"]
    assert sorted(p["spec"]["nodeName"] for p in pods) == sorted(n["metadata"]["name"] for n in nodes)
    for pod in pods:
        ready = next(c for c in pod["status"]["conditions"] if c["type"] == "Ready")
        assert ready["status"] == "True", pod["status"]
        # lastTransitionTime has whole seconds: Ready at most within the second the switch was received
        assert _ts(ready["lastTransitionTime"]) <= switch_time, (pod["metadata"]["name"], ready, switch_time)


def test_rollback_on_the_configmap_path_kube_proxy_first_then_iptables(calico_clean, op_ansible, tmp_path):
    cluster = calico_clean
    # nothing to roll back without an Installation; bad input; both before any write
    mark = cluster.audit.mark()
    res = op_ansible.playbook("playbooks/disable_ebpf.yml", _rollback_vars(), callback="default")
    assert res.rc != 0 and "No Installation 'default'" in res.stdout, res.stdout[-3000:]
    res = op_ansible.playbook("playbooks/disable_ebpf.yml", _rollback_vars(ebpf_rollback_services_endpoint="delete"),
                              callback="default")
    assert res.rc != 0 and "ebpf_rollback_services_endpoint" in res.stdout and "keep, remove" in res.stdout, \
        res.stdout[-3000:]
    assert "Traceback" not in res.stdout + res.stderr
    assert cluster.audit.writes_since(mark) == []

    _install(cluster, op_ansible, tmp_path)
    ds = _get(cluster, "daemonset", "kube-proxy", "-n", "kube-system")
    assert ds["spec"]["template"]["spec"]["nodeSelector"]["non-calico"] == "true"
    assert "-best-effort" not in _bootstrap_command(cluster)

    # bpfEnabled set by someone else: the operator would refuse to turn it off, so the rollback refuses first
    cluster.kubectl("annotate", "felixconfiguration", "default", "operator.tigera.io/bpfEnabled=false", "--overwrite")
    mark = cluster.audit.mark()
    res = op_ansible.playbook("playbooks/disable_ebpf.yml", _rollback_vars(), callback="default")
    assert res.rc != 0 and "someone other than the operator set" in res.stdout, res.stdout[-3000:]
    assert cluster.audit.writes_since(mark) == []
    cluster.kubectl("annotate", "felixconfiguration", "default", "operator.tigera.io/bpfEnabled=true", "--overwrite")

    # check mode: the plan (the Installation's diff), nothing written
    mark = cluster.audit.mark()
    preview = op_ansible.playbook("playbooks/disable_ebpf.yml", _rollback_vars(), check=True, diff=True,
                                  callback="default")
    assert preview.rc == 0, preview.stdout[-4000:]
    assert cluster.audit.writes_since(mark) == []
    diff_lines = [line.replace(" ", "").rstrip(",") for line in preview.stdout.splitlines()]
    assert '-"linuxDataplane":"BPF"' in diff_lines and '+"linuxDataplane":"Iptables"' in diff_lines, \
        preview.stdout[-4000:]

    mark = cluster.audit.mark()
    res = op_ansible.playbook("playbooks/disable_ebpf.yml", _rollback_vars(), callback="default")
    assert res.rc == 0, res.stdout[-5000:] + res.stderr[-2000:]
    assert "tigerastatus [" in res.stdout and "calico: Available" in res.stdout

    # the order, from the audit log: Felix told to keep kube-proxy's rules, kube-proxy's DaemonSet patched, read until
    # ready, then the switch; FelixConfiguration restored once calico-node rolled out off eBPF
    events = _steps(cluster, mark)
    writes = [e for e in events if e["verb"] in ("create", "update", "patch", "delete")]
    assert [(w["objectRef"]["resource"], w["objectRef"]["name"]) for w in writes] == [
        ("felixconfigurations", "default"), ("daemonsets", "kube-proxy"), ("installations", "default"),
        ("felixconfigurations", "default")], writes
    coexist = _index(events, "patch", "felixconfigurations", "default")
    ds_patch = _index(events, "patch", "daemonsets", "kube-proxy", coexist + 1)
    read = _index(events, "get", "daemonsets", "kube-proxy", ds_patch + 1)
    switch = _index(events, "patch", "installations", "default", read + 1)
    assert any(e["verb"] == "list" and e["objectRef"].get("resource") == "pods"
               and e["objectRef"].get("namespace") == "kube-system" for e in events[ds_patch:switch])
    _assert_kube_proxy_ready_before(cluster, _ts(events[switch]["requestReceivedTimestamp"]))

    # what the operator did with it
    inst = _get(cluster, "installation", "default")
    assert inst["spec"]["calicoNetwork"]["linuxDataplane"] == "Iptables"
    assert _get(cluster, "felixconfiguration", "default")["spec"].get("bpfEnabled") in (False, None)
    ts = _get(cluster, "tigerastatus", "calico")
    assert max(c.get("observedGeneration", 0) for c in ts["status"]["conditions"]) >= inst["metadata"]["generation"]
    assert _ts_states(cluster)["calico"] == {"Available": "True", "Progressing": "False", "Degraded": "False"}
    assert "-best-effort" in _bootstrap_command(cluster), "calico-node not re-rendered for Iptables"
    assert any(w["objectRef"].get("resource") == "felixconfigurations" for w in _operator_writes(cluster, mark))
    assert "non-calico" not in (_get(cluster, "daemonset", "kube-proxy", "-n", "kube-system")["spec"]["template"][
        "spec"].get("nodeSelector") or {})
    # the endpoint ConfigMap is kept by default
    cm = _get(cluster, "configmap", "kubernetes-services-endpoint", "-n", "tigera-operator")
    assert cm["data"]["KUBERNETES_SERVICE_HOST"] == "api.cluster.example"
    assert "FelixConfiguration default: bpfEnabled false" in res.stdout
    restore = _index(events, "patch", "felixconfigurations", "default", switch + 1)
    assert any(e["verb"] == "get" and (e.get("objectRef") or {}).get("resource") == "daemonsets"
               and (e.get("objectRef") or {}).get("name") == "calico-node" for e in events[switch:restore])
    felix = _get(cluster, "felixconfiguration", "default")
    assert "bpfKubeProxyIptablesCleanupEnabled" not in felix["spec"], felix["spec"]
    assert CLEANUP_RECORD not in (felix["metadata"].get("annotations") or {}), felix["metadata"]
    assert "bpfKubeProxyIptablesCleanupEnabled false while kube-proxy comes back (was unset): changed" in res.stdout
    assert "bpfKubeProxyIptablesCleanupEnabled restored" in res.stdout

    # a run that stopped after the switch, before the restore (the field false, its record on the object): the next
    # run has nothing to roll back and puts the recorded value back
    cluster.kubectl("patch", "felixconfiguration", "default", "--type", "merge", "-p", json.dumps({
        "metadata": {"annotations": {CLEANUP_RECORD: "true"}},
        "spec": {"bpfKubeProxyIptablesCleanupEnabled": False}}))
    mark = cluster.audit.mark()
    res = op_ansible.playbook("playbooks/disable_ebpf.yml", _rollback_vars(), callback="default")
    assert res.rc == 0 and "nothing to roll back" in res.stdout, res.stdout[-3000:]
    assert [(w["objectRef"]["resource"], w["objectRef"]["name"]) for w in cluster.audit.writes_since(mark)] == [
        ("felixconfigurations", "default")]
    felix = _get(cluster, "felixconfiguration", "default")
    assert felix["spec"]["bpfKubeProxyIptablesCleanupEnabled"] is True
    assert CLEANUP_RECORD not in (felix["metadata"].get("annotations") or {})
    cluster.kubectl("patch", "felixconfiguration", "default", "--type", "merge", "-p",
                    '{"spec": {"bpfKubeProxyIptablesCleanupEnabled": null}}')

    # a re-run: nothing to roll back, nothing written; check mode too
    mark = cluster.audit.mark()
    again = op_ansible.playbook("playbooks/disable_ebpf.yml", _rollback_vars(), callback="default")
    assert again.rc == 0 and "nothing to roll back" in again.stdout, again.stdout[-3000:]
    again = op_ansible.playbook("playbooks/disable_ebpf.yml", _rollback_vars())
    assert again.rc == 0 and again.changed() == 0, [t["task"] for t in again.tasks if t["result"].get("changed")]
    check = op_ansible.playbook("playbooks/disable_ebpf.yml", _rollback_vars(), check=True)
    assert check.rc == 0
    assert cluster.audit.writes_since(mark) == []

    # remove the ConfigMap on request: the operator is restarted and renders calico-node without that endpoint
    before = cluster.wait_for_process("tigera-operator", "v1.40.7", timeout=10)
    mark = cluster.audit.mark()
    res = op_ansible.playbook("playbooks/disable_ebpf.yml", _rollback_vars(ebpf_rollback_services_endpoint="remove"),
                              callback="default")
    assert res.rc == 0, res.stdout[-5000:]
    said = [line for line in res.stdout.splitlines() if "kubernetes-services-endpoint is removed" in line]
    assert said and "api.cluster.example" in said[0], res.stdout[-4000:]  # what was removed, said first
    assert _maybe(cluster, "configmap", "kubernetes-services-endpoint", "-n", "tigera-operator") is None
    assert {(w["verb"], w["objectRef"]["resource"]) for w in cluster.audit.writes_since(mark)} == {
        ("delete", "configmaps"), ("delete", "pods")}
    cluster.wait_for(lambda: any(p["pid"] and p["pod_uid"] != before["pod_uid"]
                                 for p in cluster.processes("tigera-operator")), timeout=60, what="a new operator")

    def rerendered():
        env = _env(_container(_get(cluster, "daemonset", "calico-node", "-n", "calico-system"), "calico-node"))
        return env.get("KUBERNETES_SERVICE_HOST") != "api.cluster.example"
    cluster.wait_for(rerendered, timeout=120, interval=2, what="calico-node rendered without the ConfigMap's endpoint")
    mark = cluster.audit.mark()
    again = op_ansible.playbook("playbooks/disable_ebpf.yml", _rollback_vars(ebpf_rollback_services_endpoint="remove"))
    assert again.rc == 0 and again.changed() == 0, [t["task"] for t in again.tasks if t["result"].get("changed")]
    assert cluster.audit.writes_since(mark) == []


def test_rollback_on_the_operator_path_takes_kube_proxy_back_from_the_operator(calico_clean, op_ansible, tmp_path):
    """kubeProxyManagement Enabled: the operator keeps its nodeSelector on kube-proxy while bpfEnabled is true and
    would remove it only after the switch. The rollback sets kubeProxyManagement Disabled first (the operator deletes
    TigeraStatus kubeproxy-monitor and stops touching kube-proxy), removes the operator's key itself, waits for
    kube-proxy's pods, then switches with bpfNetworkBootstrap Disabled (the operator refuses it with Iptables)."""
    cluster = calico_clean
    _install(cluster, op_ansible, tmp_path, ebpf_install_bootstrap="operator",
             ebpf_install_tigerastatus_expected=["calico", "kubeproxy-monitor"])
    ds = _get(cluster, "daemonset", "kube-proxy", "-n", "kube-system")
    assert ds["spec"]["template"]["spec"]["nodeSelector"].get(OPERATOR_KEY) == "true"

    mark = cluster.audit.mark()
    res = op_ansible.playbook("playbooks/disable_ebpf.yml", _rollback_vars(), callback="default")
    assert res.rc == 0, res.stdout[-5000:] + res.stderr[-2000:]
    events = _steps(cluster, mark)
    first = _index(events, "patch", "installations", "default")
    ds_patch = _index(events, "patch", "daemonsets", "kube-proxy", first + 1)
    switch = _index(events, "patch", "installations", "default", ds_patch + 1)
    assert _index(events, "get", "daemonsets", "kube-proxy", ds_patch + 1) < switch
    _assert_kube_proxy_ready_before(cluster, _ts(events[switch]["requestReceivedTimestamp"]))
    # the operator did not put its key back after we removed it
    late = [w for w in _operator_writes(cluster, mark, "daemonsets") if w["objectRef"].get("name") == "kube-proxy"]
    assert late == [], late

    net = _get(cluster, "installation", "default")["spec"]["calicoNetwork"]
    assert (net["linuxDataplane"], net["bpfNetworkBootstrap"], net["kubeProxyManagement"]) == (
        "Iptables", "Disabled", "Disabled"), net
    assert OPERATOR_KEY not in (_get(cluster, "daemonset", "kube-proxy", "-n", "kube-system")["spec"]["template"][
        "spec"].get("nodeSelector") or {})
    assert "kubeproxy-monitor" not in _ts_states(cluster)
    assert _ts_states(cluster)["calico"]["Available"] == "True"
    assert _get(cluster, "felixconfiguration", "default")["spec"].get("bpfEnabled") in (False, None)
    boot = _container(_get(cluster, "daemonset", "calico-node", "-n", "calico-system"), "ebpf-bootstrap", init=True)
    assert "-best-effort" in boot["command"] and "KUBERNETES_APISERVER_ENDPOINTS" not in _env(boot), boot

    mark = cluster.audit.mark()
    again = op_ansible.playbook("playbooks/disable_ebpf.yml", _rollback_vars())
    assert again.rc == 0 and again.changed() == 0, [t["task"] for t in again.tasks if t["result"].get("changed")]
    assert cluster.audit.writes_since(mark) == []


PROBE_NS = "calico-ops-connectivity"
# measurement and the check on, as a user runs the jobs; the probe workload's own short wait (the nodes here are
# kwok's: its pods run but carry no packet, so the API server's proxy gets no answer from them)
MEASURED = {"ebpf_rollback_measure_disruption": True, "ebpf_rollback_verify_connectivity": True,
            "ebpf_install_enable_measure_disruption": True, "ebpf_install_enable_verify_connectivity": True,
            "connectivity_probe_ready_timeout": 10, "connectivity_max_nodes": 2}


def _outside_the_probe(writes):
    """The writes that are not the probe workload's (its namespace, and what is in it)."""
    return [(w["verb"], w["objectRef"]["resource"], w["objectRef"].get("name")) for w in writes
            if w["objectRef"].get("namespace") != PROBE_NS and w["objectRef"].get("name") != PROBE_NS]


def test_the_way_back_never_waits_on_a_probe_workload_that_cannot_run(calico_clean, op_ansible, tmp_path):
    """Issue 51 on a cluster whose pods carry no packet (what a broken data plane looks like from the API server):
    disable_ebpf with its measurement and check on rolls back within the probe's short timeout, saying
    "disruption not measured" and "connectivity not checked" with the reason; enable_ebpf there is refused before
    any write of its own, naming the pods' reason and the variable that turns measurement off; a re-run of either
    job where it has nothing to change deploys no probe workload (no write at all); no probe namespace is left."""
    cluster = calico_clean
    _install(cluster, op_ansible, tmp_path)
    # as _install made it: no APIServer, Goldmane nor Whisker (enable_ebpf would wait for their TigeraStatus)
    enable = dict(_vars(cluster, tmp_path, ebpf_install_apiserver=False, ebpf_install_goldmane=False,
                        ebpf_install_whisker=False), **MEASURED)

    mark = cluster.audit.mark()
    res = op_ansible.playbook("playbooks/enable_ebpf.yml", enable)
    assert res.rc == 0 and res.changed() == 0, res.stdout[-3000:]
    assert cluster.audit.writes_since(mark) == [], "enable_ebpf at its end state deployed or wrote something"

    mark = cluster.audit.mark()
    started = time.monotonic()
    res = op_ansible.playbook("playbooks/disable_ebpf.yml", _rollback_vars(**MEASURED), callback="default")
    assert res.rc == 0, res.stdout[-5000:] + res.stderr[-2000:]
    assert re.search(r"disable_ebpf: disruption not measured: no answer: \d+ \(first: host pod ", res.stdout), \
        res.stdout[-4000:]
    assert re.search(r"disable_ebpf: connectivity not checked: no answer: \d+", res.stdout), res.stdout[-4000:]
    assert _get(cluster, "installation", "default")["spec"]["calicoNetwork"]["linuxDataplane"] == "Iptables"
    assert "non-calico" not in (_get(cluster, "daemonset", "kube-proxy", "-n", "kube-system")["spec"]["template"][
        "spec"].get("nodeSelector") or {})
    writes = cluster.audit.writes_since(mark)
    assert _outside_the_probe(writes) == [
        ("patch", "felixconfigurations", "default"), ("patch", "daemonsets", "kube-proxy"),
        ("patch", "installations", "default"), ("patch", "felixconfigurations", "default")], writes
    assert [w for w in writes if w["objectRef"].get("name") == PROBE_NS and w["verb"] == "delete"], \
        "the probe workload was not removed"
    assert _maybe(cluster, "namespace", PROBE_NS) is None
    print("disable_ebpf on a network that does not answer: %.0f s" % (time.monotonic() - started))

    mark = cluster.audit.mark()
    again = op_ansible.playbook("playbooks/disable_ebpf.yml", _rollback_vars(**MEASURED))
    assert again.rc == 0 and again.changed() == 0, [t["task"] for t in again.tasks if t["result"].get("changed")]
    assert cluster.audit.writes_since(mark) == [], "disable_ebpf at its end state deployed or wrote something"

    mark = cluster.audit.mark()
    res = op_ansible.playbook("playbooks/enable_ebpf.yml", enable, callback="default")
    assert res.rc != 0, res.stdout[-3000:]
    refused = [line for line in res.stdout.splitlines() if "enable_ebpf refused before any write" in line]
    assert refused, res.stdout[-4000:]
    assert re.search(r"was not ready within 10 s \(connectivity_probe_ready_timeout\) - no answer: \d+", res.stdout)
    assert "ebpf_install_enable_measure_disruption=false" in res.stdout, res.stdout[-4000:]
    assert _outside_the_probe(cluster.audit.writes_since(mark)) == []
    assert _maybe(cluster, "namespace", PROBE_NS) is None
    assert _get(cluster, "installation", "default")["spec"]["calicoNetwork"]["linuxDataplane"] == "Iptables"
    assert "Traceback" not in res.stdout + res.stderr


def _archive(path):
    """{member below the archive's top directory: text} of a diagnostics archive."""
    import tarfile
    with tarfile.open(path) as tar:
        out = {}
        for member in tar.getmembers():
            if member.isfile():
                out[member.name.split("/", 1)[1]] = tar.extractfile(member).read().decode()
        return out


def test_a_rollback_that_fails_after_its_writes_leaves_a_diagnostics_archive(calico_clean, op_ansible, tmp_path):
    """The playbook's rescue (roles/diagnostics, tasks_from on_failure): the job's failure, then an archive with what
    Calico's support asks for, and where it is in the last line. A credential in a Secret and in a pod's environment
    is not in it; the real operator's log is, through the API server's pods/log (kwok serves the pod runner's logs)."""
    import os
    import stat
    cluster = calico_clean
    _install(cluster, op_ansible, tmp_path)
    sentinel = "diag-sentinel-%s" % os.urandom(6).hex()
    cluster.kubectl("create", "secret", "generic", "diag-sentinel", "-n", "tigera-operator",
                    "--from-literal=token=" + sentinel)
    cluster.kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "holds-a-token", "namespace": "calico-system"},
        "spec": {"containers": [{
            "name": "app", "image": "registry.k8s.io/pause:3.10",
            "env": [{"name": "APP_API_TOKEN", "value": sentinel + "-env"}]}]}}))
    where = tmp_path / "support"
    # a TigeraStatus component that never reports: the job fails in its monitor phase, after the FelixConfiguration,
    # the kube-proxy DaemonSet and the Installation were written
    res = op_ansible.playbook("playbooks/disable_ebpf.yml", _rollback_vars(
        ebpf_rollback_timeout=6, ebpf_rollback_poll_interval=2, diagnostics_dir=str(where),
        ebpf_rollback_tigerastatus_expected=["calico", "never-reported"], diagnostics_log_lines=50),
        callback="default")
    assert res.rc != 0, res.stdout[-3000:]
    # the rescue's steps template cleanly: no "[WARNING]: Encountered 1 template error" beside the job's own failure
    # (a task name once templated a fact its file set only in the task before it)
    assert "template error" not in res.stdout + res.stderr, (res.stdout + res.stderr)[-3000:]
    last = [line for line in res.stdout.splitlines() if "diagnostics archive: " in line]
    assert last and "never-reported" in last[-1], res.stdout[-4000:]
    path = re.search(r"diagnostics archive: (\S+?\.tar\.gz)", last[-1]).group(1)
    assert os.path.dirname(path) == str(where)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    files = _archive(path)
    summary = json.loads(files["summary.json"])
    assert summary["job"] == "disable_ebpf" and "never-reported" in summary["reason"], summary
    # what support asks for
    inst = json.loads(files["objects/installations.json"])["items"][0]
    assert inst["spec"]["calicoNetwork"]["linuxDataplane"] == "Iptables"
    assert json.loads(files["objects/tigerastatuses.json"])["items"]
    assert json.loads(files["objects/apiservers.json"])["served"] is True
    felix = json.loads(files["objects/felixconfigurations.json"])["items"][0]
    assert felix["spec"]["bpfKubeProxyIptablesCleanupEnabled"] is False  # the rollback's side-by-side step
    assert json.loads(files["objects/services-endpoint-configmap.json"])["items"][0]["data"][
        "KUBERNETES_SERVICE_HOST"] == "api.cluster.example"
    assert json.loads(files["objects/kube-proxy-daemonset.json"])["items"][0]["metadata"]["name"] == "kube-proxy"
    assert json.loads(files["objects/kube-proxy-configmap-kube-proxy.json"])["items"]
    for name in ("kubecontrollersconfigurations", "ippools", "records"):
        assert "objects/%s.json" % name in files
    nodes = json.loads(files["nodes.json"])
    assert len(nodes) == len(_get(cluster, "nodes")["items"]) and all(n["conditions"] and n["nodeInfo"] for n in nodes)
    pods = [p["metadata"]["name"] for p in json.loads(files["namespaces/calico-system/pods.json"])]
    assert any(p.startswith("calico-node-") for p in pods) and "holds-a-token" in pods
    assert json.loads(files["namespaces/tigera-operator/events.json"]) is not None
    operator = [n for n in files if n.startswith("namespaces/tigera-operator/logs/tigera-operator-")]
    assert operator, sorted(files)
    for name in operator:  # the real operator's own output, its last 50 lines
        assert files[name].strip() and not files[name].startswith("no log: "), (name, files[name][:500])
        assert len(files[name].splitlines()) <= 50
    # a container the pod runner does not run (calico-node is kwok's alone here) has no log: said in its place
    calico_node = [n for n in files if "/logs/calico-node-" in n and n.endswith("/calico-node.log")]
    assert calico_node and files[calico_node[0]].startswith("no log: "), files.get(calico_node[0])
    # no credential
    text = "\n".join(files.values())
    assert sentinel not in text and "APP_API_TOKEN" in text
    assert not re.search(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", text)
    assert "Traceback" not in res.stdout + res.stderr

    # collect_diagnostics by itself: read-only for the cluster (check mode included), the archive written again
    mark = cluster.audit.mark()
    alone = op_ansible.playbook("playbooks/collect_diagnostics.yml", {"diagnostics_path": str(where / "again.tgz")},
                                check=True)
    assert alone.rc == 0 and alone.changed() == 0 and (where / "again.tgz").exists()
    assert cluster.audit.writes_since(mark) == []
    # bad input: refused before anything is read or written, naming the variable
    mark = cluster.audit.mark()
    bad = op_ansible.playbook("playbooks/collect_diagnostics.yml", {"diagnostics_log_lines": -5,
                                                                     "diagnostics_path": str(where / "bad.tar.gz")},
                              callback="default")
    assert bad.rc != 0 and "diagnostics_log_lines: 0 (no logs) to 100000" in bad.stdout, bad.stdout[-2000:]
    assert not (where / "bad.tar.gz").exists() and cluster.audit.events_since(mark) == []
