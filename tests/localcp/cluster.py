"""Start and stop a real Kubernetes control plane on 127.0.0.1.

etcd, kube-apiserver (TLS, Node+RBAC authorization, service-account keys, an audit log),
kube-controller-manager, kube-scheduler and kwok (simulated nodes and pods), plus a static HTTP server for
Calico's release files. Ports are picked free at run time; everything lives in one run directory whose
``state.json`` records the processes, so ``down`` can stop them from another process.
"""

from __future__ import annotations

import base64
import ctypes
import json
import os
import random
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

from . import build, dataplane, mirror, nodes, releases, shapes
from .audit import AuditLog
from .pki import PKI, serving_names

ADMIN_USER = "admin"
KWOK_USER = "kwok"
PODRUNNER_USER = "localcp-podrunner"  # runs the Calico control components' processes (podrunner.py)
FRONT_PROXY_USER = "front-proxy-client"  # kube-apiserver's client identity towards aggregated API servers
# writes of this user are recorded with their bodies (audit level Request; never a Secret's): the benchmark runs a job
# once as this user to replay its requests with a bare client (benchmarks/limit.py Capture); nothing else uses it
CAPTURE_USER = "calico-ops-capture"
AUDIT_LOG_MAX_MB = 1024 * 1024  # --audit-log-maxsize: 1 TiB, never reached (see where it is passed)
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        # long-running watches and heartbeats are noise; everything else is recorded at Metadata level
        {"level": "None", "verbs": ["watch"]},
        {"level": "None", "resources": [{"group": "coordination.k8s.io", "resources": ["leases"]}]},
        {"level": "None", "users": [KWOK_USER], "resources": [{"group": "", "resources": ["nodes/status"]}]},
        {"level": "None", "users": ["system:kube-controller-manager", "system:kube-scheduler", KWOK_USER,
                                    PODRUNNER_USER, "system:apiserver"],
         "verbs": ["get", "list"]},
        {"level": "None", "userGroups": ["system:serviceaccounts:kube-system"], "verbs": ["get", "list"]},
        {"level": "None", "nonResourceURLs": ["/healthz*", "/readyz*", "/livez*", "/version", "/metrics"]},
        # a Secret's body is never in the log, whoever writes it (Metadata, as for everything below)
        {"level": "Metadata", "resources": [{"group": "", "resources": ["secrets"]}]},
        {"level": "Request", "users": [CAPTURE_USER], "verbs": ["create", "update", "patch", "delete",
                                                                "deletecollection"]},
        {"level": "Metadata"},
    ],
}


class StartError(RuntimeError):
    """A component did not start; the message names it and quotes its last log lines."""


def log(msg: str) -> None:
    print(f"[localcp] {msg}", file=sys.stderr, flush=True)


def _ephemeral_range() -> tuple:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_port() -> int:
    """A free port on 127.0.0.1 for a component to listen on, below the kernel's ephemeral range: a port the kernel
    hands out (bind to 0) is in that range, where any outgoing connection of this busy machine (several control
    planes, Ansible's) may take it as its source port before the component binds it (seen: the mirror's
    http.server failed with "Address already in use" while other control planes started)."""
    low, _high = _ephemeral_range()
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randrange(10000, max(10001, low))
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:  # nothing free below the range: the kernel's choice
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# free_port() leaves a moment between choosing a port and the component binding it; with several control planes
# starting side by side (Molecule's scenarios beside the reliability step) another process can bind it first
PORT_ATTEMPTS = 3
_PORT_TAKEN = ("address already in use", "eaddrinuse")


def _port_taken(message: str) -> bool:
    """Whether a component's start failed because the port it was given was taken (its last log lines say so)."""
    return any(s in message.lower() for s in _PORT_TAKEN)


def listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds a socket listening on TCP ``port`` of this network namespace (/proc/net/tcp's
    LISTEN entries, then the process's file descriptors)."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
            inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return False
    fd_dir = Path(f"/proc/{pid}/fd")
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return False
    for fd in names:
        try:
            if os.readlink(fd_dir / fd) in inodes:
                return True
        except OSError:
            continue
    return False


def _die_with_parent():
    """preexec_fn: the child gets SIGTERM when the process that started it dies (PR_SET_PDEATHSIG)."""
    os.setsid()
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)
    except OSError:
        pass


def _tail(path: Path, n: int = 30) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(lines[-n:])


def _b64(path: Path) -> str:
    return base64.b64encode(Path(path).read_bytes()).decode()


def write_kubeconfig(path: Path, server: str, ca: Path, cert: Path, key: Path, user: str) -> Path:
    cfg = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "local", "cluster": {"server": server, "certificate-authority-data": _b64(ca)}}],
        "users": [{"name": user, "user": {"client-certificate-data": _b64(cert),
                                          "client-key-data": _b64(key)}}],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": user}}],
        "current-context": "local",
    }
    path.write_text(yaml.safe_dump(cfg))
    path.chmod(0o600)
    return path


def current_pointer() -> Path:
    return build.cache_root() / "current-run"


def claim_service_octet(run_dir: Path) -> int:
    """A second octet N of its own for this control plane's Service range, 127.N.0.0/16.

    Services get loopback ClusterIPs, which Linux routes to ``lo`` with no setup: a process can serve at a
    Service's ClusterIP:port (the Calico API server behind its APIService does, see podrunner.py). Control
    planes that run at the same time must not share a range; a claim is a file in the cache naming the run dir,
    taken over when that control plane is gone."""
    import random
    folder = build.cache_root() / "service-ranges"
    folder.mkdir(parents=True, exist_ok=True)
    octets = list(range(2, 255))
    random.shuffle(octets)
    for n in octets:
        claim = folder / str(n)
        try:
            fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            owner = Path(claim.read_text().strip() or "/nonexistent")
            try:
                pid = (json.loads((owner / "state.json").read_text()).get("pids") or {}).get("kube-apiserver")
            except (OSError, ValueError):
                pid = None
            if pid and _alive(pid):
                continue
            # its control plane is gone without its clean-up (killed): its namespaces go before the octet is reused
            for netns in dataplane.leftover_nodes(n):
                dataplane.delete_netns(netns)
            shapes.delete_node_network(n)
            claim.write_text(str(run_dir))
            return n
        with os.fdopen(fd, "w") as f:
            f.write(str(run_dir))
        return n
    raise StartError("no free 127.N.0.0/16 service range: 253 control planes are running")


def release_service_octet(run_dir: Path, n) -> None:
    if not n:
        return
    claim = build.cache_root() / "service-ranges" / str(n)
    try:
        if claim.read_text().strip() == str(run_dir):
            claim.unlink()
    except OSError:
        pass


class ControlPlane:
    """One local control plane; ``start()`` brings it up, ``stop()`` leaves nothing behind."""

    def __init__(self, run_dir: Path | None = None, die_with_parent: bool = True,
                 mirror_source: Path | None = None):
        self.run_dir = Path(run_dir) if run_dir else Path(tempfile.mkdtemp(prefix="calico-ops-cp-"))
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.die_with_parent = die_with_parent
        self.mirror_source = mirror_source
        self.procs: dict = {}
        self.state: dict = {}
        self.bins: dict = {}

    # -- persisted state -----------------------------------------------------------------------

    @property
    def state_file(self) -> Path:
        return self.run_dir / "state.json"

    def _save(self) -> None:
        # merged: a control plane loaded from state.json (no Popen objects) keeps the pids it did not start
        self.state["pids"] = dict(self.state.get("pids") or {}, **{n: p.pid for n, p in self.procs.items()})
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state, indent=2))
        os.replace(tmp, self.state_file)

    @classmethod
    def load(cls, run_dir: Path) -> "ControlPlane":
        cp = cls(run_dir)
        cp.state = json.loads((Path(run_dir) / "state.json").read_text())
        return cp

    # -- process handling ---------------------------------------------------------------------

    def _spawn(self, name: str, cmd: list, env: dict | None = None) -> subprocess.Popen:
        logf = open(self.run_dir / f"{name}.log", "ab")
        full_env = dict(os.environ)
        # Go's collector about half as often as by default (a cycle when the heap has grown by twice the live data,
        # not once): the test suites keep both CPUs busy, and these processes have memory to spare
        full_env.setdefault("GOGC", "200")
        full_env.update(env or {})
        proc = subprocess.Popen([str(c) for c in cmd], stdout=logf, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, cwd=str(self.run_dir), env=full_env,
                                preexec_fn=_die_with_parent if self.die_with_parent else os.setsid)
        logf.close()
        self.procs[name] = proc
        self.state.setdefault("cmds", {})[name] = [str(c) for c in cmd]  # start_component() starts it again
        self._save()
        return proc

    def _wait(self, name: str, check, timeout: float, port: int | None = None) -> None:
        """Until ``check()`` holds. ``port``: the one it asks, which the component must be the one listening on -
        a healthy answer from another process there (another control plane's etcd on a port freed a moment ago)
        means ours could not bind it: a taken port, which ``start`` answers by starting again on new ports."""
        deadline = time.monotonic() + timeout
        last_err = ""
        while time.monotonic() < deadline:
            proc = self.procs.get(name)
            if proc is not None and proc.poll() is not None:
                raise StartError(f"{name} exited with code {proc.returncode} while starting; last log lines:\n"
                                 + _tail(self.run_dir / f"{name}.log"))
            try:
                ok = check()
            except Exception as exc:  # noqa: BLE001 - any failure means "not yet"
                ok, last_err = False, str(exc)
            if ok:
                if port is None or proc is None or listens(proc.pid, port):
                    return
                raise StartError(f"{name}: 127.0.0.1:{port} answered, but not from {name} (pid {proc.pid}): address "
                                 "already in use by another process")
            time.sleep(0.25)
        raise StartError(f"{name} did not become healthy within {int(timeout)}s ({last_err}); last log lines:\n"
                         + _tail(self.run_dir / f"{name}.log"))

    def _https_ok(self, url: str) -> bool:
        ctx = ssl.create_default_context(cafile=str(self.run_dir / "pki" / "ca.crt"))
        ctx.load_cert_chain(str(self.run_dir / "pki" / "admin.crt"), str(self.run_dir / "pki" / "admin.key"))
        with urllib.request.urlopen(url, context=ctx, timeout=3) as resp:
            return resp.status == 200

    @staticmethod
    def _http_ok(url: str) -> bool:
        with urllib.request.urlopen(url, timeout=3) as resp:
            return resp.status == 200

    @staticmethod
    def _insecure_https_ok(url: str) -> bool:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        with urllib.request.urlopen(url, context=ctx, timeout=3) as resp:
            return resp.status == 200

    # -- start -------------------------------------------------------------------------------------

    def start(self, node_specs: list | None = None, timeout: float = 120, shape: str = "none",
              with_dataplane: bool = False, builds: str = "all") -> "ControlPlane":
        """``shape``: ``none`` (a bare control plane) or ``kubeadm`` (what kubeadm init leaves: the kube-proxy
        addon, kubeadm-config, and Service default/kubernetes backed by a node-network address; shapes.py).
        ``with_dataplane``: nodes with a network (dataplane.py; kubeadm shape only): the real calico-node and
        Typha run behind their pods, and the admin kubeconfig names the API server at its node-network address,
        the one a node reaches. ``builds``: ``demo`` builds only what the demo runs (releases.build_all)."""
        if shape not in shapes.SHAPES:
            raise StartError(f"shape: must be one of {', '.join(shapes.SHAPES)} (got {shape!r})")
        if with_dataplane and shape != "kubeadm":
            raise StartError("the data plane needs the kubeadm shape (its node network carries the nodes' links)")
        attempt = 1
        while True:
            try:
                return self._start_once(node_specs, timeout, shape, with_dataplane, builds)
            except StartError as exc:
                if attempt == PORT_ATTEMPTS or not _port_taken(str(exc)):
                    raise
                attempt += 1
                # the run dir afresh: etcd keeps the peer address it was given in its data directory
                said = [line.strip() for line in str(exc).splitlines() if _port_taken(line)]
                log(f"a port was taken before its component bound it ({str(exc).splitlines()[0].split(';')[0]}: "
                    f"{said[-1][-200:] if said else ''}); starting again on new ports "
                    f"(attempt {attempt} of {PORT_ATTEMPTS})")
                shutil.rmtree(self.run_dir, ignore_errors=True)
                self.run_dir.mkdir(parents=True, exist_ok=True)
                self.state = {}

    def _start_once(self, node_specs, timeout: float, shape: str, with_dataplane: bool, builds: str) -> "ControlPlane":
        started = time.monotonic()
        try:
            self.bins = {k: str(v) for k, v in releases.build_all(only=builds).items()}
            self.state = {"run_dir": str(self.run_dir), "bins": self.bins, "started": time.time(), "shape": shape}
            self._save()
            self._start(timeout, with_dataplane)
            specs = node_specs if node_specs is not None else nodes.default_specs()
            if shape == "kubeadm":
                self._node_network(timeout)
            if with_dataplane:
                specs = self._dataplane_nodes(specs, timeout)
            nodes.create_nodes(self, specs)
            if shape == "kubeadm":
                self._kubeadm(timeout)
            log(f"control plane ready in {time.monotonic() - started:.1f}s: {self.state['server']} "
                f"(run dir {self.run_dir})")
            return self
        except BaseException:
            self.stop(remove_dir=False)
            raise

    def _start(self, timeout: float, with_dataplane: bool = False) -> None:
        pki_dir = self.run_dir / "pki"
        pki = PKI(pki_dir)
        api_port = free_port()
        server = f"https://127.0.0.1:{api_port}"
        octet = claim_service_octet(self.run_dir)
        # loopback ClusterIPs (claim_service_octet) - except with a data plane: a pod's packet to 127.0.0.0/8 never
        # leaves the pod, so Services there get a range that travels (dataplane.service_range, routed to the nodes)
        service_range = dataplane.service_range(octet) if with_dataplane else f"127.{octet}.0.0/16"
        self.state.update({"server": server, "api_port": api_port, "service_octet": octet,
                           "service_range": service_range})
        self._save()
        apiserver_crt, apiserver_key = pki.issue("apiserver", "kube-apiserver", server_names=serving_names(),
                                                 server_ips=["127.0.0.1", f"127.{octet}.0.1", dataplane.service_ip(octet, 1),
                                                             shapes.node_network(octet)["address"]], client=False)
        proxy_crt, proxy_key = pki.issue("front-proxy-client", FRONT_PROXY_USER)
        runner_crt, runner_key = pki.issue("podrunner", PODRUNNER_USER, orgs=["system:masters"])
        admin_crt, admin_key = pki.issue("admin", ADMIN_USER, orgs=["system:masters"])
        kcm_crt, kcm_key = pki.issue("kcm", "system:kube-controller-manager")
        sched_crt, sched_key = pki.issue("scheduler", "system:kube-scheduler")
        kwok_crt, kwok_key = pki.issue("kwok", KWOK_USER, orgs=["system:masters"])
        # kwok's kubelet endpoint (pod logs): the API server does not verify a kubelet's serving certificate here
        # (no --kubelet-certificate-authority), as many clusters do not
        kubelet_crt, kubelet_key = pki.issue("kwok-kubelet", "kwok-kubelet", server_ips=["127.0.0.1"], client=False)
        sa_key, sa_pub = pki.service_account_keys()
        ca = pki.ca_path
        kubeconfig = write_kubeconfig(self.run_dir / "admin.kubeconfig", server, ca, admin_crt, admin_key,
                                      ADMIN_USER)
        kcm_cfg = write_kubeconfig(self.run_dir / "kcm.kubeconfig", server, ca, kcm_crt, kcm_key, "kcm")
        sched_cfg = write_kubeconfig(self.run_dir / "scheduler.kubeconfig", server, ca, sched_crt, sched_key,
                                     "scheduler")
        kwok_cfg = write_kubeconfig(self.run_dir / "kwok.kubeconfig", server, ca, kwok_crt, kwok_key, "kwok")
        write_kubeconfig(self.run_dir / "podrunner.kubeconfig", server, ca, runner_crt, runner_key, PODRUNNER_USER)
        capture_crt, capture_key = pki.issue("capture", CAPTURE_USER, orgs=["system:masters"])
        write_kubeconfig(self.run_dir / "capture.kubeconfig", server, ca, capture_crt, capture_key, CAPTURE_USER)
        self.state.update({"kubeconfig": str(kubeconfig), "ca": str(ca)})

        # etcd
        etcd_client, etcd_peer = free_port(), free_port()
        self._spawn("etcd", [
            self.bins["etcd"], "--name=local", f"--data-dir={self.run_dir / 'etcd-data'}",
            f"--listen-client-urls=http://127.0.0.1:{etcd_client}",
            f"--advertise-client-urls=http://127.0.0.1:{etcd_client}",
            f"--listen-peer-urls=http://127.0.0.1:{etcd_peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}",
            f"--initial-cluster=local=http://127.0.0.1:{etcd_peer}",
            "--unsafe-no-fsync=true", "--quota-backend-bytes=8589934592", "--log-level=warn"])
        self.state["etcd"] = f"http://127.0.0.1:{etcd_client}"
        self._wait("etcd", lambda: self._http_ok(f"http://127.0.0.1:{etcd_client}/health"), timeout, port=etcd_client)

        # kube-apiserver
        audit_policy = self.run_dir / "audit-policy.yaml"
        audit_policy.write_text(yaml.safe_dump(AUDIT_POLICY))
        audit_log = self.run_dir / "audit.log"
        self.state["audit_log"] = str(audit_log)
        self.state["apiserver_cmd"] = [str(c) for c in [
            self.bins["kube-apiserver"], f"--etcd-servers=http://127.0.0.1:{etcd_client}",
            "--etcd-prefix=/registry", "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={api_port}", f"--tls-cert-file={apiserver_crt}",
            f"--tls-private-key-file={apiserver_key}", f"--client-ca-file={ca}",
            f"--service-account-key-file={sa_pub}", f"--service-account-signing-key-file={sa_key}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--authorization-mode=Node,RBAC", "--allow-privileged=true",
            f"--service-cluster-ip-range={service_range}", "--endpoint-reconciler-type=none",
            # the aggregation layer (APIService v3.projectcalico.org, served by calico-apiserver)
            f"--requestheader-client-ca-file={ca}", f"--requestheader-allowed-names={FRONT_PROXY_USER}",
            "--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-", f"--proxy-client-cert-file={proxy_crt}",
            f"--proxy-client-key-file={proxy_key}",
            f"--audit-policy-file={audit_policy}", f"--audit-log-path={audit_log}",
            "--audit-log-format=json", "--audit-log-mode=blocking",
            # never rotated: 0 is not "no limit" but lumberjack's default of 100 MB, after which the file is
            # renamed and a mark (an offset in it) would read nothing (AuditLog.events_since refuses that)
            f"--audit-log-maxsize={AUDIT_LOG_MAX_MB}",
            "--max-requests-inflight=2000", "--max-mutating-requests-inflight=1000",
            # kubectl logs/exec reach a node's kubelet (kwok) by its InternalIP: never by its name, which the
            # API server would look up in the host's DNS
            "--kubelet-preferred-address-types=InternalIP",
            "--profiling=false", "--v=0"]]
        self._spawn("kube-apiserver", self.state["apiserver_cmd"])
        self._wait("kube-apiserver", lambda: self._https_ok(f"{server}/readyz"), timeout)

        # kube-controller-manager and kube-scheduler
        kcm_port, sched_port = free_port(), free_port()
        self._spawn("kube-controller-manager", [
            self.bins["kube-controller-manager"], f"--kubeconfig={kcm_cfg}",
            f"--authentication-kubeconfig={kcm_cfg}", f"--authorization-kubeconfig={kcm_cfg}",
            f"--root-ca-file={ca}", f"--service-account-private-key-file={sa_key}",
            "--use-service-account-credentials=true", "--leader-elect=false",
            "--bind-address=127.0.0.1", f"--secure-port={kcm_port}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            "--controllers=*,-node-ipam-controller,-cloud-node-lifecycle-controller,"
            "-service-lb-controller,-node-route-controller,-persistentvolume-binder-controller,"
            "-persistentvolume-attach-detach-controller,-persistentvolume-expander-controller,-ephemeral-volume-controller,"
            "-persistentvolumeclaim-protection-controller,-persistentvolume-protection-controller,"
            "-taint-eviction-controller",
            "--node-monitor-grace-period=120s",
            "--concurrent-gc-syncs=20", "--kube-api-qps=200", "--kube-api-burst=400", "--v=0"])
        self._spawn("kube-scheduler", [
            self.bins["kube-scheduler"], f"--kubeconfig={sched_cfg}",
            f"--authentication-kubeconfig={sched_cfg}", f"--authorization-kubeconfig={sched_cfg}",
            "--leader-elect=false", "--bind-address=127.0.0.1", f"--secure-port={sched_port}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics", "--v=0"])
        self._wait("kube-controller-manager",
                   lambda: self._insecure_https_ok(f"https://127.0.0.1:{kcm_port}/healthz"), timeout)
        self._wait("kube-scheduler",
                   lambda: self._insecure_https_ok(f"https://127.0.0.1:{sched_port}/healthz"), timeout)

        # kwok: simulated nodes (heartbeats) and pods (Running, ready); its server is the nodes' kubelet endpoint
        # (HTTPS on the port the nodes report), which serves pod logs from the Logs objects the pod runner writes
        kwok_port = free_port()
        kwok_args = [
            self.bins["kwok"], f"--kubeconfig={kwok_cfg}", "--manage-all-nodes=true",
            "--cidr=10.244.0.0/16", "--node-ip=127.0.0.1",
            # node leases as heartbeats: without them kwok's node status updates (every ~125s) exceed the
            # 120s grace period, nodes flap NotReady and the node lifecycle controller marks their pods NotReady
            "--node-lease-duration-seconds=40",
            f"--server-address=127.0.0.1:{kwok_port}", f"--node-port={kwok_port}",
            f"--tls-cert-file={kubelet_crt}", f"--tls-private-key-file={kubelet_key}"]
        if self._kwok_logs_crd(kubeconfig, timeout):
            kwok_args.append("--enable-crds=Logs")
        self.state["kwok_port"] = kwok_port
        if with_dataplane:
            # the data plane's pods become Ready from their readiness probes, not at once (dataplane.kwok_pod_stages)
            from .podrunner import probed_images
            stages = dataplane.kwok_pod_stages(build.kwok_module_dir(), probed_images(self.bins))
            if stages:
                (self.run_dir / "kwok-stages.yaml").write_text(stages)
                kwok_args.append(f"--config={self.run_dir / 'kwok-stages.yaml'}")
            else:
                log("kwok's pod stages were not found in the Go module cache: the data plane's pods are marked "
                    "Ready by kwok at once and set back by the pod runner until their readiness probes pass")
        self._spawn("kwok", kwok_args)
        self._wait("kwok", lambda: self._insecure_https_ok(f"https://127.0.0.1:{kwok_port}/healthz"), timeout,
                   port=kwok_port)

        # the `default` ServiceAccount (admission needs it before pods can be created)
        self._wait("kube-controller-manager", self._default_sa_exists, timeout)

        # Calico release files on 127.0.0.1
        source = mirror.source_dir(self.mirror_source)
        mirror_port = free_port()
        self._spawn("mirror", [sys.executable, "-m", "http.server", str(mirror_port), "--bind", "127.0.0.1",
                               "--directory", str(source)])
        url = f"http://127.0.0.1:{mirror_port}"
        self.state.update({"mirror_url": url, "mirror_source": str(source)})
        self._wait("mirror", lambda: self._http_ok(f"{url}/charts/index.yaml"), timeout, port=mirror_port)

        # the Calico control components' real processes behind their pods (podrunner.py)
        self._spawn("podrunner", [sys.executable, "-m", "localcp.podrunner", "--run-dir", str(self.run_dir)],
                    env={"PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                        os.environ.get("PYTHONPATH", "")])})
        self._wait("podrunner", lambda: (self.run_dir / "pods" / "processes.json").exists(), timeout)
        self._save()

    def _kwok_logs_crd(self, kubeconfig, timeout: float) -> bool:
        """kwok's ``Logs`` CRD (from kwok's module in the Go module cache, not copied), Established: the pod runner
        names each pod's log files in one. False (logs not served; said) when the module is not there."""
        crd = build.kwok_module_dir() / "kustomize" / "crd" / "bases" / "kwok.x-k8s.io_logs.yaml"
        if not crd.is_file():
            log(f"kwok's Logs CRD was not found ({crd}): pod logs are not served on this control plane")
            return False
        kubectl = [self.bins["kubectl"], "--kubeconfig", str(kubeconfig)]
        subprocess.run(kubectl + ["apply", "--server-side", "--field-manager=localcp", "-f", str(crd)],
                       capture_output=True, text=True, check=True, timeout=timeout)
        # `kubectl wait` fails at once, instead of waiting, while the CRD has no status.conditions yet (created a
        # moment ago: seen under load in make test, 2026-12-06); a CRD accepted but left unestablished is requeued by
        # an update of its metadata. So: short waits, each after a nudge, within the timeout.
        deadline = time.monotonic() + timeout
        for attempt in range(1, 1000):
            left = max(1, int(deadline - time.monotonic()))
            proc = subprocess.run(kubectl + ["wait", "--for=condition=Established", f"--timeout={min(left, 30)}s",
                                             "crd/logs.kwok.x-k8s.io"], capture_output=True, text=True,
                                  timeout=min(left, 30) + 10)
            if proc.returncode == 0:
                return True
            if time.monotonic() >= deadline:
                raise StartError(f"kwok's Logs CRD was not Established within {int(timeout)} s: "
                                 f"{(proc.stderr or proc.stdout).strip()[-300:]}")
            time.sleep(0.5)
            subprocess.run(kubectl + ["annotate", "--overwrite", "crd/logs.kwok.x-k8s.io",
                                      f"localcp.calico-ops/nudge={attempt}"], capture_output=True, text=True,
                           timeout=30)
        return True

    def _node_network(self, timeout: float) -> None:
        octet = self.state["service_octet"]
        self.state["node_network"] = octet
        self._save()
        net = shapes.create_node_network(octet)
        port = self.state["api_port"]
        self._spawn("apiserver-forwarder", [sys.executable, "-m", "localcp.forward", "--listen",
                                            f"{net['address']}:{port}", "--to", f"127.0.0.1:{port}"],
                    env={"PYTHONPATH": str(Path(__file__).resolve().parents[1])})
        self._wait("apiserver-forwarder",
                   lambda: self._https_ok(f"https://{net['address']}:{port}/readyz"), timeout)

    def _dataplane_nodes(self, specs: list, timeout: float) -> list:
        """Each node's namespace, link and holder (dataplane.py); the Nodes get their address as InternalIP.
        The admin kubeconfig then names the API server at the node-network address: what the collection derives
        the ConfigMap's endpoint from is what calico-node reaches."""
        octet = self.state["service_octet"]
        if len(specs) > dataplane.MAX_NODES:
            raise StartError(f"the data plane has room for {dataplane.MAX_NODES} nodes (asked: {len(specs)})")
        dataplane.create_router(octet)
        self.state["dataplane"] = {"nodes": {}}
        out = []
        for index, spec in enumerate(specs, start=1):
            spec = json.loads(json.dumps(spec))
            name = spec["metadata"]["name"]
            node = dataplane.create_node(octet, index, self.run_dir, name)
            self.state["dataplane"]["nodes"][name] = node
            self._save()
            self._spawn(f"holder-{name}", dataplane.holder_command(node))
            log_path = self.run_dir / f"holder-{name}.log"
            self._wait(f"holder-{name}", lambda p=log_path: "ready" in p.read_text(errors="replace"), timeout)
            node["holder"] = self.procs[f"holder-{name}"].pid
            spec["status"]["addresses"] = [{"type": "InternalIP", "address": node["address"]},
                                           {"type": "Hostname", "address": name}]
            out.append(spec)
        self._save()
        dataplane.route_services(octet, self.state["dataplane"]["nodes"][out[0]["metadata"]["name"]])
        net = shapes.node_network(octet)
        self._kubelet_forwarders(net, timeout)
        pki = self.run_dir / "pki"
        server = f"https://{net['address']}:{self.state['api_port']}"
        write_kubeconfig(Path(self.kubeconfig), server, pki / "ca.crt", pki / "admin.crt", pki / "admin.key",
                         ADMIN_USER)
        self.state["node_server"] = server
        self._save()
        return out

    def _kubelet_forwarders(self, net: dict, timeout: float) -> None:
        """kube-apiserver reaches a node's kubelet endpoint (kwok's server: pod logs) at the node's InternalIP and the
        port the nodes report. With a data plane those addresses are inside the nodes' namespaces: a forwarder there
        passes the connection to this machine's side of the node network, and one here to kwok on 127.0.0.1."""
        port = self.state.get("kwok_port")
        if not port:
            return
        env = {"PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        forward = [sys.executable, "-m", "localcp.forward"]
        self._spawn("kubelet-forwarder", forward + ["--listen", f"{net['address']}:{port}", "--to",
                                                    f"127.0.0.1:{port}"], env=env)
        for name, node in self.state["dataplane"]["nodes"].items():
            self._spawn(f"kubelet-{name}", dataplane.enter(node["holder"], mount=False, uts=False) + forward + [
                "--listen", f"{node['address']}:{port}", "--to", f"{net['address']}:{port}"], env=env)
        for name, node in self.state["dataplane"]["nodes"].items():
            self._wait(f"kubelet-{name}", lambda n=node: subprocess.run(
                dataplane.enter(n["holder"], mount=False, uts=False) + [
                    sys.executable, "-c", "import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 2)",
                    n["address"], str(port)], capture_output=True, check=False).returncode == 0, timeout)

    def _kubeadm(self, timeout: float) -> None:
        net = shapes.node_network(self.state["service_octet"])
        port = self.state["api_port"]
        docs = shapes.kubeadm_objects(net["address"], port, build.KUBERNETES_VERSION)
        docs += shapes.kubernetes_endpoints(net["address"], port)
        kubectl = [self.bins["kubectl"], "--kubeconfig", self.kubeconfig]
        proc = subprocess.run(kubectl + ["apply", "--server-side", "--field-manager=kubeadm", "-f", "-"],
                              input=yaml.safe_dump_all(docs), capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise StartError(f"kubeadm shape: kubectl apply failed: {proc.stderr.strip()}")
        proc = subprocess.run(kubectl + ["rollout", "status", "-n", "kube-system", "daemonset/kube-proxy",
                                         f"--timeout={int(timeout)}s"], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise StartError(f"kubeadm shape: kube-proxy did not roll out: {proc.stderr.strip()}")

    def _default_sa_exists(self) -> bool:
        return self._https_ok(f"{self.state['server']}/api/v1/namespaces/default/serviceaccounts/default")

    # -- one component stopped and started again (fault tests) ----------------------------------------

    def stop_component(self, name: str, crash: bool = False) -> None:
        """Stop one process of the control plane (``kube-apiserver``, ``etcd``, ...: SIGTERM, then SIGKILL; with
        ``crash``, SIGKILL at once: no graceful drain, the requests in flight are cut as when the process dies); the
        others keep running."""
        _terminate((self.state.get("pids") or {}).get(name), self.procs.pop(name, None), grace=0 if crash else 10)
        self.state.setdefault("pids", {}).pop(name, None)
        self._save()

    def start_component(self, name: str, timeout: float = 120) -> None:
        """Start a stopped process again with the command line it first ran with (same flags, ports, data dir,
        audit log), and wait until the API server is ready (through it, etcd is too)."""
        self._spawn(name, (self.state.get("cmds") or {}).get(name) or self.state["apiserver_cmd"])
        if name == "etcd":
            url = self.state["etcd"]
            self._wait(name, lambda: self._http_ok(f"{url}/health"), timeout)
        self._wait(name, lambda: self._https_ok(f"{self.server}/readyz"), timeout)

    def stopped(self, name: str) -> bool:
        return name not in (self.state.get("pids") or {})

    def stop_apiserver(self) -> None:
        """Stop kube-apiserver only; etcd and the other components keep running."""
        self.stop_component("kube-apiserver")

    def start_apiserver(self, timeout: float = 120) -> None:
        """Start kube-apiserver again, with the same flags, port and audit log, and wait until it is ready."""
        self.start_component("kube-apiserver", timeout)

    # -- stop --------------------------------------------------------------------------------------

    def keep_logs(self, dest: Path, tail_bytes: int = 2 << 20) -> None:
        """Copy the last ``tail_bytes`` of each log of the run directory (the components', the pod runner's and the
        pods' processes') into ``dest``, before ``stop`` removes the directory. Never fails."""
        try:
            dest = Path(dest)
            dest.mkdir(parents=True, exist_ok=True)
            for log_file in list(self.run_dir.glob("*.log")) + list((self.run_dir / "pods").glob("*.log")):
                with open(log_file, "rb") as f:
                    f.seek(max(0, log_file.stat().st_size - tail_bytes))
                    (dest / log_file.name).write_bytes(f.read())
        except OSError as exc:
            log(f"the logs were not kept: {exc}")

    def stop(self, remove_dir: bool = True) -> None:
        pids = dict(self.state.get("pids") or {})
        for name, proc in self.procs.items():
            pids[name] = proc.pid
        # the pod runner first (it stops calico-node and the pods' holders), then the nodes' holders, then the rest
        order = ["podrunner", "holder-*", "apiserver-forwarder", "mirror", "kwok", "kube-scheduler",
                 "kube-controller-manager", "kube-apiserver", "etcd"]

        def rank(name):
            key = "holder-*" if name.startswith("holder-") else name
            return order.index(key) if key in order else -1
        for name in sorted(pids, key=rank):
            _terminate(pids[name], self.procs.get(name))
        self.procs.clear()
        self.state["pids"] = {}
        for node in ((self.state.get("dataplane") or {}).get("nodes") or {}).values():
            dataplane.delete_node(self.state["service_octet"], node["index"])
        shapes.delete_node_network(self.state.get("node_network"))
        release_service_octet(self.run_dir, self.state.get("service_octet"))
        if remove_dir:
            shutil.rmtree(self.run_dir, ignore_errors=True)
        elif self.run_dir.exists():
            self._save()

    # -- accessors ---------------------------------------------------------------------------------

    @property
    def kubeconfig(self) -> str:
        return self.state["kubeconfig"]

    @property
    def server(self) -> str:
        return self.state["server"]

    @property
    def mirror_url(self) -> str:
        return self.state["mirror_url"]

    @property
    def audit(self) -> AuditLog:
        return AuditLog(Path(self.state["audit_log"]))

    def processes(self) -> list:
        """What the pod runner runs now (podrunner.py): component, version, pod, pid, restarts, problem, log."""
        try:
            return json.loads((self.run_dir / "pods" / "processes.json").read_text())
        except (OSError, ValueError):
            return []

    def env(self) -> dict:
        # (not the directories of older releases' data planes, ``name@release``: their calico-node would shadow v3.31.4's)
        bindirs = sorted({str(Path(p).parent) for k, p in self.state["bins"].items() if "@" not in k})
        return {
            "KUBECONFIG": self.kubeconfig,
            "K8S_AUTH_KUBECONFIG": self.kubeconfig,
            "CALICO_OPS_MIRROR_URL": self.mirror_url,
            "CALICO_OPS_CHART_REPO_URL": self.mirror_url + "/charts",
            "PATH": os.pathsep.join(bindirs + [os.environ.get("PATH", "")]),
        }


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours counts as gone
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _terminate(pid: int, proc: subprocess.Popen | None, grace: float = 10) -> None:
    if not pid or not _alive(pid):
        if proc is not None:
            proc.poll()
        return
    first = signal.SIGTERM if grace > 0 else signal.SIGKILL
    try:
        os.killpg(pid, first)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, first)
        except ProcessLookupError:
            return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return
        if proc is None and not _alive(pid):
            return
        time.sleep(0.1)
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if proc is not None:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def api_request(cp: ControlPlane, method: str, path: str, body=None, content_type="application/json"):
    """A small admin HTTPS client for the harness itself (node creation, readiness)."""
    ctx = ssl.create_default_context(cafile=str(cp.run_dir / "pki" / "ca.crt"))
    ctx.load_cert_chain(str(cp.run_dir / "pki" / "admin.crt"), str(cp.run_dir / "pki" / "admin.key"))
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(cp.server + path, data=data, method=method,
                                 headers={"Content-Type": content_type, "Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
            raw = resp.read()
            return json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")
        raise RuntimeError(f"{method} {path}: {exc.code} {detail}") from exc
