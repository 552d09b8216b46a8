"""The second v3.31 eBPF path, the mixes the operator refuses, a changed endpoint through the operator's restart,
the operator's own Degraded status quoted, and enable_ebpf on an Iptables install - against the real Tigera operator.

Split from test_install_ebpf.py (whose fixtures and helpers it uses) so that the two files, each with a
kubeadm-shaped control plane of its own, run on two pytest-xdist workers at once: the real operator's reconcile
and Calico's uninstall order (the custom resources and calico-system gone while the operator runs) take minutes
per test.
"""

import pytest
import yaml

from test_install_ebpf import (TS_API, _container, _env, _get, _maybe, _operator_writes, _ts_states, _vars,  # noqa: F401
                               calico_clean, op_ansible, operator_cluster)

pytestmark = pytest.mark.integration


def test_install_ebpf_operator_path_bootstrap_and_kube_proxy_by_the_operator(calico_clean, op_ansible, tmp_path):
    """v3.31's second path: bpfNetworkBootstrap and kubeProxyManagement Enabled, no ConfigMap: the operator reads
    the kubernetes Service's EndpointSlice into calico-node's ebpf-bootstrap init container and disables kube-proxy
    itself (its nodeSelector, written by the operator's ServiceAccount, not by us)."""
    cluster = calico_clean
    mark = cluster.audit.mark()
    res = op_ansible.playbook("playbooks/install_ebpf.yml", _vars(cluster, tmp_path, ebpf_install_bootstrap="operator"),
                              callback="default")
    assert res.rc == 0, res.stdout[-5000:] + res.stderr[-2000:]
    assert "kubeproxy-monitor: Available" in res.stdout
    assert _maybe(cluster, "configmap", "kubernetes-services-endpoint", "-n", "tigera-operator") is None
    inst = _get(cluster, "installation", "default")
    assert inst["spec"]["calicoNetwork"]["bpfNetworkBootstrap"] == "Enabled"
    assert inst["spec"]["calicoNetwork"]["kubeProxyManagement"] == "Enabled"
    node = _get(cluster, "daemonset", "calico-node", "-n", "calico-system")
    boot = _env(_container(node, "ebpf-bootstrap", init=True))
    from localcp import shapes
    address = shapes.node_network(cluster.cp.state["service_octet"])["address"]
    assert boot["KUBERNETES_APISERVER_ENDPOINTS"] == "%s:%s" % (address, cluster.cp.state["api_port"]), boot
    assert _get(cluster, "felixconfiguration", "default")["spec"]["bpfEnabled"] is True
    ds = _get(cluster, "daemonset", "kube-proxy", "-n", "kube-system")
    assert ds["spec"]["template"]["spec"]["nodeSelector"].get("operator.tigera.io/disable-kube-proxy") == "true"
    assert "non-calico" not in ds["spec"]["template"]["spec"]["nodeSelector"]
    ours = [w for w in cluster.audit.writes_since(mark) if w["objectRef"].get("resource") == "daemonsets"]
    assert ours == [], "kube-proxy is the operator's job on this path: %s" % ours
    assert any(w["objectRef"].get("name") == "kube-proxy" for w in _operator_writes(cluster, mark, "daemonsets"))
    mark = cluster.audit.mark()
    again = op_ansible.playbook("playbooks/install_ebpf.yml", _vars(cluster, tmp_path, ebpf_install_bootstrap="operator"))
    assert again.rc == 0 and again.changed() == 0, [t["task"] for t in again.tasks if t["result"].get("changed")]
    assert cluster.audit.writes_since(mark) == []


def test_the_mix_the_operator_refuses_is_refused_before_any_write(calico_clean, op_ansible, tmp_path):
    cluster = calico_clean
    # the ConfigMap in place (an earlier install on the documented path), then the operator path asked for
    cluster.kubectl("create", "namespace", "tigera-operator")
    cluster.kubectl("create", "configmap", "kubernetes-services-endpoint", "-n", "tigera-operator",
                    "--from-literal=KUBERNETES_SERVICE_HOST=api.cluster.example",
                    "--from-literal=KUBERNETES_SERVICE_PORT=6443")
    mark = cluster.audit.mark()
    res = op_ansible.playbook("playbooks/install_ebpf.yml", _vars(cluster, tmp_path, ebpf_install_bootstrap="operator"),
                              callback="default")
    assert res.rc != 0
    assert "ConfigMap tigera-operator/kubernetes-services-endpoint exists" in res.stdout, res.stdout[-3000:]
    assert cluster.audit.writes_since(mark) == []
    # the documented path with bpfNetworkBootstrap asked for in the Installation
    res = op_ansible.playbook("playbooks/install_ebpf.yml", _vars(
        cluster, tmp_path, ebpf_install_installation_spec={"calicoNetwork": {"bpfNetworkBootstrap": "Enabled"}}),
        callback="default")
    assert res.rc != 0 and "ebpf_install_bootstrap is configmap" in res.stdout, res.stdout[-3000:]
    assert cluster.audit.writes_since(mark) == []


def test_a_changed_endpoint_reaches_calico_node_through_the_operator_restart(calico_clean, op_ansible, tmp_path):
    """services_endpoint.yml with a new host: the ConfigMap changes, the role deletes the operator's pod, the new
    operator process reads the new value (envFrom, at container start) and re-renders calico-node with it."""
    cluster = calico_clean
    res = op_ansible.playbook("playbooks/install_ebpf.yml", _vars(cluster, tmp_path))
    assert res.rc == 0, res.stdout[-4000:]
    before = cluster.wait_for_process("tigera-operator", "v1.40.7", timeout=10)
    job = {"services_endpoint_platform": "kubeadm", "services_endpoint_host": "api2.cluster.example",
           "services_endpoint_port": 8443, "services_endpoint_timeout": 120, "services_endpoint_poll_interval": 5}
    # the Installation is BPF: a DNS name only with the statement that every node resolves it (Calico issue 10683)
    mark = cluster.audit.mark()
    res = op_ansible.playbook("playbooks/services_endpoint.yml", job, callback="default")
    assert res.rc != 0 and "services_endpoint_nodes_resolve_host: the API server host would be the DNS name " \
        "api2.cluster.example" in res.stdout, res.stdout[-4000:]
    assert cluster.audit.writes_since(mark) == []
    res = op_ansible.playbook("playbooks/services_endpoint.yml", dict(job, services_endpoint_nodes_resolve_host=True),
                              callback="default")
    assert res.rc == 0, res.stdout[-4000:]
    # the job waited for calico-node to carry the new endpoint and roll out before it said so
    assert "calico-node: rolled out with the new endpoint: DaemonSet calico-system/calico-node" in res.stdout, \
        res.stdout[-4000:]
    after = cluster.wait_for(lambda: next((p for p in cluster.processes("tigera-operator")
                                           if p["pid"] and p["pod_uid"] != before["pod_uid"]), None),
                             timeout=60, what="an operator process of the new pod")
    assert after["pod"] != before["pod"]

    def rendered():
        env = _env(_container(_get(cluster, "daemonset", "calico-node", "-n", "calico-system"), "calico-node"))
        return env.get("KUBERNETES_SERVICE_HOST") == "api2.cluster.example" and env.get(
            "KUBERNETES_SERVICE_PORT") == "8443"
    cluster.wait_for(rendered, timeout=120, interval=2, what="calico-node re-rendered with the new endpoint")


def test_install_fails_quoting_the_operators_degraded_status(calico_clean, op_ansible, tmp_path):
    """An Installation the operator refuses (non-privileged Calico with the BPF data plane): the real operator
    reports TigeraStatus calico Degraded and the play's timeout quotes its words."""
    cluster = calico_clean
    res = op_ansible.playbook("playbooks/install_ebpf.yml",
                              _vars(cluster, tmp_path, ebpf_install_timeout=60, ebpf_install_disable_kube_proxy=False,
                                    ebpf_install_installation_spec={"nonPrivileged": "Enabled"},
                                    ebpf_install_tigerastatus_expected=["calico"]),
                              callback="default")
    assert res.rc != 0
    assert "TigeraStatus not Available after 60s" in res.stdout, res.stdout[-4000:]
    assert "Degraded=True" in res.stdout
    assert "Non-privileged Calico is not supported when BPF dataplane is enabled" in res.stdout, res.stdout[-4000:]


def test_enable_ebpf_switches_an_iptables_install_and_the_operator_rerenders(calico_clean, op_ansible, tmp_path):
    """An operator install on the Iptables data plane (the real operator reports it Available), then enable_ebpf:
    the Installation's diff in check mode, then the patch; the operator turns on bpfEnabled and re-renders
    calico-node with the ConfigMap's endpoint."""
    cluster = calico_clean
    base = f"{cluster.mirror_url}/v3.31.4/manifests"
    cluster.apply(f"{base}/operator-crds.yaml")
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/installations.operator.tigera.io")
    cluster.apply(f"{base}/tigera-operator.yaml")
    cluster.apply(yaml.safe_dump({"apiVersion": TS_API, "kind": "Installation", "metadata": {"name": "default"},
                                  "spec": {"calicoNetwork": {"linuxDataplane": "Iptables", "hostPorts": "Enabled"}}}))
    cluster.wait_for(lambda: _ts_states(cluster).get("calico", {}).get("Available") == "True", timeout=240,
                     interval=2, what="the operator to report the Iptables install Available")
    node = _get(cluster, "daemonset", "calico-node", "-n", "calico-system")
    assert "KUBERNETES_SERVICE_HOST" not in _env(_container(node, "calico-node")) or _env(
        _container(node, "calico-node"))["KUBERNETES_SERVICE_HOST"] != "api.cluster.example"
    assert not (_get(cluster, "felixconfiguration", "default")["spec"].get("bpfEnabled") or False)
    v = _vars(cluster, tmp_path, ebpf_install_disable_kube_proxy=False, ebpf_install_tigerastatus_expected=["calico"])
    # check mode first: the Installation's diff is shown, nothing is written
    mark = cluster.audit.mark()
    preview = op_ansible.playbook("playbooks/enable_ebpf.yml", v, check=True, diff=True, callback="default")
    assert preview.rc == 0, preview.stdout[-3000:]
    assert cluster.audit.writes_since(mark) == []
    # JSON diff lines without spaces or the trailing comma (the operator's defaults may sort after a key)
    diff_lines = [line.replace(" ", "").rstrip(",") for line in preview.stdout.splitlines()]
    assert '-"linuxDataplane":"Iptables"' in diff_lines and '+"linuxDataplane":"BPF"' in diff_lines, preview.stdout[-3000:]
    # v3.31: hostPorts is left as the operator defaults it (it re-adds Enabled to every Calico-CNI Installation)
    assert not any(line.startswith('-"hostPorts"') for line in diff_lines), preview.stdout[-3000:]
    assert _get(cluster, "installation", "default")["spec"]["calicoNetwork"]["linuxDataplane"] == "Iptables"
    res = op_ansible.playbook("playbooks/enable_ebpf.yml", v, callback="default")
    assert res.rc == 0, res.stdout[-4000:]
    inst = _get(cluster, "installation", "default")
    assert inst["spec"]["calicoNetwork"]["linuxDataplane"] == "BPF"
    assert inst["spec"]["calicoNetwork"]["hostPorts"] == "Enabled"
    # the role's wait ended only once the operator had reported on the switched Installation (not on the
    # Iptables install's Available, which TigeraStatus still shows right after the patch)
    ts = _get(cluster, "tigerastatus", "calico")
    assert max(c.get("observedGeneration", 0) for c in ts["status"]["conditions"]) >= inst["metadata"]["generation"]
    # what the operator did with it
    assert _get(cluster, "felixconfiguration", "default")["spec"]["bpfEnabled"] is True
    env = _env(_container(_get(cluster, "daemonset", "calico-node", "-n", "calico-system"), "calico-node"))
    assert env["KUBERNETES_SERVICE_HOST"] == "api.cluster.example" and env["KUBERNETES_SERVICE_PORT"] == "6443"
    assert "FelixConfiguration default: bpfEnabled true" in res.stdout
    mark = cluster.audit.mark()
    again = op_ansible.playbook("playbooks/enable_ebpf.yml", v)
    assert again.rc == 0 and again.changed() == 0, [t["task"] for t in again.tasks if t["result"].get("changed")]
    check = op_ansible.playbook("playbooks/enable_ebpf.yml", v, check=True)
    assert check.rc == 0
    assert cluster.audit.writes_since(mark) == []
