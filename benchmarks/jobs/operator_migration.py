"""Job operator_migration: playbooks/migrate_to_operator.yml (a manifest install moved to the real operator) with N
nodes.

The manifest install is calico.yaml v3.31.4 with the MTU, a Felix setting and the autodetection method changed, and
policies of every kind (tests/integration/test_operator_migration.py's ``_manifest_install``); the real operator
v1.40.7 moves calico-node node by node. The time of the tasks named "wait" (the operator's Deployment, TigeraStatus,
the move, the rollout) is subtracted: that is the operator's time. Every run must end with the manifest's calico-node
gone and the operator's ready on every node.

* naive: Calico's documented steps scripted (apply the operator's files, create Installation ``default`` with
  ``spec: {}``, wait for TigeraStatus and for the manifest's calico-node to go), without the comparison with the
  release, the record, the verification or the clean-up (``NAIVE``).
"""

import test_operator_migration as om

from benchmarks.harness import excluding_waits, timed_play, written_objects
from benchmarks.jobs.datastore_migration import DatastoreMigration
from benchmarks.jobs.install_ebpf import RELEASE

# the wait for TigeraStatus calico of a naive play run with kubectl (this job's and disable_ebpf's)
WAIT_FOR_TIGERASTATUS = """
    - name: Wait for TigeraStatus calico to be Available
      ansible.builtin.command: >-
        {{ kubectl }} --kubeconfig {{ kubeconfig }} wait --for=condition=Available tigerastatus/calico --timeout=10s
      register: available
      until: available.rc == 0
      retries: 120
      delay: 5"""

NAIVE = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Install the operator (operator-crds.yaml and tigera-operator.yaml of the running release)
      ansible.builtin.command: >-
        {{ kubectl }} --kubeconfig {{ kubeconfig }} apply --server-side --force-conflicts
        -f {{ manifest_url }}/{{ version }}/manifests/operator-crds.yaml
        -f {{ manifest_url }}/{{ version }}/manifests/tigera-operator.yaml
    - name: Create the Installation (spec {}, the operator fills it from the running install)
      ansible.builtin.shell: >-
        printf '%s' '{"apiVersion": "operator.tigera.io/v1", "kind": "Installation", "metadata": {"name": "default"},
        "spec": {}}' | {{ kubectl }} --kubeconfig {{ kubeconfig }} create -f -""" + WAIT_FOR_TIGERASTATUS + """
    - name: Wait until the manifest's calico-node is gone
      ansible.builtin.command: >-
        {{ kubectl }} --kubeconfig {{ kubeconfig }} -n kube-system wait --for=delete ds/calico-node --timeout=600s
"""


class OperatorMigration(DatastoreMigration):
    unit = "nodes (whole move)"

    def _run(self, rep, play, variables, what):
        om._wipe(self.cluster)
        try:
            om._manifest_install(self.cluster)
            m = excluding_waits(timed_play(self.cluster, self.ansible, play, variables(rep), what=what))
            rerun = (timed_play(self.cluster, self.ansible, play, variables(rep), what=what + " re-run")
                     if play == om.PLAYBOOK else None)
            assert om._maybe(self.cluster, "daemonset", "calico-node", "-n", "kube-system") is None
            node = om._get(self.cluster, "daemonset", "calico-node", "-n", "calico-system")
            assert node["status"]["numberReady"] >= self.n, node["status"]
            m["changed"] = written_objects(m)
            return m, rerun
        finally:
            om._wipe(self.cluster)

    def ours(self, rep):
        return self._run(rep, om.PLAYBOOK, lambda r: {
            "operator_migration_manifest_url": self.cluster.mirror_url, "operator_migration_timeout": 900,
            "operator_migration_poll_interval": 2,
            "operator_migration_artifacts_dir": str(self.workdir / ("artifacts-%d" % r))}, "migrate_to_operator.yml")

    def naive(self, rep):
        return self._run(rep, NAIVE, lambda r: {
            "kubectl": self.cluster.bin("kubectl"), "kubeconfig": str(self.cluster.kubeconfig),
            "manifest_url": self.cluster.mirror_url, "version": RELEASE}, "naive operator migration")[0]
