"""Job upgrade: playbooks/upgrade.yml on a manifest install, calico.yaml SOURCE -> TARGET of
tests/integration/calico_support.py (v3.27.5 -> v3.31.4).

calico-node's ClusterInformation report is played by calico_support's ``CalicoNodeStandIn`` (its write is not the
contender's and is not counted); the time of the tasks named "wait" (rollout, cluster version, TigeraStatus) is
subtracted. Ours' writes are accounted for and asserted: each object changed once, plus the field handovers (a second
write of an object whose installer owned a field the new release dropped), plus the upgrade's own records.

* naive: kubernetes.core.k8s ``src:`` of the target manifest, nothing else (``NAIVE``);
* limit: ours' own requests replayed (``CapturedLimit``);
* kubectl: Calico's documented manifest upgrade scripted with kubectl (benchmarks/kubectl_bulk/upgrade.sh).
"""

import collections

import calico_support as cs

from benchmarks.harness import excluding_waits, played, timed_play, written_objects
from benchmarks.jobs.install_ebpf import InstallEbpf
from benchmarks.tasks import task_result

PLAYBOOK = "playbooks/upgrade.yml"

NAIVE = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Download the target release's manifest
      ansible.builtin.get_url:
        url: "{{ manifest_url }}/{{ target }}/manifests/calico.yaml"
        dest: "{{ dir }}/calico.yaml"
        mode: "0644"
    - name: Apply it
      kubernetes.core.k8s:
        src: "{{ dir }}/calico.yaml"
"""


def _is_record(write):
    """A write of the upgrade's own records (ConfigMaps calico-ops-*), not of Calico's objects."""
    ref = write.get("objectRef") or {}
    return ref.get("resource") == "configmaps" and (ref.get("name") or "").startswith("calico-ops-")


def _drop_stand_in(m):
    """calico-node's stand-in reports the version in ClusterInformation, as calico-node would: its writes are
    not the contender's, so they leave ``m``'s writes (counted in ``stand_in_writes``)."""
    stand_in = [w for w in m["_writes"] if (w.get("objectRef") or {}).get("resource") == "clusterinformations"]
    m["_writes"] = [w for w in m["_writes"] if w not in stand_in]
    m["writes"] -= len(stand_in)
    m["stand_in_writes"] = len(stand_in)


def _account(m):
    """Writes = objects changed (each once) + field handovers (a second write of an object whose installer
    owned a field the new release dropped) + the upgrade's own records; asserted. ClusterInformation is
    written by calico-node's stand-in (as calico-node would), not by the upgrade: left out."""
    _drop_stand_in(m)
    records = [w for w in m["_writes"] if _is_record(w)]
    objects = [w for w in m["_writes"] if w not in records]
    handover = task_result(m["_result"].data, "Hand the installer's fields over")
    counts = (handover or {}).get("counts") or {}
    m["changed"] = written_objects({"_writes": objects})
    m.update({"record_writes": len(records), "handover_writes": counts.get("adopted", 0),
              "handover_skipped": counts.get("covered", 0)})
    assert len(objects) == m["changed"] + m["handover_writes"], (
        len(objects), m["changed"], m["handover_writes"], collections.Counter(
            ((w.get("objectRef") or {}).get("resource"), (w.get("objectRef") or {}).get("name")) for w in objects))


class Upgrade(InstallEbpf):
    unit = "nodes (whole upgrade)"

    def _install(self):
        """The SOURCE release's calico.yaml, installed fresh (not timed); TARGET's forgotten at the clean-up."""
        cs.wipe_calico(self.cluster)
        self.inst = cs.Install(self.cluster)
        self.inst.apply_release(cs.SOURCE, "calico.yaml")
        self.inst.forget_later(cs.TARGET, "calico.yaml")
        cs.wait_daemonset(self.cluster, "calico-node")

    def teardown(self):
        pass

    def _check(self):
        ds = cs.get(self.cluster, "apps/v1", "DaemonSet", "calico-node", "kube-system")
        assert cs.image_tag(ds["spec"]["template"]["spec"]["containers"][0]["image"]) == cs.TARGET

    def _upgrade_vars(self, rep, suffix):
        out = {"upgrade_manifest_url": self.cluster.mirror_url, "upgrade_chart_repo_url": self.cluster.chart_repo_url,
               "upgrade_artifacts_dir": str(self.workdir / ("artifacts-%s-%d" % (suffix, rep))),
               "upgrade_timeout": 300, "upgrade_poll_interval": 1,
               "upgrade_record_name": "calico-ops-upgrade-bench-%s%d" % (suffix, rep),
               "upgrade_owner_references_record_name": "calico-ops-owner-refs-bench-%s%d" % (suffix, rep),
               "upgrade_owner_references_record_path": str(self.workdir / ("owner-references-%s-%d.json" % (suffix, rep)))}
        self.inst.configmaps += [("kube-system", out["upgrade_record_name"]),
                                 ("kube-system", out["upgrade_owner_references_record_name"])]
        return out

    def _source_reported(self):
        self.cluster.wait_for(lambda: (cs.get(self.cluster, cs.CRD_API, "ClusterInformation", "default")
                                       or {}).get("spec", {}).get("calicoVersion") == cs.SOURCE,
                              timeout=60, what="ClusterInformation")

    def _on_source(self, func, stand_in=True):
        """``func()`` on a fresh SOURCE install, with calico-node's stand-in reporting (once SOURCE is reported)
        unless ``stand_in`` is false; the install cleaned up after it."""
        self._install()
        try:
            if not stand_in:
                return func()
            with cs.CalicoNodeStandIn(self.cluster, daemonset="calico-node"):
                self._source_reported()
                return func()
        finally:
            self.inst.cleanup()

    def ours(self, rep):
        def run():
            variables = self._upgrade_vars(rep, "o")
            m = excluding_waits(timed_play(self.cluster, self.ansible, PLAYBOOK, variables, what="upgrade.yml"))
            rerun = timed_play(self.cluster, self.ansible, PLAYBOOK, variables, what="upgrade.yml re-run")
            self._check()
            _account(m)
            return m, rerun
        return self._on_source(run)

    def _capture_run(self, env):
        def run():
            variables = self._upgrade_vars(0, "c")
            self._limit_state_records = [("kube-system", variables["upgrade_record_name"]),
                                         ("kube-system", variables["upgrade_owner_references_record_name"])]
            res = played(self.ansible.playbook(PLAYBOOK, extra_vars=variables, env=env, timeout=1800),
                         "upgrade.yml (capture)")
            self._check()
            return res
        return self._on_source(run)

    def _replay_cycle(self, stream, concurrency):
        def run():
            self.inst.configmaps += self._limit_state_records  # the captured run's records, written again
            m = self._replayed(stream, concurrency, self._check)
            _drop_stand_in(m)
            records = [w for w in m["_writes"] if _is_record(w)]
            m["record_writes"] = len(records)
            m["changed"] = written_objects({"_writes": [w for w in m["_writes"] if w not in records]})
            return m
        return self._on_source(run)

    def naive(self, rep):
        def run():
            d = self.workdir / ("naive-%d" % rep)
            d.mkdir(exist_ok=True)
            m = timed_play(self.cluster, self.ansible, NAIVE, {"manifest_url": self.cluster.mirror_url,
                                                               "target": cs.TARGET, "dir": str(d)},
                           what="naive upgrade")
            self._check()
            m["changed"] = written_objects(m)
            return m
        return self._on_source(run, stand_in=False)  # the naive apply runs without the stand-in

    def kubectl(self, rep):
        """Calico's documented manifest upgrade scripted with kubectl (benchmarks/kubectl_bulk/upgrade.sh), with
        calico-node's stand-in reporting the version as for ours; its ClusterInformation write is not counted."""
        def run():
            work = self._kubectl_work(rep)
            m = self._script_run("upgrade.sh", ["%s/%s/manifests/calico.yaml" % (self.cluster.mirror_url, cs.TARGET),
                                                cs.TARGET, str(work)], self._check)
            _drop_stand_in(m)
            m["changed"] = written_objects(m)
            return m
        return self._on_source(run)
