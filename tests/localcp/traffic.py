"""Traffic through the data plane, for `make demo` and the footprint benchmark: a server pod and a client pod on two
nodes, a ClusterIP and a NodePort Service, and the requests that prove the eBPF data plane serves them.

    python -m localcp.traffic --run-dir DIR     deploy (idempotent), wait, send the requests, print what answered

Every request is a real connection from the client pod's network namespace (or from this machine, outside the
cluster), answered by the server pod's netexec (localcp.podserve) through Felix's BPF programs; the lines printed
quote the addresses the API shows and the answer the server gave (the client address it saw).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import yaml

from . import dataplane

NAMESPACE = "demo-traffic"
AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.53"
NODE_PORT = 30080


def netexec_pod(name: str, node: str, namespace: str, ports: tuple = (8080,)) -> dict:
    """A pod with a network (Calico's CNI plugin) running agnhost netexec on 8080 (and on each further port, a
    container each), labelled ``app: <name>``."""
    containers = [{"name": "netexec" if i == 0 else f"netexec-{port}", "image": AGNHOST,
                   "args": ["netexec", f"--http-port={port}"]} for i, port in enumerate(ports)]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": name},
                         "annotations": {dataplane.NETWORK_ANNOTATION: "true"}},
            "spec": {"nodeName": node, "containers": containers}}


def workloads(server_node: str, client_node: str, namespace: str = NAMESPACE) -> list:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        # the server also serves 8081, the target of Service server-apart (test_dataplane.py: a Service's target port
        # apart from the port the client dials directly, and why it matters in eBPF mode)
        netexec_pod("server", server_node, namespace, ports=(8080, 8081)), netexec_pod("client", client_node, namespace),
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "server", "namespace": namespace},
         "spec": {"selector": {"app": "server"}, "ports": [{"port": 80, "targetPort": 8080}]}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "server-apart", "namespace": namespace},
         "spec": {"selector": {"app": "server"}, "ports": [{"port": 80, "targetPort": 8081}]}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "server-nodeport", "namespace": namespace},
         "spec": {"type": "NodePort", "externalTrafficPolicy": "Local", "selector": {"app": "server"},
                  "ports": [{"port": 80, "targetPort": 8080, "nodePort": NODE_PORT}]}},
    ]


class Traffic:
    """The demo's workloads and requests, on the test fixtures' Cluster of a control plane's run dir (its kubectl,
    pod networks, in-node commands and in-pod GETs)."""

    def __init__(self, run_dir: Path):
        from .cluster import ControlPlane
        from .fixtures import Cluster
        self.cluster = Cluster(ControlPlane.load(Path(run_dir)))
        self.run_dir = Path(run_dir)
        self.nodes = self.cluster.nodes_with_network()

    def _json(self, *args) -> dict:
        return json.loads(self.cluster.kubectl(*args, "-o", "json").stdout)

    def deploy(self) -> tuple:
        names = sorted(self.nodes)
        server_node, client_node = names[min(1, len(names) - 1)], names[0]
        self.cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(workloads(server_node, client_node)))
        return server_node, client_node

    def networks(self) -> list:
        return self.cluster.pod_networks()

    def holder(self, pod: str):
        return next((n["holder"] for n in self.networks() if n["namespace"] == NAMESPACE and n["pod"] == pod
                     and n["ips"] and n["holder"]), None)

    def wait_ready(self, timeout: float = 300, progress=None) -> None:
        deadline, last = time.monotonic() + timeout, 0.0
        while True:
            servers = [p for p in self.cluster.processes("agnhost") if p["namespace"] == NAMESPACE]
            if self.holder("server") and self.holder("client") and servers and all(p["pid"] for p in servers):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"the demo's pods have no network after {timeout:.0f}s: "
                                   f"{[(n['pod'], n['ips'], n['problem']) for n in self.networks()]}")
            if progress and time.monotonic() - last > 10:
                progress(f"waiting for the pods' networks (Calico CNI) and servers: "
                         f"{[(n['pod'], n['ips'] or n['problem']) for n in self.networks()]}")
                last = time.monotonic()
            time.sleep(0.5)

    def get(self, url: str, pod: str | None = "client", timeout: float = 3):
        """(answered, body or the client's error), from the pod (or this machine: pod None)."""
        if pod and not self.holder(pod):
            return False, f"pod {pod} has no network yet"
        proc = self.cluster.http_get(url, namespace=NAMESPACE if pod else None, pod=pod, timeout=timeout)
        return proc.returncode == 0, (proc.stdout if proc.returncode == 0 else proc.stderr.strip())

    def first_answer(self, url: str, pod: str | None = "client", timeout: float = 120):
        deadline = time.monotonic() + timeout
        while True:
            ok, text = self.get(url, pod)
            if ok or time.monotonic() > deadline:
                return ok, text
            time.sleep(0.5)

    def pod_ip(self, name: str) -> str:
        return self._json("get", "pod", name, "-n", NAMESPACE)["status"]["podIP"]

    def cluster_ip(self) -> str:
        return self._json("get", "service", "server", "-n", NAMESPACE)["spec"]["clusterIP"]

    def requests(self) -> list:
        """(label, url, from, ok, answer) of each request the demo shows."""
        server_node = self._json("get", "pod", "server", "-n", NAMESPACE)["spec"]["nodeName"]
        cluster_ip = self.cluster_ip()
        node_ip = self.nodes[server_node]["address"]
        server_ip = self.pod_ip("server")
        plan = [("pod on another node", f"http://{server_ip}:8080/clientip", "client"),
                ("ClusterIP Service", f"http://{cluster_ip}/clientip", "client"),
                (f"NodePort Service on {server_node}", f"http://{node_ip}:{NODE_PORT}/clientip", "client"),
                ("NodePort (externalTrafficPolicy Local) from outside the cluster",
                 f"http://{node_ip}:{NODE_PORT}/clientip", None)]
        out = []
        for label, url, pod in plan:
            ok, text = self.first_answer(url, pod, timeout=60)
            out.append((label, url, pod, ok, text))
        return out

    def nat_entry(self, node: str, cluster_ip: str) -> list:
        lines = self.cluster.in_node(node, self.cluster.bin("calico-bpf"), "nat", "dump",
                                     check=False).stdout.splitlines()
        for i, line in enumerate(lines):
            if line.startswith(f"{cluster_ip} port 80 "):
                backends = []
                for b in lines[i + 1:]:
                    if not b.startswith("\t"):
                        break
                    backends.append(" ".join(b.split()))
                return [line.strip()] + backends
        return []


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="localcp.traffic", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-dir", required=True)
    args = parser.parse_args(argv)
    t = Traffic(Path(args.run_dir))
    server_node, client_node = t.deploy()
    print(f"--- pods with a network (Calico CNI, calico-ipam): server on {server_node}, client on {client_node}")
    t.wait_ready(progress=lambda m: print(f"    {m}", flush=True))
    for n in t.networks():
        if n["namespace"] == NAMESPACE:
            print(f"    {n['namespace']}/{n['pod']:<7} node {n['node']}  IP {', '.join(n['ips'])}  "
                  f"interface {n['interfaces'][0] if n['interfaces'] else '?'} (on the node)")
    client_ip = t.pod_ip("client")
    print("--- requests answered through the eBPF data plane (no kube-proxy process on any node)")
    failed = 0
    for label, url, pod, ok, text in t.requests():
        source = f"client pod {client_ip}" if pod else "this machine (outside the cluster)"
        if ok:
            print(f"    OK   {label:<62} {url:<40} from {source}: server saw {text}")
        else:
            failed += 1
            print(f"    FAIL {label:<62} {url:<40} from {source}: {text}")
    cluster_ip = t.cluster_ip()
    print(f"--- Calico's BPF NAT table for {cluster_ip}:80 (calico-bpf nat dump, in each node's namespaces)")
    for node in sorted(t.nodes):
        entry = t.nat_entry(node, cluster_ip)
        print(f"    {node}: {' -> '.join(entry) if entry else '(not there)'}")
    print("--- calico-node and calico-typha behind their pods (real processes in each node's namespaces)")
    for p in t.cluster.processes():
        if p["component"] in ("calico-node", "calico-typha"):
            rss = _rss_mib(p["pid"]) if p["pid"] else 0
            print(f"    {p['component']:<13} {p['namespace']}/{p['pod']:<32} node {p['node']}  pid {p['pid']}  "
                  f"{rss:.0f} MiB RSS (with its children)  restarts {p['restarts']}")
    return 1 if failed else 0


def process_tree(pid: int) -> list:
    """A process and its descendants (by /proc's children lists)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
    return out


def rss_kib(pids: list) -> int:
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        except (OSError, StopIteration, ValueError):
            continue
    return total


def _rss_mib(pid: int) -> float:
    """RSS of a process and its descendants, MiB."""
    return rss_kib(process_tree(pid)) / 1024


if __name__ == "__main__":
    sys.exit(main())
