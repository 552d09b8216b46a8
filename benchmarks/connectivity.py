"""The connectivity check's wall time on 3 and 10 nodes (``make bench-connectivity``):
benchmarks/results/connectivity.md and .json.

Per size, one control plane whose nodes have a network (the real calico-node v3.31.4 after the collection's
``install_ebpf``), then ``check_connectivity`` three times in a row on the same cluster:

* every check (the default, 8 dials at a time): what a user runs;
* every check but ``network_policy``, 8 dials at a time (``connectivity_workers`` 8);
* the same checks one dial at a time (``connectivity_workers`` 1): the contender, what a loop of ``kubectl exec ...
  curl`` per pair amounts to.

The last two are compared as a ratio within the run (they share the machine's load); ``network_policy`` is left out of
that pair because its denied half waits agnhost's 5 s per pair whatever the parallelism. Each run's API requests are
the module's own count (``api_requests`` of its results).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import sys
import time
from pathlib import Path

from localcp.cluster import ControlPlane
from localcp.fixtures import Ansible, Cluster
from localcp.nodes import default_specs

from benchmarks import RESULTS

INVENTORY = "inventories/local/hosts.yml"
NO_POLICY = ["pod_to_pod", "pod_to_service", "pod_to_nodeport", "host_to_nodeport", "pod_to_api_server", "dns",
             "kube_proxy_absent"]
CONTENDERS = [("every check, 8 at a time", {}),
              ("no network_policy, 8 at a time", {"connectivity_checks": NO_POLICY, "connectivity_workers": 8}),
              ("no network_policy, 1 at a time", {"connectivity_checks": NO_POLICY, "connectivity_workers": 1})]


CHECK_TASKS = (" : Check every pair", " : Check that no pod reaches a server pod any more",
               " : Check that every pod reaches the server pods again")


def _summary(result, events) -> dict:
    """Rows checked and passed; the play's API requests from the audit log (the admin identity it runs as)."""
    rows = []
    for t in result.tasks:
        if t["task"].endswith(CHECK_TASKS):
            rows += t["result"].get("rows") or []
    reads = len([e for e in events if e.get("verb") in ("get", "list", "watch")])
    return {"rows": len([r for r in rows if r["outcome"] != "skipped"]),
            "ok": len([r for r in rows if r["outcome"] == "ok"]), "api_reads": reads,
            "api_writes": len(events) - reads}


def measure(size: int, workdir: Path) -> dict:
    cp = ControlPlane(die_with_parent=True)
    cp.start(default_specs(size), shape="kubeadm", with_dataplane=True)
    cluster = Cluster(cp)
    try:
        ansible = Ansible(cluster, workdir)
        install = ansible.playbook("playbooks/install_ebpf.yml", inventory=INVENTORY, extra_vars={
            "ebpf_install_artifacts_dir": str(workdir / "artifacts"), "ebpf_install_timeout": 900,
            "preflight_report_dir": str(workdir / "report")})
        if install.rc != 0:
            raise RuntimeError("install_ebpf failed:\n" + install.stdout[-3000:])
        out = {"nodes": size, "load": os.getloadavg()[0],
               "measured": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "runs": {}}
        for name, extra in CONTENDERS:
            mark = cluster.audit.mark()
            t0 = time.monotonic()
            result = ansible.playbook("playbooks/check_connectivity.yml", inventory=INVENTORY,
                                      extra_vars=dict(extra, connectivity_probe_dir=str(workdir / "probes")))
            seconds = time.monotonic() - t0
            if result.rc != 0:
                raise RuntimeError(f"check_connectivity ({name}) failed:\n" + result.stdout[-3000:])
            out["runs"][name] = dict(_summary(result, cluster.audit.events_since(mark)), seconds=round(seconds, 1))
            print(f"[connectivity] {size} nodes, {name}: {out['runs'][name]}", flush=True)
        one, eight = out["runs"][CONTENDERS[2][0]], out["runs"][CONTENDERS[1][0]]
        out["ratio_one_to_eight"] = round(one["seconds"] / eight["seconds"], 2)
        return out
    finally:
        cp.stop(remove_dir=True)


def render(results: dict) -> str:
    lines = ["# The connectivity check's wall time", "",
             "Produced by `make bench-connectivity` (`benchmarks/connectivity.py`, see its docstring): a control plane "
             "whose nodes have a network (each a network namespace of this 2-CPU machine), the real calico-node v3.31.4 "
             "after `install_ebpf`, then `check_connectivity` three times in a row. Wall time of the whole playbook "
             "(deploy, wait until every probe pod answers, the checks, removal); rows are the checked pairs (DNS "
             "skipped: no CoreDNS here), all of which passed. API requests from the audit log (the play's identity).", "",
             "| nodes | run | rows (ok) | API requests: reads, writes (dry runs included) | seconds | measured (load avg) |",
             "|---:|---|---:|---:|---:|---|"]
    for size in sorted(results, key=int):
        r = results[size]
        for name, _extra in CONTENDERS:
            x = r["runs"][name]
            lines.append(f"| {size} | {name} | {x['rows']} ({x['ok']}) | {x['api_reads']}, {x['api_writes']} | "
                         f"{x['seconds']} | "
                         f"{r['measured']} ({r['load']:.1f}) |")
    lines += ["", "One dial at a time against eight, same run and checks (seconds, ratio): " + "; ".join(
        f"{size} nodes {results[size]['runs'][CONTENDERS[2][0]]['seconds']} s against "
        f"{results[size]['runs'][CONTENDERS[1][0]]['seconds']} s, x{results[size]['ratio_one_to_eight']}"
        for size in sorted(results, key=int)) + ".", "",
        "Reading: a dial that answers takes tens of milliseconds, so sending eight at a time changes nothing measurable "
        "here; the playbook's time is the workload's deploy, the ready wait (polled every 5 s), its removal and "
        "Ansible's own cost. What grows with the nodes is `network_policy`: its denied half waits agnhost's 5 s per "
        "pod pair (n x n pairs, eight at a time), 94 s of the whole at 10 nodes against 26 s without it.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="3,10")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: each control plane's finally cleans up
    path = RESULTS / "connectivity.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    for size in [int(s) for s in args.sizes.split(",")]:
        work = Path(os.environ.get("TMPDIR", "/tmp")) / f"calico-ops-connectivity-{size}-{os.getpid()}"
        work.mkdir(parents=True, exist_ok=True)
        results[str(size)] = measure(size, work)
        path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
        (RESULTS / "connectivity.md").write_text(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
