"""The fleet rollout's wall time against the same job cluster by cluster in a shell loop (``make bench-fleet``):
benchmarks/results/fleet.md and .json.

Per run, N small control planes (tests/localcp/fleet.py: one kwok node each, the kubeadm shape) with the real Tigera
operator behind each, and ``install_ebpf`` on all of them, twice on fresh control planes:

* the contender: a shell loop, ``for kubeconfig in ...; do ansible-playbook install_ebpf.yml; done`` - one cluster
  after another, no gate, what a team without a rollout does;
* ``fleet_rollout``: the canary, then the rest in batches of ``--batch`` (Ansible's forks run a batch's clusters at
  once), each cluster gated after its job (TigeraStatus, calico-node, the Installation, kube-proxy).

Both are wall times of the whole command on this 2-CPU machine, compared as a ratio within the run (they share its
load); the API requests are each cluster's audit log (the admin identity both run as), summed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from localcp import fleet as localfleet
from localcp.fixtures import Ansible

from benchmarks import RESULTS, ROOT


def _requests(clusters: dict, marks: dict) -> dict:
    events = [ev for name, c in clusters.items() for ev in c.audit.events_since(marks[name])]
    writes = [ev for ev in events if ev.get("verb") in ("create", "update", "patch", "delete")]
    return {"api_requests": len(events), "api_writes": len(writes)}


def loop(names: list, work: Path) -> dict:
    clusters = localfleet.start(names)
    try:
        marks = {n: c.audit.mark() for n, c in clusters.items()}
        first = next(iter(clusters.values()))
        cmd, env = Ansible(first, work).command("playbooks/install_ebpf.yml", inventory="inventories/local/hosts.yml",
                                                extra_vars={"ebpf_install_artifacts_dir": str(work / "artifacts")})
        # the same command per cluster, its kubeconfig and mirror swapped in: what a shell loop over kubeconfigs does
        script = "set -e\n" + "".join(
            f"K8S_AUTH_KUBECONFIG={shlex.quote(c.cp.kubeconfig)} CALICO_OPS_MIRROR_URL={shlex.quote(c.cp.mirror_url)} "
            f"{shlex.join(cmd)} > {shlex.quote(str(work / (n + '.log')))}\n" for n, c in clusters.items())
        t0 = time.monotonic()
        proc = subprocess.run(["bash", "-c", script], env=env, cwd=str(ROOT), check=False)
        seconds = time.monotonic() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"the shell loop failed (logs in {work})")
        return dict(_requests(clusters, marks), seconds=round(seconds, 1))
    finally:
        localfleet.stop(clusters)


def rollout(names: list, work: Path, batch: str) -> dict:
    clusters = localfleet.start(names)
    try:
        inventory = localfleet.write_inventory(clusters, work / "fleet.yml", work)
        marks = {n: c.audit.mark() for n, c in clusters.items()}
        first = next(iter(clusters.values()))
        extra = {"fleet_rollout_job": "install_ebpf", "fleet_rollout_canary": [names[0]], "fleet_rollout_batch": batch,
                 "fleet_rollout_gate_connectivity": False, "fleet_rollout_summary_dir": str(work / "summary")}
        t0 = time.monotonic()
        result = Ansible(first, work).playbook("playbooks/fleet_rollout.yml", inventory=str(inventory),
                                               extra_vars=extra, env=localfleet.CONTROLLER_ENV, timeout=3600)
        seconds = time.monotonic() - t0
        if result.rc != 0:
            raise RuntimeError("fleet_rollout failed:\n" + result.stdout[-3000:])
        return dict(_requests(clusters, marks), seconds=round(seconds, 1))
    finally:
        localfleet.stop(clusters)


def render(results: dict) -> str:
    lines = ["# Fleet rollout against a shell loop", "",
             "Produced by `make bench-fleet` (`benchmarks/fleet.py`, see its docstring): `install_ebpf` on N fresh local "
             "control planes (one kwok node each, the real Tigera operator), as one `fleet_rollout` (a canary, then "
             "batches, each cluster gated) and as a shell loop of `ansible-playbook install_ebpf.yml` over the "
             "kubeconfigs. Wall time of the whole command on this 2-CPU machine; API requests from the clusters' "
             "audit logs, summed.", "",
             "| clusters | batch | contender | seconds | API requests (writes) | loop / rollout | measured (load avg) |",
             "|---:|---|---|---:|---:|---:|---|"]
    for r in results["runs"]:
        for name in ("shell loop", "fleet_rollout"):
            x = r[name]
            lines.append(f"| {r['clusters']} | {r['batch']} | {name} | {x['seconds']} | {x['api_requests']} "
                         f"({x['api_writes']}) | {r['ratio'] if name == 'fleet_rollout' else ''} | "
                         f"{r['measured']} ({r['load']:.1f}) |")
    lines += ["", "Reading: the rollout runs a batch's clusters at once (Ansible's forks) where the loop waits for each "
              "cluster in turn, and adds its gate (a few reads per cluster); on 2 CPUs the clusters' own work (each an "
              "API server, an operator and kwok) bounds what running them at once gains.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=5)
    parser.add_argument("--batch", default="2")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: each fleet's finally stops its control planes
    names = [f"cluster-{i}" for i in range(1, args.clusters + 1)]
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"calico-ops-fleet-bench-{os.getpid()}"
    (work / "loop").mkdir(parents=True, exist_ok=True)
    (work / "rollout").mkdir(parents=True, exist_ok=True)
    print(f"[fleet] {args.clusters} clusters: the shell loop", flush=True)
    shell = loop(names, work / "loop")
    print(f"[fleet] shell loop: {shell}; now fleet_rollout (batches of {args.batch})", flush=True)
    fleet = rollout(names, work / "rollout", args.batch)
    print(f"[fleet] fleet_rollout: {fleet}", flush=True)
    path = RESULTS / "fleet.json"
    results = json.loads(path.read_text()) if path.exists() else {"runs": []}
    results["runs"].append({"clusters": args.clusters, "batch": args.batch, "shell loop": shell, "fleet_rollout": fleet,
                            "ratio": round(shell["seconds"] / fleet["seconds"], 2), "load": os.getloadavg()[0],
                            "measured": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")})
    path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    (RESULTS / "fleet.md").write_text(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
