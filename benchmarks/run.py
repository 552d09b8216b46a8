"""make bench: every benchmark job at each size, ours against the naive kubernetes.core loop, in one run.

Jobs (one file each in benchmarks/jobs/: the job's objects, its naive play, its other contenders):

* preflight: ebpf_preflight_info over N kwok nodes (the sizes are capped at 5,000 nodes); naive: k8s_info of the
  nodes, the kube-proxy ConfigMap and the Services, then one set_fact per node judging it;
* owner_references: detach + attach over N dependents (owners re-created in between); naive: k8s_info + one
  kubernetes.core.k8s merge patch per dependent and phase;
* host_endpoint_migration: N old host endpoints on N kwok nodes; naive: one k8s task per endpoint and step;
* datastore_migration: playbooks/migrate_datastore.yml (etcd -> Kubernetes datastore, real calicoctl) with N nodes
  (one Calico Node each in etcd); naive: Calico's documented command sequence scripted (DatastoreMigration);
* operator_migration: playbooks/migrate_to_operator.yml (a manifest install moved to the real operator) with N nodes;
  naive: Calico's documented steps scripted (OperatorMigration);
* disable_ebpf: playbooks/disable_ebpf.yml (an eBPF install of install_ebpf.yml taken back to Iptables, the real
  operator) with N nodes; naive: the reverse of Calico's documented steps scripted with kubectl (DisableEbpf);
* install_ebpf: playbooks/install_ebpf.yml (open source, release mirror) on a cluster without Calico, with
  ``ebpf_install_wait: false`` (TigeraStatus is read once, not waited for) and the time of every task whose
  name says "wait" (the CRDs Established wait) subtracted; naive: kubernetes.core.k8s ``src:`` of the same
  release files and merge patches. N is the number of nodes of the cluster (the job does not scale with it).

Beside ours and the naive loop, two contenders where the job defines them (issue 21): *limit* - the job's own
requests sent by a bare client at the concurrency a sweep of 1-32 found fastest, no Ansible (benchmarks/limit.py;
owner_references, host_endpoint_migration, preflight) - and *kubectl bulk* - the job as a skilled operator scripts
it with kubectl alone (benchmarks/kubectl_bulk/*.sh; the same three jobs, and Calico's documented commands for
install_ebpf and upgrade). The limit of install_ebpf and upgrade is ours' own requests replayed (``CapturedLimit``):
ours runs once, untimed, as the control plane's capture user, whose writes the audit log keeps with their bodies
(localcp CAPTURE_USER); the bare client sends the same requests from the same starting state, wave by wave
(limit.waves), ours' waits left out as from ours' time.

Ansible's own floor (issue 21): once per run, ``ansible_costs`` (benchmarks/costs.py) times an ansible-playbook run of a play without tasks,
20 tasks of a collection module that does no work and 20 controller tasks; every ours run records its task profile
(module and controller tasks, per module the count and seconds, the slowest tasks), and its floor - the start-ups
and tasks it ran at those rates, waits left out - is tabled beside its time ("Ansible's own cost in ours' time").

Per job and size: ``--repeat`` runs of ours and of the naive loop, the median; the API requests of each run
from the audit log (user ``admin``; server-side dry runs are reads of a kind, counted apart and not as
writes); ours is run once more after each run and must make zero writes (asserted, recorded). Writes to the
objects of the job must equal the objects that changed (asserted); the module's own record (ConfigMaps) is
counted apart. A naive run predicted (from the per-object rate of the largest smaller size measured) to take
longer than ``--naive-budget`` seconds is not run: it is recorded as a prediction, never as a measurement.

    PYTHONPATH=tests:tests/integration .venv/bin/python -m benchmarks.run [--jobs preflight,owner_references,...]
        [--sizes 10,100,1000,5000] [--repeat 3] [--naive-budget 600] [--contenders ours,naive]

(from the repository's root; ``make bench BENCH_ARGS="..."`` runs the same).

``--contenders naive`` (or ``ours``) runs one side only and keeps the other side's figures of results.json (each
side says when it was measured, and the load average then): the naive loops at large N take hours, so they are
measured in runs of their own.

Uses the control plane of LOCALCP_RUN_DIR when set, else starts one (and stops it at the end). Results are
merged (per job and size) into benchmarks/results/results.json, and results.md and results.png are rendered
from it; a run of some jobs keeps the others' results.
"""

import argparse
import json
import os
import platform
import signal
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from localcp.fixtures import Cluster, collections_path

from benchmarks import RESULTS, WORK
from benchmarks.harness import control_plane
from benchmarks.jobs import JOBS
from benchmarks.render import render
from benchmarks.runner import OTHER_CONTENDERS, merge_results, run_job


def _parser():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", default=",".join(JOBS))
    parser.add_argument("--sizes", default="10,100,1000,5000",
                        help="N per job (preflight capped at 5000 nodes; install_ebpf ignores it). The smallest "
                             "size is the calibration point the naive predictions start from")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--naive-budget", type=float, default=600.0,
                        help="seconds; a naive run predicted to take longer is not run (recorded as a prediction)")
    parser.add_argument("--contenders", default="ours,naive,limit,kubectl",
                        help="which to run (ours, naive, limit, kubectl: limit and kubectl where the job has them); "
                             "the others' figures of results.json are kept")
    parser.add_argument("--results", default=str(RESULTS))
    parser.add_argument("--render-only", action="store_true", help="only render results.md/.png from results.json")
    parser.add_argument("--merge", action="append", default=[], metavar="RESULTS_JSON",
                        help="merge the jobs and runs of another run's results.json (e.g. one run on another control "
                             "plane at the same time) into this one first, per job, size and contender")
    return parser


def _save(results, path):
    path.write_text(json.dumps(results, indent=1, default=str) + "\n")


def _load(path, merges):
    """results.json of ``path`` (or none yet), the other runs' results.json of ``merges`` merged into it (and
    written back)."""
    results = json.loads(path.read_text()) if path.exists() else {"jobs": {}, "runs": []}
    for other in merges:
        merge_results(results, json.loads(Path(other).read_text()))
    if merges:
        _save(results, path)
    return results


def _selection(parser, args):
    """(jobs, sizes, contenders) of the options; an unknown job or contender is a usage error."""
    jobs = [j for j in args.jobs.split(",") if j]
    unknown = [j for j in jobs if j not in JOBS]
    if unknown:
        parser.error("unknown job(s) %s; known: %s" % (", ".join(unknown), ", ".join(JOBS)))
    sizes = sorted(int(s) for s in args.sizes.split(","))
    contenders = tuple(c for c in args.contenders.split(",") if c)
    if not contenders or set(contenders) - set(("ours", "naive") + OTHER_CONTENDERS):
        parser.error("--contenders: a list of ours, naive, %s" % ", ".join(OTHER_CONTENDERS))
    return jobs, sizes, contenders


def _run(results, out_dir, args, jobs, sizes, contenders):
    """Run ``jobs`` on the control plane (LOCALCP_RUN_DIR's, else a new one stopped at the end), each size's row
    written to results.json and rendered as it comes; the run itself recorded under ``runs``, also when it fails."""
    path = out_dir / "results.json"
    os.environ.setdefault("ANSIBLE_COLLECTIONS_PATH", collections_path())
    # a stopped run (SIGTERM) unwinds like an error: its control plane is stopped and the run is recorded
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cp, own = control_plane()
    WORK.mkdir(exist_ok=True)
    meta = {"started": datetime.now(timezone.utc).isoformat(timespec="seconds"), "argv": sys.argv[1:],
            "command": "benchmarks/run.py " + " ".join(sys.argv[1:]), "loadavg_start": os.getloadavg(),
            "cpus": os.cpu_count(), "python": platform.python_version(), "jobs": jobs, "sizes": sizes,
            "repeat": args.repeat, "naive_budget_s": args.naive_budget, "contenders": list(contenders)}
    started = time.monotonic()
    try:
        for name in jobs:
            results["jobs"].setdefault(name, {})
            for n, row in run_job(name, JOBS[name], Cluster(cp), sizes, args.repeat, args.naive_budget, WORK,
                                  previous=dict(results["jobs"][name]), contenders=contenders):
                row["loadavg_end"] = os.getloadavg()
                row["measured_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
                results["jobs"][name][str(n)] = row
                _save(results, path)  # kept if a later size fails
                render(results, out_dir)
    finally:
        meta["loadavg_end"] = os.getloadavg()
        meta["elapsed_s"] = round(time.monotonic() - started, 1)
        results.setdefault("runs", []).append(meta)
        _save(results, path)
        if own is not None:
            own.stop(remove_dir=True)


def main(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    out_dir = Path(args.results)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = _load(out_dir / "results.json", args.merge)
    if not args.render_only:
        _run(results, out_dir, args, *_selection(parser, args))
    render(results, out_dir)
    print((out_dir / "results.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
