"""A prober: new connections at a steady rate to a few targets, each attempt logged with its time and result.

What a switch of the data plane does to traffic is what users fear (Calico's documentation: enabling eBPF "can
disrupt NodePort traffic while nodes switch"); this measures it. Run inside a client pod's or a node's namespaces
(``Prober`` below starts it there through the pod's or node's holder):

    python -m localcp.prober --out FILE --target NAME=http://IP:PORT/PATH [--target ...] [--interval 0.2]

Each target has a thread of its own that opens a **new** TCP connection every ``--interval`` seconds (a fixed
schedule: an attempt that overruns its slot is not made up for), sends one HTTP/1.0 GET and reads the answer; an
attempt succeeds when the answer is a 200 within ``--timeout`` seconds (default 2: one lost SYN is retransmitted
within it). One JSON line per attempt:
``{"t": <epoch>, "target": NAME, "ok": bool, "ms": <duration>, "error": "...", "answer": "..."}``.
It runs until SIGTERM. ``summarize`` turns the lines into attempted, failed and the longest gap per target.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from .podrunner import _child_setup  # a session of its own, SIGTERM when the parent dies
from .podserve import raw_get


NODE_PORT = 30081
DIRECT_PORT = 8080  # the server pod's port for the client's direct connections
SERVICE_PORT = 8081  # the port its Services send to (a second container); workloads() says why they differ
RECOVERED_WITHIN = 3.0  # seconds (see summarize)
# seconds an attempt may take: a lost SYN is sent again after 1 s, so one retransmission passes and longer losses
# count (with 1 s, attempts timed out on this 2-CPU machine under make test's load with nothing lost)
TIMEOUT = 2.0


def workloads(server_node: str, client_node: str, namespace: str = "probe") -> list:
    """A server pod (netexec) on ``server_node``, a client pod on ``client_node`` (the prober runs in its network),
    a ClusterIP Service and a NodePort Service (externalTrafficPolicy Cluster: every node forwards) to the server,
    and a ClusterIP Service ``server-late`` that selects the server only once it is labelled ``late=yes``.

    The Services send to ``SERVICE_PORT``, the client dials the pod itself on ``DIRECT_PORT``: Calico's eBPF
    conntrack keys a Service connection by its backend (pod IP and target port) and drops a new connection whose
    tuple an entry already has, and the kernel gives the client the same source port for the ClusterIP and for the
    pod (the destinations differ before NAT). With one port, ~3% of the pod target's and ~20% of the ClusterIP
    target's attempts were lost in eBPF mode, for as long as the entries lived (test_dataplane.py shows the drop;
    the collection's connectivity workload keeps its ports apart for the same reason)."""
    from .traffic import netexec_pod
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        netexec_pod("server", server_node, namespace, ports=(DIRECT_PORT, SERVICE_PORT)),
        netexec_pod("client", client_node, namespace),
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "server", "namespace": namespace},
         "spec": {"selector": {"app": "server"}, "ports": [{"port": 80, "targetPort": SERVICE_PORT}]}},
        # a Service whose endpoint appears during a switch (localcp.switches labels the server pod with
        # late=yes a few seconds into it): what kube-proxy or Felix must program while the data plane changes hands
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "server-late", "namespace": namespace},
         "spec": {"selector": {"app": "server", "late": "yes"}, "ports": [{"port": 80, "targetPort": SERVICE_PORT}]}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "server-nodeport", "namespace": namespace},
         "spec": {"type": "NodePort", "selector": {"app": "server"},
                  "ports": [{"port": 80, "targetPort": SERVICE_PORT, "nodePort": NODE_PORT}]}},
    ]


def attempt(url: str, timeout: float) -> tuple:
    """(ok, error, answer) of one new connection and GET."""
    ok, error, body = raw_get(url, timeout)
    return ok, error, body.strip()[:64]


def run(targets: dict, out: Path, interval: float, timeout: float, stop: threading.Event) -> None:
    lock = threading.Lock()
    with open(out, "a", buffering=1) as f:
        def loop(name, url):
            start = time.monotonic()
            k = 0
            while not stop.is_set():
                t = time.time()
                t0 = time.monotonic()
                ok, error, answer = attempt(url, timeout)
                rec = {"t": round(t, 3), "target": name, "ok": ok, "ms": round((time.monotonic() - t0) * 1000, 1)}
                if error:
                    rec["error"] = error
                if answer:
                    rec["answer"] = answer
                with lock:
                    f.write(json.dumps(rec) + "\n")
                k = max(k + 1, int((time.monotonic() - start) / interval))
                stop.wait(max(0.0, start + k * interval - time.monotonic()))

        threads = [threading.Thread(target=loop, args=item, daemon=True) for item in targets.items()]
        for th in threads:
            th.start()
        for th in threads:
            th.join()


def read(path: Path) -> list:
    out = []
    if not Path(path).exists():
        return out
    for line in Path(path).read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a line cut by the stop
    return out


def summarize(records: list) -> dict:
    """target -> attempted, failed, longest_gap_s (the longest time without a successful new connection: from
    the last success before a run of failures to the first success after it, or to the last attempt when the run
    never recovered), first_failure/last_failure (epoch), errors (distinct, up to 3) and recovered."""
    out = {}
    for name in sorted({r["target"] for r in records}):
        recs = sorted((r for r in records if r["target"] == name), key=lambda r: r["t"])
        failed = [r for r in recs if not r["ok"]]
        gap, last_ok, run_start = 0.0, None, None
        for r in recs:
            if r["ok"]:
                if run_start is not None:
                    gap = max(gap, r["t"] - (last_ok if last_ok is not None else run_start))
                    run_start = None
                last_ok = r["t"]
            elif run_start is None:
                run_start = r["t"]
        if run_start is not None:
            gap = max(gap, recs[-1]["t"] - (last_ok if last_ok is not None else run_start))
        errors = []
        for r in failed:
            e = (r.get("error") or "").split(":")[0]
            if e and e not in errors:
                errors.append(e)
        # recovered: answering at the end - a success within RECOVERED_WITHIN s of the last attempt (one attempt that
        # timed out at the very end of a run on a loaded machine is not an outage; a streak of them is)
        out[name] = {"attempted": len(recs), "failed": len(failed), "longest_gap_s": round(gap, 2),
                     "first_failure": failed[0]["t"] if failed else None,
                     "last_failure": failed[-1]["t"] if failed else None, "errors": errors[:3],
                     "recovered": last_ok is not None and recs[-1]["t"] - last_ok <= RECOVERED_WITHIN}
    return out


def table(summary: dict) -> str:
    lines = ["target            attempted  failed  longest gap (s)  recovered  errors"]
    for name, s in summary.items():
        lines.append(f"{name:<17} {s['attempted']:>9}  {s['failed']:>6}  {s['longest_gap_s']:>15}  "
                     f"{'yes' if s['recovered'] else 'NO':>9}  {', '.join(s['errors'])}")
    return "\n".join(lines)


def attempt_in(enter: list, url: str, timeout: float = 3.0) -> bool:
    """One attempt from inside ``enter`` (an nsenter prefix): True when answered."""
    code = ("import sys; from localcp.prober import attempt; "
            "sys.exit(0 if attempt(sys.argv[1], float(sys.argv[2]))[0] else 1)")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    out = subprocess.run(enter + [sys.executable, "-c", code, url, str(timeout)], env=env, capture_output=True,
                         timeout=timeout + 30, check=False)
    return out.returncode == 0


class Prober:
    """A prober process inside ``enter`` (an nsenter prefix: a pod's or node's holder; dataplane.enter), started
    by ``start`` and stopped by PID in ``stop``, which returns ``summarize`` of what it logged."""

    def __init__(self, enter: list, targets: dict, out: Path, interval: float = 0.2, timeout: float = TIMEOUT):
        self.enter, self.targets, self.out = enter, targets, Path(out)
        self.interval, self.timeout = interval, timeout
        self.popen = None

    def start(self) -> "Prober":
        # a measurement of its own: what an earlier prober logged at this path is not this one's
        self.out.unlink(missing_ok=True)
        argv = [sys.executable, "-m", "localcp.prober", "--out", str(self.out), "--interval", str(self.interval),
                "--timeout", str(self.timeout)]
        for name, url in self.targets.items():
            argv += ["--target", f"{name}={url}"]
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
        self.popen = subprocess.Popen(self.enter + argv, env=env, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=open(f"{self.out}.err", "ab"),
                                      preexec_fn=_child_setup)  # dies with the test process
        return self

    def records(self) -> list:
        return read(self.out)

    def stop(self) -> dict:
        if self.popen is not None and self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(timeout=5)
        return summarize(self.records())

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="localcp.prober", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--target", action="append", required=True, help="NAME=http://IP:PORT/PATH")
    parser.add_argument("--interval", type=float, default=0.2)
    parser.add_argument("--timeout", type=float, default=TIMEOUT)
    args = parser.parse_args(argv)
    targets = dict(t.split("=", 1) for t in args.target)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    run(targets, Path(args.out), args.interval, args.timeout, stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
