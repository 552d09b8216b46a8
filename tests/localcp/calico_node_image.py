"""The calico/node image's entrypoint, for the real calico-node binary run by the pod runner.

The image starts runit (``start_runit``), whose ``rc.local`` runs ``calico-node -startup`` (it must succeed),
reads the node name it wrote to ``/var/lib/calico/nodename``, allocates tunnel addresses once, and then keeps its
services running, each restarted when it exits: ``felix`` (with the datastore settings its run script exports),
``monitor-addresses`` (unless the networking backend is ``none``), ``allocate-tunnel-addrs``,
``node-status-reporter`` and, since v3.31, ``complete-startup``. This module does the same with the same binary
(Calico's ``node/filesystem/etc/rc.local`` and ``etc/service/available/*/run`` of the pod's release: v3.31.4 and
v3.29.7 here, whose run scripts are the same and whose rc.local differs in that one service), because runit and the
image's shell scripts are not on this machine. Two services are not run, each for one reason printed at start:

* ``bird``, ``bird6`` and ``confd`` (backend ``bird``): BIRD is a C program outside Calico's Go build; routes
  between nodes come from VXLAN here (every node is in a subnet of its own: dataplane.py);
* ``cni`` (``calico-node -monitor-token``): it writes the CNI plugin's kubeconfig into the host's
  ``/host/etc/cni/net.d``, a path on this machine's own filesystem; the pod runner gives the plugin a kubeconfig
  of its own when it calls it (podrunner.py).

Run as ``python -m localcp.calico_node_image /path/to/calico-node RELEASE`` inside the node's namespaces.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

RESTART_DELAY = 1.0  # runit's runsv waits a second before starting a service that exited
# services that a release's rc.local enables since a (major, minor) release only
SINCE = {"complete-startup": (3, 31)}


def say(msg: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} [calico/node entrypoint] {msg}", flush=True)


def release_of(tag: str) -> tuple:
    """``v3.29.7`` -> (3, 29); a tag that is not a release (``master``, none) counts as the newest."""
    parts = (tag or "").lstrip("v").split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        return 99, 0


def services(env: dict, binary: str, release: str = "") -> dict:
    """name -> (argv, extra env), as the rc.local of ``release`` enables them."""
    felix_env = {}
    if env.get("NODENAME"):
        felix_env["FELIX_FELIXHOSTNAME"] = env["NODENAME"]
    for felix, source in (("FELIX_ETCDADDR", "ETCD_AUTHORITY"), ("FELIX_ETCDENDPOINTS", "ETCD_ENDPOINTS"),
                          ("FELIX_ETCDSCHEME", "ETCD_SCHEME"), ("FELIX_ETCDCAFILE", "ETCD_CA_CERT_FILE"),
                          ("FELIX_ETCDKEYFILE", "ETCD_KEY_FILE"), ("FELIX_ETCDCERTFILE", "ETCD_CERT_FILE")):
        felix_env[felix] = env.get(source, "")
    if env.get("DATASTORE_TYPE"):
        felix_env["FELIX_DATASTORETYPE"] = env["DATASTORE_TYPE"]
    out = {}
    if release_of(release) >= SINCE["complete-startup"]:
        out["complete-startup"] = ([binary, "-complete-startup"], {})
    if not env.get("CALICO_DISABLE_FELIX"):
        out["felix"] = ([binary, "-felix"], felix_env)
    if env.get("CALICO_NETWORKING_BACKEND") != "none":
        out["monitor-addresses"] = ([binary, "-monitor-addresses"], {})
    out["allocate-tunnel-addrs"] = ([binary, "-allocate-tunnel-addrs"], {})
    out["node-status-reporter"] = ([binary, "-status-reporter"], {})
    return out


class Supervisor:
    def __init__(self, binary: str, release: str = ""):
        self.binary, self.release = binary, release
        self.env = dict(os.environ)
        self.children: dict = {}
        self.halt = threading.Event()

    def _once(self, argv: list, what: str) -> int:
        say(f"{what}: {' '.join(argv)}")
        return subprocess.call(argv, env=self.env)

    def prepare(self) -> int:
        if self.env.get("CALICO_NETWORKING"):
            self.env["CALICO_NETWORKING_BACKEND"] = "none" if self.env["CALICO_NETWORKING"] == "false" else "bird"
        if self._once([self.binary, "-startup"], "startup") != 0:
            return 1
        try:
            with open("/var/lib/calico/nodename") as f:
                self.env["NODENAME"] = f.read().strip()
        except OSError:
            say("/var/lib/calico/nodename does not exist, exiting")
            return 1
        if self._once([self.binary, "-allocate-tunnel-addrs", "-allocate-tunnel-addrs-run-once"],
                      "allocate tunnel addresses") != 0:
            return 1
        backend = self.env.get("CALICO_NETWORKING_BACKEND", "bird")
        if backend not in ("none", "vxlan"):
            say(f"CALICO_NETWORKING_BACKEND is {backend}: bird, bird6 and confd are not run here (BIRD is not in "
                "Calico's Go build; routes between this harness's nodes come from VXLAN)")
        if self.env.get("CALICO_MANAGE_CNI", "true") != "false":
            say("cni (calico-node -monitor-token) is not run here: it writes /host/etc/cni/net.d on the host's own "
                "filesystem; the pod runner gives the CNI plugin its kubeconfig when it calls it")
        return 0

    def run(self) -> int:
        rc = self.prepare()
        if rc != 0:
            return rc
        say("Calico node started successfully")
        plan = services(self.env, self.binary, self.release)
        next_start = {name: 0.0 for name in plan}
        while not self.halt.is_set():
            now = time.monotonic()
            for name, (argv, extra) in plan.items():
                child = self.children.get(name)
                if child is not None and child.poll() is None:
                    continue
                if child is not None and next_start[name] == 0.0:
                    say(f"service {name} exited with {child.returncode}; starting it again (runit)")
                    next_start[name] = now + RESTART_DELAY
                    continue
                if now < next_start[name]:
                    continue
                env = dict(self.env, **extra)
                self.children[name] = subprocess.Popen(argv, env=env)
                next_start[name] = 0.0
            self.halt.wait(0.5)
        for child in self.children.values():
            if child.poll() is None:
                child.terminate()
        deadline = time.monotonic() + 8
        for child in self.children.values():
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (1, 2):
        print("usage: python -m localcp.calico_node_image /path/to/calico-node [RELEASE]", file=sys.stderr)
        return 2
    sup = Supervisor(argv[0], argv[1] if len(argv) == 2 else "")

    def on_term(*_):
        sup.halt.set()
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    return sup.run()


if __name__ == "__main__":
    sys.exit(main())
