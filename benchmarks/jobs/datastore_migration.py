"""Job datastore_migration: playbooks/migrate_datastore.yml (etcd -> the Kubernetes datastore, real calicoctl) with
N nodes.

A manifest install (calico-etcd.yaml v3.31.4 on the control plane's own etcd) holding the seed of
tests/integration/test_datastore_migration.py and one Calico Node per Kubernetes node (N nodes); calico-node's
ClusterInformation report played by its stand-in; the time of the tasks named "wait" (calico-node's rollout)
subtracted. calicoctl's requests to etcd do not reach the audit log (etcd has none); its requests to the API server
do (user admin). Every run must end on the Kubernetes datastore, unlocked, with every node's Calico Node there.

* naive: Calico's documented sequence scripted (calicoctl lock, export, import, kubectl apply calico.yaml, rollout
  status, unlock), without the preflight, records and verification (``NAIVE``).
"""

import os

import calico_support as cs
from test_datastore_migration import Migration

from benchmarks.harness import excluding_waits, timed_play, written_objects
from benchmarks.jobs.install_ebpf import RELEASE, InstallSteps
from benchmarks.jobs.preflight import specs

PLAYBOOK = "playbooks/migrate_datastore.yml"

NAIVE = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Lock the etcd datastore
      ansible.builtin.command: "{{ calicoctl }} datastore migrate lock --config {{ etcd_cfg }}"
    - name: Export it
      ansible.builtin.shell: "{{ calicoctl }} datastore migrate export --config {{ etcd_cfg }} > {{ dir }}/etcd-data"
    - name: Import it
      ansible.builtin.command: "{{ calicoctl }} datastore migrate import -f {{ dir }}/etcd-data --config {{ kdd_cfg }}"
    - name: Apply calico.yaml
      ansible.builtin.command: "{{ kubectl }} --kubeconfig {{ kubeconfig }} apply -f {{ manifest_url }}/{{ version }}/manifests/calico.yaml"
    - name: Wait for the rollout of calico-node
      ansible.builtin.command: "{{ kubectl }} --kubeconfig {{ kubeconfig }} -n kube-system rollout status ds/calico-node --timeout=600s"
    - name: Unlock the Kubernetes datastore
      ansible.builtin.command: "{{ calicoctl }} datastore migrate unlock --config {{ kdd_cfg }}"
"""


class DatastoreMigration(InstallSteps):
    """No limit or kubectl contender: those of install_ebpf would replay another job (InstallSteps has none)."""
    unit = "nodes (whole migration)"

    def size(self, n):
        return n

    def setup(self, n):
        self.n = n
        have = self._node_count()
        self.specs = []
        if have < n:
            self.specs, _expected = specs(self.cluster, n - have, os.urandom(2).hex())
            self.cluster.add_nodes(self.specs, timeout=1800)

    def teardown(self):
        if self.specs:
            self.cluster.remove_nodes([s["metadata"]["name"] for s in self.specs])

    def _migration(self, rep):
        d = self.workdir / ("migration-%d-%s" % (rep, os.urandom(2).hex()))
        d.mkdir()
        return Migration(self.cluster, d).setup(nodes=self.n)

    def _run(self, rep, play, variables, what):
        mig = self._migration(rep)
        try:
            with cs.CalicoNodeStandIn(self.cluster):
                self.cluster.wait_for(lambda: mig.cluster_version() == RELEASE, timeout=120,
                                      what="calico-node's ClusterInformation in etcd")
                m = excluding_waits(timed_play(self.cluster, self.ansible, play, variables(mig), what=what))
                rerun = (timed_play(self.cluster, self.ansible, play, variables(mig), what=what + " re-run")
                         if play == PLAYBOOK else None)
            assert mig.node_env().get("DATASTORE_TYPE") == "kubernetes" and not mig.locked("kdd")
            assert len(mig.objects("nodes", "kdd")) >= self.n
            m["changed"] = written_objects(m)
            return m, rerun
        finally:
            mig.cleanup()

    def ours(self, rep):
        return self._run(rep, PLAYBOOK, lambda mig: mig.variables(datastore_migration_timeout=600),
                         "migrate_datastore.yml")

    def naive(self, rep):
        def variables(mig):
            return {"calicoctl": mig.calicoctl, "etcd_cfg": str(mig.etcd_cfg), "kdd_cfg": str(mig.kdd_cfg),
                    "dir": str(mig.tmp), "kubeconfig": str(self.cluster.kubeconfig),
                    "kubectl": self.cluster.bin("kubectl"),
                    "manifest_url": self.cluster.mirror_url, "version": RELEASE}
        return self._run(rep, NAIVE, variables, "naive migration")[0]
