"""Job owner_references: detach + attach of the Calico owner references of N dependents (owners re-created in
between).

Builds N ConfigMaps across M namespaces (M = N / 100, 1 to 50), each owned by the namespace's NetworkPolicy
(projectcalico.org/v3, from stand-in CRDs) and every other one also by a cluster-scoped GlobalNetworkPolicy; each
contender then detaches the references, the owners are re-created (new UIDs, the upgrade's case; not timed) and it
attaches them again. Every run is checked: all references back, with the new UIDs; every dependent written once per
phase, no more (the module's own record, ConfigMaps, counted apart).

* ours: ``calico_ops.lifecycle.owner_references`` state detached, then attached (two ansible-playbook runs);
* naive: k8s_info of the ConfigMaps + one kubernetes.core.k8s merge patch per dependent and phase (``LOOP_*``);
* limit: the module's own guarded JSON patches (owner_references/rules.py) sent by a bare client;
* kubectl: benchmarks/kubectl_bulk/owner_references.sh.
"""

import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import yaml
from localcp.api import Api
from test_owner_references import CALICO, CRDS, calico_refs, coll, ref

from benchmarks import limit
from benchmarks.harness import (Job, LimitContender, audited, collection_module, collection_rules, combine, public,
                                timed_play, timed_script)

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
        np_uids: >-
          {{ dict(nps.resources | map(attribute='metadata.namespace') | zip(nps.resources | map(attribute='metadata.name'))
          | map('join', '/') | zip(nps.resources | map(attribute='metadata.uid'))) }}
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
              {% set s %}[{% for r in item.metadata.ownerReferences %}{% if not loop.first %},{% endif %}
              {% if r.apiVersion == 'projectcalico.org/v3' %}{{ r | combine({'uid': (gnp_uids[r.name]
              if r.kind == 'GlobalNetworkPolicy' else np_uids[item.metadata.namespace ~ '/' ~ r.name])}) | to_json }}
              {% else %}{{ r | to_json }}{% endif %}{% endfor %}]{% endset %}{{ s | from_json }}
      loop: "{{ record }}"
      loop_control:
        label: "{{ item.metadata.namespace }}/{{ item.metadata.name }}"
"""


class Dependents(object):
    """The job's objects: M namespaces, each with NetworkPolicy ``np``, one GlobalNetworkPolicy, and N ConfigMaps
    owned by them (``make_dependents``), labelled ``bench=<prefix>`` per run."""

    def __init__(self, cluster, n, m):
        self.cluster = cluster
        self.api = Api(cluster)
        self.n, self.m = n, m
        self.tag = uuid.uuid4().hex[:5]
        self.namespaces = ["bench-%s-%02d" % (self.tag, i) for i in range(m)]
        self.gnp_name = "bench-" + self.tag

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

    def detached(self, prefix):
        """No dependent of the run carries a Calico reference any more."""
        return all(not calico_refs(d) for d in self.dependents(prefix))

    def verify(self, prefix, expected):
        items = self.dependents(prefix)
        assert len(items) == expected, (len(items), expected)
        new = set([self.gnp["metadata"]["uid"]] + [o["metadata"]["uid"] for o in self.nps.values()])
        for d in items:
            i = int(d["metadata"]["name"].rsplit("-", 1)[1])
            refs = calico_refs(d)
            assert len(refs) == (2 if i % 2 else 1), d["metadata"]
            assert set(r["uid"] for r in refs) <= new, d["metadata"]

    def drop_dependents(self, prefix):
        """The run's dependents deleted: the next run starts from a clean slate."""
        for ns in self.namespaces:
            self.api.req("DELETE", coll("v1", "configmaps", ns), query={"labelSelector": "bench=" + prefix})

    def drop_records(self):
        """The module's records (ConfigMaps bench*, record_name: bench) deleted."""
        for cm in self.api.req("GET", coll("v1", "configmaps", self.namespaces[0]))["items"]:
            if cm["metadata"]["name"].startswith("bench"):
                self.api.delete(coll("v1", "configmaps", self.namespaces[0]) + "/" + cm["metadata"]["name"])

    def cleanup(self):
        self.api.delete(coll(CALICO, "globalnetworkpolicies") + "/" + self.gnp_name)
        for ns in self.namespaces:
            self.api.delete("/api/v1/namespaces/" + ns)


class OwnerReferences(LimitContender, Job):
    unit = "dependents"

    def setup(self, n):
        self.n = n
        self.bench = Dependents(self.cluster, n, max(1, min(50, n // 100)))
        self.bench.setup()

    def teardown(self):
        self.bench.cleanup()

    def _cycle(self, prefix, detach_play, attach_play, rerun):
        b = self.bench
        count = b.make_dependents(prefix)
        extra = {"record_ns": b.namespaces[0], "record_path": str(self.workdir / ("%s-%d-record.json" % (prefix, self.n)))}
        detach = timed_play(self.cluster, self.ansible, detach_play, dict(extra, state="detached"), what="detach")
        assert b.detached(prefix)
        b.replace_owners()
        attach = timed_play(self.cluster, self.ansible, attach_play, dict(extra, state="attached"), what="attach")
        b.verify(prefix, count)
        again = timed_play(self.cluster, self.ansible, attach_play, dict(extra, state="attached"),
                           what="attach re-run") if rerun else None
        dependents = sum(1 for p in (detach, attach) for w in p["_writes"]
                         if (w.get("objectRef") or {}).get("resource") == "configmaps"
                         and (w.get("objectRef") or {}).get("name", "").startswith(prefix + "-"))
        assert dependents == 2 * count, (dependents, count)  # every dependent written once per phase, no more
        m = combine(detach, attach)
        m.update({"changed": 2 * count, "dependent_writes": dependents, "record_writes": m["writes"] - dependents,
                  "detach": public(detach), "attach": public(attach)})
        b.drop_dependents(prefix)
        b.drop_records()
        return m, again

    def ours(self, rep):
        return self._cycle("o%d" % rep, MODULE_PLAY, MODULE_PLAY, True)

    def naive(self, rep):
        m, _ = self._cycle("l%d" % rep, LOOP_DETACH, LOOP_ATTACH, False)
        assert m["writes"] == m["changed"], m
        return m

    def _other_cycle(self, prefix, detach, attach):
        """detach() and attach() of a contender other than Ansible, timed apart (the owners' replacement between
        them is not), requests from the audit log (user admin); the same checks as ours'."""
        b = self.bench
        count = b.make_dependents(prefix)
        phases = []
        for phase, func in (("detach", detach), ("attach", attach)):
            if phase == "attach":
                assert b.detached(prefix)
                b.replace_owners()
            wall, counts = audited(self.cluster, func, prefix)
            phases.append(dict({"wall_s": round(wall, 3)}, **public(counts)))
        b.verify(prefix, count)
        m = combine(*phases)
        m.update({"changed": 2 * count, "detach": phases[0], "attach": phases[1]})
        assert m["writes"] == 2 * count, m  # every dependent written once per phase
        b.drop_dependents(prefix)
        return m

    def _limit_cycle(self, prefix, concurrency):
        """The requests ours' module sends for the dependents, by a bare client: one LIST of the ConfigMaps, one
        guarded JSON patch per dependent (the module's own ops: owner_references/rules.py refs_patch), kept in
        memory instead of a record; at attach one LIST of the ConfigMaps and one of each owner kind."""
        refs_patch = collection_rules("owner_references").refs_patch
        accept = collection_module("k8s.client").ACCEPT_METADATA  # ours asks for the patched object's metadata
        client = limit.BareClient(self.cluster.cp)
        kept = {}

        def patch(meta, old, new):
            return {"method": "PATCH", "content_type": "application/json-patch+json", "accept": accept,
                    "path": "/api/v1/namespaces/%s/configmaps/%s" % (meta["namespace"], meta["name"]),
                    "body": refs_patch(meta["uid"], old, new, meta["resourceVersion"])}

        def detach(_prefix):
            start = time.monotonic()
            stream = []
            for cm in client.list("/api/v1/configmaps"):
                meta = cm["metadata"]
                refs = meta.get("ownerReferences") or []
                if any(_mine(r) for r in refs):
                    kept[meta["uid"]] = refs
                    stream.append(patch(meta, refs, [r for r in refs if not _mine(r)]))
            client.send(stream, concurrency)
            return time.monotonic() - start

        def attach(_prefix):
            start = time.monotonic()
            uids = _owner_uids(client)
            stream = [patch(cm["metadata"], cm["metadata"].get("ownerReferences"),
                            _with_new_uids(cm["metadata"], kept[cm["metadata"]["uid"]], uids))
                      for cm in client.list("/api/v1/configmaps") if cm["metadata"]["uid"] in kept]
            client.send(stream, concurrency)
            return time.monotonic() - start

        return self._other_cycle(prefix, detach, attach)

    def kubectl(self, rep):
        work = self._kubectl_work(rep)
        record = work / "record.json"

        def phase(name):
            def run(_prefix):
                return timed_script(self.cluster, "owner_references.sh", name, str(record), str(work))[0]
            return run
        return self._other_cycle("k%d" % rep, phase("detach"), phase("attach"))


def _mine(ref_):
    """A Calico owner reference (the module's to detach and attach)."""
    return ref_.get("apiVersion") == CALICO


def _owner_uids(client):
    """({"<namespace>/<name>": uid} of the NetworkPolicies, {name: uid} of the GlobalNetworkPolicies)."""
    nps = dict(("%s/%s" % (o["metadata"]["namespace"], o["metadata"]["name"]), o["metadata"]["uid"])
               for o in client.list("/apis/projectcalico.org/v3/networkpolicies"))
    gnps = dict((o["metadata"]["name"], o["metadata"]["uid"])
                for o in client.list("/apis/projectcalico.org/v3/globalnetworkpolicies"))
    return nps, gnps


def _with_new_uids(meta, refs, uids):
    """A dependent's references as kept at detach, its Calico owners' UIDs the new ones."""
    nps, gnps = uids
    return [dict(r, uid=gnps[r["name"]] if r["kind"] == "GlobalNetworkPolicy"
                 else nps["%s/%s" % (meta["namespace"], r["name"])]) if _mine(r) else r
            for r in refs]
