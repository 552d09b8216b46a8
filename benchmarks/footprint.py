"""make bench-footprint: what the real data plane costs per node, and how long the eBPF install takes to serve.

For each size (3 and 10 nodes by default) a control plane with nodes that have a network (``localcp up
--dataplane``: the real calico-node v3.31.4 and Typha behind their pods, each node a network namespace of its own)
is started; the demo's workloads (tests/localcp/traffic.py: a netexec server and a client pod on two nodes, a
ClusterIP Service) are applied, and ``playbooks/install_ebpf.yml`` is started. From that moment this script sends a
request every half second to the Service's ClusterIP from this machine (outside the cluster: it enters the first
node, whose eBPF programs translate it) and from the client pod, and records when each is first answered. Then, after
a settling minute, per node:

* memory: the RSS of calico-node's process tree (the image's entrypoint, Felix, and its other services) and of Typha
  where it runs;
* BPF maps: the sum of ``memlock`` over the BPF maps Felix holds open (``/proc/<pid>/fdinfo``: the kernel's own
  figure of each map's memory), at Felix's default map sizes (nothing is sized down here);
* CPU at rest: the CPU seconds calico-node's tree used over 30 s with nothing changing, as a percentage of one CPU.

Results: ``benchmarks/results/footprint.json`` and ``footprint.md`` (merged per size). Times are wall times on this
2-CPU machine with every node's processes sharing it (10 Felix processes start at once), so they are upper bounds of a
node's own time; the load average at each run is recorded.

    PYTHONPATH=tests .venv/bin/python -m benchmarks.footprint [--sizes 3,10] [--settle 60] [--window 30]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml
from localcp import traffic
from localcp.cluster import ControlPlane
from localcp.fixtures import Ansible, Cluster
from localcp.nodes import default_specs
from localcp.traffic import process_tree as tree
from localcp.traffic import rss_kib

from benchmarks import RESULTS, ROOT

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pids: list) -> int:
    total = 0
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except (OSError, IndexError, ValueError):
            continue
    return total


def bpf_maps(pids: list) -> tuple:
    """(map count, memlock bytes) of the distinct BPF maps the processes hold open."""
    seen = {}
    for p in pids:
        try:
            fds = os.listdir(f"/proc/{p}/fdinfo")
        except OSError:
            continue
        for fd in fds:
            try:
                info = dict(line.split(":", 1) for line in Path(f"/proc/{p}/fdinfo/{fd}").read_text().splitlines()
                            if ":" in line)
            except OSError:
                continue
            if "map_type" in info and "memlock" in info:
                seen[info.get("map_id", f"{p}/{fd}").strip()] = int(info["memlock"])
    return len(seen), sum(seen.values())


def felix_pids(pids: list) -> list:
    out = []
    for p in pids:
        try:
            if b"-felix" in Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0"):
                out.append(p)
        except OSError:
            continue
    return out


def _install_until_answered(cluster: Cluster, t: traffic.Traffic, url: str, workdir: Path) -> tuple:
    """Start install_ebpf.yml and send a request to ``url`` every half second from this machine and from the client
    pod: (the install's seconds, {"outside": s, "pod": s} of the first answer of each), from the install's start."""
    cmd, env = Ansible(cluster, workdir).command(
        "playbooks/install_ebpf.yml", inventory=str(ROOT / "inventories/local/hosts.yml"),
        extra_vars={"ebpf_install_artifacts_dir": str(workdir / "artifacts"), "ebpf_install_timeout": 900,
                    "preflight_report_dir": str(workdir / "report")})
    t0 = time.monotonic()
    play_log = open(workdir / "install_ebpf.log", "w")  # a file: a pipe nobody reads fills and stops the play
    play = subprocess.Popen(cmd, cwd=str(ROOT), env=env, stdout=play_log, stderr=subprocess.STDOUT, text=True)
    play_log.close()
    first = {"outside": None, "pod": None}
    install_s = None
    deadline = t0 + 1200
    while (None in first.values() or install_s is None) and time.monotonic() < deadline:
        if install_s is None and play.poll() is not None:
            install_s = time.monotonic() - t0
            if play.returncode != 0:
                raise RuntimeError("install_ebpf failed:\n" + (workdir / "install_ebpf.log").read_text()[-3000:])
        if first["outside"] is None and t.get(url, pod=None, timeout=1)[0]:
            first["outside"] = time.monotonic() - t0
        if first["pod"] is None and t.get(url, pod="client", timeout=1)[0]:
            first["pod"] = time.monotonic() - t0
        time.sleep(0.5)
    if None in first.values():
        raise RuntimeError(f"no answer from {url} within 1200 s: {first}")
    return install_s, first


def _per_node(cluster: Cluster, window: float) -> dict:
    """{node: figures}: calico-node's and Felix's RSS, Felix's BPF maps, Typha's RSS where it runs, and calico-node's
    CPU at rest over ``window`` seconds."""
    nodes = {}
    for proc in cluster.processes():
        if proc["component"] not in ("calico-node", "calico-typha") or not proc["pid"]:
            continue
        entry = nodes.setdefault(proc["node"], {})
        pids = tree(proc["pid"])
        if proc["component"] == "calico-node":
            felix = felix_pids(pids)
            count, memlock = bpf_maps(felix)
            entry.update(calico_node_pids=pids, calico_node_rss_mib=round(rss_kib(pids) / 1024, 1),
                         felix_rss_mib=round(rss_kib(felix) / 1024, 1), bpf_maps=count,
                         bpf_maps_mib=round(memlock / 2**20, 1), restarts=proc["restarts"])
        else:
            entry["typha_rss_mib"] = round(rss_kib(pids) / 1024, 1)
    before = {n: cpu_ticks(e["calico_node_pids"]) for n, e in nodes.items()}
    time.sleep(window)
    for n, e in nodes.items():
        e["cpu_at_rest_pct"] = round(100.0 * (cpu_ticks(e.pop("calico_node_pids")) - before[n]) / TICKS / window, 2)
    return nodes


def measure(size: int, settle: float, window: float, workdir: Path) -> dict:
    """One size: a control plane of ``size`` nodes with the real data plane, the demo's workloads, install_ebpf
    until the Service answers through eBPF, then after ``settle`` seconds each node's footprint."""
    cp = ControlPlane(die_with_parent=True)
    started = time.monotonic()
    cp.start(default_specs(size), shape="kubeadm", with_dataplane=True)
    up_s = time.monotonic() - started
    cluster = Cluster(cp)
    try:
        t = traffic.Traffic(cp.run_dir)
        t.deploy()
        install_s, first = _install_until_answered(cluster, t, f"http://{t.cluster_ip()}/hostname", workdir)
        time.sleep(settle)
        nodes = _per_node(cluster, window)
        rows = list(nodes.values())
        return {
            "size": size, "measured": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "load_average": os.getloadavg(), "control_plane_up_s": round(up_s, 1),
            "install_s": round(install_s, 1),
            "first_answer_s": {k: round(v, 1) for k, v in first.items()},
            "per_node": nodes,
            "median": {k: statistics.median(r[k] for r in rows if k in r)
                       for k in ("calico_node_rss_mib", "felix_rss_mib", "bpf_maps_mib", "bpf_maps",
                                 "cpu_at_rest_pct")},
            "typha_rss_mib": sorted(r["typha_rss_mib"] for r in rows if "typha_rss_mib" in r),
            "settle_s": settle, "cpu_window_s": window,
        }
    finally:
        cp.stop(remove_dir=True)


def render(results: dict) -> str:
    lines = ["# Data-plane footprint: the real calico-node v3.31.4 (Felix in eBPF mode) per node", "",
             "Produced by `make bench-footprint` (`benchmarks/footprint.py`, see its docstring): a control plane whose",
             "nodes have a network (each a network namespace of this machine), the collection's `install_ebpf`, the",
             "demo's workloads. Times are from the install's start; memory and CPU are per node, after a settling",
             "minute, at Felix's default BPF map sizes (nothing sized down). All nodes share this 2-CPU machine.", "",
             "| nodes | install (s) | first answer via eBPF, from outside (s) | from a pod (s) | calico-node RSS (MiB) "
             "| of it Felix (MiB) | BPF maps (MiB, count) | CPU at rest (% of a CPU) | Typha RSS (MiB) | measured "
             "(load avg) |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for size in sorted(results, key=int):
        r = results[size]
        m = r["median"]
        lines.append(f"| {r['size']} | {r['install_s']} | {r['first_answer_s']['outside']} | "
                     f"{r['first_answer_s']['pod']} | {m['calico_node_rss_mib']} | {m['felix_rss_mib']} | "
                     f"{m['bpf_maps_mib']} ({m['bpf_maps']}) | {m['cpu_at_rest_pct']} | "
                     f"{', '.join(str(x) for x in r['typha_rss_mib'])} | {r['measured']} "
                     f"({r['load_average'][0]:.1f}) |")
    lines += ["", "Medians over the nodes; each node's figures are in `footprint.json`. calico-node's RSS is its",
              "process tree: the image's entrypoint (localcp/calico_node_image.py, a Python process of ~20 MiB that",
              "a real node runs as runit), Felix, and calico-node's `-allocate-tunnel-addrs`, `-monitor-addresses`,",
              "`-status-reporter` and `-complete-startup` services.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="3,10")
    parser.add_argument("--settle", type=float, default=60)
    parser.add_argument("--window", type=float, default=30)
    args = parser.parse_args(argv)
    # stopped (SIGTERM): unwind, so that each control plane's finally removes its node namespaces and processes
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    path = RESULTS / "footprint.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    for size in [int(s) for s in args.sizes.split(",")]:
        print(f"[footprint] {size} nodes", flush=True)
        work = Path(os.environ.get("TMPDIR", "/tmp")) / f"calico-ops-footprint-{size}-{os.getpid()}"
        work.mkdir(parents=True, exist_ok=True)
        results[str(size)] = measure(size, args.settle, args.window, work)
        print(yaml.safe_dump({size: {k: v for k, v in results[str(size)].items() if k != "per_node"}}), flush=True)
        path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
        (RESULTS / "footprint.md").write_text(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
