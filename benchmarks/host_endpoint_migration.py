"""Benchmark: host_endpoint_migration versus a per-endpoint kubernetes.core loop.

Builds N kwok nodes, each with one old all-interfaces HostEndpoint (Calico v3.31.4's CRDs from the release
mirror) carrying three labels, and KubeControllersConfiguration default with autoCreate Disabled. The real
calico-kube-controllers v3.31.4 runs behind its Deployment during each run (tests/integration/kube_controllers.py;
the pod runner runs it): once autoCreate is Enabled it creates ``<node>-auto-hep`` for every node, all at once.
Its requests are its ServiceAccount's and are not counted (only user ``admin``'s are).

* module: one call of ``calico_ops.lifecycle.host_endpoint_migration`` for all N endpoints;
* loop: kubernetes.core only, one task per endpoint and step - k8s_info of the endpoints, a merge patch of each
  node's labels, the KubeControllersConfiguration patch, a k8s_info retried until the node's automatic endpoint
  exists, a delete of the old endpoint (no conflict check, no record) - on the first ``--loop-endpoints`` nodes,
  from the same starting point (fresh endpoints with new label values).

Every run is checked: labels on the nodes, automatic endpoints present, old endpoints gone. Wall time and the API
requests of user ``admin`` (audit log) are reported, per run and per endpoint, with the loop/module ratio.

    PYTHONPATH=tests .venv/bin/python benchmarks/host_endpoint_migration.py [--endpoints 1000]
        [--loop-endpoints 100] [--contenders module,loop]

Uses the control plane of LOCALCP_RUN_DIR when set, else starts one (and stops it at the end).
Results are printed and written to benchmarks/work/host_endpoint_migration-<N>.json.
"""

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests" / "integration"))

from common import control_plane  # noqa: E402
from localcp.fixtures import Ansible, Cluster  # noqa: E402
from kube_controllers import METRICS_OFF, KubeControllers, calico_labels, delete_automatic_endpoints  # noqa: E402
from test_host_endpoint_migration import (  # noqa: E402
    CRD, HEPS, KCC, Api, apply_crds, coll, delete_crds, old_hep)

MODULE_PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - calico_ops.lifecycle.host_endpoint_migration:
        record_namespace: "{{ record_ns }}"
        record_name: "{{ record_name }}"
        record_path: "{{ record_path }}"
        poll_interval: 1
        wait_timeout: 600
"""

LOOP_PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - kubernetes.core.k8s_info:
        api_version: crd.projectcalico.org/v1
        kind: HostEndpoint
      register: heps
    - ansible.builtin.set_fact:
        old: >-
          {{ heps.resources | selectattr('spec.interfaceName', 'equalto', '*')
             | rejectattr('metadata.name', 'match', '.*-auto-hep$')
             | selectattr('spec.node', 'in', loop_nodes) | list }}
    - kubernetes.core.k8s:
        state: patched
        api_version: v1
        kind: Node
        name: "{{ item.spec.node }}"
        merge_type: merge
        definition:
          metadata:
            labels: "{{ item.metadata.labels }}"
      loop: "{{ old }}"
      loop_control:
        label: "{{ item.spec.node }}"
    - kubernetes.core.k8s:
        state: patched
        api_version: crd.projectcalico.org/v1
        kind: KubeControllersConfiguration
        name: default
        merge_type: merge
        definition:
          spec:
            controllers:
              node:
                hostEndpoint:
                  autoCreate: Enabled
    - kubernetes.core.k8s_info:
        api_version: crd.projectcalico.org/v1
        kind: HostEndpoint
        name: "{{ item.spec.node }}-auto-hep"
      register: auto
      # calico-kube-controllers keeps the node's labels in the projectcalico.org/metadata annotation
      until: >-
        auto.resources | length > 0
        and (auto.resources[0].metadata.labels
             | combine((((auto.resources[0].metadata.annotations | default({}))['projectcalico.org/metadata']
                         | default('{}') | from_json).labels | default({})))
             | dict2items | intersect(item.metadata.labels | dict2items) | length) == (item.metadata.labels | length)
      retries: 300
      delay: 1
      loop: "{{ old }}"
      loop_control:
        label: "{{ item.spec.node }}"
    - kubernetes.core.k8s:
        state: absent
        api_version: crd.projectcalico.org/v1
        kind: HostEndpoint
        name: "{{ item.metadata.name }}"
      loop: "{{ old }}"
      loop_control:
        label: "{{ item.metadata.name }}"
"""


class Bench(object):
    def __init__(self, cluster, n, workdir):
        self.cluster = cluster
        self.api = Api(cluster)
        self.n = n
        self.workdir = workdir
        self.tag = uuid.uuid4().hex[:5]
        self.nodes = ["hepb-%s-%04d" % (self.tag, i) for i in range(n)]
        self.record_ns = "hepb-" + self.tag
        self.ansible = Ansible(cluster, workdir)
        self.created_crds = []

    def setup(self):
        self.created_crds = apply_crds(self.cluster)
        if self.api.get(KCC) is not None:
            raise RuntimeError("KubeControllersConfiguration default exists already on this control plane")
        self.api.req("POST", "/api/v1/namespaces", {"metadata": {"name": self.record_ns}})
        started = time.monotonic()
        self.cluster.add_nodes([self.cluster.node_spec(name) for name in self.nodes], timeout=900)
        print("%d kwok nodes Ready in %.0fs" % (self.n, time.monotonic() - started), flush=True)

    def reset(self, round_name, nodes):
        """autoCreate Disabled, no automatic endpoints, one fresh old endpoint per node with new label values."""
        body = {"apiVersion": CRD, "kind": "KubeControllersConfiguration", "metadata": {"name": "default"},
                "spec": dict(METRICS_OFF, controllers={"node": {"reconcilerPeriod": "5m", "syncLabels": "Enabled",
                                                                "hostEndpoint": {"autoCreate": "Disabled"}}})}
        self.api.delete(KCC)  # kube-controllers is stopped between runs: nothing creates it again
        self.api.req("POST", coll(CRD, "kubecontrollersconfigurations"), body)
        delete_automatic_endpoints(self.cluster)

        def make(node):
            self.api.req("POST", HEPS, old_hep("%s-%s" % (node, round_name), node, self.labels(round_name, node)))
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(make, nodes))

    @staticmethod
    def labels(round_name, node):
        return {"bench-round": round_name, "bench-zone": "z%s" % node[-1], "bench-hep": node}

    def verify(self, round_name, nodes):
        heps = dict((h["metadata"]["name"], h) for h in self.api.items(HEPS, limit=5000))
        by_node = dict((n["metadata"]["name"], n) for n in self.api.items("/api/v1/nodes", limit=5000))
        for node in nodes:
            want = self.labels(round_name, node)
            assert "%s-%s" % (node, round_name) not in heps, "old endpoint of %s still there" % node
            auto = heps.get(node + "-auto-hep")
            assert auto is not None, "no automatic endpoint for %s" % node
            for key, value in want.items():
                assert by_node[node]["metadata"]["labels"].get(key) == value, (node, key)
                assert calico_labels(auto).get(key) == value, (node, key)

    def play(self, text, extra):
        mark = self.cluster.audit.mark()
        start = time.monotonic()
        res = self.ansible.playbook(text, extra_vars=extra, timeout=6 * 3600)
        wall = time.monotonic() - start
        if res.rc != 0:
            raise RuntimeError("the play failed:\n%s\n%s" % (res.stdout[-5000:], res.stderr[-3000:]))
        events = self.cluster.audit.events_since(mark)  # user admin's: kube-controllers' are its ServiceAccount's
        writes = [e for e in events if e.get("verb") in ("create", "update", "patch", "delete")]
        out = {"wall_s": round(wall, 1), "requests": len(events), "writes": len(writes),
               "conflicts_409_422": sum(1 for e in writes if e["responseStatus"]["code"] in (409, 422))}
        for task in res.tasks:
            if "timings" in task["result"]:
                out["module_timings"] = task["result"]["timings"]
        return out

    def run(self, contender, count):
        nodes = self.nodes[:count]
        self.reset(contender, nodes)
        with KubeControllers(self.cluster):
            if contender == "module":
                out = self.play(MODULE_PLAY, {"record_ns": self.record_ns, "record_name": "bench-" + self.tag,
                                              "record_path": str(self.workdir / "module-record.json")})
            else:
                out = self.play(LOOP_PLAY, {"loop_nodes": nodes})
        self.verify(contender, nodes)
        out["endpoints"] = count
        out["per_endpoint"] = {"wall_ms": round(1000.0 * out["wall_s"] / count, 1),
                               "requests": round(out["requests"] / float(count), 2)}
        return out

    def cleanup(self):
        self.api.delete(KCC)
        delete_automatic_endpoints(self.cluster)
        mine = set(self.nodes)
        names = [h["metadata"]["name"] for h in self.api.items(HEPS, limit=5000) if h["spec"].get("node") in mine]
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda name: self.api.delete(HEPS + "/" + name), names))
        self.cluster.remove_nodes(self.nodes)
        self.api.delete("/api/v1/namespaces/" + self.record_ns)
        delete_crds(self.cluster, self.created_crds)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--endpoints", type=int, default=1000)
    parser.add_argument("--loop-endpoints", type=int, default=100)
    parser.add_argument("--contenders", default="module,loop")
    args = parser.parse_args()
    cp, own = control_plane()
    out_dir = REPO / "benchmarks" / "work"
    out_dir.mkdir(parents=True, exist_ok=True)
    results = {"endpoints": args.endpoints, "nodes": args.endpoints}
    try:
        bench = Bench(Cluster(cp), args.endpoints, Path(tempfile.mkdtemp(dir=str(out_dir))))
        bench.setup()
        try:
            for contender in args.contenders.split(","):
                count = args.endpoints if contender == "module" else min(args.loop_endpoints, args.endpoints)
                results[contender] = bench.run(contender, count)
                print(contender, json.dumps(results[contender]), flush=True)
        finally:
            bench.cleanup()
    finally:
        if own is not None:
            own.stop(remove_dir=True)
    if "module" in results and "loop" in results:
        m, lp = results["module"]["per_endpoint"], results["loop"]["per_endpoint"]
        results["ratio_loop_over_module_per_endpoint"] = {
            "wall": round(lp["wall_ms"] / m["wall_ms"], 1), "requests": round(lp["requests"] / m["requests"], 2)}
        results["loop_extrapolated_to_module_n_s"] = round(lp["wall_ms"] * args.endpoints / 1000.0)
    path = out_dir / ("host_endpoint_migration-%d.json" % args.endpoints)
    path.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
