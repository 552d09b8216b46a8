"""Job preflight: ebpf_preflight_info over N kwok nodes (the sizes are capped at 5,000 nodes), in one call.

Creates N kwok nodes (a mix: Ubuntu 22.04, RHEL 8.1 with kernel 4.18.0-147, arm64, s390x) and runs the module once
through ansible-playbook; the API requests it causes (audit log, user ``admin``) should not grow with N except for
the pagination of the node LIST (``page_size`` 500), and it writes nothing (asserted). Every run is checked: every
node judged, the shaped nodes with the expected verdict.

* naive: k8s_info of the nodes, the kube-proxy ConfigMap and the Services, then one set_fact per node judging it;
* limit: ours' reads (/apis, the nodes in pages of 500, the kube-proxy ConfigMap and DaemonSet, Services, Pods, the
  Calico and operator types /apis serves) by a bare client, concurrently, every node judged by the module's rules;
* kubectl: benchmarks/kubectl_bulk/preflight.sh.
"""

import os
import time
from concurrent.futures import ThreadPoolExecutor

from benchmarks import limit
from benchmarks.harness import Job, LimitContender, audited, collection_module, timed_play, timed_script

MAX_NODES = 5000

PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: preflight
      calico_ops.lifecycle.ebpf_preflight_info:
        page_size: "{{ page_size }}"
      register: preflight
"""

NAIVE = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    failing: []
  tasks:
    - name: Nodes
      kubernetes.core.k8s_info:
        kind: Node
      register: nodes
    - name: kube-proxy configuration
      kubernetes.core.k8s_info:
        kind: ConfigMap
        namespace: kube-system
        name: kube-proxy
      register: kube_proxy
    - name: Services (SCTP)
      kubernetes.core.k8s_info:
        kind: Service
      register: services
    - name: Judge each node
      ansible.builtin.set_fact:
        failing: "{{ failing + [item.metadata.name] }}"
      when: >-
        item.status.nodeInfo.architecture not in ['amd64', 'arm64']
        or (item.status.nodeInfo.osImage is search('Red Hat Enterprise Linux 8')
            and (item.status.nodeInfo.kernelVersion.split('-')[1].split('.')[0] | int) < 193)
      loop: "{{ nodes.resources }}"
      loop_control:
        label: "{{ item.metadata.name }}"
    - name: verdict
      ansible.builtin.debug:
        msg: "{{ failing }}"
"""

SHAPES = [
    ("ubuntu", {}, "ok"),
    ("rhel81", {"osImage": "Red Hat Enterprise Linux 8.1 (Ootpa)", "kernelVersion": "4.18.0-147.el8.x86_64"},
     "fail"),
    ("arm64", {"architecture": "arm64"}, "ok"),
    ("s390x", {"architecture": "s390x"}, "fail"),
]


def specs(cluster, n, tag):
    """(N kwok node specs, {name: the verdict expected}): one node in ten of a shape other than Ubuntu."""
    out, expected = [], {}
    for i in range(n):
        shape, info, verdict = SHAPES[0] if i % 10 else SHAPES[(i // 10) % len(SHAPES)]
        name = "bench-%s-%s-%05d" % (tag, shape, i)
        out.append(cluster.node_spec(name, **info))
        expected[name] = verdict
    return out, expected


class Preflight(LimitContender, Job):
    unit = "nodes"

    def size(self, n):
        return min(n, MAX_NODES)

    def setup(self, n):
        self.n = n
        self.tag = os.urandom(2).hex()
        self.specs, self.expected = specs(self.cluster, n, self.tag)
        self.cluster.add_nodes(self.specs, timeout=1800)

    def teardown(self):
        self.cluster.remove_nodes([s["metadata"]["name"] for s in self.specs])

    def _check_failing(self, failing):
        """Every node of a failing shape judged failing, and no other."""
        wrong = [n for n, v in self.expected.items() if (n in failing) != (v == "fail")]
        assert not wrong, wrong[:5]

    def ours(self, rep):
        m = timed_play(self.cluster, self.ansible, PLAY, {"page_size": 500}, what="preflight")
        judged = m["_result"].result_of("preflight")["nodes"]
        wrong = [n for n, v in self.expected.items() if judged.get(n, {}).get("verdict") != v]
        assert not wrong, wrong[:5]
        rerun = timed_play(self.cluster, self.ansible, PLAY, {"page_size": 500}, what="preflight re-run")
        m["changed"] = 0
        return m, rerun

    def naive(self, rep):
        m = timed_play(self.cluster, self.ansible, NAIVE, {}, what="naive preflight")
        self._check_failing(set(m["_result"].result_of("verdict")["msg"]))
        return m

    def check(self, m, rerun):
        assert m["writes"] == 0 and rerun["writes"] == 0, (m["writes_by_resource"], rerun["writes_by_resource"])

    def _other_run(self, func):
        """``func()`` -> (seconds, the names of the nodes it judged failing); requests from the audit log (user
        admin); the verdicts checked against the shapes as the naive loop's (every failing node and no other)."""
        (wall, failing), counts = audited(self.cluster, func)
        self._check_failing(failing)
        assert not counts["_writes"], counts["_writes"][:3]
        return {"wall_s": round(wall, 3), "reads": counts["reads"], "writes": 0,
                "dry_run_writes": counts["dry_run_writes"], "writes_by_resource": {}, "changed": 0}

    def _limit_cycle(self, _prefix, concurrency):
        """The reads ours' module makes (preflight/runner.py: /apis, the nodes in pages of 500, the kube-proxy
        ConfigMap - EKS's name only when that is missing - and DaemonSet, Services, Pods, and the Calico and operator
        types /apis serves), by a bare client, ``concurrency`` collections at a time (a collection's pages one after
        another); every node judged by the module's own rules (node_rules.judge_node)."""
        node_rules, rules, runner = (collection_module("preflight." + m) for m in ("node_rules", "rules", "runner"))
        client = limit.BareClient(self.cluster.cp)

        def run():
            start = time.monotonic()
            failing = set()
            for node in _read_as_ours(client, runner, concurrency):
                facts = node_rules.node_facts(node)
                if rules.worst(node_rules.judge_node(facts, None).values()) == "fail":
                    failing.add(facts["name"])
            return time.monotonic() - start, failing
        return self._other_run(run)

    def kubectl(self, rep):
        work = self._kubectl_work(rep)

        def run():
            wall, out = timed_script(self.cluster, "preflight.sh", str(work))
            return wall, set(line for line in out.split() if line)
        return self._other_run(run)


def _read_as_ours(client, runner, concurrency):
    """Ours' reads (``runner``: the module's preflight/runner.py), ``concurrency`` collections at a time; returns the
    nodes."""
    _status, apis = client.request("GET", "/apis")
    groups = set(v["groupVersion"] for g in apis.get("groups") or [] for v in g.get("versions") or [])
    calico = runner.CALICO_V3_API if runner.CALICO_V3_API in groups else runner.CALICO_CRD_API
    lists = ["/api/v1/nodes", "/api/v1/services", "/api/v1/pods"]
    if calico in groups:
        lists += ["/apis/%s/%s" % (calico, plural)
                  for plural in ["felixconfigurations"] + [t[0] for t in runner.CALICO_POLICY_TYPES]]
    if runner.OPERATOR_API in groups:
        lists.append("/apis/%s/applicationlayers" % runner.OPERATOR_API)

    def kube_proxy():
        for name in runner.KUBE_PROXY_CONFIGMAPS:
            if client.request("GET", "/api/v1/namespaces/kube-system/configmaps/" + name)[0] == 200:
                break
        return client.request("GET", "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy")

    jobs = [lambda p=p: client.list(p) for p in lists] + [kube_proxy]
    with ThreadPoolExecutor(max(1, min(concurrency, len(jobs)))) as pool:
        out = list(pool.map(lambda job: job(), jobs))
    return out[0]
