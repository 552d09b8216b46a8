"""pytest fixtures: one real control plane per test run, a fresh namespace per test, ansible-playbook.

Set ``LOCALCP_RUN_DIR`` (as ``make cluster-up`` / ``python -m localcp env`` prints) to reuse a running
control plane instead of starting one for the session.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from . import api, cpu_log
from . import nodes as nodes_mod
from . import procs
from .cluster import ControlPlane
from .mirror import REPO_ROOT


def collections_path() -> str:
    """A collections path where ``calico_ops.lifecycle`` is this working tree."""
    root = REPO_ROOT / ".build" / "collections"
    link = root / "ansible_collections" / "calico_ops" / "lifecycle"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        try:
            link.symlink_to(REPO_ROOT)
        except FileExistsError:
            pass
    return str(root)


# The ansible-core that runs the tests' playbooks: .venv's (the one running pytest), or, with CALICO_OPS_ANSIBLE_VENV
# naming another venv (tests/run-checks.sh step oldest_core: .build/venv-core-2.16, the oldest core of
# requires_ansible), that venv's ansible-playbook on its own Python, the modules included. The collections it
# needs beside this one (kubernetes.core, ansible.posix's JSON callback) come from .venv's Ansible package.
ANSIBLE_VENV_ENV = "CALICO_OPS_ANSIBLE_VENV"


def ansible_venv() -> Path:
    other = os.environ.get(ANSIBLE_VENV_ENV)
    if not other:
        return Path(sys.executable).parent.parent
    venv = Path(other).resolve()
    if not (venv / "bin" / "ansible-playbook").is_file():  # never fall back to .venv's core unnoticed
        raise RuntimeError(f"{ANSIBLE_VENV_ENV}={other}: no bin/ansible-playbook there")
    return venv


def ansible_bin(name: str) -> str:
    """The path of an Ansible command (ansible-playbook, ansible-doc, ...) of the ansible-core under test."""
    return str(ansible_venv() / "bin" / name)


def ansible_python() -> str:
    """The interpreter the modules run on (``ansible_python_interpreter``) with the ansible-core under test."""
    return str(ansible_venv() / "bin" / "python") if os.environ.get(ANSIBLE_VENV_ENV) else sys.executable


def _extra_collections_path() -> list:
    if not os.environ.get(ANSIBLE_VENV_ENV):
        return []
    import ansible_collections.kubernetes.core as kcore  # .venv's Ansible package
    return [str(Path(kcore.__path__[0]).parents[2])]


class Cluster:
    """What tests use of the control plane (see docs/development.md)."""

    def __init__(self, cp: ControlPlane):
        self.cp = cp

    kubeconfig = property(lambda self: self.cp.kubeconfig)
    server = property(lambda self: self.cp.server)
    mirror_url = property(lambda self: self.cp.mirror_url)
    chart_repo_url = property(lambda self: self.cp.mirror_url + "/charts")
    audit = property(lambda self: self.cp.audit)
    run_dir = property(lambda self: self.cp.run_dir)

    @property
    def env(self) -> dict:
        env = dict(os.environ)
        env.update(self.cp.env())
        env["ANSIBLE_COLLECTIONS_PATH"] = os.pathsep.join([collections_path()] + _extra_collections_path())
        return env

    def bin(self, name: str) -> str:
        return self.cp.state["bins"][name]

    def processes(self, component: str | None = None) -> list:
        """The real processes the pod runner runs behind pods now (localcp/podrunner.py), of one component
        (``tigera-operator``, ``calico-kube-controllers``, ``calico-apiserver``) or all."""
        return [p for p in self.cp.processes() if component is None or p["component"] == component]

    def process_log_tail(self, component: str, lines: int = 30) -> str:
        """The last ``lines`` of the log of each process of ``component`` the pod runner runs now (for a failure
        message: what the real component said)."""
        out = []
        for p in self.processes(component):
            try:
                text = Path(p["log"]).read_text(errors="replace").splitlines()[-lines:]
            except (KeyError, OSError):
                continue
            out.append("--- %s (%s):\n%s" % (p.get("log"), p.get("version"), "\n".join(text)))
        return "\n".join(out) or "(no %s process)" % component

    def wait_for_process(self, component: str, version: str | None = None, timeout: float = 120) -> dict:
        """Wait until the pod runner runs ``component`` (at ``version``) with a live pid; return its entry."""
        def running():
            for p in self.processes(component):
                if p["pid"] and (version is None or p["version"] == version):
                    return p
            return None
        return self.wait_for(running, timeout=timeout, interval=0.5,
                             what=f"a running {component} {version or ''} process ({self.processes(component)})")

    # -- the data plane (a control plane started with_dataplane: localcp/dataplane.py) -----------------------

    def nodes_with_network(self) -> dict:
        """node name -> its namespaces (``holder`` pid, ``address``, ``netns``); empty without a data plane."""
        return ((self.cp.state.get("dataplane") or {}).get("nodes")) or {}

    def pod_networks(self) -> list:
        """The pods the pod runner gave a network (pods/networks.json: namespace, pod, node, ips, holder)."""
        try:
            return json.loads((Path(self.run_dir) / "pods" / "networks.json").read_text())
        except (OSError, ValueError):
            return []

    def pod_holder(self, namespace: str, pod: str) -> int:
        for net in self.pod_networks():
            if net["namespace"] == namespace and net["pod"] == pod and net["holder"] and net["ips"]:
                return net["holder"]
        raise AssertionError(f"pod {namespace}/{pod} has no network ({self.pod_networks()})")

    def in_node(self, node: str, *argv, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
        """Run a command in a node's namespaces (network, mount, hostname), as on that node."""
        from localcp import dataplane
        holder = self.nodes_with_network()[node]["holder"]
        proc = subprocess.run(dataplane.enter(holder) + [str(a) for a in argv], capture_output=True, text=True,
                              timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise AssertionError(f"on {node}: {' '.join(map(str, argv))} failed ({proc.returncode}): "
                                 f"{proc.stderr.strip() or proc.stdout.strip()}")
        return proc

    def http_get(self, url: str, namespace: str | None = None, pod: str | None = None,
                 timeout: float = 5, source_port: int = 0) -> subprocess.CompletedProcess:
        """An HTTP GET from inside a pod's network namespace (or from this machine, outside the cluster, when no
        pod is named): localcp.podserve's client; ``returncode`` 0 and the body on stdout when answered."""
        from localcp import dataplane
        prefix = dataplane.enter(self.pod_holder(namespace, pod)) if pod else []
        argv = prefix + [sys.executable, "-m", "localcp.podserve", "get", url, "--timeout", str(timeout)]
        if source_port:
            argv += ["--source-port", str(source_port)]
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "tests"))
        cpu_log.command_record("podserve", ["get", url])
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 30, env=env, check=False)

    def kubectl(self, *args, input=None, check=True, timeout=300) -> subprocess.CompletedProcess:
        deadline = time.monotonic() + timeout
        while True:
            cpu_log.command_record("kubectl", args)
            proc = subprocess.run([self.bin("kubectl"), "--kubeconfig", self.kubeconfig, *args], input=input,
                                  capture_output=True, text=True, timeout=timeout, check=False)
            # `kubectl wait --for=condition=...` fails at once, instead of waiting, while the object has no
            # status.conditions yet (a CRD created a moment ago): ask again until it has them
            if not (args and args[0] == "wait" and proc.returncode != 0 and "accessor error: <nil>" in proc.stderr
                    and time.monotonic() < deadline):
                break
            time.sleep(0.2)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
        return proc

    def apply(self, source, server_side=True, namespace=None) -> subprocess.CompletedProcess:
        """kubectl apply of a file path, URL or YAML text."""
        args = ["apply"]
        if server_side:
            args += ["--server-side", "--force-conflicts", "--field-manager=test-setup"]
        if namespace:
            args += ["-n", namespace]
        text = str(source)
        if "\n" in text:
            return self.kubectl(*args, "-f", "-", input=text)
        return self.kubectl(*args, "-f", text)

    @property
    def k8s(self):
        """kubernetes.dynamic.DynamicClient for assertions (independent of the code under test); one per
        thread: the client's discovery cache is not thread-safe (a stand-in thread and the test refreshing it at
        once fail with KeyError 'resources' inside kubernetes.dynamic)."""
        return api.of(self, user_agent=None).dyn

    node_spec = staticmethod(nodes_mod.node_spec)

    def add_nodes(self, specs: list, timeout: float = 300) -> list:
        return nodes_mod.create_nodes(self.cp, specs, timeout=timeout)

    def remove_nodes(self, names: list) -> None:
        nodes_mod.delete_nodes(self.cp, names)

    def wait_for(self, predicate, timeout: float = 60, interval: float = 1.0, what: str = "condition"):
        value = api.poll(predicate, timeout, interval)
        if not value:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        return value


@dataclass
class PlaybookResult:
    rc: int
    stdout: str
    stderr: str
    data: dict = field(default_factory=dict)

    @property
    def stats(self) -> dict:
        return self.data.get("stats", {})

    def changed(self, host: str = "localhost") -> int:
        return self.stats.get(host, {}).get("changed", 0)

    def failed(self, host: str = "localhost") -> int:
        return self.stats.get(host, {}).get("failures", 0)

    @property
    def tasks(self) -> list:
        out = []
        for play in self.data.get("plays", []):
            for task in play.get("tasks", []):
                for host, res in task.get("hosts", {}).items():
                    out.append({"task": task["task"]["name"], "host": host, "result": res})
        return out

    def result_of(self, task_name: str, host: str = "localhost") -> dict:
        """The result of the (last) task with this name; role tasks match with or without the
        ``<role> : `` prefix the JSON callback gives them."""
        found = None
        for t in self.tasks:
            if t["host"] == host and (t["task"] == task_name or t["task"].endswith(" : " + task_name)):
                found = t["result"]
        if found is not None:
            return found
        raise KeyError(f"no task named {task_name!r} in the play output")


KWOK_FELIX_WINDOW_VAR = "ebpf_install_readiness_window"


# The jobs' connectivity check and disruption prober, off where the nodes are kwok's (no data plane to check).
NO_NETWORK_VARS = {f"{job}_{what}": False for job in ("ebpf_install", "ebpf_install_enable", "ebpf_rollback", "upgrade",
                                                       "operator_migration")
                   for what in ("measure_disruption", "verify_connectivity")}


class Ansible:
    def __init__(self, cluster: Cluster, workdir: Path):
        self.cluster = cluster
        self.workdir = workdir

    def command(self, playbook, extra_vars: dict | None = None, check=False, diff=False, extra_args=(),
                callback="ansible.posix.json", env: dict | None = None,
                inventory: str | None = None) -> tuple[list, dict]:
        """The ansible-playbook command line and environment ``playbook()`` runs (for ``start()`` too)."""
        text = str(playbook)
        if "\n" in text:
            path = self.workdir / f"play-{hashlib.sha1(text.encode()).hexdigest()[:10]}.yml"
            path.write_text(text)
        else:
            path = Path(text)
            if not path.is_absolute():
                path = REPO_ROOT / path
        cmd = [ansible_bin("ansible-playbook"), str(path)]
        if inventory:
            cmd += ["-i", inventory]
        else:
            cmd += ["-i", "localhost,", "-c", "local", "-e", f"ansible_python_interpreter={ansible_python()}"]
        if not self.cluster.nodes_with_network():
            # kwok's calico-node has no Felix that restarts onto eBPF: the install's readiness window after
            # bpfEnabled (roles/ebpf_install/tasks/rollout.yml, 100 s) would only wait. A test's own value wins.
            cmd += ["-e", f"{KWOK_FELIX_WINDOW_VAR}=0"]
            # nor a network: the connectivity check and the disruption prober around the data-plane jobs
            # (roles/connectivity) would wait for probe pods that carry no packet. A test's own value wins.
            cmd += ["-e", json.dumps(NO_NETWORK_VARS)]
        # a job that fails leaves its diagnostics archive (roles/diagnostics, the playbooks' rescue) in the test's
        # directory, not in the repository (the playbooks run from its root). A test's own value wins.
        cmd += ["-e", f"diagnostics_dir={self.workdir / 'calico-diagnostics'}"]
        # and the jobs' disruption prober its attempts (roles/connectivity), likewise
        cmd += ["-e", f"connectivity_probe_dir={self.workdir / 'calico-connectivity'}"]
        if extra_vars:
            vars_file = self.workdir / f"vars-{hashlib.sha1(json.dumps(extra_vars, sort_keys=True, default=str).encode()).hexdigest()[:10]}.json"
            vars_file.write_text(json.dumps(extra_vars, default=str))
            cmd += ["-e", f"@{vars_file}"]
        if check:
            cmd.append("--check")
        if diff:
            cmd.append("--diff")
        cmd += list(extra_args)
        run_env = self.cluster.env
        run_env.update({"ANSIBLE_STDOUT_CALLBACK": callback, "ANSIBLE_NOCOLOR": "1",
                        "ANSIBLE_LOCALHOST_WARNING": "0", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
                        "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_RETRY_FILES_ENABLED": "0",
                        # the module sent on the local connection's stdin: no temporary directory, copy, chmod and
                        # removal per task (its saving: benchmarks/results/design-measurements.md)
                        "ANSIBLE_PIPELINING": "1",
                        # ansible.posix.json on one line: json's C encoder instead of its pure-Python indenting one
                        # (the indented dump's cost: benchmarks/results/design-measurements.md)
                        "ANSIBLE_JSON_INDENT": "0"})
        run_env.update(env or {})
        return cmd, run_env

    def start(self, playbook, **kwargs) -> subprocess.Popen:
        """ansible-playbook started in a session of its own (a test stops the whole run with ``kill_tree``);
        output to files in the work directory."""
        cmd, run_env = self.command(playbook, **kwargs)
        out = open(self.workdir / f"started-{time.time_ns()}.log", "w")
        try:
            return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=run_env, cwd=str(REPO_ROOT),
                                    start_new_session=True)
        finally:
            out.close()

    def playbook(self, playbook, extra_vars: dict | None = None, check=False, diff=False, extra_args=(),
                 callback="ansible.posix.json", timeout=900, env: dict | None = None,
                 inventory: str | None = None) -> PlaybookResult:
        cmd, run_env = self.command(playbook, extra_vars=extra_vars, check=check, diff=diff, extra_args=extra_args,
                                    callback=callback, env=env, inventory=inventory)
        before = cpu_log.snapshot() if os.environ.get(cpu_log.ENV) else None
        proc = subprocess.run(cmd, capture_output=True, text=True, env=run_env, timeout=timeout,
                              cwd=str(REPO_ROOT), check=False)
        data = {}
        if callback.endswith("json"):
            match = re.search(r"^\{.*\}\s*$", proc.stdout, re.S | re.M)
            if match:
                try:
                    data = json.loads(match.group(0))
                except ValueError:
                    data = {}
        if before:
            cpu_log.playbook_record(Path(cmd[1]).name, before, data)
        return PlaybookResult(proc.returncode, proc.stdout, proc.stderr, data)


def kill_tree(proc: subprocess.Popen, timeout: float = 60) -> list:
    """SIGKILL a process and every descendant, as a crash of the machine running it would; return their pids.
    ``os.killpg`` is not enough for ansible-playbook: its worker processes call setsid() (a session of their own),
    so killing the playbook's group leaves them running - and writing - as orphans. Stopped first, then listed
    again, so no child forked meanwhile escapes."""
    pids = [proc.pid] + procs.descendants(proc.pid)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:
            pass
    killed = sorted(set(pids + procs.descendants(proc.pid)))
    for pid in killed:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(timeout=timeout)
    return killed


_SESSION_CP = {}


@pytest.fixture(scope="session")
def cluster():
    run_dir = os.environ.get("LOCALCP_RUN_DIR")
    if run_dir and Path(run_dir, "state.json").exists():
        yield Cluster(ControlPlane.load(Path(run_dir)))
        return
    cp = ControlPlane(die_with_parent=True)
    cp.start()
    try:
        yield Cluster(cp)
    finally:
        cp.stop(remove_dir=True)


@pytest.fixture
def pristine_cluster():
    """A control plane of the test's own, for a test that needs a cluster no other test has touched (no
    Calico CRDs, no kube-proxy objects). About five seconds to start; stopped after the test."""
    cp = ControlPlane(die_with_parent=True)
    cp.start()
    try:
        yield Cluster(cp)
    finally:
        cp.stop(remove_dir=True)


def _ns_name(nodeid: str) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", nodeid.split("::")[-1].lower()).strip("-")[:40].strip("-")
    return f"t-{base}-{hashlib.sha1((nodeid + str(time.time())).encode()).hexdigest()[:6]}"


@pytest.fixture
def namespace(cluster, request):
    name = _ns_name(request.node.nodeid)
    cluster.kubectl("create", "namespace", name)
    cluster.wait_for(lambda: cluster.kubectl("get", "serviceaccount", "default", "-n", name,
                                             check=False).returncode == 0,
                     timeout=60, what=f"the default ServiceAccount in {name}")
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def ansible(cluster, tmp_path):
    return Ansible(cluster, tmp_path)
