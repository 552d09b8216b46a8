"""Data-plane switches under traffic, the collection's order against the documented order done by hand
(``make bench-switch``): benchmarks/results/switch-under-traffic.md and .json.

One control plane whose nodes have a network (the real kube-proxy in iptables mode, the real calico-node v3.31.4),
Calico installed on the Iptables data plane as the quickstart does, the prober's workloads (localcp/switches.py).
Each run makes four switches in a row, each measured by the probers from before its first write until the data plane
settled plus 15 s: the collection's ``enable_ebpf``, its ``disable_ebpf``, then the same two switches in Calico's
documented order with kubectl alone. ``--runs`` (default 3) runs; the table has the median per switch and target,
and each run's count. The four switches of a run share the machine's load, so the contenders are compared within
a run; the failure counts depend on this machine's timing, the order of events does not (the timeline lines).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import sys
from pathlib import Path

from localcp import switches
from localcp.cluster import ControlPlane
from localcp.fixtures import Ansible, Cluster

from benchmarks import RESULTS

# the jobs' own prober and check (roles/connectivity) off: the contenders by hand deploy nothing of the kind, and the
# probe pods' interfaces would add to what each Felix attaches when it restarts onto the other data plane
VARS = {"ebpf_install_timeout": 600, **{f"{job}_{what}": False for job in ("ebpf_install_enable", "ebpf_rollback")
                                        for what in ("measure_disruption", "verify_connectivity")}}


def one_run(s: switches.Switches, ansible: Ansible, work: Path) -> dict:
    v = dict(VARS, ebpf_install_artifacts_dir=str(work / "artifacts"), preflight_report_dir=str(work / "report"))

    def play(name):
        return lambda: ansible.playbook(f"playbooks/{name}.yml", inventory="inventories/local/hosts.yml",
                                        extra_vars=v)
    s.results = {}
    s.measure("enable_ebpf", play("enable_ebpf"), bpf_after=True, kube_proxy_after=False)
    s.measure("disable_ebpf", play("disable_ebpf"), bpf_after=False, kube_proxy_after=True)
    s.measure("by hand: enable", s.hand_enable, bpf_after=True, kube_proxy_after=False)
    s.measure("by hand: disable", s.hand_disable, bpf_after=False, kube_proxy_after=True)
    return {name: {k: v for k, v in m.items() if k != "result"} for name, m in s.results.items()}


def render(runs: list, load: list) -> str:
    out = ["# Data-plane switches under traffic: the collection against the documented order by hand", "",
           "Produced by `make bench-switch` (`benchmarks/switch.py`, see its docstring): 3 nodes, each a network "
           "namespace of this machine; the real kube-proxy (iptables mode) and the real calico-node v3.31.4. New "
           "connections every 0.2 s from a client pod on node-1 to a ClusterIP, to a NodePort on node-2 and to the "
           "server pod on node-2, to Service server-late whose endpoint appears 5 s into the switch (counted from 3 s "
           "after), and from node-1's host network to the NodePort; each switch measured from before "
           "its first write until the data plane settled plus 15 s.", "",
           f"Median of {len(runs)} runs (each run's counts in the last column); measured "
           f"{datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}, load average at the "
           f"start of each run: {', '.join(f'{x:.1f}' for x in load)}.", "",
           switches.median_table(runs), "",
           "The order of events, per run (seconds after the switch's first write): when kube-proxy stopped selecting "
           "nodes and where Calico was then; when the Installation left eBPF and where kube-proxy was then:", ""]
    for i, res in enumerate(runs, 1):
        for name, m in res.items():
            if m.get("kube_proxy_disabled_at") is not None:
                ready, desired = m["calico_node_switched_then"]
                out.append(f"- run {i}, {name}: {m['kube_proxy_disabled_at']} s; bpfEnabled "
                           f"{str(m['bpf_then']).lower()}, {ready}/{desired} calico-node pods Ready on the switched "
                           "template")
            if m.get("left_bpf_at") is not None:
                running, nodes = m["kube_proxy_running_then"]
                out.append(f"- run {i}, {name}: Installation left eBPF {m['left_bpf_at']} s after the first write, "
                           f"with kube-proxy running on {running}/{nodes} nodes")
    out += ["", "Switch durations (first write to settled, s): " + "; ".join(
        f"{name} {', '.join(str(r[name]['seconds']) for r in runs if name in r)}" for name in runs[0]), ""]
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"calico-ops-bench-switch-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    cp = ControlPlane(die_with_parent=True)
    cp.start(shape="kubeadm", with_dataplane=True)
    runs, load = [], []
    try:
        cluster = Cluster(cp)
        s = switches.Switches(cluster, work / "probes")
        s.install_iptables()
        s.deploy()
        ansible = Ansible(cluster, work)
        for i in range(args.runs):
            load.append(os.getloadavg()[0])
            print(f"[bench-switch] run {i + 1}/{args.runs}", flush=True)
            runs.append(one_run(s, ansible, work))
            print(switches.table(runs[-1]), flush=True)
            (RESULTS / "switch-under-traffic.json").write_text(json.dumps(runs, indent=1, default=str) + "\n")
            (RESULTS / "switch-under-traffic.md").write_text(render(runs, load))
    finally:
        cp.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
