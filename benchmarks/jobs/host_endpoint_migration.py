"""Job host_endpoint_migration: N old host endpoints on N kwok nodes moved to the automatic ones.

Builds N kwok nodes, each with one old all-interfaces HostEndpoint (Calico v3.31.4's CRDs from the release mirror)
carrying three labels, and KubeControllersConfiguration default with autoCreate Disabled; every run starts from fresh
endpoints with new label values. The real calico-kube-controllers v3.31.4 runs behind its Deployment during each run
(tests/integration/kube_controllers.py; the pod runner runs it): once autoCreate is Enabled it creates
``<node>-auto-hep`` for every node, all at once. Its requests are its ServiceAccount's and are not counted (only user
``admin``'s are). Every run is checked: labels on the nodes, automatic endpoints present, old endpoints gone; one
label patch per node, one delete per old endpoint and KubeControllersConfiguration once (asserted).

* ours: one call of ``calico_ops.lifecycle.host_endpoint_migration`` for all N endpoints;
* naive: kubernetes.core only, one task per endpoint and step (``LOOP_PLAY``) - k8s_info of the endpoints, a merge
  patch of each node's labels, the KubeControllersConfiguration patch, a k8s_info retried until the node's automatic
  endpoint exists, a delete of the old endpoint (no conflict check, no record);
* limit: the module's own guarded patches and deletes (host_endpoints/rules.py) sent by a bare client;
* kubectl: benchmarks/kubectl_bulk/host_endpoint_migration.sh.
"""

import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from localcp.api import Api
from kube_controllers import METRICS_OFF, KubeControllers, calico_labels, delete_automatic_endpoints
from test_host_endpoint_migration import CRD, HEPS, KCC, apply_crds, coll, delete_crds, old_hep

from benchmarks import limit
from benchmarks.harness import (Job, LimitContender, audited, collection_module, collection_rules, log, timed_play,
                                timed_script)

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


class OldEndpoints(object):
    """The job's objects: N kwok nodes, one old host endpoint per node and round (``reset``), the record's
    namespace, Calico's CRDs where the control plane has none."""

    def __init__(self, cluster, n):
        self.cluster = cluster
        self.api = Api(cluster)
        self.n = n
        self.tag = uuid.uuid4().hex[:5]
        self.nodes = ["hepb-%s-%04d" % (self.tag, i) for i in range(n)]
        self.record_ns = "hepb-" + self.tag
        self.created_crds = []

    def setup(self):
        self.created_crds = apply_crds(self.cluster)
        if self.api.get(KCC) is not None:
            raise RuntimeError("KubeControllersConfiguration default exists already on this control plane")
        self.api.req("POST", "/api/v1/namespaces", {"metadata": {"name": self.record_ns}})
        started = time.monotonic()
        self.cluster.add_nodes([self.cluster.node_spec(name) for name in self.nodes], timeout=900)
        log("%d kwok nodes Ready in %.0fs" % (self.n, time.monotonic() - started))

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


def _target_writes(by_resource):
    """Writes to the nodes, the host endpoints and KubeControllersConfiguration: the job's own."""
    return (by_resource.get("nodes", 0) + by_resource.get("hostendpoints", 0)
            + by_resource.get("kubecontrollersconfigurations", 0))


class HostEndpointMigration(LimitContender, Job):
    unit = "endpoints"

    def setup(self, n):
        self.n = n
        self.bench = OldEndpoints(self.cluster, n)
        self.bench.setup()

    def teardown(self):
        self.bench.cleanup()

    def _reset(self, round_name):
        """The previous round's labels off the nodes (else they conflict with the new values), then a fresh start."""
        b = self.bench
        keys = list(b.labels(round_name, b.nodes[0]))

        def strip(node):
            b.api.req("PATCH", "/api/v1/nodes/" + node, {"metadata": {"labels": dict.fromkeys(keys)}},
                      ctype="application/merge-patch+json")
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(strip, b.nodes))
        b.reset(round_name, b.nodes)

    def _round(self, round_name, play, extra, rerun):
        b = self.bench
        self._reset(round_name)
        # the real calico-kube-controllers (its requests are its ServiceAccount's: not counted, only admin's are)
        with KubeControllers(self.cluster):
            m = timed_play(self.cluster, self.ansible, play, extra, what=round_name)
            again = timed_play(self.cluster, self.ansible, play, extra, what=round_name + " re-run") if rerun else None
        b.verify(round_name, b.nodes)
        by = m["writes_by_resource"]
        target = _target_writes(by)
        # one label patch per node, one delete per old endpoint, KubeControllersConfiguration once
        assert target == 2 * self.n + 1, ("writes to nodes/host endpoints/KubeControllersConfiguration", target,
                                          "expected", 2 * self.n + 1, by, "reads", m["reads"], "wall", m["wall_s"])
        m.update({"changed": 2 * self.n + 1, "record_writes": m["writes"] - target})
        return m, again

    def ours(self, rep):
        b = self.bench
        return self._round("m%d" % rep, MODULE_PLAY, {
            "record_ns": b.record_ns, "record_name": "bench-%s-%d" % (b.tag, rep),
            "record_path": str(self.workdir / ("hep-record-%d-%d.json" % (self.n, rep)))}, True)

    def naive(self, rep):
        m, _ = self._round("l%d" % rep, LOOP_PLAY, {"loop_nodes": self.bench.nodes}, False)
        return m

    def _other_round(self, round_name, func):
        """``func(round_name)`` -> seconds, with the real calico-kube-controllers running; requests from the audit log
        (user admin); the same checks as ours'."""
        b = self.bench
        self._reset(round_name)
        with KubeControllers(self.cluster):
            wall, counts = audited(self.cluster, func, round_name)
        b.verify(round_name, b.nodes)
        by = counts["writes_by_resource"]
        target = _target_writes(by)
        assert target == 2 * self.n + 1, ("writes to nodes/host endpoints/KubeControllersConfiguration", target, by)
        return {"wall_s": round(wall, 3), "reads": counts["reads"], "writes": counts["writes"],
                "dry_run_writes": counts["dry_run_writes"], "writes_by_resource": by, "changed": 2 * self.n + 1}

    def _limit_cycle(self, round_name, concurrency):
        """The requests ours' module sends, by a bare client: the endpoints and nodes listed once, one guarded JSON
        patch of each node's labels (the module's own ops: host_endpoints/rules.py label_patch), the
        KubeControllersConfiguration patch, the endpoints listed every second until calico-kube-controllers has
        made every node's automatic endpoint with the labels (as ours' poll_interval 1), one DELETE per old endpoint
        with its UID as precondition."""
        rules = collection_rules("host_endpoints")
        client = limit.BareClient(self.cluster.cp)
        mine = set(self.bench.nodes)
        accept = collection_module("k8s.client").ACCEPT_METADATA  # ours asks for the patched node's metadata

        def run(rnd):
            start = time.monotonic()
            old = [h for h in client.list(HEPS) if h["spec"].get("interfaceName") == "*"
                   and not h["metadata"]["name"].endswith("-auto-hep") and h["spec"].get("node") in mine
                   and (h["metadata"].get("labels") or {}).get("bench-round") == rnd]
            nodes = dict((n["metadata"]["name"], n) for n in client.list("/api/v1/nodes"))
            stream = []
            for h in old:
                node = nodes[h["spec"]["node"]]["metadata"]
                stream.append({"method": "PATCH", "path": "/api/v1/nodes/" + node["name"],
                               "content_type": "application/json-patch+json", "accept": accept,
                               "body": rules.label_patch(node.get("labels"), h["metadata"]["labels"],
                                                         node["resourceVersion"])})
            client.send(stream, concurrency)
            client.send([{"method": "PATCH", "path": KCC, "content_type": "application/merge-patch+json",
                          "body": {"spec": {"controllers": {"node": {"hostEndpoint": {"autoCreate": "Enabled"}}}}}}], 1)
            _wait_for_automatic_endpoints(client, dict((h["spec"]["node"], h["metadata"]["labels"]) for h in old))
            client.send([{"method": "DELETE", "path": "%s/%s" % (HEPS, h["metadata"]["name"]),
                          "body": {"kind": "DeleteOptions", "apiVersion": "v1",
                                   "preconditions": {"uid": h["metadata"]["uid"]}}} for h in old], concurrency)
            return time.monotonic() - start

        return self._other_round(round_name, run)

    def kubectl(self, rep):
        work = self._kubectl_work(rep)

        def run(rnd):
            return timed_script(self.cluster, "host_endpoint_migration.sh", rnd, str(work))[0]
        return self._other_round("k%d" % rep, run)


def _wait_for_automatic_endpoints(client, want, timeout=600):
    """List the endpoints every second until each node of ``want`` ({node: labels}) has its automatic endpoint with
    those labels."""
    deadline = time.monotonic() + timeout
    while True:
        auto = dict((h["spec"].get("node"), h) for h in client.list(HEPS) if h["metadata"]["name"].endswith("-auto-hep"))
        if all(node in auto and all(calico_labels(auto[node]).get(k) == v for k, v in labels.items())
               for node, labels in want.items()):
            return
        assert time.monotonic() < deadline, "automatic endpoints missing after %d s" % timeout
        time.sleep(1)
