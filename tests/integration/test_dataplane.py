"""The eBPF install proven by traffic: the real calico-node (Felix in eBPF mode) on every node.

One control plane with nodes that have a network (``ControlPlane.start(with_dataplane=True)``, localcp/dataplane.py):
each node is a network namespace of its own behind a router namespace, with its own bpffs; the pod runner runs the
real calico-node v3.31.4 (``-startup``, ``-felix``, ...) and calico-typha behind their pods inside those namespaces,
and wires the pods these tests mark with Calico's CNI plugin (calico-ipam). The collection's ``install_ebpf`` runs
once (module fixture) with the local inventory's settings (platform kubeadm; the API server endpoint derived from the
kubeconfig: the node-network address calico-node really dials). Then every check here is a packet:

* a pod on node-1 reaches a pod on node-2 (VXLAN between the nodes' namespaces, through Felix's BPF programs);
* a ClusterIP and a NodePort Service answer with no kube-proxy process on any node, and Calico's own ``calico-bpf
  nat dump`` shows the Service in each node's BPF NAT table;
* a NodePort with ``externalTrafficPolicy: Local`` sees the client's own address;
* a NetworkPolicy that denies is enforced, and removing it restores the path;
* the preflight's host checks (kernel, bpffs, cgroup) run inside each node's namespaces through Ansible's
  ``community.docker.nsenter`` connection.

None of this can pass with a stand-in: kwok's pods carry no packet, and without Felix nothing routes or translates.
"""

import json
import os
import random
import re
import subprocess
import time

import pytest
import yaml

from localcp import build, dataplane, felix_race, traffic
from localcp.audit import describe
from localcp.cluster import ControlPlane
from localcp.fixtures import Ansible, Cluster

pytestmark = pytest.mark.integration

NS = "traffic"
# the demo's workloads (localcp/traffic.py): pods server (node-2) and client (node-1) with a network, a ClusterIP
# Service `server` and a NodePort Service (externalTrafficPolicy Local) on traffic.NODE_PORT
WORKLOADS = traffic.workloads("node-2", "node-1", namespace=NS)


@pytest.fixture(scope="module")
def dp(tmp_path_factory):
    """The data-plane control plane, after the collection's install_ebpf and with the test workloads running."""
    cp = ControlPlane(die_with_parent=True)
    cp.start(shape="kubeadm", with_dataplane=True)
    cluster = Cluster(cp)
    try:
        work = tmp_path_factory.mktemp("dataplane")
        cluster.install_vars = {"ebpf_install_artifacts_dir": str(work / "artifacts"), "ebpf_install_timeout": 600,
                                "preflight_report_dir": str(work / "report")}
        result = Ansible(cluster, work).playbook("playbooks/install_ebpf.yml", inventory="inventories/local/hosts.yml",
                                                 extra_vars=cluster.install_vars)
        assert result.rc == 0, "install_ebpf failed:\n%s\n%s" % (result.stdout[-3000:], result.stderr[-2000:])
        cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(WORKLOADS))
        cluster.wait_for(lambda: {n["pod"] for n in cluster.pod_networks() if n["namespace"] == NS and n["ips"]}
                         == {"server", "client"}, timeout=180,
                         what="the test pods wired by Calico's CNI plugin (%s)" % cluster.pod_networks())
        # the server starts once its pod's network is there (the runner retries it with a back-off until then)
        cluster.wait_for(lambda: len(cluster.processes("agnhost")) == 3 and all(
            p["pid"] and not p["problem"] for p in cluster.processes("agnhost")), timeout=90,
            what="the netexec servers in their pods' namespaces (%s)" % cluster.processes("agnhost"))
        yield cluster
    finally:
        cp.stop(remove_dir=not os.environ.get("KEEP"))


def _ip(cluster, pod):
    return json.loads(cluster.kubectl("get", "pod", pod, "-n", NS, "-o", "json").stdout)["status"]["podIP"]


def _svc(cluster, name):
    return json.loads(cluster.kubectl("get", "service", name, "-n", NS, "-o", "json").stdout)


def _answer(cluster, url, pod="client", timeout=60):
    """The first answer to ``url`` from ``pod`` (or this machine: pod None) within ``timeout`` seconds - Felix
    programs a new endpoint within a second or two of its pod's network; the last failure is quoted."""
    last = None

    def answered():
        nonlocal last
        last = cluster.http_get(url, namespace=NS if pod else None, pod=pod, timeout=3)
        return last.stdout if last.returncode == 0 else None
    try:
        return cluster.wait_for(answered, timeout=timeout, interval=1, what=f"an answer from {url}")
    except Exception as exc:  # noqa: BLE001 - add what the client saw
        raise AssertionError(f"{url} from {pod or 'this machine'}: {last.stderr.strip() if last else ''} ({exc})")


def test_calico_node_and_typha_run_for_real_in_each_node_namespace(dp):
    nodes = dp.nodes_with_network()
    running = [p for p in dp.processes("calico-node") if p["pid"]]
    assert sorted(p["node"] for p in running) == sorted(nodes), dp.processes("calico-node")
    for proc in running:
        holder = nodes[proc["node"]]["holder"]
        assert os.readlink(f"/proc/{proc['pid']}/ns/net") == os.readlink(f"/proc/{holder}/ns/net"), proc
        # Felix is ready on the node: calico-node's own readiness check, run where the kubelet's probe would
        dp.in_node(proc["node"], dp.bin("calico-node"), "-felix-ready")
        # its BPF programs are attached to the node's interface (TCX links pinned in the node's own bpffs)
        links = dp.in_node(proc["node"], "ip", "-d", "link", "show", "vxlan.calico").stdout
        assert "vxlan external" in links and "dstport 4789" in links, links  # eBPF mode: VNI set by the programs
    # the endpoint the collection wrote is the node network's address of the API server, and it is what calico-node
    # dials (its log says so at each start); a loopback endpoint would be each node itself (refused by the role)
    cm = json.loads(dp.kubectl("get", "configmap", "kubernetes-services-endpoint", "-n", "tigera-operator", "-o",
                               "json").stdout)["data"]
    assert cm == {"KUBERNETES_SERVICE_HOST": "10.250.%d.1" % dp.cp.state["service_octet"],
                  "KUBERNETES_SERVICE_PORT": str(dp.cp.state["api_port"])}, cm
    for proc in running:
        with open(proc["log"]) as f:
            assert "API server for this process: %s:%s" % (cm["KUBERNETES_SERVICE_HOST"],
                                                          cm["KUBERNETES_SERVICE_PORT"]) in f.read()
    typha = [p for p in dp.processes("calico-typha") if p["pid"]]
    assert typha and all(p["where"] == "node" for p in typha), dp.processes("calico-typha")
    # what CalicoNodeStandIn plays on the shared control planes, done by calico-node itself at start-up
    info = json.loads(dp.kubectl("get", "clusterinformations.crd.projectcalico.org", "default", "-o", "json").stdout)
    assert info["spec"]["calicoVersion"] == "v3.31.4" and info["spec"]["datastoreReady"] is True, info["spec"]
    writers = {e["user"]["username"] for e in dp.audit.writes_since(0, users=None)
               if (e.get("objectRef") or {}).get("resource") == "clusterinformations"}
    assert "system:serviceaccount:calico-system:calico-node" in writers, writers
    with pytest.raises(AssertionError, match="the real calico-node runs there"):
        from calico_support import CalicoNodeStandIn
        CalicoNodeStandIn(dp)


def test_a_pod_reaches_a_pod_on_another_node_through_vxlan(dp):
    server, client = _ip(dp, "server"), _ip(dp, "client")
    assert re.match(r"^192\.168\.", server) and re.match(r"^192\.168\.", client), (server, client)  # Calico IPAM
    body = _answer(dp, f"http://{server}:8080/clientip")
    assert body.split(":")[0] == client, body  # no NAT between pods
    assert _answer(dp, f"http://{server}:8080/hostname") == "server"
    # the route to node-2's block goes through Calico's VXLAN device on node-1
    route = dp.in_node("node-1", "ip", "route", "get", server).stdout
    assert "dev vxlan.calico" in route, route


def test_services_are_served_by_calico_bpf_nat_with_no_kube_proxy(dp):
    cluster_ip = _svc(dp, "server")["spec"]["clusterIP"]
    assert _answer(dp, f"http://{cluster_ip}/hostname") == "server"
    node2 = dp.nodes_with_network()["node-2"]["address"]
    assert _answer(dp, f"http://{node2}:{traffic.NODE_PORT}/hostname") == "server"
    server = _ip(dp, "server")
    for node in dp.nodes_with_network():
        nat = dp.in_node(node, dp.bin("calico-bpf"), "nat", "dump").stdout
        frontend = re.search(r"^%s port 80 proto 6 id (\d+) count 1" % re.escape(cluster_ip), nat, re.M)
        assert frontend, f"{node}: {cluster_ip}:80 not in calico-bpf nat dump:\n{nat}"
        assert f"{server}:8080" in nat, nat
    # no kube-proxy anywhere: its DaemonSet keeps its pods off Calico's nodes, and no process of any node is one
    ds = json.loads(dp.kubectl("get", "daemonset", "kube-proxy", "-n", "kube-system", "-o", "json").stdout)
    assert ds["status"].get("currentNumberScheduled", 0) == 0, ds["status"]
    nets = {os.readlink(f"/proc/{n['holder']}/ns/net") for n in dp.nodes_with_network().values()}
    proxies = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/ns/net") in nets and "kube-proxy" in open(f"/proc/{pid}/comm").read():
                proxies.append(pid)
        except OSError:
            continue
    assert proxies == []


def test_a_node_port_with_external_traffic_policy_local_keeps_the_client_address(dp):
    node2 = dp.nodes_with_network()["node-2"]["address"]  # the server's node
    # from outside the cluster: this machine, on the node network's host address
    host_address = "10.250.%d.1" % dp.cp.state["service_octet"]
    body = _answer(dp, f"http://{node2}:{traffic.NODE_PORT}/clientip", pod=None)
    assert body.split(":")[0] == host_address, body
    # and from a pod on another node
    body = _answer(dp, f"http://{node2}:{traffic.NODE_PORT}/clientip")
    assert body.split(":")[0] == _ip(dp, "client"), body


def _bpf_ct_create_failures(cluster, node):
    """Felix's BPF counter "failed to create conntrack" (ingress, summed over the node's interfaces)."""
    holder = cluster.nodes_with_network()[node]["holder"]
    argv = dataplane.enter(holder) + [str(build.dataplane_dir() / "calico-node"), "-bpf", "counters", "dump"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False).stdout
    cells = [cell.strip() for line in out.splitlines() if "failed to create conntrack" in line
             for cell in line.split("|")[3:5]]  # ingress and egress; an interface without a hook shows N/A
    return sum(int(c) for c in cells if c.isdigit())


def test_a_pod_that_reaches_a_backend_through_its_service_and_directly_from_one_port_loses_the_second(dp):
    """Calico's eBPF conntrack (the real v3.31.4 programs) keys a connection through a Service by its backend: pod
    IP and target port. A client pod that dialled the ClusterIP from source port P and then dials the backend
    itself from P (the kernel hands out such a port: before NAT the destinations differ) has its SYN dropped -
    "failed to create conntrack" - and every retransmission with it, while the first entry lives; the other way
    round the same. This is what lost ~3% (direct) and ~20% (ClusterIP) of the switch test's busy prober after
    enable_ebpf. A Service whose target port is not the one dialled directly (Service server-apart, 8081) never
    meets it: the connectivity role's workload and the switch test's prober are built that way."""
    server = _ip(dp, "server")
    same = _svc(dp, "server")["spec"]["clusterIP"]  # targetPort 8080, the port dialled directly
    apart = _svc(dp, "server-apart")["spec"]["clusterIP"]  # targetPort 8081
    before = _bpf_ct_create_failures(dp, "node-1")
    lost = []
    for i, port in enumerate(random.sample(range(20000, 30000), 3)):
        first, second = ((f"http://{same}/hostname", f"http://{server}:8080/hostname") if i != 1 else
                         (f"http://{server}:8080/hostname", f"http://{same}/hostname"))
        assert dp.http_get(first, namespace=NS, pod="client", source_port=port).returncode == 0, first
        if dp.http_get(second, namespace=NS, pod="client", timeout=3, source_port=port).returncode != 0:
            lost.append((port, first, second))
    assert len(lost) == 3, f"Calico's eBPF conntrack let these through (the behaviour changed?): {lost}"
    assert _bpf_ct_create_failures(dp, "node-1") > before
    for port in random.sample(range(30001, 40000), 3):
        assert dp.http_get(f"http://{apart}/hostname", namespace=NS, pod="client", source_port=port).returncode == 0
        got = dp.http_get(f"http://{server}:8080/hostname", namespace=NS, pod="client", timeout=3, source_port=port)
        assert got.returncode == 0 and got.stdout.strip() == "server", (port, got.stderr)


def test_a_network_policy_that_denies_is_enforced(dp):
    server = _ip(dp, "server")
    url = f"http://{server}:8080/hostname"
    assert _answer(dp, url) == "server"
    deny = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "deny-server", "namespace": NS},
            "spec": {"podSelector": {"matchLabels": {"app": "server"}}, "policyTypes": ["Ingress"]}}
    dp.kubectl("apply", "-f", "-", input=yaml.safe_dump(deny))
    try:
        def refused():
            return dp.http_get(url, namespace=NS, pod="client", timeout=2).returncode != 0
        dp.wait_for(refused, timeout=60, interval=1, what="the request denied by NetworkPolicy deny-server")
        time.sleep(2)
        assert dp.http_get(url, namespace=NS, pod="client", timeout=3).returncode != 0  # still denied
    finally:
        dp.kubectl("delete", "networkpolicy", "deny-server", "-n", NS, "--ignore-not-found")
    assert _answer(dp, url) == "server"


def test_a_second_install_changes_nothing_and_traffic_keeps_flowing(dp, tmp_path):
    """Idempotent on a cluster whose data plane is real: no write, no restart of calico-node, and the Services keep
    answering while it runs."""
    before = {p["pod"]: (p["pid"], p["restarts"]) for p in dp.processes("calico-node")}
    mark = dp.audit.mark()
    result = Ansible(dp, tmp_path).playbook("playbooks/install_ebpf.yml", inventory="inventories/local/hosts.yml",
                                            extra_vars=dp.install_vars)
    assert result.rc == 0 and result.changed() == 0, result.stdout[-3000:]
    writes = dp.audit.writes_since(mark)  # the playbook's own identity (admin)
    assert writes == [], [describe(e) for e in writes]
    assert {p["pod"]: (p["pid"], p["restarts"]) for p in dp.processes("calico-node")} == before
    cluster_ip = _svc(dp, "server")["spec"]["clusterIP"]
    assert _answer(dp, f"http://{cluster_ip}/hostname") == "server"


def _connectivity(dp, tmp_path, extra=None):
    v = {"connectivity_probe_dir": str(tmp_path / "probes")}
    v.update(extra or {})
    return Ansible(dp, tmp_path).playbook("playbooks/check_connectivity.yml", inventory="inventories/local/hosts.yml",
                                          extra_vars=v)


def _rows(result):
    """The rows of every check stage that ran (the policy's two run only with check network_policy)."""
    out = []
    for t in result.tasks:
        if t["task"].endswith((" : Check every pair", " : Check that no pod reaches a server pod any more",
                               " : Check that every pod reaches the server pods again")):
            out += t["result"].get("rows") or []
    return out


def test_check_connectivity_after_install_ebpf_passes_every_row(dp, tmp_path):
    """Before the tests that restart calico-node or take it off a node (the later ones; the last takes node-3's away):
    check_connectivity on the 3 nodes after install_ebpf: every pair of every check is a new connection through
    the real data plane (Felix's BPF programs, VXLAN between the node namespaces) and passes; the probe workload is
    the only thing written, and it is gone at the end.

    DNS is not checked here: no cluster DNS (CoreDNS) runs on this control plane, so the row says skipped."""
    mark = dp.audit.mark()
    result = _connectivity(dp, tmp_path)
    assert result.rc == 0, result.stdout[-4000:]
    rows = _rows(result)
    nodes = sorted(n for n in dp.nodes_with_network())
    assert len(nodes) == 3
    by_check = {}
    for r in rows:
        by_check.setdefault(r["check"], []).append(r)
    for check in ("pod_to_pod", "pod_to_nodeport", "host_to_nodeport", "network_policy_denied",
                  "network_policy_restored"):
        assert sorted((r["from"], r["to"]) for r in by_check[check]) == [(a, b) for a in nodes for b in nodes], check
    for check in ("pod_to_service", "pod_to_api_server", "kube_proxy_absent"):
        assert sorted(r["from"] for r in by_check[check]) == nodes, check
    assert [r["outcome"] for r in by_check["dns"]] == ["skipped"] * 3
    bad = [r for r in rows if r["outcome"] != "ok" and r["check"] != "dns"]
    assert not bad, bad
    # each pod pair answered by the server pod of the target node (the answer names the pod)
    assert all(r["detail"] == "server-" + r["to"] for r in by_check["pod_to_pod"])
    assert all(r["detail"].startswith("denied") for r in by_check["network_policy_denied"])
    shown = "\n".join(result.result_of("Show the checks, one table per check")["msg"])
    assert "pod_to_pod: 9/9 ok" in shown and "network_policy_denied: 9/9 ok" in shown, shown
    # what it wrote: its own namespace's objects only (pods, Services, its NetworkPolicy), and the namespace went
    writes = dp.audit.writes_since(mark)
    assert writes and all((e["objectRef"].get("namespace") == "calico-ops-connectivity"
                           or (e["objectRef"]["resource"] == "namespaces"
                               and e["objectRef"].get("name") == "calico-ops-connectivity")) for e in writes), \
        [describe(e) for e in writes]
    assert dp.kubectl("get", "namespace", "calico-ops-connectivity", check=False).returncode != 0
    assert result.changed() == 0


def test_check_connectivity_fails_naming_the_pair_a_policy_blocks(dp, tmp_path):
    """A Calico GlobalNetworkPolicy that denies node-1's pods the server pod of node-2: the check fails, naming
    pod_to_pod node-1 -> node-2 (and only pairs into node-2 from node-1), after showing the tables and removing its
    workload."""
    gnp = {"apiVersion": "projectcalico.org/v3", "kind": "GlobalNetworkPolicy",
           "metadata": {"name": "block-node-1-to-node-2"},
           "spec": {"order": 10, "types": ["Ingress"],
                    "selector": "connectivity.calico-ops.io/role == 'server' && "
                                "connectivity.calico-ops.io/node == 'node-2'",
                    "ingress": [{"action": "Deny", "source": {"selector": "connectivity.calico-ops.io/node == 'node-1'"}},
                                {"action": "Allow"}]}}
    dp.kubectl("apply", "-f", "-", input=yaml.safe_dump(gnp))
    try:
        result = _connectivity(dp, tmp_path, {"connectivity_checks": ["pod_to_pod"]})
    finally:
        dp.kubectl("delete", "globalnetworkpolicies.projectcalico.org", "block-node-1-to-node-2", "--ignore-not-found")
    assert result.rc != 0
    failed = result.result_of("Fail naming each pair that failed")
    assert failed.get("failed"), result.stdout[-3000:]
    assert failed["msg"].startswith("connectivity: 1 of 9 checks failed: pod_to_pod node-1 -> node-2: "), failed["msg"]
    rows = _rows(result)
    assert [(r["from"], r["to"]) for r in rows if r["outcome"] != "ok"] == [("node-1", "node-2")], rows
    assert dp.kubectl("get", "namespace", "calico-ops-connectivity", check=False).returncode != 0


def test_the_diagnostics_archive_holds_the_real_calico_node_logs(dp, tmp_path):
    """collect_diagnostics on the real data plane: the logs of calico-node (Felix) and calico-typha as the API
    server's pods/log serves them (kwok's kubelet endpoint, reached at each node's InternalIP inside its namespace),
    next to the objects support asks for; read-only (no write by the playbook's identity)."""
    import tarfile
    mark = dp.audit.mark()
    path = tmp_path / "dp.tar.gz"
    result = Ansible(dp, tmp_path).playbook("playbooks/collect_diagnostics.yml", inventory="inventories/local/hosts.yml",
                                            extra_vars={"diagnostics_path": str(path), "diagnostics_log_lines": 200})
    assert result.rc == 0 and result.changed() == 0, result.stdout[-3000:]
    assert dp.audit.writes_since(mark) == []
    with tarfile.open(path) as tar:
        files = dict((m.name.split("/", 1)[1], tar.extractfile(m).read().decode()) for m in tar.getmembers()
                     if m.isfile())
    felix = [n for n in files if "/logs/calico-node-" in n and n.endswith("/calico-node.log")]
    assert len(felix) == len(dp.processes("calico-node")) > 0, sorted(files)
    for name in felix:
        assert not files[name].startswith("no log: "), (name, files[name][:300])
        assert len(files[name].splitlines()) <= 200
    assert any("felix" in files[n].lower() for n in felix), files[felix[0]][-2000:]
    typha = [n for n in files if "/logs/calico-typha-" in n]
    assert typha and not files[typha[0]].startswith("no log: "), (typha, files.get(typha[0], "")[:300])
    summary = json.loads(files["summary.json"])
    assert not [p for p in summary["problems"] if "container calico-node:" in p], summary["problems"]
    inst = json.loads(files["objects/installations.json"])["items"][0]
    assert inst["spec"]["calicoNetwork"]["linuxDataplane"] == "BPF"


def test_preflight_host_checks_run_inside_each_node(dp, tmp_path):
    """The preflight's host checks, through a connection into each node's namespaces (Ansible's
    community.docker.nsenter: the node's mount, network and UTS namespaces, as a shell on that node)."""
    hosts = {name: {"ansible_connection": "community.docker.nsenter", "ansible_nsenter_pid": node["holder"],
                    "ansible_python_interpreter": os.path.realpath(os.sys.executable)}
             for name, node in dp.nodes_with_network().items()}
    inventory = tmp_path / "nodes.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": os.sys.executable}},
        "children": {"calico_nodes": {"hosts": hosts}}}}))
    result = Ansible(dp, tmp_path).playbook(
        "playbooks/preflight.yml", inventory=str(inventory),
        extra_vars={"preflight_host_group": "calico_nodes", "preflight_report_dir": str(tmp_path / "report"),
                    "calico_platform": "kubeadm"})
    assert result.rc == 0, result.stdout[-3000:] + result.stderr[-2000:]
    report = json.loads(next((tmp_path / "report").glob("*.json")).read_text())
    assert sorted(report["hosts"]) == sorted(hosts), report["hosts"]
    for name, host in report["hosts"].items():
        for check in ("host_facts", "os_kernel", "bpffs", "cgroup_v2", "vxlan_module"):
            assert host["checks"][check]["verdict"] == "ok", (name, check, host["checks"][check])
        # the node's own bpffs (its holder mounted it; Felix pinned its maps there)
        assert host["facts"]["bpffs_mounted"] is True and host["facts"]["cgroup2_mount"] == "/sys/fs/cgroup", host
        assert host["facts"]["kernel"] == os.uname().release, host["facts"]  # this machine's kernel, read on the node
    # the same connection lands on the node: its hostname and its address
    probe = Ansible(dp, tmp_path).playbook(
        "- hosts: calico_nodes\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.command: hostname\n      register: name\n      changed_when: false\n"
        "    - ansible.builtin.command: ip -4 -o addr show dev eth0\n      register: addr\n      changed_when: false\n"
        "    - ansible.builtin.assert:\n        that:\n          - name.stdout == inventory_hostname\n"
        "          - (' ' ~ node_address ~ '/') in addr.stdout\n",
        inventory=str(inventory),
        extra_args=["-e", json.dumps({"node_address_of": {n: v["address"] for n, v in
                                                         dp.nodes_with_network().items()}}),
                    "-e", "node_address={{ node_address_of[inventory_hostname] }}"])
    assert probe.rc == 0, probe.stdout[-3000:] + probe.stderr[-1000:]


def test_the_harness_restart_for_felix_issue_11016_replaces_one_calico_node_and_traffic_flows_through_it(dp):
    """The harness's answer to Felix's bug projectcalico/calico#11016 (localcp/felix_race.py; the switch tests use
    it), on real components: the real logs of this install hold no loss (in the fresh installs seen here
    Felix did not recreate vxlan.calico), and heal() - here for node-2, the server's node - replaces that node's calico-node pod alone,
    waits for its new Felix to be ready, and pods on other nodes reach the server through it again."""
    assert felix_race.lost_on_nodes(dp) == {}
    before = {p["node"]: p["pod"] for p in dp.processes("calico-node") if p["pid"]}
    felix_race.heal(dp, {"node-2": {"pid": 0, "at": time.time(), "gone": 0, "present": [0]}})
    after = {p["node"]: p["pod"] for p in dp.processes("calico-node") if p["pid"]}
    assert after["node-2"] != before["node-2"], (before, after)
    assert {n: p for n, p in after.items() if n != "node-2"} == {n: p for n, p in before.items() if n != "node-2"}
    assert _answer(dp, f"http://{_ip(dp, 'server')}:8080/hostname") == "server"
    assert felix_race.lost_on_nodes(dp) == {}


def _services_endpoint(dp, tmp_path, **extra):
    return Ansible(dp, tmp_path).playbook("playbooks/services_endpoint.yml", inventory="inventories/local/hosts.yml",
                                          extra_vars=extra)


def _failed_messages(result):
    return [str(t["result"].get("msg", "")) for t in result.tasks if t["result"].get("failed")]


def test_a_dns_name_endpoint_is_refused_before_any_write_on_the_ebpf_cluster(dp, tmp_path):
    """Calico issue 10683 on the real data plane: install_ebpf left Installation default on BPF (and the operator set
    FelixConfiguration bpfEnabled), so a DNS name for KUBERNETES_SERVICE_HOST - which calico-node resolves at boot,
    before any Service works - is refused in one line naming services_endpoint_nodes_resolve_host, before any write."""
    mark = dp.audit.mark()
    result = _services_endpoint(dp, tmp_path, services_endpoint_host="api.calico-ops.invalid")
    assert result.rc != 0, result.stdout[-3000:]
    messages = _failed_messages(result)
    assert messages and messages[0].startswith(
        "services_endpoint_nodes_resolve_host: the API server host would be the DNS name api.calico-ops.invalid "
        "(from services_endpoint_host) on a cluster in eBPF mode (Installation default has "
        "spec.calicoNetwork.linuxDataplane BPF; FelixConfiguration default has spec.bpfEnabled true)"), messages
    assert "Set services_endpoint_nodes_resolve_host: true (true or false, default false)" in messages[0]
    writes = dp.audit.writes_since(mark)
    assert writes == [], [describe(e) for e in writes]
    cm = json.loads(dp.kubectl("get", "configmap", "kubernetes-services-endpoint", "-n", "tigera-operator", "-o",
                               "json").stdout)["data"]
    assert cm["KUBERNETES_SERVICE_HOST"] == "10.250.%d.1" % dp.cp.state["service_octet"], cm


def test_a_calico_node_that_cannot_start_after_the_change_fails_the_job_with_its_reason(dp, tmp_path):
    """The user states that every node resolves the name (services_endpoint_nodes_resolve_host: true) but none does
    (each node's resolver is its own loopback, where nothing answers): the ConfigMap is written, the operator restarts
    and renders calico-node with the name, and the first node's new calico-node cannot reach the API server. The job
    waits for the rollout and fails quoting that pod's own reason (not Ready, the telling line of its log) instead of
    returning success. Then the original endpoint is written back (the same job: an IP address), calico-node rolls
    out on every node again and traffic flows."""
    octet, port = dp.cp.state["service_octet"], str(dp.cp.state["api_port"])
    try:
        result = _services_endpoint(dp, tmp_path, services_endpoint_host="api.calico-ops.invalid",
                                    services_endpoint_nodes_resolve_host=True, services_endpoint_rollout_timeout=150,
                                    services_endpoint_poll_interval=5)
        assert result.rc != 0, result.stdout[-3000:]
        assert result.result_of("Delete the operator pods so new ones read the ConfigMap - k8s-app=tigera-operator")[
            "changed"] is True
        failed = result.result_of("Fail quoting the calico-node pod that cannot start")
        msg = failed["msg"]
        assert msg.startswith("calico-node did not roll out with KUBERNETES_SERVICE_HOST=api.calico-ops.invalid "
                              "KUBERNETES_SERVICE_PORT=%s within 150s of the operator's restart" % port), msg
        stuck = re.search(r"pods not ready: (calico-node-[a-z0-9]+) Running 0/1 \(not ready: calico-node\) on "
                          r"(node-\d) - ([^;]*(?:;[^;]*)*)", msg)
        assert stuck, msg
        pods = {p["pod"]: p for p in dp.processes("calico-node")}
        assert stuck.group(1) in pods and pods[stuck.group(1)]["node"] == stuck.group(2), (stuck.groups(), pods)
        # the pod's own words: its Ready condition, and its log naming the name it could not resolve
        assert "Ready=False" in msg, msg
        log_line = msg.split("last log line: ", 1)[1] if "last log line: " in msg else ""
        assert "api.calico-ops.invalid" in log_line, msg
        assert "\n" not in msg
    finally:
        restored = _services_endpoint(dp, tmp_path, services_endpoint_host="10.250.%d.1" % octet,
                                      services_endpoint_port=int(port), services_endpoint_rollout_timeout=600)
    assert restored.rc == 0, "\n".join(_failed_messages(restored)) + restored.stdout[-3000:]
    assert restored.result_of("Publish the endpoint for the roles that run after this one")["ansible_facts"][
        "services_endpoint_result"]["calico_node_rolled_out"] is True
    running = [p for p in dp.processes("calico-node") if p["pid"]]
    assert sorted(p["node"] for p in running) == sorted(dp.nodes_with_network()), dp.processes("calico-node")
    for node in dp.nodes_with_network():
        dp.wait_for(lambda: dp.in_node(node, dp.bin("calico-node"), "-felix-ready", check=False).returncode == 0,
                    timeout=180, interval=2, what="Felix ready on %s" % node)
    cluster_ip = _svc(dp, "server")["spec"]["clusterIP"]
    assert _answer(dp, f"http://{cluster_ip}/hostname") == "server"
    assert _answer(dp, f"http://{_ip(dp, 'server')}:8080/hostname") == "server"


def test_a_node_left_without_calico_node_loses_its_programs_and_gets_them_back(dp):
    """Felix leaves its programs attached when it stops (a restart or a rolling update keeps traffic flowing);
    a node whose calico-node pod goes for good (here: the DaemonSet no longer selects it) has them removed by the
    runner after 30 s (podrunner.py _detach_orphaned_nodes), and a new calico-node pod attaches them again.
    Last in this file: it takes node-3's calico-node away for a minute (no test pod runs there)."""
    def pinned():  # maps.debug and progs.debug: the kernel's own files of every bpffs
        return [p for p in dp.in_node("node-3", "find", "/sys/fs/bpf", "-mindepth", "1", "-maxdepth", "2").stdout.split()
                if not p.endswith(".debug")]
    assert any("tc" in p for p in pinned()), pinned()
    dp.kubectl("label", "node", "node-3", "kubernetes.io/os=none", "--overwrite")
    try:
        dp.wait_for(lambda: not any(p["pid"] and p["node"] == "node-3" for p in dp.processes("calico-node")),
                    timeout=120, what="calico-node on node-3 stopped (its pod gone)")
        # still attached right after the stop (a restart would find them), removed once the node stays without one
        dp.wait_for(lambda: pinned() == [], timeout=120, interval=2,
                    what="node-3's BPF programs and maps removed (%s)" % pinned())
    finally:
        dp.kubectl("label", "node", "node-3", "kubernetes.io/os=linux", "--overwrite")
    dp.wait_for(lambda: dp.in_node("node-3", dp.bin("calico-node"), "-felix-ready", check=False).returncode == 0,
                timeout=180, interval=2, what="Felix ready on node-3 again")
    assert any("tc" in p for p in pinned()), pinned()
    # and node-3 serves the Service again: a NodePort request entering node-3 (no local endpoint: forwarded)
    cluster_ip = _svc(dp, "server")["spec"]["clusterIP"]
    assert _answer(dp, f"http://{cluster_ip}/hostname") == "server"
