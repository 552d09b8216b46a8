"""Data-plane switches under traffic: the shared steps of tests/integration/test_switch_under_traffic.py and of
the switch benchmark (``python -m localcp.switches --runs 3``, benchmarks/results/switch-under-traffic.md).

On a control plane whose nodes have a network (the real kube-proxy in iptables mode behind the kubeadm shape's
DaemonSet, the real calico-node behind the operator's), ``Switches``:

* installs Calico on the Iptables data plane as Calico's quickstart does (``install_iptables``: operator-crds.yaml,
  tigera-operator.yaml, custom-resources.yaml from the release mirror) - kube-proxy serves the Services; of v3.31.4,
  or of a release an upgrade starts from (v3.29.7: its own calico-node, Typha and CNI plugin run, localcp/releases.py),
  which ``upgrade`` takes to v3.31.4 with the collection's upgrade job;
* deploys the prober's workloads (localcp.prober.workloads: a server pod on node-2, a client pod on node-1, a
  ClusterIP and a NodePort Service) and measures a switch: probers from the client pod (ClusterIP, NodePort on
  node-2, the server pod's IP across nodes) and from node-1's host network (NodePort on node-2) run from before
  the first write until the data plane has settled and every target answered once more, plus ``SETTLE`` seconds;
  a ``Timeline`` records, at the moment kube-proxy's DaemonSet stopped selecting nodes, how many calico-node pods
  were ready on the new template;
* runs the switch either with the collection's playbooks or in the documented order by hand with kubectl
  (Calico's documentation, "Enable eBPF on an existing cluster": the ConfigMap, then "Configure kube-proxy", then
  "Enable eBPF mode"; reversed: Installation back to Iptables, then kube-proxy's nodeSelector removed).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import threading
import time
import urllib.request
from pathlib import Path

import yaml

from . import dataplane, felix_race, podrunner, prober

NS = "probe"
SETTLE = 15.0  # seconds the probers keep running after the data plane has settled and every target answered
SERVE_WAIT = 120.0  # seconds a settled data plane may take to answer every target again before the window closes
LATE_AFTER = 5.0  # seconds into a switch when the server pod gets the label that gives Service server-late its endpoint
LATE_GRACE = 3.0  # seconds the late endpoint may take to be programmed when a proxy serves (EndpointSlice, then rules)
CALICO = "v3.31.4"
INVENTORY = "inventories/local/hosts.yml"
ENDPOINT_CM = ("tigera-operator", "kubernetes-services-endpoint")
NON_CALICO = {"non-calico": "true"}


class Timeline(threading.Thread):
    """Polls kube-proxy's DaemonSet and Installation ``default`` every ``interval`` s and records two moments of a
    switch (each once, and only as a change seen during the switch, not the state it started from):

    * ``disabled_at`` - kube-proxy's nodeSelector came to match no node: where Calico was then (FelixConfiguration
      ``bpf_then``; ``switched_then``: calico-node pods Ready on a template newer than the one before the switch,
      and pods desired);
    * ``left_bpf_at`` - the Installation went from BPF to Iptables: ``kube_proxy_then``, kube-proxy processes
      running then, and nodes."""

    def __init__(self, cluster, interval: float = 0.5):
        super().__init__(daemon=True)
        self.cluster, self.interval = cluster, interval
        self.stop_event = threading.Event()
        self.disabled_at = self.left_bpf_at = self.bpf_on_at = None
        self.seen_enabled = self.seen_bpf = self.seen_bpf_off = False
        self.bpf_then = self.switched_then = self.kube_proxy_then = None
        # Felix restarts when bpfEnabled changes (felix/daemon: "Configuration value changed; change DOES require
        # Felix to restart"), every node at once and some seconds after the change: the data plane has not settled
        # until each calico-node process started after it. ``felix_since`` is when a poll that still saw the old
        # value began (the change came after it; a process started after it runs the new value or restarts for it).
        self.bpf0 = self.felix_since = None
        self._polled = time.time()
        ds = _get(cluster, "daemonset", "calico-node", "-n", "calico-system") or {}
        self.generation0 = (ds.get("metadata") or {}).get("generation") or 0
        self._poll()  # the state before the switch's first write (the caller starts the thread, then writes)

    def _poll(self):
        kp = _get(self.cluster, "daemonset", "kube-proxy", "-n", "kube-system")
        selector = ((((kp or {}).get("spec") or {}).get("template") or {}).get("spec") or {}).get(
            "nodeSelector") or {}
        disabled = all(selector.get(k) == v for k, v in NON_CALICO.items())
        if not disabled:
            self.seen_enabled = True
        elif self.seen_enabled and self.disabled_at is None:
            self.disabled_at = time.time()
            felix = _get(self.cluster, "felixconfiguration", "default") or {}
            self.bpf_then = bool((felix.get("spec") or {}).get("bpfEnabled"))
            ready, desired, generation = calico_node_ready(self.cluster)
            self.switched_then = (ready if generation > self.generation0 else 0, desired)
        began, self._polled = self._polled, time.time()
        felix = _get(self.cluster, "felixconfiguration", "default") or {}
        bpf = bool((felix.get("spec") or {}).get("bpfEnabled"))
        if self.bpf0 is None:
            self.bpf0 = bpf
        elif bpf != self.bpf0 and self.felix_since is None:
            self.felix_since = began
        if not bpf:
            self.seen_bpf_off = True
        elif self.seen_bpf_off and self.bpf_on_at is None:
            self.bpf_on_at = time.time()
        inst = _get(self.cluster, "installation.operator.tigera.io", "default") or {}
        plane = ((inst.get("spec") or {}).get("calicoNetwork") or {}).get("linuxDataplane")
        if plane == "BPF":
            self.seen_bpf = True
        elif self.seen_bpf and self.left_bpf_at is None:
            self.left_bpf_at = time.time()
            running = [p for p in self.cluster.processes("kube-proxy") if p["pid"]]
            self.kube_proxy_then = (len(running), len(self.cluster.nodes_with_network()))

    def run(self):
        while not self.stop_event.is_set():
            self._poll()
            self.stop_event.wait(self.interval)

    def stop(self):
        self.stop_event.set()
        self.join(timeout=10)


# The kinds the timeline and ``settled`` read several times a second during a measured switch: read through the
# test's own kubernetes client (``cluster.k8s``, one per thread), not a kubectl process each. A kubectl process costs
# ~0.1 s of CPU on this 2-core machine, and the timeline polled three of them every 0.5 s, beside the pool's other
# tests; anything else goes through kubectl.
_PATHS = {
    "daemonset": "/apis/apps/v1/namespaces/{ns}/daemonsets",
    "pods": "/api/v1/namespaces/{ns}/pods",
    "felixconfiguration": "/apis/crd.projectcalico.org/v1/felixconfigurations",
    "installation.operator.tigera.io": "/apis/operator.tigera.io/v1/installations",
    "tigerastatus": "/apis/operator.tigera.io/v1/tigerastatuses",
}


def _api_get(cluster, kind, name=None, namespace=None, selector=None):
    """GET of one object (None when it does not exist) or a list ({"items": [...]})."""
    from kubernetes.dynamic.exceptions import NotFoundError
    path = _PATHS[kind].format(ns=namespace) + (f"/{name}" if name else "")
    try:
        resp = cluster.k8s.request("GET", path, serialize=False, header_params={"Accept": "application/json"},
                                   query_params=[("labelSelector", selector)] if selector else [])
    except NotFoundError:
        return None
    return json.loads(resp.data)


def _get(cluster, *args):
    kind, rest = args[0], list(args[1:])
    name = namespace = selector = None
    while rest:
        a = rest.pop(0)
        if a == "-n":
            namespace = rest.pop(0)
        elif a == "-l":
            selector = rest.pop(0)
        elif name is None and not a.startswith("-"):
            name = a
        else:
            kind = None  # an argument this reader does not know: kubectl
            break
    if kind in _PATHS and ("{ns}" not in _PATHS[kind] or namespace):
        return _api_get(cluster, kind, name, namespace, selector)
    out = cluster.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(out.stdout) if out.returncode == 0 and out.stdout.strip() else None


def calico_node_ready(cluster) -> tuple:
    """(pods Ready on the calico-node DaemonSet's current template, pods desired, the DaemonSet's generation)."""
    ds = _get(cluster, "daemonset", "calico-node", "-n", "calico-system") or {}
    gen = str((ds.get("metadata") or {}).get("generation"))
    pods = (_get(cluster, "pods", "-n", "calico-system", "-l", "k8s-app=calico-node") or {}).get("items") or []
    ready = 0
    for p in pods:
        if p["metadata"].get("deletionTimestamp") or (p["metadata"].get("labels") or {}).get(
                "pod-template-generation") != gen:
            continue
        if any(c.get("type") == "Ready" and c.get("status") == "True" for c in (p.get("status") or {}).get(
                "conditions") or []):
            ready += 1
    return ready, (ds.get("status") or {}).get("desiredNumberScheduled", 0), int(gen) if gen.isdigit() else 0


def felix_started(cluster) -> dict:
    """{node: when its Felix process started (epoch seconds), or None}: the ``calico-node -felix`` process under each
    running calico-node container's process (calico_node_image.py restarts Felix inside the container, as the
    image's runit does: the pod runner's process stays the same)."""
    roots = {p["node"]: p["pid"] for p in cluster.processes("calico-node") if p["pid"]}
    children, hz = {}, os.sysconf("SC_CLK_TCK")
    boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                if line.startswith("btime "))
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        children.setdefault(int(fields[1]), []).append((int(entry), boot + int(fields[19]) / hz))
    out = {}
    for node, root in roots.items():
        out[node], todo = None, [root]
        while todo:
            for child, started in children.get(todo.pop(), []):
                try:
                    argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if b"-felix" in argv:
                    out[node] = started
                todo.append(child)
    return out


def felix_ready(cluster, node: str) -> bool:
    """Felix's readiness endpoint (localhost:9099, FELIX_HEALTHENABLED as the operator renders it) answers 200 on
    the node."""
    return cluster.in_node(node, sys.executable, "-m", "localcp.podserve", "get", "http://127.0.0.1:9099/readiness",
                           "--timeout", "3", timeout=30, check=False).returncode == 0


def settled(cluster, bpf: bool, kube_proxy: bool, felix_since: float = None) -> bool:
    """The operator has switched Felix (FelixConfiguration bpfEnabled), calico-node has rolled out with every pod
    ready, and kube-proxy runs (or not) on every node. With ``felix_since`` (Timeline.felix_since: bpfEnabled changed
    after it), also every node's Felix process started after it (its restart for the change is over) and ready by
    its own readiness endpoint."""
    felix = _get(cluster, "felixconfiguration", "default") or {}
    if bool((felix.get("spec") or {}).get("bpfEnabled")) != bpf:
        return False
    ds = _get(cluster, "daemonset", "calico-node", "-n", "calico-system") or {}
    st, gen = ds.get("status") or {}, (ds.get("metadata") or {}).get("generation")
    if st.get("observedGeneration") != gen or not (
            st.get("desiredNumberScheduled") == st.get("updatedNumberScheduled") == st.get("numberReady")
            == calico_node_ready(cluster)[0]):
        return False
    if felix_since is not None:
        started = felix_started(cluster)
        if len(started) != st.get("desiredNumberScheduled") or not all(
                t is not None and t > felix_since for t in started.values()):
            return False
        # and ready by its own account: the pod's Ready comes from a probe every few seconds and stays True through
        # a restart of Felix inside the container (the image's runit restarts it, not the pod runner)
        if not all(felix_ready(cluster, node) for node in started):
            return False
    running = [p for p in cluster.processes("kube-proxy") if p["pid"]]
    if len(running) != (len(cluster.nodes_with_network()) if kube_proxy else 0):
        return False
    # and the operator says it is done (what a user watching `kubectl get tigerastatus` waits for)
    ts = _get(cluster, "tigerastatus", "calico") or {}
    conds = {c.get("type"): c.get("status") for c in (ts.get("status") or {}).get("conditions") or []}
    return conds.get("Available") == "True" and conds.get("Progressing") == "False" and conds.get("Degraded") == "False"


def settled_twice(cluster, bpf: bool, kube_proxy: bool, gap: float = 5.0, felix_since: float = None) -> bool:
    """``settled`` now and again ``gap`` seconds later (the operator can start a second rollout right after the
    first: seen by hand, where nothing waits for it)."""
    if not settled(cluster, bpf, kube_proxy, felix_since):
        return False
    time.sleep(gap)
    return settled(cluster, bpf, kube_proxy, felix_since)


class Switches:
    def __init__(self, cluster, workdir: Path, namespace: str = NS):
        self.cluster, self.workdir, self.ns = cluster, Path(workdir), namespace
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.results = {}  # switch name -> measurement
        self.nodes = sorted(cluster.nodes_with_network())

    # -- set-up -------------------------------------------------------------------------------------------------

    def install_iptables(self, timeout: float = 400, release: str = CALICO) -> None:
        c = self.cluster
        base = f"{c.mirror_url}/{release}/manifests"
        c.apply(f"{base}/operator-crds.yaml")
        c.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/installations.operator.tigera.io")
        c.apply(f"{base}/tigera-operator.yaml")
        if release == CALICO:
            c.apply(f"{base}/custom-resources.yaml")
        else:
            # the Installation alone: the APIServer of an older release would run calico-apiserver of that release,
            # which is not built here (its APIService unavailable, API discovery fails); the upgrade installs
            # v3.31.4's (upgrade_apiserver), as test_upgrade.py's operator upgrade does
            with urllib.request.urlopen(f"{base}/custom-resources.yaml", timeout=30) as r:  # the local mirror
                docs = list(yaml.safe_load_all(r.read()))
            c.apply(yaml.safe_dump_all([d for d in docs if d and d["kind"] == "Installation"]))
        c.wait_for(lambda: settled(c, bpf=False, kube_proxy=True), timeout=timeout, interval=3,
                   what="the Iptables install: calico-node ready on every node, kube-proxy on every node")

    def deploy(self, timeout: float = 240) -> None:
        c = self.cluster
        server, client = self.nodes[1], self.nodes[0]
        c.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(prober.workloads(server, client, self.ns)))
        c.wait_for(lambda: {n["pod"] for n in c.pod_networks() if n["namespace"] == self.ns and n["ips"]}
                   == {"server", "client"}, timeout=timeout, interval=2,
                   what=f"the probe pods wired by Calico's CNI plugin ({c.pod_networks()})")
        c.wait_for(lambda: len([p for p in c.processes("agnhost") if p["namespace"] == self.ns and p["pid"]]) == 3,
                   timeout=90, what="the probe pods' netexec servers")
        c.wait_for(lambda: not self.probe_once(), timeout=120, interval=2,
                   what="every probe target answering once before any switch")

    def release(self) -> str:
        """The Calico release calico-node runs: its DaemonSet's image tag."""
        ds = _get(self.cluster, "daemonset", "calico-node", "-n", "calico-system") or {}
        containers = (((ds.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or [{}]
        return podrunner.parse_image(containers[0].get("image") or "")[1] or ""

    def upgrade(self, extra: dict | None = None):
        """The collection's upgrade job (playbooks/upgrade.yml) to v3.31.4, as test_upgrade.py runs it on an operator
        install: the v3.31 operator updates an older release's IP pools only through the Calico API server, so the
        job installs it (``upgrade_apiserver``), and Goldmane and Whisker as v3.31.4's custom-resources.yaml has
        them. Needs ``self.ansible`` (localcp.fixtures.Ansible)."""
        v = {"upgrade_manifest_url": self.cluster.mirror_url, "upgrade_chart_repo_url": self.cluster.chart_repo_url,
             "upgrade_artifacts_dir": str(self.workdir.parent / "artifacts"), "upgrade_timeout": 600,
             "upgrade_goldmane": True, "upgrade_whisker": True, "upgrade_apiserver": True,
             "upgrade_tigerastatus_expected": ["calico", "apiserver"]}
        v.update(extra or {})
        return self.ansible.playbook("playbooks/upgrade.yml", inventory=INVENTORY, extra_vars=v)

    def bpf_enabled_annotated(self) -> bool:
        """FelixConfiguration default's bpfEnabled and the operator's annotation agree on the object, and the object
        carries no Calico metadata (projectcalico.org/metadata) that the operator would read its annotations from
        instead (the collection's calico/dataplane.py operator_bpf_view; not imported here: the benchmarks run this
        module outside the collection)."""
        felix = _get(self.cluster, "felixconfiguration", "default") or {}
        annotations = (felix.get("metadata") or {}).get("annotations") or {}
        spec = felix.get("spec") or {}
        field = "" if spec.get("bpfEnabled") is None else str(bool(spec["bpfEnabled"])).lower()
        return "projectcalico.org/metadata" not in annotations and field == (
            annotations.get("operator.tigera.io/bpfEnabled") or "")

    def operator_owns_bpf_enabled(self, timeout: float = 120) -> None:
        """The remedy the collection's enable_ebpf names when the operator would refuse to set bpfEnabled (after an
        upgrade from v3.29.7): both removed, and the operator (Iptables) sets them again, false."""
        self.cluster.kubectl("patch", "felixconfigurations.crd.projectcalico.org", "default", "--type", "merge", "-p",
                             json.dumps({"metadata": {"annotations": {"operator.tigera.io/bpfEnabled": None}},
                                         "spec": {"bpfEnabled": None}}))
        self.cluster.wait_for(self.bpf_enabled_annotated, timeout=timeout, interval=2,
                              what="the operator setting FelixConfiguration default's bpfEnabled and its annotation")

    def targets(self) -> tuple:
        """(client-pod targets, node targets) - name -> URL."""
        c = self.cluster
        svc = _get(c, "service", "server", "-n", self.ns)["spec"]["clusterIP"]
        pod_ip = _get(c, "pod", "server", "-n", self.ns)["status"]["podIP"]
        node2 = c.nodes_with_network()[self.nodes[1]]["address"]
        nodeport = f"http://{node2}:{prober.NODE_PORT}/hostname"
        late = _get(c, "service", "server-late", "-n", self.ns)["spec"]["clusterIP"]
        return ({"clusterip": f"http://{svc}:80/hostname", "nodeport": nodeport,
                 "pod": f"http://{pod_ip}:{prober.DIRECT_PORT}/hostname", "late-endpoint": f"http://{late}:80/hostname"},
                {"node-nodeport": nodeport})

    def probe_once(self) -> list:
        """The targets that do not answer one GET now (empty: all answer)."""
        in_pod, on_node = self.targets()
        bad = []
        for name, url in in_pod.items():
            if name == "late-endpoint":
                continue  # it has an endpoint only during a switch
            if self.cluster.http_get(url, namespace=self.ns, pod="client", timeout=3).returncode != 0:
                bad.append(name)
        for name, url in on_node.items():
            holder = self.cluster.nodes_with_network()[self.nodes[0]]["holder"]
            if not prober.attempt_in(dataplane.enter(holder), url):
                bad.append(name)
        return bad

    # -- a measured switch --------------------------------------------------------------------------------------

    def measure(self, name: str, action, bpf_after: bool, kube_proxy_after: bool, timeout: float = 600,
                restore=None) -> dict:
        """Probers running from before ``action()`` until the data plane settled plus SETTLE seconds.

        Once, and only for Felix's bug projectcalico/calico#11016 (felix_race.py): when the switch failed or left a
        target unanswered and a node's Felix lost vxlan.calico during it, that node's calico-node is restarted,
        ``restore()`` puts the data plane back where the switch started, and the switch is measured again. What
        was found is printed and kept in the measurement (``retried_for``, shown under the table)."""
        started = time.time()
        try:
            m, failure = self._measure_once(name, action, bpf_after, kube_proxy_after, timeout), None
        except AssertionError as exc:
            m, failure = None, exc
        broken = failure is not None or any(not t["recovered"] for t in m["targets"].values())
        found = felix_race.lost_on_nodes(self.cluster, since=started) if broken else {}
        if not found or restore is None:
            if failure is not None:
                raise AssertionError(f"{failure}\n{felix_race.describe(found)}" if found else str(failure)) from failure
            if found:
                m["felix_lost"] = felix_race.describe(found)
            return m
        why = felix_race.describe(found)
        print(f"[harness] {name}: {'the switch failed' if failure else 'a target unanswered at the end'}; {why}: "
              "restarting that calico-node, restoring the data plane and measuring the switch again", flush=True)
        first = self.workdir / name
        if first.exists():  # the first measurement's probes kept beside the second's
            first.rename(self.workdir / f"{name} (first, Felix lost {felix_race.DEVICE})")
        felix_race.heal(self.cluster, found)
        restore()
        self.wait_serving()
        m = self._measure_once(name, action, bpf_after, kube_proxy_after, timeout)
        m["retried_for"] = why
        self.results[name] = m
        return m

    def wait_serving(self, timeout: float = 120) -> None:
        """Every probe target answers; a node whose running Felix lost vxlan.calico (felix_race.py) gets its
        calico-node restarted first."""
        c = self.cluster
        if self._until_serving(timeout):
            return
        found = felix_race.lost_on_nodes(c)
        if not found:
            raise AssertionError(f"every probe target answering: not within {timeout}s ({self.probe_once()} not)")
        felix_race.heal(c, found)
        if not self._until_serving(timeout):
            raise AssertionError(f"every probe target answering after {felix_race.describe(found)}: not within "
                                 f"{timeout}s ({self.probe_once()} not)")

    def _measure_once(self, name: str, action, bpf_after: bool, kube_proxy_after: bool, timeout: float) -> dict:
        c = self.cluster
        in_pod, on_node = self.targets()
        out_dir = self.workdir / name
        out_dir.mkdir(parents=True, exist_ok=True)
        node_holder = c.nodes_with_network()[self.nodes[0]]["holder"]
        probers = [prober.Prober(dataplane.enter(c.pod_holder(self.ns, "client")), in_pod, out_dir / "client.jsonl"),
                   prober.Prober(dataplane.enter(node_holder), on_node, out_dir / "node.jsonl")]
        c.kubectl("label", "pod", "server", "-n", self.ns, "late-")  # Service server-late without an endpoint
        for p in probers:
            p.start()
        time.sleep(3)  # a few answered attempts before the first write
        timeline = Timeline(c)
        started = time.time()
        timeline.start()
        labelled = {}

        def label_late():
            time.sleep(LATE_AFTER)
            labelled["before"] = time.time()
            c.kubectl("label", "pod", "server", "-n", self.ns, "late=yes", "--overwrite")
            labelled["at"] = time.time()
        late = threading.Thread(target=label_late, daemon=True)
        late.start()
        try:
            result = action()
            rc = getattr(result, "rc", result if isinstance(result, int) else 0)
            if rc != 0:
                failed = [f"{t['task']}: {t['result'].get('msg')}" for t in getattr(result, "tasks", [])
                          if t["result"].get("failed")]
                raise AssertionError(f"{name}: the switch failed (rc {rc}): {failed or ''}\n"
                                     f"{getattr(result, 'stderr', '')[-2000:]}")
            c.wait_for(lambda: settled_twice(c, bpf_after, kube_proxy_after, felix_since=timeline.felix_since),
                       timeout=timeout, interval=2,
                       what=f"{name}: the data plane settled (bpfEnabled {bpf_after}, kube-proxy "
                            f"{'running' if kube_proxy_after else 'gone'})")
            took = time.time() - started
            serving_at = self._until_serving(timeout=SERVE_WAIT)
            time.sleep(SETTLE)
        finally:
            timeline.stop()
            late.join(timeout=30)
            records = []
            for p in probers:
                p.stop()
                records += p.records()
            # the late endpoint counts from when it existed (plus the time a serving proxy takes to program it)
            cutoff = labelled.get("at", float("inf")) + LATE_GRACE
            summary = prober.summarize([r for r in records if r["target"] != "late-endpoint" or r["t"] >= cutoff])
            # how long the late endpoint stayed unprogrammed: from its label to its first answer (what the order of
            # a switch decides; its longest gap also holds later outages, a node's Felix restarting, that all share)
            first = min((r["t"] for r in records if r["target"] == "late-endpoint" and r["ok"]
                         and r["t"] >= labelled.get("before", float("inf"))), default=None)
        m = {"switch": name, "seconds": round(took, 1), "targets": summary, "result": result,
             "serving_after_s": round(serving_at - started - took, 1) if serving_at else None,
             "kube_proxy_disabled_at": (round(timeline.disabled_at - started, 1)
                                        if timeline.disabled_at else None),
             "bpf_then": timeline.bpf_then, "calico_node_switched_then": timeline.switched_then,
             "left_bpf_at": round(timeline.left_bpf_at - started, 1) if timeline.left_bpf_at else None,
             "bpf_on_at": round(timeline.bpf_on_at - started, 1) if timeline.bpf_on_at else None,
             "kube_proxy_running_then": timeline.kube_proxy_then,
             "late_endpoint_at": round(labelled["at"] - started, 1) if labelled.get("at") else None,
             "late_first_answer_s": round(first - labelled["before"], 1) if first is not None else None}
        (out_dir / "summary.json").write_text(json.dumps({k: v for k, v in m.items() if k != "result"}, indent=1,
                                                         default=str))
        self.results[name] = m
        return m

    def _until_serving(self, timeout: float):
        """When, after the data plane settled, every target answered one GET (None: not within ``timeout``, and the
        summary then says which target did not answer at the end). Felix's readiness endpoint can answer before a
        Felix restarted for bpfEnabled has attached its programs: seen in CI (2026-12-06, by hand), both nodes' Felix
        ready 5 s after the operator set bpfEnabled, then new connections across the nodes failed for 10 s, the last
        of them in the settle window - "not answering at the end" of a data plane that answered a second later. The
        window runs on until every target answered once more, the same for every switch, by hand or not."""
        try:
            self.cluster.wait_for(lambda: not self.probe_once(), timeout=timeout, interval=1,
                                  what="every probe target answering")
        except AssertionError:
            return None
        return time.time()

    def ensure_iptables(self, timeout: float = 600) -> None:
        """Back to the Iptables install of v3.31.4 with kube-proxy serving, when an earlier test left it elsewhere
        (or on the release the module started from, when its upgrade test did not run: the collection's upgrade)."""
        c = self.cluster
        if self.release() != CALICO:
            result = self.upgrade({"upgrade_measure_disruption": False, "upgrade_verify_connectivity": False})
            if result.rc != 0:
                raise AssertionError(f"the upgrade from {self.release()} to {CALICO} before this test failed: "
                                     f"{[t['result'].get('msg') for t in result.tasks if t['result'].get('failed')]}")
        if not self.bpf_enabled_annotated():
            self.operator_owns_bpf_enabled()
        if settled(c, bpf=False, kube_proxy=True):
            self.wait_serving()
            return
        inst = _get(c, "installation.operator.tigera.io", "default") or {}
        if ((inst.get("spec") or {}).get("calicoNetwork") or {}).get("linuxDataplane") == "BPF":
            self.hand_disable()
        else:
            c.kubectl("patch", "daemonset", "kube-proxy", "-n", "kube-system", "--type", "merge", "-p",
                      json.dumps({"spec": {"template": {"spec": {"nodeSelector": {k: None for k in NON_CALICO}}}}}))
        c.wait_for(lambda: settled_twice(c, bpf=False, kube_proxy=True), timeout=timeout, interval=3,
                   what="the Iptables install with kube-proxy on every node again")
        # and serving: the way back by hand recreates vxlan.calico too (felix_race.py)
        self.wait_serving()

    def ensure_ebpf(self, timeout: float = 600) -> None:
        """On eBPF with kube-proxy out of the way, the documented way (``hand_enable``), when not there already."""
        c = self.cluster
        if not settled(c, bpf=True, kube_proxy=False):
            self.hand_enable()
            c.wait_for(lambda: settled_twice(c, bpf=True, kube_proxy=False), timeout=timeout, interval=3,
                       what="the eBPF data plane with kube-proxy out of the way again")
        self.wait_serving()

    # -- the documented order, by hand ----------------------------------------------------------------------------

    def hand_enable(self):
        """Calico's documentation, "Enable eBPF on an existing cluster", with kubectl alone: the ConfigMap
        kubernetes-services-endpoint (the API server's node-network address), "Configure kube-proxy" (the
        nodeSelector no node has), "Enable eBPF mode" (Installation linuxDataplane BPF) - one after the other."""
        c = self.cluster
        server = _kubeconfig_server(c)  # the node-network address calico-node dials (dataplane.py)
        host, port = server.rsplit(":", 1)
        cm = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": ENDPOINT_CM[1], "namespace": ENDPOINT_CM[0]},
              "data": {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}}
        c.kubectl("apply", "-f", "-", input=yaml.safe_dump(cm))
        c.kubectl("patch", "daemonset", "kube-proxy", "-n", "kube-system", "--type", "merge", "-p",
                  json.dumps({"spec": {"template": {"spec": {"nodeSelector": NON_CALICO}}}}))
        c.kubectl("patch", "installation.operator.tigera.io", "default", "--type", "merge", "-p",
                  json.dumps({"spec": {"calicoNetwork": {"linuxDataplane": "BPF"}}}))
        return "kubectl: ConfigMap, kube-proxy nodeSelector, Installation BPF"

    def hand_disable(self):
        """The documented way back: Installation linuxDataplane Iptables, then kube-proxy's nodeSelector removed."""
        c = self.cluster
        c.kubectl("patch", "installation.operator.tigera.io", "default", "--type", "merge", "-p",
                  json.dumps({"spec": {"calicoNetwork": {"linuxDataplane": "Iptables"}}}))
        c.kubectl("patch", "daemonset", "kube-proxy", "-n", "kube-system", "--type", "merge", "-p",
                  json.dumps({"spec": {"template": {"spec": {"nodeSelector": {k: None for k in NON_CALICO}}}}}))
        return "kubectl: Installation Iptables, kube-proxy nodeSelector removed"


def _kubeconfig_server(cluster) -> str:
    cfg = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    return cfg["clusters"][0]["cluster"]["server"].split("://", 1)[1]


def rows(results: dict) -> list:
    """One row per switch and target: failed/attempted, the longest gap."""
    out = []
    for name, m in results.items():
        for target, s in m["targets"].items():
            out.append((name, target, s["failed"], s["attempted"], s["longest_gap_s"], s["recovered"]))
    return out


def table(results: dict) -> str:
    width = max([22] + [len(name) for name in results])  # the switch's name ("upgrade v3.29.7 -> v3.31.4")
    lines = [f"{'switch':<{width}}  target          failed/attempted  longest gap (s)  recovered",
             f"{'-' * width}  --------------  ----------------  ---------------  ---------"]
    for name, target, failed, attempted, gap, rec in rows(results):
        lines.append(f"{name:<{width}}  {target:<14}  {f'{failed}/{attempted}':>16}  {gap:>15}  "
                     f"{'yes' if rec else 'NO':>9}")
    for name, m in results.items():
        if m.get("kube_proxy_disabled_at") is not None:
            ready, desired = m["calico_node_switched_then"]
            lines.append(f"{name}: kube-proxy stopped selecting nodes {m['kube_proxy_disabled_at']}s after the "
                         f"first write; then bpfEnabled was {str(m['bpf_then']).lower()}"
                         + (f" (since {m['bpf_on_at']}s)" if m.get("bpf_on_at") is not None else "")
                         + f" and {ready}/{desired} calico-node pods were Ready on the switched template")
        if m.get("left_bpf_at") is not None:
            running, nodes = m["kube_proxy_running_then"]
            lines.append(f"{name}: Installation left eBPF {m['left_bpf_at']}s after the first write, with kube-proxy "
                         f"running on {running}/{nodes} nodes")
        if m.get("retried_for"):
            lines.append(f"{name}: measured a second time; the first time {m['retried_for']}")
        if m.get("felix_lost"):
            lines.append(f"{name}: {m['felix_lost']}")
    return "\n".join(lines)


def median_table(runs: list) -> str:
    """Markdown: per switch and target, the median over ``runs`` (each a results dict) of failed, attempted and the
    longest gap."""
    lines = ["| switch | target | failed / attempted (median) | longest gap, s (median) | runs |",
             "|---|---|---|---|---|"]
    keys = []
    for res in runs:
        for name, target, *_ in rows(res):
            if (name, target) not in keys:
                keys.append((name, target))
    for name, target in keys:
        vals = [r[name]["targets"][target] for r in runs if name in r and target in r[name]["targets"]]
        failed = statistics.median(v["failed"] for v in vals)
        attempted = statistics.median(v["attempted"] for v in vals)
        gap = statistics.median(v["longest_gap_s"] for v in vals)
        lines.append(f"| {name} | {target} | {failed:g} / {attempted:g} | {gap:.1f} | "
                     f"{', '.join(str(v['failed']) + '/' + str(v['attempted']) for v in vals)} |")
    return "\n".join(lines)
