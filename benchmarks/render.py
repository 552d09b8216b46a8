"""results.md: the page ``make bench`` renders from results.json - what was measured and how (``HEADER``), the
tables of report.py (ours against the naive loop; against the limit and kubectl bulk; Ansible's own floor), where
ours' writes go, and the runs that produced the figures. results.png beside it (report.plot)."""

from benchmarks import report


def markdown(results):
    """The text of results.md."""
    limits = report.render_limits(results)
    if limits:
        limits = "\n" + LIMITS_HEADER + "\n" + limits
    floor = report.render_floor(results)
    if floor:
        floor = "\n" + FLOOR_HEADER + "\n" + floor
    return HEADER + report.render_markdown(results) + limits + floor + notes(results)


def render(results, out_dir):
    """results.md and results.png of ``results`` into ``out_dir``."""
    (out_dir / "results.md").write_text(markdown(results))
    report.plot(results, out_dir / "results.png")


def notes(results):
    lines = ["", "Where ours' writes go, and when each side was measured:", "", report.render_accounting(results).rstrip(),
             "", "Runs:", ""]
    for meta in results.get("runs", []):
        lines.append("- `%s` started %s, %s s, load average at start %s, at end %s" % (
            meta.get("command"), meta.get("started"), meta.get("elapsed_s"),
            "/".join("%.2f" % x for x in meta.get("loadavg_start", [])),
            "/".join("%.2f" % x for x in meta.get("loadavg_end", []))))
    return "\n".join(lines) + "\n"


HEADER = """# Benchmarks: calico_ops.lifecycle against the naive kubernetes.core loop

Produced by `make bench` (`benchmarks/run.py`, see its docstring); raw figures in `results.json`, plot in
`results.png`. Wall times are medians of the runs on a shared 2-CPU machine (load averages in `results.json`);
the request counts (audit log, user `admin`, dry runs not counted as writes) are the deterministic figure.
"Not measured (predicted ~X s)" is a prediction from the per-object rate of the largest smaller size measured,
never a measurement. A median of fewer than three runs says so. "Objects changed" is what the run changed, each
written once; ours' writes beyond it are its own record (ConfigMaps: checkpoints that make a crashed run resumable)
and, for the upgrade, the field handovers a server-side dry run showed to be needed (an object whose installer
owned a field the new release dropped: the apply alone would leave it behind), asserted per run and tabled below
the results. Conditions of the committed runs: `README.md` beside this file.

What each naive job does (the plays are in benchmarks/jobs/*.py):

- preflight: k8s_info of the nodes, the kube-proxy ConfigMap and the Services, then one `set_fact` per node
  judging its architecture and RHEL 8 kernel. It checks less than ours (3 lists against ours' 7 reads and one
  per 500 nodes on a cluster without Calico, 12 and one per 500 nodes with it: policies, FelixConfiguration,
  DaemonSets, pods, ...), and still grows faster than linearly with N.
- owner_references: k8s_info of the ConfigMaps, one `kubernetes.core.k8s` merge patch per dependent to detach,
  and again per dependent to attach with the new UIDs (benchmarks/jobs/owner_references.py `LOOP_*`); no record in
  the cluster, no check that the owners exist.
- host_endpoint_migration: one k8s task per endpoint and step (node labels, a k8s_info retried until the
  automatic endpoint exists, the delete), no conflict check, no record (benchmarks/jobs/host_endpoint_migration.py
  `LOOP_PLAY`). The real calico-kube-controllers v3.31.4 creates the automatic endpoints (behind its
  Deployment, run by the pod runner); its requests, its ServiceAccount's, are not counted.
- install_ebpf: `kubernetes.core.k8s` `src:` of operator-crds.yaml, tigera-operator.yaml and
  custom-resources.yaml, a merge patch for `linuxDataplane: BPF` and one for kube-proxy; no preflight, no
  dry run, no validation. Ours runs with `ebpf_install_wait: false` (TigeraStatus read once); the time of the
  tasks named "wait" (the operator Deployment, kube-proxy's pods) is subtracted, and of the task that applies the
  CRDs and then waits for them to be Established only the wait it reports (`waited_s`) - since 2026-11-28; before,
  the whole task, its apply included, was left out of ours' time.
- upgrade: manifest install, calico.yaml v3.27.5 -> v3.31.4 (calico-node's ClusterInformation report played
  by tests/integration/calico_support.py's stand-in). Ours: playbooks/upgrade.yml minus the tasks named
  "wait" (rollout, cluster version); naive: `kubernetes.core.k8s` `src:` of the target calico.yaml, nothing
  else (no ownerReference detach/attach, no record, no check of the result, and the init container the new
  release dropped stays, as kubectl-client-side-apply owns it). The stand-in's ClusterInformation write is not
  counted. For install_ebpf and upgrade
  "objects changed" is the number of distinct objects written, N is the cluster's node count and there is one
  size only (no plot).
- datastore_migration: calico-etcd.yaml v3.31.4 on the control plane's etcd, migrated to the Kubernetes datastore
  with real calicoctl, N nodes each with a Calico Node in etcd. Naive: Calico's documented commands scripted
  (calicoctl lock, export, import; `kubectl apply -f calico.yaml`; `kubectl rollout status`; calicoctl unlock),
  without ours' preflight, record, per-kind verification (every kind read from both datastores), carrying of the
  staged policies the export misses, or field handover. calicoctl's requests to the API server are counted (user
  admin); its etcd requests are not (etcd keeps no audit log). The time of the tasks named "wait" (calico-node's
  rollout) is subtracted from both; "objects changed" is the number of distinct objects written.
- operator_migration: calico.yaml v3.31.4 (MTU, a Felix setting and the autodetection method changed; policies of
  every kind) moved to the real Tigera operator v1.40.7 with N nodes. Naive: Calico's documented steps scripted
  (`kubectl apply` of operator-crds.yaml and tigera-operator.yaml, `kubectl create` of Installation `default` with
  `spec: {}`, waits for TigeraStatus calico and for the manifest's calico-node to go), without ours' comparison with
  the release, record, derived Installation, verification (nodes, Installation, policies) or clean-up. The time of
  the tasks named "wait" (the operator's own work) is subtracted from both.
- disable_ebpf: an eBPF install (install_ebpf.yml, the ConfigMap path, open source, real operator v1.40.7) with N
  nodes taken back to Iptables; each run starts from a fresh install (not timed). Naive: the reverse of Calico's
  "Enabling the eBPF data plane" scripted with kubectl (patch kube-proxy's nodeSelector, `rollout status`, patch the
  Installation to Iptables, wait for TigeraStatus calico), without ours' preflight, readiness check before the
  switch, check that the operator saw the new generation, or summary. The time of the tasks named "wait"
  (kube-proxy's pods, TigeraStatus) is subtracted from both; "objects changed" is the number of distinct objects
  written.

"""


LIMITS_HEADER = """Against the limit and kubectl bulk (issue 21), where measured. *limit*: the job's own requests (the module's
rules build the same guarded patches and deletes) sent by a bare Python client (benchmarks/limit.py: one keep-alive
HTTPS connection per thread, no Ansible) at the concurrency that was fastest in a sweep of 1 to 32 at the first run;
its reads are the fewest the job needs (one LIST per kind), not ours' discovery and records, so it is a floor. For
preflight it sends ours' reads (/apis, the nodes in pages of 500, the kube-proxy ConfigMap and DaemonSet, Services,
Pods, the Calico and operator types /apis serves) concurrently and judges every node with the module's own rules;
as nothing is written, its column "ours / limit" is the limit's time over ours'. *kubectl bulk*: the job scripted
with kubectl alone, one process per step (benchmarks/kubectl_bulk/*.sh: one `get -o json`, jq, one `replace -f -`
or `apply --server-side` or `delete` of every object; for preflight one `get` of nodes, Services and Pods, one of
kube-proxy, one of the Calico types served, verdicts by jq; for install_ebpf and upgrade Calico's documented
commands, their waits subtracted as ours' tasks named "wait" are). For install_ebpf and upgrade the limit is ours'
own requests, replayed: ours run once (untimed) as a capture user whose writes the audit log keeps with their bodies,
then the same requests (path, query, body; the reads ours made during its waits left out, as its waits are from its
time) sent by the bare client from the same starting state, concurrently within waves that keep what depends on an
earlier write (a namespace, a CRD - waited for until Established, subtracted - or the same object) after it; the
requests it had to rewrite (a resourceVersion or uid precondition of the captured object) are counted. Same run,
same cluster state, medians of the runs; ours' time includes its two (owner references) or one (the others)
ansible-playbook start-ups.
"""


FLOOR_HEADER = """Ansible's own cost in ours' time (issue 21: which part of the gap no code here can remove). Measured in the same
run (benchmarks/costs.py `ansible_costs`, medians of 3): the start-up of ansible-playbook with a play of no tasks, and
per task the cost of 20 tasks of a module of this collection that does no work (`objects_info` with no objects: the
module built, sent, started, its client built, no request) and of 20 controller tasks (`debug`). The floor is what
ours' playbooks and tasks (those its time counts: the waits left out) cost at those rates with no job work in them -
a lower bound: `copy` runs two modules and a looped task one per item, counted once here. "Ours above the floor" is
the job's own work (requests, the server's answers, files) and whatever code here could still cut. Where the limit
was measured, its median is the job's requests' own time, and "ours above the floor and the limit" is what is left:
the modules' work beyond a module that does nothing (their larger code loaded and compiled from the AnsiballZ zip,
the documents parsed, the answers read, arguments and results carried by Ansible, downloads). The last column is
ours' gap to kubectl bulk and the share of it that the floor is.
"""
