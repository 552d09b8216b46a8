"""Benchmark: owner_references (detach + attach) versus a kubernetes.core.k8s_info + k8s loop.

Builds N ConfigMaps across M namespaces on the local control plane, each owned by the namespace's
NetworkPolicy (projectcalico.org/v3, from stand-in CRDs) and every other one also by a cluster-scoped
GlobalNetworkPolicy; then, for each contender, times detach -> owners re-created (new UIDs) -> attach and
counts the API requests it made (audit log, user ``admin``). Every run is checked: all references back,
with the new UIDs.

    PYTHONPATH=tests .venv/bin/python benchmarks/owner_references.py [--dependents 5000] [--namespaces 50]
        [--contenders module,loop]

Uses the control plane of LOCALCP_RUN_DIR when set, else starts one (and stops it at the end).
Results are printed and written to benchmarks/work/owner_references-<N>.json.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests" / "integration"))

from common import control_plane  # noqa: E402
from localcp.fixtures import Ansible, Cluster  # noqa: E402
from test_owner_references import CALICO, CRDS, Api, calico_refs, coll, ref  # noqa: E402

MODULE_PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - calico_ops.lifecycle.owner_references:
        state: "{{ state }}"
        record_namespace: "{{ record_ns }}"
        record_name: bench
        record_path: "{{ record_path }}"
"""

LOOP_DETACH = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - kubernetes.core.k8s_info:
        api_version: v1
        kind: ConfigMap
      register: cms
    - ansible.builtin.set_fact:
        affected: "{{ cms.resources | json_query(query) }}"
      vars:
        query: "[?metadata.ownerReferences[?apiVersion=='projectcalico.org/v3']]"
    - ansible.builtin.copy:
        content: "{{ affected | to_json }}"
        dest: "{{ record_path }}"
    - kubernetes.core.k8s:
        state: patched
        api_version: v1
        kind: ConfigMap
        name: "{{ item.metadata.name }}"
        namespace: "{{ item.metadata.namespace }}"
        merge_type: merge
        definition:
          metadata:
            ownerReferences: "{{ item.metadata.ownerReferences | rejectattr('apiVersion', 'equalto', 'projectcalico.org/v3') | list }}"
      loop: "{{ affected }}"
      loop_control:
        label: "{{ item.metadata.namespace }}/{{ item.metadata.name }}"
"""

LOOP_ATTACH = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - kubernetes.core.k8s_info:
        api_version: projectcalico.org/v3
        kind: NetworkPolicy
      register: nps
    - kubernetes.core.k8s_info:
        api_version: projectcalico.org/v3
        kind: GlobalNetworkPolicy
      register: gnps
    - ansible.builtin.set_fact:
        record: "{{ lookup('ansible.builtin.file', record_path) | from_json }}"
        np_uids: "{{ dict(nps.resources | map(attribute='metadata.namespace') | zip(nps.resources | map(attribute='metadata.name')) | map('join', '/') | zip(nps.resources | map(attribute='metadata.uid'))) }}"
        gnp_uids: "{{ dict(gnps.resources | map(attribute='metadata.name') | zip(gnps.resources | map(attribute='metadata.uid'))) }}"
    - kubernetes.core.k8s:
        state: patched
        api_version: v1
        kind: ConfigMap
        name: "{{ item.metadata.name }}"
        namespace: "{{ item.metadata.namespace }}"
        merge_type: merge
        definition:
          metadata:
            ownerReferences: >-
              {% set s %}[{% for r in item.metadata.ownerReferences %}{% if not loop.first %},{% endif %}{% if r.apiVersion == 'projectcalico.org/v3' %}{{ r | combine({'uid': (gnp_uids[r.name] if r.kind == 'GlobalNetworkPolicy' else np_uids[item.metadata.namespace ~ '/' ~ r.name])}) | to_json }}{% else %}{{ r | to_json }}{% endif %}{% endfor %}]{% endset %}{{ s | from_json }}
      loop: "{{ record }}"
      loop_control:
        label: "{{ item.metadata.namespace }}/{{ item.metadata.name }}"
"""


class Bench(object):
    def __init__(self, cluster, n, m, workdir):
        self.cluster = cluster
        self.api = Api(cluster)
        self.n, self.m = n, m
        self.workdir = workdir
        self.tag = uuid.uuid4().hex[:5]
        self.namespaces = ["bench-%s-%02d" % (self.tag, i) for i in range(m)]
        self.gnp_name = "bench-" + self.tag
        self.ansible = Ansible(cluster, workdir)

    def setup(self):
        self.cluster.apply(yaml.safe_dump_all(CRDS))
        for crd in CRDS:
            self.cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                                 "crd/" + crd["metadata"]["name"])
        self.cluster.wait_for(lambda: self.api.get("/apis/projectcalico.org/v3"), timeout=60, what="discovery")
        for ns in self.namespaces:
            self.api.create("/api/v1/namespaces", {"metadata": {"name": ns}})
        self.create_owners()

    def create_owners(self):
        self.gnp = self.api.create(coll(CALICO, "globalnetworkpolicies"), {
            "apiVersion": CALICO, "kind": "GlobalNetworkPolicy", "metadata": {"name": self.gnp_name}})
        self.nps = {}
        for ns in self.namespaces:
            self.nps[ns] = self.api.create(coll(CALICO, "networkpolicies", ns), {
                "apiVersion": CALICO, "kind": "NetworkPolicy", "metadata": {"name": "np", "namespace": ns}})

    def replace_owners(self):
        """The upgrade: same owners, new UIDs (the dependents carry no reference to them at this point)."""
        self.api.delete(coll(CALICO, "globalnetworkpolicies") + "/" + self.gnp_name, wait=True)
        for ns in self.namespaces:
            self.api.delete(coll(CALICO, "networkpolicies", ns) + "/np", wait=True)
        self.create_owners()

    def make_dependents(self, prefix):
        per_ns = self.n // self.m

        def make(args):
            ns, i = args
            refs = [ref(self.nps[ns], controller=True)] + ([ref(self.gnp)] if i % 2 else [])
            self.api.create(coll("v1", "configmaps", ns), {"metadata": {
                "name": "%s-%05d" % (prefix, i), "namespace": ns, "labels": {"bench": prefix},
                "ownerReferences": refs}})
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(make, [(ns, i) for ns in self.namespaces for i in range(per_ns)]))
        return per_ns * self.m

    def dependents(self, prefix):
        out = []
        for ns in self.namespaces:
            out += self.api.req("GET", coll("v1", "configmaps", ns), query={"labelSelector": "bench=" + prefix})["items"]
        return out

    def verify(self, prefix, expected):
        items = self.dependents(prefix)
        assert len(items) == expected, (len(items), expected)
        new = set([self.gnp["metadata"]["uid"]] + [o["metadata"]["uid"] for o in self.nps.values()])
        for d in items:
            i = int(d["metadata"]["name"].rsplit("-", 1)[1])
            refs = calico_refs(d)
            assert len(refs) == (2 if i % 2 else 1), d["metadata"]
            assert set(r["uid"] for r in refs) <= new, d["metadata"]

    def play(self, text, state, record_path):
        mark = self.cluster.audit.mark()
        start = time.monotonic()
        res = self.ansible.playbook(text, extra_vars={"state": state, "record_ns": self.namespaces[0],
                                                      "record_path": str(record_path)}, timeout=6 * 3600)
        wall = time.monotonic() - start
        if res.rc != 0:
            raise RuntimeError("%s failed:\n%s\n%s" % (state, res.stdout[-5000:], res.stderr[-3000:]))
        events = self.cluster.audit.events_since(mark)
        writes = [e for e in events if e.get("verb") in ("create", "update", "patch", "delete")]
        return {"wall_s": round(wall, 1), "requests": len(events), "writes": len(writes)}

    def run(self, contender):
        prefix = contender
        count = self.make_dependents(prefix)
        record = self.workdir / ("%s-record.json" % contender)
        detach_text, attach_text = (MODULE_PLAY, MODULE_PLAY) if contender == "module" else (LOOP_DETACH, LOOP_ATTACH)
        detach = self.play(detach_text, "detached", record)
        assert all(not calico_refs(d) for d in self.dependents(prefix))
        self.replace_owners()
        attach = self.play(attach_text, "attached", record)
        self.verify(prefix, count)
        total = {"wall_s": round(detach["wall_s"] + attach["wall_s"], 1),
                 "requests": detach["requests"] + attach["requests"],
                 "writes": detach["writes"] + attach["writes"]}
        for ns in self.namespaces:  # the next contender starts from a clean slate
            self.api.req("DELETE", coll("v1", "configmaps", ns), query={"labelSelector": "bench=" + prefix})
        return {"dependents": count, "detach": detach, "attach": attach, "total": total}

    def cleanup(self):
        self.api.delete(coll(CALICO, "globalnetworkpolicies") + "/" + self.gnp_name)
        for ns in self.namespaces:
            self.api.delete("/api/v1/namespaces/" + ns)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dependents", type=int, default=5000)
    parser.add_argument("--namespaces", type=int, default=50)
    parser.add_argument("--contenders", default="module,loop")
    args = parser.parse_args()
    cp, own = control_plane()
    out_dir = REPO / "benchmarks" / "work"
    out_dir.mkdir(parents=True, exist_ok=True)
    results = {"dependents": args.dependents, "namespaces": args.namespaces}
    try:
        bench = Bench(Cluster(cp), args.dependents, args.namespaces, Path(tempfile.mkdtemp(dir=str(out_dir))))
        bench.setup()
        try:
            for contender in args.contenders.split(","):
                results[contender] = bench.run(contender)
                print(contender, json.dumps(results[contender]), flush=True)
        finally:
            bench.cleanup()
    finally:
        if own is not None:
            own.stop(remove_dir=True)
    if "module" in results and "loop" in results:
        m, lp = results["module"]["total"], results["loop"]["total"]
        results["ratio_loop_over_module"] = {"wall": round(lp["wall_s"] / m["wall_s"], 1),
                                             "requests": round(lp["requests"] / float(m["requests"]), 2)}
    path = out_dir / ("owner_references-%d.json" % args.dependents)
    path.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
