"""make bench: every benchmark job at each size, ours against the naive kubernetes.core loop, in one run.

Jobs (the objects and plays of benchmarks/preflight.py, owner_references.py and host_endpoint_migration.py, reused):

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

Ansible's own floor (issue 21): once per run, ``ansible_costs`` times an ansible-playbook run of a play without tasks,
20 tasks of a collection module that does no work and 20 controller tasks; every ours run records its task profile
(module and controller tasks, per module the count and seconds, the slowest tasks), and its floor - the start-ups
and tasks it ran at those rates, waits left out - is tabled beside its time ("Ansible's own cost in ours' time").

Per job and size: ``--repeat`` runs of ours and of the naive loop, the median; the API requests of each run
from the audit log (user ``admin``; server-side dry runs are reads of a kind, counted apart and not as
writes); ours is run once more after each run and must make zero writes (asserted, recorded). Writes to the
objects of the job must equal the objects that changed (asserted); the module's own record (ConfigMaps) is
counted apart. A naive run predicted (from the per-object rate of the largest smaller size measured) to take
longer than ``--naive-budget`` seconds is not run: it is recorded as a prediction, never as a measurement.

    PYTHONPATH=tests .venv/bin/python benchmarks/run.py [--jobs preflight,owner_references,...]
        [--sizes 10,100,1000,5000] [--repeat 3] [--naive-budget 600] [--contenders ours,naive]

``--contenders naive`` (or ``ours``) runs one side only and keeps the other side's figures of results.json (each
side says when it was measured, and the load average then): the naive loops at large N take hours, so they are
measured in runs of their own.

Uses the control plane of LOCALCP_RUN_DIR when set, else starts one (and stops it at the end). Results are
merged (per job and size) into benchmarks/results/results.json, and results.md and results.png are rendered
from it; a run of some jobs keeps the others' results.
"""

import argparse
import collections
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
for extra in (HERE, REPO / "tests", REPO / "tests" / "integration"):
    sys.path.insert(0, str(extra))

import host_endpoint_migration as hep_bench  # noqa: E402
import limit  # noqa: E402
import owner_references as or_bench  # noqa: E402
import preflight as pf_bench  # noqa: E402
import report  # noqa: E402
from localcp.audit import READ_VERBS, WRITE_VERBS  # noqa: E402
from localcp.cluster import CAPTURE_USER  # noqa: E402
from common import control_plane  # noqa: E402
from localcp.fixtures import Ansible, Cluster, collections_path  # noqa: E402

RESULTS = HERE / "results"
ALL_JOBS = ("preflight", "owner_references", "host_endpoint_migration", "install_ebpf", "upgrade", "datastore_migration",
            "operator_migration", "disable_ebpf")
PREFLIGHT_MAX_NODES = 5000
# contenders beside ours and the naive loop, run where the job defines them (a method of that name):
# limit - the job's own requests from a bare client at the best concurrency (benchmarks/limit.py);
# kubectl - the job scripted with kubectl alone, one process per step (benchmarks/kubectl_bulk/)
OTHER_CONTENDERS = ("limit", "kubectl")


# -- measuring one play ------------------------------------------------------------------------------------

def _task_seconds(task):
    d = task.get("task", {}).get("duration") or {}
    if not (d.get("start") and d.get("end")):
        return 0.0
    return limit.epoch(d["end"]) - limit.epoch(d["start"])


def task_result(data, prefix):
    """The localhost result of the first task whose name (role prefix removed) starts with ``prefix``."""
    for play in data.get("plays", []):
        for t in play.get("tasks", []):
            name = t.get("task", {}).get("name", "").split(" : ", 1)[-1]
            if name.startswith(prefix):
                hosts = t.get("hosts") or {}
                return next(iter(hosts.values()), None)
    return None


def _waited(task):
    """The seconds a task that also does work says it spent waiting (``waited_s`` of its result: manifest_apply's
    apply of CRDs, then their wait), or None for a task that is a wait and nothing else."""
    values = [r.get("waited_s") for r in (task.get("hosts") or {}).values() if isinstance(r, dict)]
    values = [v for v in values if isinstance(v, (int, float))]
    return max(values) if values else None


def is_wait(task, pattern=r"\bwait"):
    """A task whose whole time is waiting: its name matches ``pattern`` and it reports no ``waited_s``."""
    return bool(re.search(pattern, task.get("task", {}).get("name", ""), re.I)) and _waited(task) is None


def wait_seconds(data, pattern=r"\bwait"):
    """Seconds spent waiting (the JSON callback's task durations): the whole time of the tasks whose name matches
    ``pattern``, except that a task reporting ``waited_s`` (it applies, then waits) counts that part only."""
    total = 0.0
    for play in data.get("plays", []):
        for t in play.get("tasks", []):
            if re.search(pattern, t.get("task", {}).get("name", ""), re.I):
                waited = _waited(t)
                total += _task_seconds(t) if waited is None else min(waited, _task_seconds(t))
    return total


# tasks Ansible runs in the controller's own process (no module sent to the target); every other task runs a module
CONTROL_ACTIONS = frozenset("ansible.builtin." + a for a in (
    "set_fact", "assert", "debug", "include_tasks", "import_tasks", "include_role", "import_role",
    "validate_argument_spec", "set_stats", "meta", "fail", "include_vars", "pause")) | frozenset((
        "(skipped)", "calico_ops.lifecycle.controller_files"))  # an action plugin that runs no module


def task_profile(data, top=12, exclude=None):
    """Where a play's time went (the JSON callback's task durations): the number of tasks run, their summed
    seconds, the ``top`` slowest as [name, seconds] (a looped task counts once), how many were skipped, per
    module (``action``) the tasks and seconds, and ``floor_tasks``: the tasks that are not waits (``is_wait`` with
    ``exclude``: their time is subtracted from the wall time; a task that applies and then waits counts), as ``module`` (a module sent to the target) and ``control`` (run in
    the controller: set_fact, assert, include_*, skipped, ...) - what the Ansible floor is computed from."""
    tasks, by_action, skipped, floor = [], {}, 0, {"module": 0, "control": 0}
    for play in data.get("plays", []):
        for t in play.get("tasks", []):
            sec = _task_seconds(t)
            name = t.get("task", {}).get("name", "?")
            tasks.append((name, sec))
            results = list((t.get("hosts") or {}).values())
            action = next((r.get("action") for r in results if r.get("action")), "?")
            if results and all(r.get("skipped") for r in results):
                skipped += 1
                action = "(skipped)"
            count, total = by_action.get(action, (0, 0.0))
            by_action[action] = (count + 1, total + sec)
            if not (exclude and is_wait(t, exclude)):
                floor["control" if action in CONTROL_ACTIONS else "module"] += 1
    slowest = sorted(tasks, key=lambda t: -t[1])[:top]
    return {"tasks": len(tasks), "task_s": round(sum(s for _n, s in tasks), 2), "skipped": skipped,
            "playbooks": 1, "floor_tasks": floor,
            "by_action": dict((a, [c, round(s, 2)]) for a, (c, s) in
                              sorted(by_action.items(), key=lambda kv: -kv[1][1])),
            "slowest": [[name, round(sec, 2)] for name, sec in slowest]}


def combine_profiles(profiles):
    """The profile of several plays of one run (detach + attach): counts summed; ``slowest`` and ``by_action`` of
    each kept in ``parts``."""
    profiles = [p for p in profiles if p]
    if not profiles:
        return None
    return {"tasks": sum(p["tasks"] for p in profiles), "task_s": round(sum(p["task_s"] for p in profiles), 2),
            "skipped": sum(p["skipped"] for p in profiles), "playbooks": sum(p["playbooks"] for p in profiles),
            "floor_tasks": dict((k, sum(p["floor_tasks"][k] for p in profiles)) for k in ("module", "control")),
            "parts": [{"by_action": p["by_action"], "slowest": p["slowest"]} for p in profiles]}


FLOOR_TASKS = 20
_COSTS = {}


def ansible_costs(cluster, ansible, repeat=3):
    """What Ansible itself costs on this machine, now (medians of ``repeat``): ``startup_s`` - ansible-playbook of a
    play without tasks (localhost, no facts, the repository's ansible.cfg); ``module_task_s`` - one task of a
    module of this collection that does no work (objects_info with no objects: the module is built, sent, started,
    builds its client and returns; no request); ``control_task_s`` - one task run in the controller (debug).
    Measured once per process and control plane."""
    key = id(cluster.cp)
    if key in _COSTS:
        return _COSTS[key]
    work = Path(tempfile.mkdtemp(prefix="ansible-costs-", dir=str(HERE / "work")))
    plays = {
        "empty": [],
        "module": [{"name": "no-op module task %d" % i, "calico_ops.lifecycle.objects_info": {"objects": []}}
                   for i in range(FLOOR_TASKS)],
        "control": [{"name": "no-op controller task %d" % i, "ansible.builtin.debug": {"msg": "x"}}
                    for i in range(FLOOR_TASKS)],
    }
    walls = dict((k, []) for k in plays)
    for _rep in range(repeat):
        for kind, tasks in plays.items():
            path = work / ("%s.yml" % kind)
            path.write_text(yaml.safe_dump([{"name": "Ansible's own cost: %s" % kind, "hosts": "localhost",
                                             "gather_facts": False, "tasks": tasks}], sort_keys=False))
            start = time.monotonic()
            res = ansible.playbook(str(path), timeout=600)
            walls[kind].append(time.monotonic() - start)
            if res.rc != 0:
                raise RuntimeError("Ansible cost play %s failed:\n%s\n%s" % (kind, res.stdout[-3000:],
                                                                             res.stderr[-2000:]))
    startup = report.median(walls["empty"])
    costs = {"startup_s": round(startup, 3),
             "module_task_s": round((report.median(walls["module"]) - startup) / FLOOR_TASKS, 3),
             "control_task_s": round((report.median(walls["control"]) - startup) / FLOOR_TASKS, 3),
             "repeat": repeat, "tasks_per_play": FLOOR_TASKS,
             "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "loadavg": os.getloadavg()}
    _COSTS[key] = costs
    return costs


def ansible_floor(profile, costs):
    """Seconds Ansible itself needs for ``profile``'s plays and tasks: start-ups, module tasks and controller tasks
    at ``costs``' rates, with no job work in them."""
    floor = profile["floor_tasks"]
    return round(profile["playbooks"] * costs["startup_s"] + floor["module"] * costs["module_task_s"]
                 + floor["control"] * costs["control_task_s"], 2)


def split(events, exclude_agent=None):
    """reads, writes (persisted: dry runs left out), dry-run writes and writes per resource of audit events."""
    if exclude_agent:
        events = [e for e in events if e.get("userAgent") != exclude_agent]
    reads = sum(1 for e in events if e.get("verb") in READ_VERBS or e.get("verb") == "watch")
    writes, dry = [], 0
    for e in events:
        if e.get("verb") in WRITE_VERBS:
            if "dryRun=" in (e.get("requestURI") or ""):
                dry += 1
            else:
                writes.append(e)
    return reads, writes, dry


def timed_play(cluster, ansible, play, extra, exclude_agent=None, what="play", timeout=6 * 3600, **kw):
    mark = cluster.audit.mark()
    start = time.monotonic()
    res = ansible.playbook(play, extra_vars=extra, timeout=timeout, **kw)
    wall = time.monotonic() - start
    if res.rc != 0:
        raise RuntimeError("%s failed:\n%s\n%s" % (what, res.stdout[-5000:], res.stderr[-3000:]))
    reads, writes, dry = split(cluster.audit.events_since(mark), exclude_agent)
    out = {"wall_s": round(wall, 2), "reads": reads, "writes": len(writes), "dry_run_writes": dry,
           "writes_by_resource": dict(collections.Counter((w.get("objectRef") or {}).get("resource", "?")
                                                          for w in writes)),
           "_writes": writes, "_result": res}
    if res.data:
        out["profile"] = task_profile(res.data)
    return out


def measured(cluster, mark, wall, waits, check):
    """The measure of a contender run outside Ansible (kubectl bulk, the replayed limit): its time without its waits,
    its requests since ``mark`` from the audit log (user admin), the distinct objects it wrote; ``check()`` (the end
    state) after it."""
    reads, writes, dry = split(cluster.audit.events_since(mark))
    check()
    return {"wall_s": round(wall - waits, 3), "wall_with_waits_s": round(wall, 3), "wait_tasks_s": round(waits, 2),
            "reads": reads, "writes": len(writes), "dry_run_writes": dry,
            "writes_by_resource": dict(collections.Counter((w.get("objectRef") or {}).get("resource")
                                                           for w in writes)),
            "changed": written_objects({"_writes": writes}), "_writes": writes}


def public(m):
    return dict((k, v) for k, v in m.items() if not k.startswith("_"))


def combine(*parts):
    """Sum of the phases of one run (detach + attach)."""
    out = {"wall_s": round(sum(p["wall_s"] for p in parts), 2)}
    for key in ("reads", "writes", "dry_run_writes"):
        out[key] = sum(p[key] for p in parts)
    out["writes_by_resource"] = dict(sum((collections.Counter(p["writes_by_resource"]) for p in parts),
                                         collections.Counter()))
    profile = combine_profiles([p.get("profile") for p in parts])
    if profile:
        out["profile"] = profile
    return out


def collection_module(name):
    """A module of the collection's module_utils (``name``: ``<job>.rules``, ``preflight.node_rules``, ...): the
    limit contender builds its requests and verdicts with the module's own functions."""
    import importlib
    path = collections_path()
    if path not in sys.path:
        sys.path.append(path)
    return importlib.import_module("ansible_collections.calico_ops.lifecycle.plugins.module_utils." + name)


def collection_rules(job):
    """The pure rules module of a job's package in the collection (plugins/module_utils/<job>/rules.py)."""
    return collection_module(job + ".rules")


def run_script(cluster, script, *args):
    """A kubectl bulk script (benchmarks/kubectl_bulk/) against the cluster: KUBECONFIG its admin's, its kubectl
    first on PATH. Fails with the script's output."""
    env = dict(os.environ, KUBECONFIG=str(cluster.kubeconfig))
    env["PATH"] = os.path.dirname(cluster.bin("kubectl")) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(["bash", str(script)] + list(args), env=env, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError("%s %s failed (%d):\n%s\n%s" % (script.name, " ".join(args), proc.returncode,
                                                         proc.stdout[-3000:], proc.stderr[-3000:]))
    return proc.stdout


# -- jobs --------------------------------------------------------------------------------------------------

class Job(object):
    unit = "objects"

    def __init__(self, cluster, workdir):
        self.cluster = cluster
        self.workdir = workdir
        self.ansible = Ansible(cluster, workdir)

    def size(self, n):
        return n

    def setup(self, n):
        self.n = n

    def teardown(self):
        pass

    def check(self, m, rerun):
        """A re-run of ours writes nothing."""
        assert rerun["writes"] == 0, rerun["writes_by_resource"]

    def _kubectl_work(self, rep):
        """A fresh directory for one kubectl bulk run's files."""
        work = self.workdir / ("kubectl-%d-%s" % (rep, os.urandom(2).hex()))
        work.mkdir()
        return work


class LimitContender(object):
    """The *limit* contender of a job with ``_limit_cycle(prefix, concurrency)``: benchmarks/limit.py at_best (the
    concurrency swept at the first run, the best kept)."""

    def limit(self, rep):
        """The job's floor."""
        return limit.at_best(self.__dict__.setdefault("_limit_state", {}), rep, self._limit_cycle)


def wait_windows(data, pattern=r"\bwait"):
    """(start, end) epoch seconds of ours' waiting, from the JSON callback's task durations: the whole of a task that
    is a wait (``is_wait``), the last ``waited_s`` of a task that applies and then waits."""
    out = []
    for play in data.get("plays", []):
        for t in play.get("tasks", []):
            d = t.get("task", {}).get("duration") or {}
            if not (d.get("start") and d.get("end")) or not re.search(pattern, t.get("task", {}).get("name", ""),
                                                                       re.I):
                continue
            start, end = limit.epoch(d["start"]), limit.epoch(d["end"])
            waited = _waited(t)
            out.append((start if waited is None else max(start, end - waited), end))
    return out


class CapturedLimit(object):
    """The *limit* contender of a job replayed from ours' own requests (benchmarks/limit.py ``captured_stream``):
    ``_capture_run(env)`` runs ours once, untimed, as the capture user (its writes logged with their bodies) and
    returns its ansible result; ``_replay_cycle(stream, concurrency)`` brings the cluster to the job's starting
    state, replays and checks the end state. The capture is made at the first run, the concurrency swept then."""

    def limit(self, rep):
        """The job's floor: ours' requests, without Ansible, at the best concurrency."""
        state = self.__dict__.setdefault("_limit_state", {})
        if "stream" not in state:
            capture = self.cluster.run_dir / "capture.kubeconfig"
            if not capture.exists():
                raise RuntimeError("%s is missing: the control plane predates the capture user; start a new one"
                                   % capture)
            mark = self.cluster.audit.mark()
            res = self._capture_run({"KUBECONFIG": str(capture), "K8S_AUTH_KUBECONFIG": str(capture)})
            events = self.cluster.audit.events_since(mark, users=(CAPTURE_USER,))
            merge = collection_module("objects.merge_patch")
            state["stream"], state["rewritten"] = limit.captured_stream(
                events, lambda api_version: merge.CONTENT_TYPES[merge.default_patch_type(api_version)],
                wait_windows(res.data))
            log("%s: captured %d requests of ours (%d writes), %d rewritten for the replay" % (
                type(self).__name__, len(state["stream"]), sum(1 for r in state["stream"] if r["write"]),
                state["rewritten"]))
        m = limit.at_best(state, rep, lambda _prefix, c: self._replay_cycle(state["stream"], c))
        m["rewritten"] = state["rewritten"]
        m["captured_requests"] = len(state["stream"])
        return m

    def _replayed(self, stream, concurrency, check):
        """Replay ``stream`` (the starting state already made) and measure it as the other contenders are."""
        client = limit.BareClient(self.cluster.cp)
        mark = self.cluster.audit.mark()
        wall, waited, reads_unlike = limit.replay(client, stream, concurrency)
        return dict(measured(self.cluster, mark, wall, waited, check), reads_unlike_ours=reads_unlike)


PREFLIGHT_NAIVE = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    failing: []
  tasks:
    - name: Nodes
      kubernetes.core.k8s_info:
        kind: Node
      register: nodes
    - name: kube-proxy configuration
      kubernetes.core.k8s_info:
        kind: ConfigMap
        namespace: kube-system
        name: kube-proxy
      register: kube_proxy
    - name: Services (SCTP)
      kubernetes.core.k8s_info:
        kind: Service
      register: services
    - name: Judge each node
      ansible.builtin.set_fact:
        failing: "{{ failing + [item.metadata.name] }}"
      when: >-
        item.status.nodeInfo.architecture not in ['amd64', 'arm64']
        or (item.status.nodeInfo.osImage is search('Red Hat Enterprise Linux 8')
            and (item.status.nodeInfo.kernelVersion.split('-')[1].split('.')[0] | int) < 193)
      loop: "{{ nodes.resources }}"
      loop_control:
        label: "{{ item.metadata.name }}"
    - name: verdict
      ansible.builtin.debug:
        msg: "{{ failing }}"
"""


class Preflight(LimitContender, Job):
    unit = "nodes"

    def size(self, n):
        return min(n, PREFLIGHT_MAX_NODES)

    def setup(self, n):
        self.n = n
        self.tag = os.urandom(2).hex()
        self.specs, self.expected = pf_bench.specs(self.cluster, n, self.tag)
        self.cluster.add_nodes(self.specs, timeout=1800)

    def teardown(self):
        self.cluster.remove_nodes([s["metadata"]["name"] for s in self.specs])

    def ours(self, rep):
        m = timed_play(self.cluster, self.ansible, pf_bench.PLAY, {"page_size": 500}, what="preflight")
        judged = m["_result"].result_of("preflight")["nodes"]
        wrong = [n for n, v in self.expected.items() if judged.get(n, {}).get("verdict") != v]
        assert not wrong, wrong[:5]
        rerun = timed_play(self.cluster, self.ansible, pf_bench.PLAY, {"page_size": 500}, what="preflight re-run")
        m["changed"] = 0
        return m, rerun

    def naive(self, rep):
        m = timed_play(self.cluster, self.ansible, PREFLIGHT_NAIVE, {}, what="naive preflight")
        failing = set(m["_result"].result_of("verdict")["msg"])
        wrong = [n for n, v in self.expected.items() if (n in failing) != (v == "fail")]
        assert not wrong, wrong[:5]
        return m

    def check(self, m, rerun):
        assert m["writes"] == 0 and rerun["writes"] == 0, (m["writes_by_resource"], rerun["writes_by_resource"])

    def _other_run(self, func):
        """``func()`` -> (seconds, the names of the nodes it judged failing); requests from the audit log (user
        admin); the verdicts checked against the shapes as the naive loop's (every failing node and no other)."""
        mark = self.cluster.audit.mark()
        wall, failing = func()
        reads, writes, dry = split(self.cluster.audit.events_since(mark))
        wrong = [n for n, v in self.expected.items() if (n in failing) != (v == "fail")]
        assert not wrong, wrong[:5]
        assert not writes, writes[:3]
        return {"wall_s": round(wall, 3), "reads": reads, "writes": 0, "dry_run_writes": dry,
                "writes_by_resource": {}, "changed": 0}

    def _limit_cycle(self, _prefix, concurrency):
        """The reads ours' module makes (preflight/runner.py: /apis, the nodes in pages of 500, the kube-proxy
        ConfigMap - EKS's name only when that is missing - and DaemonSet, Services, Pods, and the Calico and operator
        types /apis serves), by a bare client, ``concurrency`` collections at a time (a collection's pages one after
        another); every node judged by the module's own rules (node_rules.judge_node)."""
        node_rules, rules, runner = (collection_module("preflight." + m) for m in ("node_rules", "rules", "runner"))
        client = limit.BareClient(self.cluster.cp)

        def run():
            start = time.monotonic()
            _status, apis = client.request("GET", "/apis")
            groups = set(v["groupVersion"] for g in apis.get("groups") or [] for v in g.get("versions") or [])
            calico = runner.CALICO_V3_API if runner.CALICO_V3_API in groups else runner.CALICO_CRD_API
            lists = ["/api/v1/nodes", "/api/v1/services", "/api/v1/pods"]
            if calico in groups:
                lists += ["/apis/%s/%s" % (calico, plural)
                          for plural in ["felixconfigurations"] + [t[0] for t in runner.CALICO_POLICY_TYPES]]
            if runner.OPERATOR_API in groups:
                lists.append("/apis/%s/applicationlayers" % runner.OPERATOR_API)

            def kube_proxy():
                for name in runner.KUBE_PROXY_CONFIGMAPS:
                    if client.request("GET", "/api/v1/namespaces/kube-system/configmaps/" + name)[0] == 200:
                        break
                return client.request("GET", "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy")

            jobs = [lambda p=p: client.list(p) for p in lists] + [kube_proxy]
            with ThreadPoolExecutor(max(1, min(concurrency, len(jobs)))) as pool:
                out = list(pool.map(lambda job: job(), jobs))
            failing = set()
            for node in out[0]:
                facts = node_rules.node_facts(node)
                if rules.worst(node_rules.judge_node(facts, None).values()) == "fail":
                    failing.add(facts["name"])
            return time.monotonic() - start, failing
        return self._other_run(run)

    def kubectl(self, rep):
        script = HERE / "kubectl_bulk" / "preflight.sh"
        work = self._kubectl_work(rep)

        def run():
            start = time.monotonic()
            out = run_script(self.cluster, script, str(work))
            return time.monotonic() - start, set(line for line in out.split() if line)
        return self._other_run(run)


class OwnerReferences(LimitContender, Job):
    unit = "dependents"

    def setup(self, n):
        self.n = n
        self.bench = or_bench.Bench(self.cluster, n, max(1, min(50, n // 100)), self.workdir)
        self.bench.setup()

    def teardown(self):
        self.bench.cleanup()

    def _cycle(self, prefix, detach_play, attach_play, rerun):
        b = self.bench
        count = b.make_dependents(prefix)
        extra = {"record_ns": b.namespaces[0], "record_path": str(self.workdir / ("%s-%d-record.json" % (prefix, self.n)))}
        detach = timed_play(self.cluster, self.ansible, detach_play, dict(extra, state="detached"), what="detach")
        assert all(not or_bench.calico_refs(d) for d in b.dependents(prefix))
        b.replace_owners()
        attach = timed_play(self.cluster, self.ansible, attach_play, dict(extra, state="attached"), what="attach")
        b.verify(prefix, count)
        again = timed_play(self.cluster, self.ansible, attach_play, dict(extra, state="attached"),
                           what="attach re-run") if rerun else None
        dependents = sum(1 for p in (detach, attach) for w in p["_writes"]
                         if (w.get("objectRef") or {}).get("resource") == "configmaps"
                         and (w.get("objectRef") or {}).get("name", "").startswith(prefix + "-"))
        assert dependents == 2 * count, (dependents, count)  # every dependent written once per phase, no more
        m = combine(detach, attach)
        m.update({"changed": 2 * count, "dependent_writes": dependents, "record_writes": m["writes"] - dependents,
                  "detach": public(detach), "attach": public(attach)})
        for ns in b.namespaces:
            b.api.req("DELETE", or_bench.coll("v1", "configmaps", ns), query={"labelSelector": "bench=" + prefix})
        for cm in b.api.req("GET", or_bench.coll("v1", "configmaps", b.namespaces[0]))["items"]:
            if cm["metadata"]["name"].startswith("bench"):  # the module's record (record_name: bench)
                b.api.delete(or_bench.coll("v1", "configmaps", b.namespaces[0]) + "/" + cm["metadata"]["name"])
        return m, again

    def ours(self, rep):
        return self._cycle("o%d" % rep, or_bench.MODULE_PLAY, or_bench.MODULE_PLAY, True)

    def naive(self, rep):
        m, _ = self._cycle("l%d" % rep, or_bench.LOOP_DETACH, or_bench.LOOP_ATTACH, False)
        assert m["writes"] == m["changed"], m
        return m

    def _other_cycle(self, prefix, detach, attach):
        """detach() and attach() of a contender other than Ansible, timed apart (the owners' replacement between
        them is not), requests from the audit log (user admin); the same checks as ours'."""
        b = self.bench
        count = b.make_dependents(prefix)
        phases = []
        for phase, func in (("detach", detach), ("attach", attach)):
            if phase == "attach":
                assert all(not or_bench.calico_refs(d) for d in b.dependents(prefix))
                b.replace_owners()
            mark = self.cluster.audit.mark()
            wall = func(prefix)
            reads, writes, dry = split(self.cluster.audit.events_since(mark))
            phases.append({"wall_s": round(wall, 3), "reads": reads, "writes": len(writes), "dry_run_writes": dry,
                           "writes_by_resource": dict(collections.Counter(
                               (w.get("objectRef") or {}).get("resource") for w in writes))})
        b.verify(prefix, count)
        m = combine(*phases)
        m.update({"changed": 2 * count, "detach": phases[0], "attach": phases[1]})
        assert m["writes"] == 2 * count, m  # every dependent written once per phase
        for ns in b.namespaces:
            b.api.req("DELETE", or_bench.coll("v1", "configmaps", ns), query={"labelSelector": "bench=" + prefix})
        return m

    def _limit_cycle(self, prefix, concurrency):
        """The requests ours' module sends for the dependents, by a bare client: one LIST of the ConfigMaps, one
        guarded JSON patch per dependent (the module's own ops: owner_references/rules.py refs_patch), kept in
        memory instead of a record; at attach one LIST of the ConfigMaps and one of each owner kind."""
        refs_patch = collection_rules("owner_references").refs_patch
        accept = collection_module("k8s.client").ACCEPT_METADATA  # ours asks for the patched object's metadata
        client = limit.BareClient(self.cluster.cp)
        kept = {}

        def mine(ref_):
            return ref_.get("apiVersion") == or_bench.CALICO

        def detach(_prefix):
            start = time.monotonic()
            stream = []
            for cm in client.list("/api/v1/configmaps"):
                meta = cm["metadata"]
                refs = meta.get("ownerReferences") or []
                if any(mine(r) for r in refs):
                    kept[meta["uid"]] = refs
                    stream.append({"method": "PATCH", "content_type": "application/json-patch+json", "accept": accept,
                                   "path": "/api/v1/namespaces/%s/configmaps/%s" % (meta["namespace"], meta["name"]),
                                   "body": refs_patch(meta["uid"], refs, [r for r in refs if not mine(r)],
                                                      meta["resourceVersion"])})
            client.send(stream, concurrency)
            return time.monotonic() - start

        def attach(_prefix):
            start = time.monotonic()
            nps = dict(("%s/%s" % (o["metadata"]["namespace"], o["metadata"]["name"]), o["metadata"]["uid"])
                       for o in client.list("/apis/projectcalico.org/v3/networkpolicies"))
            gnps = dict((o["metadata"]["name"], o["metadata"]["uid"])
                        for o in client.list("/apis/projectcalico.org/v3/globalnetworkpolicies"))
            stream = []
            for cm in client.list("/api/v1/configmaps"):
                meta = cm["metadata"]
                if meta["uid"] not in kept:
                    continue
                new = [dict(r, uid=gnps[r["name"]] if r["kind"] == "GlobalNetworkPolicy"
                            else nps["%s/%s" % (meta["namespace"], r["name"])]) if mine(r) else r
                       for r in kept[meta["uid"]]]
                stream.append({"method": "PATCH", "content_type": "application/json-patch+json", "accept": accept,
                               "path": "/api/v1/namespaces/%s/configmaps/%s" % (meta["namespace"], meta["name"]),
                               "body": refs_patch(meta["uid"], meta.get("ownerReferences"), new,
                                                  meta["resourceVersion"])})
            client.send(stream, concurrency)
            return time.monotonic() - start

        return self._other_cycle(prefix, detach, attach)

    def kubectl(self, rep):
        script = HERE / "kubectl_bulk" / "owner_references.sh"
        work = self._kubectl_work(rep)
        record = work / "record.json"

        def phase(name):
            def run(_prefix):
                start = time.monotonic()
                run_script(self.cluster, script, name, str(record), str(work))
                return time.monotonic() - start
            return run
        return self._other_cycle("k%d" % rep, phase("detach"), phase("attach"))


class HostEndpointMigration(LimitContender, Job):
    unit = "endpoints"

    def setup(self, n):
        self.n = n
        self.bench = hep_bench.Bench(self.cluster, n, self.workdir)
        self.bench.setup()

    def teardown(self):
        self.bench.cleanup()

    def _reset(self, round_name):
        """The previous round's labels off the nodes (else they conflict with the new values), then a fresh start."""
        b = self.bench
        keys = list(b.labels(round_name, b.nodes[0]))

        def strip(node):
            b.api.req("PATCH", "/api/v1/nodes/" + node, {"metadata": {"labels": dict.fromkeys(keys)}},
                      ctype="application/merge-patch+json")
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(strip, b.nodes))
        b.reset(round_name, b.nodes)

    def _round(self, round_name, play, extra, rerun):
        b = self.bench
        self._reset(round_name)
        # the real calico-kube-controllers (its requests are its ServiceAccount's: not counted, only admin's are)
        with hep_bench.KubeControllers(self.cluster):
            m = timed_play(self.cluster, self.ansible, play, extra, what=round_name)
            again = timed_play(self.cluster, self.ansible, play, extra, what=round_name + " re-run") if rerun else None
        b.verify(round_name, b.nodes)
        by = m["writes_by_resource"]
        target = by.get("nodes", 0) + by.get("hostendpoints", 0) + by.get("kubecontrollersconfigurations", 0)
        # one label patch per node, one delete per old endpoint, KubeControllersConfiguration once
        assert target == 2 * self.n + 1, ("writes to nodes/host endpoints/KubeControllersConfiguration", target,
                                          "expected", 2 * self.n + 1, by, "reads", m["reads"], "wall", m["wall_s"])
        m.update({"changed": 2 * self.n + 1, "record_writes": m["writes"] - target})
        return m, again

    def ours(self, rep):
        b = self.bench
        return self._round("m%d" % rep, hep_bench.MODULE_PLAY, {
            "record_ns": b.record_ns, "record_name": "bench-%s-%d" % (b.tag, rep),
            "record_path": str(self.workdir / ("hep-record-%d-%d.json" % (self.n, rep)))}, True)

    def naive(self, rep):
        m, _ = self._round("l%d" % rep, hep_bench.LOOP_PLAY, {"loop_nodes": self.bench.nodes}, False)
        return m

    def _other_round(self, round_name, func):
        """``func(round_name)`` -> seconds, with the real calico-kube-controllers running; requests from the audit log
        (user admin); the same checks as ours'."""
        b = self.bench
        self._reset(round_name)
        with hep_bench.KubeControllers(self.cluster):
            mark = self.cluster.audit.mark()
            wall = func(round_name)
            reads, writes, dry = split(self.cluster.audit.events_since(mark))
        b.verify(round_name, b.nodes)
        by = dict(collections.Counter((w.get("objectRef") or {}).get("resource") for w in writes))
        target = by.get("nodes", 0) + by.get("hostendpoints", 0) + by.get("kubecontrollersconfigurations", 0)
        assert target == 2 * self.n + 1, ("writes to nodes/host endpoints/KubeControllersConfiguration", target, by)
        return {"wall_s": round(wall, 3), "reads": reads, "writes": len(writes), "dry_run_writes": dry,
                "writes_by_resource": by, "changed": 2 * self.n + 1}

    def _limit_cycle(self, round_name, concurrency):
        """The requests ours' module sends, by a bare client: the endpoints and nodes listed once, one guarded JSON
        patch of each node's labels (the module's own ops: host_endpoints/rules.py label_patch), the
        KubeControllersConfiguration patch, the endpoints listed every second until calico-kube-controllers has
        made every node's automatic endpoint with the labels (as ours' poll_interval 1), one DELETE per old endpoint
        with its UID as precondition."""
        rules = collection_rules("host_endpoints")
        from kube_controllers import calico_labels
        client = limit.BareClient(self.cluster.cp)
        mine = set(self.bench.nodes)
        heps_path = hep_bench.HEPS
        accept = collection_module("k8s.client").ACCEPT_METADATA  # ours asks for the patched node's metadata

        def run(rnd):
            start = time.monotonic()
            old = [h for h in client.list(heps_path) if h["spec"].get("interfaceName") == "*"
                   and not h["metadata"]["name"].endswith("-auto-hep") and h["spec"].get("node") in mine
                   and (h["metadata"].get("labels") or {}).get("bench-round") == rnd]
            nodes = dict((n["metadata"]["name"], n) for n in client.list("/api/v1/nodes"))
            stream = []
            for h in old:
                node = nodes[h["spec"]["node"]]["metadata"]
                stream.append({"method": "PATCH", "path": "/api/v1/nodes/" + node["name"],
                               "content_type": "application/json-patch+json", "accept": accept,
                               "body": rules.label_patch(node.get("labels"), h["metadata"]["labels"],
                                                         node["resourceVersion"])})
            client.send(stream, concurrency)
            client.send([{"method": "PATCH", "path": hep_bench.KCC, "content_type": "application/merge-patch+json",
                          "body": {"spec": {"controllers": {"node": {"hostEndpoint": {"autoCreate": "Enabled"}}}}}}], 1)
            want = dict((h["spec"]["node"], h["metadata"]["labels"]) for h in old)
            deadline = time.monotonic() + 600
            while True:
                auto = dict((h["spec"].get("node"), h) for h in client.list(heps_path)
                            if h["metadata"]["name"].endswith("-auto-hep"))
                if all(node in auto and all(calico_labels(auto[node]).get(k) == v for k, v in labels.items())
                       for node, labels in want.items()):
                    break
                assert time.monotonic() < deadline, "automatic endpoints missing after 600 s"
                time.sleep(1)
            client.send([{"method": "DELETE", "path": "%s/%s" % (heps_path, h["metadata"]["name"]),
                          "body": {"kind": "DeleteOptions", "apiVersion": "v1",
                                   "preconditions": {"uid": h["metadata"]["uid"]}}} for h in old], concurrency)
            return time.monotonic() - start

        return self._other_round(round_name, run)

    def kubectl(self, rep):
        script = HERE / "kubectl_bulk" / "host_endpoint_migration.sh"
        work = self._kubectl_work(rep)

        def run(rnd):
            start = time.monotonic()
            run_script(self.cluster, script, rnd, str(work))
            return time.monotonic() - start
        return self._other_round("k%d" % rep, run)


INSTALL_NAIVE = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    base: "{{ manifest_url }}/v3.31.4/manifests"
  tasks:
    - name: Download the release files
      ansible.builtin.get_url:
        url: "{{ base }}/{{ item }}"
        dest: "{{ dir }}/{{ item }}"
        mode: "0644"
      loop: [operator-crds.yaml, tigera-operator.yaml, custom-resources.yaml]
    - name: Operator namespace
      kubernetes.core.k8s:
        definition: {apiVersion: v1, kind: Namespace, metadata: {name: tigera-operator}}
    - name: API server endpoint ConfigMap
      kubernetes.core.k8s:
        definition:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: kubernetes-services-endpoint, namespace: tigera-operator}
          data: {KUBERNETES_SERVICE_HOST: api.cluster.example, KUBERNETES_SERVICE_PORT: "6443"}
    - name: CRDs and operator
      kubernetes.core.k8s:
        src: "{{ dir }}/{{ item }}"
      loop: [operator-crds.yaml, tigera-operator.yaml]
    - name: Wait for the Installation CRD
      kubernetes.core.k8s_info:
        kind: CustomResourceDefinition
        name: installations.operator.tigera.io
        wait: true
        wait_condition: {type: Established}
    - name: Custom resources
      kubernetes.core.k8s:
        src: "{{ dir }}/custom-resources.yaml"
    - name: eBPF data plane
      kubernetes.core.k8s:
        state: patched
        api_version: operator.tigera.io/v1
        kind: Installation
        name: default
        merge_type: merge
        definition: {spec: {calicoNetwork: {linuxDataplane: BPF, hostPorts: null}}}
    - name: kube-proxy out of the way
      kubernetes.core.k8s:
        state: patched
        api_version: apps/v1
        kind: DaemonSet
        namespace: kube-system
        name: kube-proxy
        merge_type: strategic-merge
        definition: {spec: {template: {spec: {nodeSelector: {non-calico: "true"}}}}}
"""

KUBE_PROXY = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kube-proxy", "namespace": "kube-system"},
     "data": {"config.conf": "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n"
                             "mode: iptables\n"}},
    {"apiVersion": "apps/v1", "kind": "DaemonSet",
     "metadata": {"name": "kube-proxy", "namespace": "kube-system", "labels": {"k8s-app": "kube-proxy"}},
     "spec": {"selector": {"matchLabels": {"k8s-app": "kube-proxy"}},
              "template": {"metadata": {"labels": {"k8s-app": "kube-proxy"}},
                           "spec": {"nodeSelector": {"kubernetes.io/os": "linux"}, "tolerations": [{"operator": "Exists"}],
                                    "containers": [{"name": "kube-proxy", "image": "registry.k8s.io/kube-proxy:v1.33.13"}]}}}},
]


class InstallEbpf(CapturedLimit, Job):
    unit = "nodes (whole install)"

    def size(self, n):
        return len(json.loads(self.cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"])

    def _clean(self):
        import calico_support
        inst = calico_support.Install(self.cluster)
        inst.forget_later("v3.31.4", "operator-crds.yaml")
        inst.forget_later("v3.31.4", "tigera-operator.yaml")
        inst.cleanup()
        self.cluster.kubectl("delete", "daemonset,configmap", "kube-proxy", "-n", "kube-system", "--ignore-not-found",
                             check=False)
        self.cluster.apply(yaml.safe_dump_all(KUBE_PROXY))

    def teardown(self):
        self._clean()
        self.cluster.kubectl("delete", "daemonset,configmap", "kube-proxy", "-n", "kube-system", "--ignore-not-found",
                             check=False)

    def _vars(self, rep):
        return {"ebpf_install_variant": "Calico", "ebpf_install_manifest_url": self.cluster.mirror_url,
                "ebpf_install_platform": "kubeadm", "ebpf_install_wait": False,
                "ebpf_install_artifacts_dir": str(self.workdir / ("artifacts-%d" % rep)),
                "ebpf_install_timeout": 120, "ebpf_install_poll_interval": 2,
                "services_endpoint_host": "api.cluster.example", "services_endpoint_port": 6443,
                "preflight_report_dir": str(self.workdir / ("report-%d" % rep))}

    def _check_bpf(self):
        """The Installation asks for the eBPF data plane (the end state every contender must reach)."""
        inst = json.loads(self.cluster.kubectl("get", "installation", "default", "-o", "json").stdout)
        assert inst["spec"]["calicoNetwork"]["linuxDataplane"] == "BPF"

    def _excluding_waits(self, m):
        waits = wait_seconds(m["_result"].data)
        m["profile"] = task_profile(m["_result"].data, exclude=r"\bwait")
        m["wall_with_waits_s"] = m["wall_s"]
        m["wait_tasks_s"] = round(waits, 2)
        m["wall_s"] = round(m["wall_s"] - waits, 2)
        return m

    def ours(self, rep):
        self._clean()
        m = self._excluding_waits(timed_play(self.cluster, self.ansible, "playbooks/install_ebpf.yml", self._vars(rep),
                                             what="install_ebpf.yml"))
        self._check_bpf()
        rerun = timed_play(self.cluster, self.ansible, "playbooks/install_ebpf.yml", self._vars(rep),
                           what="install_ebpf.yml re-run")
        m["changed"] = written_objects(m)
        return m, rerun

    def _capture_run(self, env):
        self._clean()
        res = self.ansible.playbook("playbooks/install_ebpf.yml", extra_vars=self._vars(99), env=env, timeout=1800)
        if res.rc != 0:
            raise RuntimeError("install_ebpf.yml (capture) failed:\n%s\n%s" % (res.stdout[-5000:], res.stderr[-3000:]))
        return res

    def _replay_cycle(self, stream, concurrency):
        self._clean()
        return self._replayed(stream, concurrency, self._check_bpf)

    def naive(self, rep):
        self._clean()
        d = self.workdir / ("naive-%d" % rep)
        d.mkdir(exist_ok=True)
        m = self._excluding_waits(timed_play(self.cluster, self.ansible, INSTALL_NAIVE,
                                             {"manifest_url": self.cluster.mirror_url, "dir": str(d)},
                                             what="naive install"))
        self._check_bpf()
        return m

    def _script_run(self, script, args, check):
        """A kubectl bulk script (benchmarks/kubectl_bulk/) timed, its own waits (``wait_s`` it prints) subtracted
        as ours' tasks named "wait" are; requests from the audit log (user admin); ``check()`` after it."""
        mark = self.cluster.audit.mark()
        start = time.monotonic()
        out = run_script(self.cluster, HERE / "kubectl_bulk" / script, *args)
        wall = time.monotonic() - start
        waits = sum(float(line.split()[1]) for line in out.splitlines() if line.startswith("wait_s "))
        return measured(self.cluster, mark, wall, waits, check)

    def kubectl(self, rep):
        """Calico's documented install scripted with kubectl (benchmarks/kubectl_bulk/install_ebpf.sh)."""
        self._clean()
        work = self._kubectl_work(rep)

        v = self._vars(rep)
        return self._script_run("install_ebpf.sh", ["%s/v3.31.4/manifests" % v["ebpf_install_manifest_url"],
                                                    v["services_endpoint_host"], str(v["services_endpoint_port"]),
                                                    str(work)], self._check_bpf)


UPGRADE_NAIVE = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Download the target release's manifest
      ansible.builtin.get_url:
        url: "{{ manifest_url }}/{{ target }}/manifests/calico.yaml"
        dest: "{{ dir }}/calico.yaml"
        mode: "0644"
    - name: Apply it
      kubernetes.core.k8s:
        src: "{{ dir }}/calico.yaml"
"""


def written_objects(m):
    """Distinct objects the run wrote (resource, namespace, name)."""
    return len(set(((w.get("objectRef") or {}).get("resource"), (w.get("objectRef") or {}).get("namespace"),
                    (w.get("objectRef") or {}).get("name")) for w in m["_writes"]))


class Upgrade(InstallEbpf):
    """playbooks/upgrade.yml, manifest install (calico.yaml) from SOURCE to TARGET of tests/integration/calico_support.py,
    calico-node's ClusterInformation report played by its CalicoNodeStandIn; the time of the tasks named "wait"
    (rollout, cluster version, TigeraStatus) subtracted. Naive: kubernetes.core.k8s ``src:`` of the target manifest."""
    unit = "nodes (whole upgrade)"

    def _install(self):
        import calico_support as cs
        self.cs = cs
        cs.wipe_calico(self.cluster)
        self.inst = cs.Install(self.cluster)
        self.inst.apply_release(cs.SOURCE, "calico.yaml")
        self.inst.forget_later(cs.TARGET, "calico.yaml")
        cs.wait_daemonset(self.cluster, "calico-node")

    def teardown(self):
        pass

    def _check(self):
        ds = self.cs.get(self.cluster, "apps/v1", "DaemonSet", "calico-node", "kube-system")
        assert self.cs.image_tag(ds["spec"]["template"]["spec"]["containers"][0]["image"]) == self.cs.TARGET

    def _upgrade_vars(self, rep, suffix):
        out = {"upgrade_manifest_url": self.cluster.mirror_url, "upgrade_chart_repo_url": self.cluster.chart_repo_url,
               "upgrade_artifacts_dir": str(self.workdir / ("artifacts-%s-%d" % (suffix, rep))),
               "upgrade_timeout": 300, "upgrade_poll_interval": 1,
               "upgrade_record_name": "calico-ops-upgrade-bench-%s%d" % (suffix, rep),
               "upgrade_owner_references_record_name": "calico-ops-owner-refs-bench-%s%d" % (suffix, rep),
               "upgrade_owner_references_record_path": str(self.workdir / ("owner-references-%s-%d.json" % (suffix, rep)))}
        self.inst.configmaps += [("kube-system", out["upgrade_record_name"]),
                                 ("kube-system", out["upgrade_owner_references_record_name"])]
        return out

    def ours(self, rep):
        self._install()
        try:
            variables = self._upgrade_vars(rep, "o")
            with self.cs.CalicoNodeStandIn(self.cluster, daemonset="calico-node"):
                self._source_reported()
                m = self._excluding_waits(timed_play(self.cluster, self.ansible, "playbooks/upgrade.yml", variables,
                                                     what="upgrade.yml"))
                rerun = timed_play(self.cluster, self.ansible, "playbooks/upgrade.yml", variables, what="upgrade.yml re-run")
            self._check()
            self._account(m)
            return m, rerun
        finally:
            self.inst.cleanup()

    def _capture_run(self, env):
        self._install()
        try:
            variables = self._upgrade_vars(0, "c")
            self._limit_state_records = [("kube-system", variables["upgrade_record_name"]),
                                         ("kube-system", variables["upgrade_owner_references_record_name"])]
            with self.cs.CalicoNodeStandIn(self.cluster, daemonset="calico-node"):
                self._source_reported()
                res = self.ansible.playbook("playbooks/upgrade.yml", extra_vars=variables, env=env, timeout=1800)
            if res.rc != 0:
                raise RuntimeError("upgrade.yml (capture) failed:\n%s\n%s" % (res.stdout[-5000:], res.stderr[-3000:]))
            self._check()
            return res
        finally:
            self.inst.cleanup()

    def _source_reported(self):
        self.cluster.wait_for(lambda: (self.cs.get(self.cluster, self.cs.CRD_API, "ClusterInformation", "default")
                                       or {}).get("spec", {}).get("calicoVersion") == self.cs.SOURCE,
                              timeout=60, what="ClusterInformation")

    def _replay_cycle(self, stream, concurrency):
        self._install()
        self.inst.configmaps += self._limit_state_records  # the captured run's records, written again
        try:
            with self.cs.CalicoNodeStandIn(self.cluster, daemonset="calico-node"):
                self._source_reported()
                m = self._replayed(stream, concurrency, self._check)
            self._drop_stand_in(m)
            records = [w for w in m["_writes"] if self._is_record(w)]
            m["record_writes"] = len(records)
            m["changed"] = written_objects({"_writes": [w for w in m["_writes"] if w not in records]})
            return m
        finally:
            self.inst.cleanup()

    @staticmethod
    def _is_record(write):
        """A write of the upgrade's own records (ConfigMaps calico-ops-*), not of Calico's objects."""
        ref = write.get("objectRef") or {}
        return ref.get("resource") == "configmaps" and (ref.get("name") or "").startswith("calico-ops-")

    @staticmethod
    def _drop_stand_in(m):
        """calico-node's stand-in reports the version in ClusterInformation, as calico-node would: its writes are
        not the contender's, so they leave ``m``'s writes (counted in ``stand_in_writes``)."""
        stand_in = [w for w in m["_writes"] if (w.get("objectRef") or {}).get("resource") == "clusterinformations"]
        m["_writes"] = [w for w in m["_writes"] if w not in stand_in]
        m["writes"] -= len(stand_in)
        m["stand_in_writes"] = len(stand_in)

    @staticmethod
    def _account(m):
        """Writes = objects changed (each once) + field handovers (a second write of an object whose installer
        owned a field the new release dropped) + the upgrade's own records; asserted. ClusterInformation is
        written by calico-node's stand-in (as calico-node would), not by the upgrade: left out."""
        Upgrade._drop_stand_in(m)
        records = [w for w in m["_writes"] if Upgrade._is_record(w)]
        objects = [w for w in m["_writes"] if w not in records]
        handover = task_result(m["_result"].data, "Hand the installer's fields over")
        counts = (handover or {}).get("counts") or {}
        m["changed"] = written_objects({"_writes": objects})
        m.update({"record_writes": len(records), "handover_writes": counts.get("adopted", 0),
                  "handover_skipped": counts.get("covered", 0)})
        assert len(objects) == m["changed"] + m["handover_writes"], (
            len(objects), m["changed"], m["handover_writes"], collections.Counter(
                ((w.get("objectRef") or {}).get("resource"), (w.get("objectRef") or {}).get("name")) for w in objects))

    def naive(self, rep):
        self._install()
        try:
            d = self.workdir / ("naive-%d" % rep)
            d.mkdir(exist_ok=True)
            m = timed_play(self.cluster, self.ansible, UPGRADE_NAIVE, {"manifest_url": self.cluster.mirror_url,
                                                                       "target": self.cs.TARGET, "dir": str(d)},
                           what="naive upgrade")
            self._check()
            m["changed"] = written_objects(m)
            return m
        finally:
            self.inst.cleanup()

    def kubectl(self, rep):
        """Calico's documented manifest upgrade scripted with kubectl (benchmarks/kubectl_bulk/upgrade.sh), with
        calico-node's stand-in reporting the version as for ours; its ClusterInformation write is not counted."""
        self._install()
        try:
            work = self._kubectl_work(rep)
            with self.cs.CalicoNodeStandIn(self.cluster, daemonset="calico-node"):
                self._source_reported()
                m = self._script_run("upgrade.sh", ["%s/%s/manifests/calico.yaml" % (self.cluster.mirror_url,
                                                                                     self.cs.TARGET),
                                                    self.cs.TARGET, str(work)], self._check)
            self._drop_stand_in(m)
            m["changed"] = written_objects(m)
            return m
        finally:
            self.inst.cleanup()


MIGRATE_NAIVE = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Lock the etcd datastore
      ansible.builtin.command: "{{ calicoctl }} datastore migrate lock --config {{ etcd_cfg }}"
    - name: Export it
      ansible.builtin.shell: "{{ calicoctl }} datastore migrate export --config {{ etcd_cfg }} > {{ dir }}/etcd-data"
    - name: Import it
      ansible.builtin.command: "{{ calicoctl }} datastore migrate import -f {{ dir }}/etcd-data --config {{ kdd_cfg }}"
    - name: Apply calico.yaml
      ansible.builtin.command: "{{ kubectl }} --kubeconfig {{ kubeconfig }} apply -f {{ manifest_url }}/{{ version }}/manifests/calico.yaml"
    - name: Wait for the rollout of calico-node
      ansible.builtin.command: "{{ kubectl }} --kubeconfig {{ kubeconfig }} -n kube-system rollout status ds/calico-node --timeout=600s"
    - name: Unlock the Kubernetes datastore
      ansible.builtin.command: "{{ calicoctl }} datastore migrate unlock --config {{ kdd_cfg }}"
"""


class DatastoreMigration(InstallEbpf):
    """playbooks/migrate_datastore.yml on a manifest install (calico-etcd.yaml v3.31.4 on the control plane's own
    etcd) holding the seed of tests/integration/test_datastore_migration.py and one Calico Node per Kubernetes
    node (N nodes), with real calicoctl; calico-node's ClusterInformation report played by its stand-in; the time
    of the tasks named "wait" (calico-node's rollout) subtracted. Naive: Calico's documented sequence scripted
    (calicoctl lock, export, import, kubectl apply calico.yaml, rollout status, unlock), without the preflight,
    records and verification. calicoctl's requests to etcd do not reach the audit log (etcd has none); its requests
    to the API server do (user admin)."""
    unit = "nodes (whole migration)"

    def size(self, n):
        return n

    def setup(self, n):
        self.n = n
        have = len(json.loads(self.cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"])
        self.specs = []
        if have < n:
            self.specs, _expected = pf_bench.specs(self.cluster, n - have, os.urandom(2).hex())
            self.cluster.add_nodes(self.specs, timeout=1800)

    def teardown(self):
        if self.specs:
            self.cluster.remove_nodes([s["metadata"]["name"] for s in self.specs])

    def _migration(self, rep):
        import calico_support as cs
        from test_datastore_migration import Migration
        d = self.workdir / ("migration-%d-%s" % (rep, os.urandom(2).hex()))
        d.mkdir()
        m = Migration(self.cluster, d).setup(nodes=self.n)
        return cs, m

    def _run(self, rep, play, variables, what):
        cs, mig = self._migration(rep)
        try:
            with cs.CalicoNodeStandIn(self.cluster):
                self.cluster.wait_for(lambda: mig.cluster_version() == "v3.31.4", timeout=120,
                                      what="calico-node's ClusterInformation in etcd")
                m = self._excluding_waits(timed_play(self.cluster, self.ansible, play, variables(mig), what=what))
                rerun = (timed_play(self.cluster, self.ansible, play, variables(mig), what=what + " re-run")
                         if play == "playbooks/migrate_datastore.yml" else None)
            assert mig.node_env().get("DATASTORE_TYPE") == "kubernetes" and not mig.locked("kdd")
            assert len(mig.objects("nodes", "kdd")) >= self.n
            m["changed"] = written_objects(m)
            return m, rerun
        finally:
            mig.cleanup()

    def ours(self, rep):
        return self._run(rep, "playbooks/migrate_datastore.yml",
                         lambda mig: mig.variables(datastore_migration_timeout=600), "migrate_datastore.yml")

    def naive(self, rep):
        def variables(mig):
            return {"calicoctl": mig.calicoctl, "etcd_cfg": str(mig.etcd_cfg), "kdd_cfg": str(mig.kdd_cfg),
                    "dir": str(mig.tmp), "kubeconfig": str(self.cluster.kubeconfig),
                    "kubectl": self.cluster.bin("kubectl"),
                    "manifest_url": self.cluster.mirror_url, "version": "v3.31.4"}
        return self._run(rep, MIGRATE_NAIVE, variables, "naive migration")[0]


OPERATOR_NAIVE = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Install the operator (operator-crds.yaml and tigera-operator.yaml of the running release)
      ansible.builtin.command: >-
        {{ kubectl }} --kubeconfig {{ kubeconfig }} apply --server-side --force-conflicts
        -f {{ manifest_url }}/{{ version }}/manifests/operator-crds.yaml
        -f {{ manifest_url }}/{{ version }}/manifests/tigera-operator.yaml
    - name: Create the Installation (spec {}, the operator fills it from the running install)
      ansible.builtin.shell: >-
        printf '%s' '{"apiVersion": "operator.tigera.io/v1", "kind": "Installation", "metadata": {"name": "default"},
        "spec": {}}' | {{ kubectl }} --kubeconfig {{ kubeconfig }} create -f -
    - name: Wait for TigeraStatus calico to be Available
      ansible.builtin.command: >-
        {{ kubectl }} --kubeconfig {{ kubeconfig }} wait --for=condition=Available tigerastatus/calico --timeout=10s
      register: available
      until: available.rc == 0
      retries: 120
      delay: 5
    - name: Wait until the manifest's calico-node is gone
      ansible.builtin.command: >-
        {{ kubectl }} --kubeconfig {{ kubeconfig }} -n kube-system wait --for=delete ds/calico-node --timeout=600s
"""


class OperatorMigration(DatastoreMigration):
    """playbooks/migrate_to_operator.yml on a manifest install (calico.yaml v3.31.4 with the MTU, a Felix setting
    and the autodetection method changed, and policies of every kind: tests/integration/test_operator_migration.py's
    ``_manifest_install``) with N nodes; the real operator v1.40.7 moves calico-node node by node. The time of the
    tasks named "wait" (the operator's Deployment, TigeraStatus, the move, the rollout) is subtracted: that is the
    operator's time. Naive: Calico's documented steps scripted (apply the operator's files, create Installation
    ``default`` with ``spec: {}``, wait for TigeraStatus and for the manifest's calico-node to go), without the
    comparison with the release, the record, the verification or the clean-up."""
    unit = "nodes (whole move)"

    def _run(self, rep, play, variables, what):
        import test_operator_migration as om
        om._wipe(self.cluster)
        try:
            om._manifest_install(self.cluster)
            m = self._excluding_waits(timed_play(self.cluster, self.ansible, play, variables(rep), what=what))
            rerun = (timed_play(self.cluster, self.ansible, play, variables(rep), what=what + " re-run")
                     if play == om.PLAYBOOK else None)
            assert om._maybe(self.cluster, "daemonset", "calico-node", "-n", "kube-system") is None
            node = om._get(self.cluster, "daemonset", "calico-node", "-n", "calico-system")
            assert node["status"]["numberReady"] >= self.n, node["status"]
            m["changed"] = written_objects(m)
            return m, rerun
        finally:
            om._wipe(self.cluster)

    def ours(self, rep):
        import test_operator_migration as om
        return self._run(rep, om.PLAYBOOK, lambda r: {
            "operator_migration_manifest_url": self.cluster.mirror_url, "operator_migration_timeout": 900,
            "operator_migration_poll_interval": 2,
            "operator_migration_artifacts_dir": str(self.workdir / ("artifacts-%d" % r))}, "migrate_to_operator.yml")

    def naive(self, rep):
        return self._run(rep, OPERATOR_NAIVE, lambda r: {
            "kubectl": self.cluster.bin("kubectl"), "kubeconfig": str(self.cluster.kubeconfig),
            "manifest_url": self.cluster.mirror_url, "version": "v3.31.4"}, "naive operator migration")[0]


DISABLE_NAIVE = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Put kube-proxy back on its nodes (the nodeSelector key non-calico removed)
      ansible.builtin.command: >-
        {{ kubectl }} --kubeconfig {{ kubeconfig }} -n kube-system patch daemonset kube-proxy --type merge
        -p '{"spec": {"template": {"spec": {"nodeSelector": {"non-calico": null}}}}}'
    - name: Wait for kube-proxy to be ready on every node
      ansible.builtin.command: >-
        {{ kubectl }} --kubeconfig {{ kubeconfig }} -n kube-system rollout status daemonset/kube-proxy --timeout=600s
    - name: Switch Installation default to the Iptables data plane
      ansible.builtin.command: >-
        {{ kubectl }} --kubeconfig {{ kubeconfig }} patch installation.operator.tigera.io default --type merge
        -p '{"spec": {"calicoNetwork": {"linuxDataplane": "Iptables"}}}'
    - name: Wait for TigeraStatus calico to be Available
      ansible.builtin.command: >-
        {{ kubectl }} --kubeconfig {{ kubeconfig }} wait --for=condition=Available tigerastatus/calico --timeout=10s
      register: available
      until: available.rc == 0
      retries: 120
      delay: 5
"""


class DisableEbpf(DatastoreMigration):
    """playbooks/disable_ebpf.yml on an eBPF install of install_ebpf.yml (open source, the ConfigMap path, kube-proxy
    kept off its nodes by the nodeSelector non-calico; the real operator v1.40.7 reconciles it) with N nodes.
    Each run starts from a fresh install (not timed). The time of the tasks named "wait" (kube-proxy's pods on every
    node, TigeraStatus) is subtracted from both. Naive: the reverse of Calico's "Enabling the eBPF data plane"
    scripted with kubectl (patch kube-proxy's nodeSelector, rollout status, patch the Installation to Iptables, wait
    for TigeraStatus calico), without ours' preflight (who set bpfEnabled, the platform), the readiness check before
    the switch, the check that the operator saw the new generation, or the summary."""
    unit = "nodes (whole rollback)"

    def setup(self, n):
        """N nodes the preflight passes (Ubuntu, amd64): the install must go through."""
        self.n = n
        have = len(json.loads(self.cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"])
        tag = os.urandom(2).hex()
        self.specs = [self.cluster.node_spec("rb-%s-%04d" % (tag, i)) for i in range(max(0, n - have))]
        if self.specs:
            self.cluster.add_nodes(self.specs, timeout=1800)

    def _install(self, rep):
        self._clean()
        d = self.workdir / ("install-%d-%s" % (rep, os.urandom(2).hex()))
        d.mkdir()
        install = self._vars(rep)
        install.update({"ebpf_install_wait": True, "ebpf_install_timeout": 900, "ebpf_install_apiserver": False,
                        "ebpf_install_goldmane": False, "ebpf_install_whisker": False,
                        "ebpf_install_artifacts_dir": str(d / "artifacts"), "preflight_report_dir": str(d / "report")})
        res = self.ansible.playbook("playbooks/install_ebpf.yml", extra_vars=install, timeout=1800)
        if res.rc != 0:
            raise RuntimeError("install_ebpf.yml failed:\n%s\n%s" % (res.stdout[-5000:], res.stderr[-3000:]))

    def _rolled_back(self):
        inst = json.loads(self.cluster.kubectl("get", "installation", "default", "-o", "json").stdout)
        assert inst["spec"]["calicoNetwork"]["linuxDataplane"] == "Iptables", inst["spec"]
        ds = json.loads(self.cluster.kubectl("get", "daemonset", "kube-proxy", "-n", "kube-system", "-o", "json").stdout)
        assert "non-calico" not in (ds["spec"]["template"]["spec"].get("nodeSelector") or {})
        assert ds["status"]["numberReady"] >= self.n, ds["status"]

    def _variables(self):
        return {"ebpf_rollback_platform": "kubeadm", "ebpf_rollback_timeout": 900, "ebpf_rollback_poll_interval": 2,
                "kube_proxy_timeout": 900, "kube_proxy_poll_interval": 2}

    def ours(self, rep):
        self._install(rep)
        m = self._excluding_waits(timed_play(self.cluster, self.ansible, "playbooks/disable_ebpf.yml",
                                             self._variables(), what="disable_ebpf.yml"))
        self._rolled_back()
        rerun = timed_play(self.cluster, self.ansible, "playbooks/disable_ebpf.yml", self._variables(),
                           what="disable_ebpf.yml re-run")
        m["changed"] = written_objects(m)
        return m, rerun

    def naive(self, rep):
        self._install(rep)
        m = self._excluding_waits(timed_play(self.cluster, self.ansible, DISABLE_NAIVE, {
            "kubectl": self.cluster.bin("kubectl"), "kubeconfig": str(self.cluster.kubeconfig)}, what="naive rollback"))
        self._rolled_back()
        m["changed"] = written_objects(m)
        return m

    def teardown(self):
        self._clean()
        DatastoreMigration.teardown(self)


JOBS = {"preflight": Preflight, "owner_references": OwnerReferences,
        "host_endpoint_migration": HostEndpointMigration, "install_ebpf": InstallEbpf, "upgrade": Upgrade,
        "datastore_migration": DatastoreMigration, "operator_migration": OperatorMigration, "disable_ebpf": DisableEbpf}


# -- orchestration ------------------------------------------------------------------------------------------

def summarise(runs, key="wall_s"):
    last = runs[-1]
    out = {"runs_s": [r[key] for r in runs], "median_s": round(report.median([r[key] for r in runs]), 2)}
    for k in ("reads", "writes", "dry_run_writes", "changed", "record_writes", "handover_writes", "handover_skipped",
              "stand_in_writes"):
        if k in last:
            out[k] = last[k]
            values = set(r.get(k) for r in runs)
            if len(values) > 1:
                out[k + "_per_run"] = [r.get(k) for r in runs]
    out["runs"] = [public(r) for r in runs]
    return out


def log(msg):
    print("[bench %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def run_job(name, cluster, sizes, repeat, budget, workroot, previous=None, contenders=("ours", "naive")):
    """Yields (N, row) per size. ``previous``: this job's rows of an earlier run, whose measured naive medians
    the predictions start from too (a run of only the larger sizes). A contender left out of ``contenders`` is
    not run: its figures of ``previous`` are kept (each keeps its own ``measured_at``)."""
    job = JOBS[name](cluster, Path(tempfile.mkdtemp(prefix=name + "-", dir=str(workroot))))
    naive_measured = dict((int(n), row["naive"]["median_s"]) for n, row in (previous or {}).items()
                          if (row.get("naive") or {}).get("median_s") is not None)
    rows, done = {}, set()
    for requested in sizes:
        n = job.size(requested)
        if n in done:
            continue
        done.add(n)
        row = {"n": n, "unit": job.unit}
        kept = (previous or {}).get(str(n)) or {}
        log("%s N=%d: setup" % (name, n))
        started = time.monotonic()
        job.setup(n)
        row["setup_s"] = round(time.monotonic() - started, 1)
        try:
            runs, reruns = [], []
            for rep in range(repeat if "ours" in contenders else 0):
                m, rerun = job.ours(rep)
                job.check(m, rerun)
                runs.append(m)
                reruns.append(rerun)
                log("%s N=%d ours #%d: %.2fs, %d reads / %d writes; re-run %d writes" % (
                    name, n, rep + 1, m["wall_s"], m["reads"], m["writes"], rerun["writes"]))
            if runs and all((m.get("profile") or {}).get("floor_tasks") for m in runs):
                costs = ansible_costs(job.cluster, job.ansible)
                for m in runs:
                    m["ansible_floor_s"] = ansible_floor(m["profile"], costs)
            if runs:
                row["ours"] = summarise(runs)
                if "ansible_floor_s" in runs[0]:
                    row["ours"]["ansible_floor_s"] = round(report.median([m["ansible_floor_s"] for m in runs]), 2)
                    row["ours"]["ansible_costs"] = costs
                    log("%s N=%d ours: Ansible floor %.2fs (%s)" % (name, n, row["ours"]["ansible_floor_s"], costs))
                row["ours"]["rerun_writes"] = max(r["writes"] for r in reruns)
                row["ours"]["rerun_reads"] = reruns[-1]["reads"]
                row["ours"]["rerun_median_s"] = round(report.median([r["wall_s"] for r in reruns]), 2)
                row["ours"]["measured_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
                row["ours"]["loadavg_end"] = os.getloadavg()
            elif kept.get("ours"):
                row["ours"] = kept["ours"]
            skip, predicted, base = report.should_skip(naive_measured, n, budget)
            if "naive" not in contenders:
                if (kept.get("naive") or {}).get("median_s") is not None:
                    row["naive"] = kept["naive"]
                elif predicted is not None:  # a prediction again, from what is measured now
                    row["naive"] = {"predicted_s": round(predicted, 1), "from_n": base, "prediction": True,
                                    "not_measured": "not run (--contenders %s); predicted %.0f s from the per-object "
                                                    "rate at N=%d" % (",".join(contenders), predicted, base)}
            elif skip:
                row["naive"] = {"predicted_s": round(predicted, 1), "from_n": base, "prediction": True,
                                "not_measured": "predicted %.0f s > budget %.0f s (per-object rate at N=%d)" % (
                                    predicted, budget, base)}
                log("%s N=%d naive: not run, predicted ~%.0fs" % (name, n, predicted))
            else:
                nruns = []
                for rep in range(repeat):
                    m = job.naive(rep)
                    nruns.append(m)
                    log("%s N=%d naive #%d: %.2fs, %d reads / %d writes" % (
                        name, n, rep + 1, m["wall_s"], m["reads"], m["writes"]))
                row["naive"] = summarise(nruns)
                row["naive"]["measured_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
                row["naive"]["loadavg_end"] = os.getloadavg()
                if predicted is not None:
                    row["naive"]["predicted_before_run_s"] = round(predicted, 1)
                naive_measured[n] = row["naive"]["median_s"]
            for extra in OTHER_CONTENDERS:
                if extra in contenders and hasattr(job, extra):
                    xruns = []
                    for rep in range(repeat):
                        m = getattr(job, extra)(rep)
                        xruns.append(m)
                        log("%s N=%d %s #%d: %.2fs, %d reads / %d writes%s" % (
                            name, n, extra, rep + 1, m["wall_s"], m["reads"], m["writes"],
                            (" at concurrency %d (sweep %s)" % (m["concurrency"], m["sweep_s"]))
                            if "concurrency" in m else ""))
                    row[extra] = summarise(xruns)
                    for key in ("concurrency", "sweep_s"):
                        if key in xruns[-1]:
                            row[extra][key] = xruns[-1][key]
                    row[extra]["measured_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
                    row[extra]["loadavg_end"] = os.getloadavg()
                elif kept.get(extra):
                    row[extra] = kept[extra]
        finally:
            job.teardown()
        rows[str(n)] = row
        yield n, row


def merge_results(results, data):
    """Merge another run's results.json ``data`` into ``results``, per job, size and contender: a contender the other
    run did not measure keeps its figures here, and the time and load it was measured at (older rows keep them on the
    row only, which the new row replaces); the other run's runs are added once."""
    for name, rows in data.get("jobs", {}).items():
        mine = results["jobs"].setdefault(name, {})
        for n, row in rows.items():
            old = dict(mine.get(n) or {})
            for side in ("ours", "naive") + OTHER_CONTENDERS:
                if isinstance(old.get(side), dict) and side not in row:
                    kept = dict(old[side])
                    for key in ("measured_at", "loadavg_end"):
                        if kept.get(key) is None and old.get(key) is not None:
                            kept[key] = old[key]
                    old[side] = kept
            mine[n] = dict(old, **row)
    results.setdefault("runs", []).extend(m for m in data.get("runs", []) if m not in results["runs"])
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", default=",".join(ALL_JOBS))
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
    args = parser.parse_args(argv)
    out_dir = Path(args.results)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "results.json"
    results = json.loads(path.read_text()) if path.exists() else {"jobs": {}, "runs": []}
    for other in args.merge:
        merge_results(results, json.loads(Path(other).read_text()))
    if args.merge:
        path.write_text(json.dumps(results, indent=1, default=str) + "\n")
    if not args.render_only:
        jobs = [j for j in args.jobs.split(",") if j]
        unknown = [j for j in jobs if j not in JOBS]
        if unknown:
            parser.error("unknown job(s) %s; known: %s" % (", ".join(unknown), ", ".join(JOBS)))
        sizes = sorted(int(s) for s in args.sizes.split(","))
        contenders = tuple(c for c in args.contenders.split(",") if c)
        if not contenders or set(contenders) - set(("ours", "naive") + OTHER_CONTENDERS):
            parser.error("--contenders: a list of ours, naive, %s" % ", ".join(OTHER_CONTENDERS))
        os.environ.setdefault("ANSIBLE_COLLECTIONS_PATH", collections_path())
        # a stopped run (SIGTERM) unwinds like an error: its control plane is stopped and the run is recorded
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        cp, own = control_plane()
        workroot = HERE / "work"
        workroot.mkdir(exist_ok=True)
        meta = {"started": datetime.now(timezone.utc).isoformat(timespec="seconds"), "argv": sys.argv[1:],
                "command": "benchmarks/run.py " + " ".join(sys.argv[1:]), "loadavg_start": os.getloadavg(),
                "cpus": os.cpu_count(), "python": platform.python_version(), "jobs": jobs, "sizes": sizes,
                "repeat": args.repeat, "naive_budget_s": args.naive_budget, "contenders": list(contenders)}
        started = time.monotonic()
        try:
            for name in jobs:
                results["jobs"].setdefault(name, {})
                for n, row in run_job(name, Cluster(cp), sizes, args.repeat, args.naive_budget, workroot,
                                      previous=dict(results["jobs"][name]), contenders=contenders):
                    row["loadavg_end"] = os.getloadavg()
                    row["measured_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
                    results["jobs"][name][str(n)] = row
                    path.write_text(json.dumps(results, indent=1, default=str) + "\n")  # kept if a later size fails
                    render(results, out_dir)
        finally:
            meta["loadavg_end"] = os.getloadavg()
            meta["elapsed_s"] = round(time.monotonic() - started, 1)
            results.setdefault("runs", []).append(meta)
            path.write_text(json.dumps(results, indent=1, default=str) + "\n")
            if own is not None:
                own.stop(remove_dir=True)
    render(results, out_dir)
    print((out_dir / "results.md").read_text())
    return 0


def render(results, out_dir):
    limits = report.render_limits(results)
    if limits:
        limits = "\n" + LIMITS_HEADER + "\n" + limits
    floor = report.render_floor(results)
    if floor:
        floor = "\n" + FLOOR_HEADER + "\n" + floor
    (out_dir / "results.md").write_text(HEADER + report.render_markdown(results) + limits + floor + notes(results))
    report.plot(results, out_dir / "results.png")


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

What each naive job does (the plays are in benchmarks/*.py):

- preflight: k8s_info of the nodes, the kube-proxy ConfigMap and the Services, then one `set_fact` per node
  judging its architecture and RHEL 8 kernel. It checks less than ours (3 lists against ours' 7 reads and one
  per 500 nodes on a cluster without Calico, 12 and one per 500 nodes with it: policies, FelixConfiguration,
  DaemonSets, pods, ...), and still grows faster than linearly with N.
- owner_references: k8s_info of the ConfigMaps, one `kubernetes.core.k8s` merge patch per dependent to detach,
  and again per dependent to attach with the new UIDs (benchmarks/owner_references.py `LOOP_*`); no record in
  the cluster, no check that the owners exist.
- host_endpoint_migration: one k8s task per endpoint and step (node labels, a k8s_info retried until the
  automatic endpoint exists, the delete), no conflict check, no record (benchmarks/host_endpoint_migration.py
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
run (benchmarks/run.py `ansible_costs`, medians of 3): the start-up of ansible-playbook with a play of no tasks, and
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


def notes(results):
    lines = ["", "Where ours' writes go, and when each side was measured:", "", report.render_accounting(results).rstrip(),
             "", "Runs:", ""]
    for meta in results.get("runs", []):
        lines.append("- `%s` started %s, %s s, load average at start %s, at end %s" % (
            meta.get("command"), meta.get("started"), meta.get("elapsed_s"),
            "/".join("%.2f" % x for x in meta.get("loadavg_start", [])),
            "/".join("%.2f" % x for x in meta.get("loadavg_end", []))))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
