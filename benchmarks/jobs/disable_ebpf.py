"""Job disable_ebpf: playbooks/disable_ebpf.yml (an eBPF install taken back to Iptables, the real operator) with N
nodes.

The eBPF install is install_ebpf.yml's (open source, the ConfigMap path, kube-proxy kept off its nodes by the
nodeSelector non-calico; the real operator v1.40.7 reconciles it), made fresh before each run (not timed). The time of
the tasks named "wait" (kube-proxy's pods on every node, TigeraStatus) is subtracted from both contenders. Every run
must end on Iptables with kube-proxy back and ready on every node.

* naive: the reverse of Calico's "Enabling the eBPF data plane" scripted with kubectl (patch kube-proxy's
  nodeSelector, rollout status, patch the Installation to Iptables, wait for TigeraStatus calico), without ours'
  preflight (who set bpfEnabled, the platform), the readiness check before the switch, the check that the operator saw
  the new generation, or the summary (``NAIVE``).
"""

import os

from benchmarks.harness import excluding_waits, played, timed_play, written_objects
from benchmarks.jobs.datastore_migration import DatastoreMigration
from benchmarks.jobs.install_ebpf import PLAYBOOK as INSTALL_PLAYBOOK
from benchmarks.jobs.operator_migration import WAIT_FOR_TIGERASTATUS

PLAYBOOK = "playbooks/disable_ebpf.yml"

NAIVE = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Put kube-proxy back on its nodes (the nodeSelector key non-calico removed)
      ansible.builtin.command: >-
        {{ kubectl }} --kubeconfig {{ kubeconfig }} -n kube-system patch daemonset kube-proxy --type merge
        -p '{"spec": {"template": {"spec": {"nodeSelector": {"non-calico": null}}}}}'
    - name: Wait for kube-proxy to be ready on every node
      ansible.builtin.command: >-
        {{ kubectl }} --kubeconfig {{ kubeconfig }} -n kube-system rollout status daemonset/kube-proxy --timeout=600s
    - name: Switch Installation default to the Iptables data plane
      ansible.builtin.command: >-
        {{ kubectl }} --kubeconfig {{ kubeconfig }} patch installation.operator.tigera.io default --type merge
        -p '{"spec": {"calicoNetwork": {"linuxDataplane": "Iptables"}}}'""" + WAIT_FOR_TIGERASTATUS + "\n"

VARIABLES = {"ebpf_rollback_platform": "kubeadm", "ebpf_rollback_timeout": 900, "ebpf_rollback_poll_interval": 2,
             "kube_proxy_timeout": 900, "kube_proxy_poll_interval": 2}


class DisableEbpf(DatastoreMigration):
    unit = "nodes (whole rollback)"

    def setup(self, n):
        """N nodes the preflight passes (Ubuntu, amd64): the install must go through."""
        self.n = n
        tag = os.urandom(2).hex()
        self.specs = [self.cluster.node_spec("rb-%s-%04d" % (tag, i)) for i in range(max(0, n - self._node_count()))]
        if self.specs:
            self.cluster.add_nodes(self.specs, timeout=1800)

    def _install(self, rep):
        """A fresh eBPF install (install_ebpf.yml, waiting for it), not timed."""
        self._clean()
        d = self.workdir / ("install-%d-%s" % (rep, os.urandom(2).hex()))
        d.mkdir()
        install = self._vars(rep)
        install.update({"ebpf_install_wait": True, "ebpf_install_timeout": 900, "ebpf_install_apiserver": False,
                        "ebpf_install_goldmane": False, "ebpf_install_whisker": False,
                        "ebpf_install_artifacts_dir": str(d / "artifacts"), "preflight_report_dir": str(d / "report")})
        played(self.ansible.playbook(INSTALL_PLAYBOOK, extra_vars=install, timeout=1800), "install_ebpf.yml")

    def _rolled_back(self):
        inst = self._get("installation", "default")
        assert inst["spec"]["calicoNetwork"]["linuxDataplane"] == "Iptables", inst["spec"]
        ds = self._get("daemonset", "kube-proxy", "-n", "kube-system")
        assert "non-calico" not in (ds["spec"]["template"]["spec"].get("nodeSelector") or {})
        assert ds["status"]["numberReady"] >= self.n, ds["status"]

    def ours(self, rep):
        self._install(rep)
        m = excluding_waits(timed_play(self.cluster, self.ansible, PLAYBOOK, VARIABLES, what="disable_ebpf.yml"))
        self._rolled_back()
        rerun = timed_play(self.cluster, self.ansible, PLAYBOOK, VARIABLES, what="disable_ebpf.yml re-run")
        m["changed"] = written_objects(m)
        return m, rerun

    def naive(self, rep):
        self._install(rep)
        m = excluding_waits(timed_play(self.cluster, self.ansible, NAIVE, {
            "kubectl": self.cluster.bin("kubectl"), "kubeconfig": str(self.cluster.kubeconfig)}, what="naive rollback"))
        self._rolled_back()
        m["changed"] = written_objects(m)
        return m

    def teardown(self):
        self._clean()
        DatastoreMigration.teardown(self)
