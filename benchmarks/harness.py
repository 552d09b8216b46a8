"""What every benchmark job uses: the control plane, a play timed with its API requests counted from the audit log
(user ``admin``; server-side dry runs are reads of a kind, counted apart and not as writes), the same measure of a
contender that runs outside Ansible, the collection's own modules (the limit contender builds its requests with
them), the kubectl bulk scripts, and the bases of the jobs (``Job``) and of their *limit* contenders
(``LimitContender``: requests built from the module's rules; ``CapturedLimit``: ours' own requests replayed)."""

import collections
import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from localcp.audit import READ_VERBS, WRITE_VERBS
from localcp.cluster import CAPTURE_USER, ControlPlane
from localcp.fixtures import Ansible, collections_path

from benchmarks import KUBECTL_BULK, limit
from benchmarks.tasks import WAIT, combine_profiles, task_profile, wait_seconds, wait_windows


def log(msg):
    print("[bench %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def control_plane():
    """(control plane, the one to stop at the end or None): LOCALCP_RUN_DIR's when it runs, else a new one."""
    run_dir = os.environ.get("LOCALCP_RUN_DIR")
    if run_dir and Path(run_dir, "state.json").exists():
        return ControlPlane.load(Path(run_dir)), None
    cp = ControlPlane(die_with_parent=True).start()
    return cp, cp


def played(res, what, out=5000, err=3000):
    """``res``, an ansible-playbook result, if it succeeded; else a RuntimeError with the end of its output."""
    if res.rc != 0:
        raise RuntimeError("%s failed:\n%s\n%s" % (what, res.stdout[-out:], res.stderr[-err:]))
    return res


# -- the requests of a run ---------------------------------------------------------------------------------

def split(events):
    """reads, writes (persisted: dry runs left out) and dry-run writes of audit events."""
    reads = sum(1 for e in events if e.get("verb") in READ_VERBS or e.get("verb") == "watch")
    writes, dry = [], 0
    for e in events:
        if e.get("verb") in WRITE_VERBS:
            if "dryRun=" in (e.get("requestURI") or ""):
                dry += 1
            else:
                writes.append(e)
    return reads, writes, dry


def _ref(write):
    return write.get("objectRef") or {}


def audit_counts(cluster, mark):
    """The requests of user admin since ``mark``: reads, writes, dry-run writes, writes per resource, and the
    writes themselves (``_writes``, left out of the results)."""
    reads, writes, dry = split(cluster.audit.events_since(mark))
    return {"reads": reads, "writes": len(writes), "dry_run_writes": dry,
            "writes_by_resource": dict(collections.Counter(_ref(w).get("resource", "?") for w in writes)),
            "_writes": writes}


def audited(cluster, func, *args):
    """(``func(*args)``, the requests it made: ``audit_counts``)."""
    mark = cluster.audit.mark()
    out = func(*args)
    return out, audit_counts(cluster, mark)


def written_objects(m):
    """Distinct objects the run wrote (resource, namespace, name)."""
    return len(set((_ref(w).get("resource"), _ref(w).get("namespace"), _ref(w).get("name")) for w in m["_writes"]))


def timed_play(cluster, ansible, play, extra, what="play", timeout=6 * 3600, **kw):
    """Run ``play`` once: its wall time, its requests (``audit_counts``), its result (``_result``) and task
    profile."""
    mark = cluster.audit.mark()
    start = time.monotonic()
    res = ansible.playbook(play, extra_vars=extra, timeout=timeout, **kw)
    wall = time.monotonic() - start
    played(res, what)
    out = dict({"wall_s": round(wall, 2)}, **audit_counts(cluster, mark), _result=res)
    if res.data:
        out["profile"] = task_profile(res.data)
    return out


def excluding_waits(m):
    """``m``, a ``timed_play`` measure, with the time of its waits (``wait_seconds``) subtracted from ``wall_s`` (kept
    in ``wall_with_waits_s``, the waits in ``wait_tasks_s``) and its profile's floor tasks counted without them."""
    waits = wait_seconds(m["_result"].data)
    m["profile"] = task_profile(m["_result"].data, exclude=WAIT)
    m["wall_with_waits_s"] = m["wall_s"]
    m["wait_tasks_s"] = round(waits, 2)
    m["wall_s"] = round(m["wall_s"] - waits, 2)
    return m


def measured(cluster, mark, wall, waits, check):
    """The measure of a contender run outside Ansible (kubectl bulk, the replayed limit): its time without its waits,
    its requests since ``mark`` from the audit log (user admin), the distinct objects it wrote; ``check()`` (the end
    state) after it."""
    counts = audit_counts(cluster, mark)
    check()
    return dict({"wall_s": round(wall - waits, 3), "wall_with_waits_s": round(wall, 3),
                 "wait_tasks_s": round(waits, 2)}, **counts, changed=written_objects(counts))


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


# -- the collection and the kubectl bulk scripts -----------------------------------------------------------

def collection_module(name):
    """A module of the collection's module_utils (``name``: ``<job>.rules``, ``preflight.node_rules``, ...): the
    limit contender builds its requests and verdicts with the module's own functions. The collections path (the
    working tree linked as calico_ops.lifecycle, as for ansible-playbook) is the import root of
    ``ansible_collections``, as tests/conftest.py makes it for the tests."""
    path = collections_path()
    if path not in sys.path:
        sys.path.append(path)
    return importlib.import_module("ansible_collections.calico_ops.lifecycle.plugins.module_utils." + name)


def collection_rules(job):
    """The pure rules module of a job's package in the collection (plugins/module_utils/<job>/rules.py)."""
    return collection_module(job + ".rules")


def merge_type(api_version):
    """The content type of the collection's merge patch (merge_patch ``auto``) of an object of ``api_version``."""
    merge = collection_module("objects.merge_patch")
    return merge.CONTENT_TYPES[merge.default_patch_type(api_version)]


def run_script(cluster, name, *args):
    """A kubectl bulk script (benchmarks/kubectl_bulk/``name``) against the cluster: KUBECONFIG its admin's, its
    kubectl first on PATH. Fails with the script's output."""
    env = dict(os.environ, KUBECONFIG=str(cluster.kubeconfig))
    env["PATH"] = os.path.dirname(cluster.bin("kubectl")) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(["bash", str(KUBECTL_BULK / name)] + list(args), env=env, capture_output=True, text=True,
                          timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError("%s %s failed (%d):\n%s\n%s" % (name, " ".join(args), proc.returncode, proc.stdout[-3000:],
                                                           proc.stderr[-3000:]))
    return proc.stdout


def timed_script(cluster, name, *args):
    """(seconds, output) of a kubectl bulk script."""
    start = time.monotonic()
    out = run_script(cluster, name, *args)
    return time.monotonic() - start, out


# -- the bases of the jobs ---------------------------------------------------------------------------------

class Job(object):
    """A benchmark job on one control plane: ``setup(n)`` builds its N objects, ``ours(rep)`` -> (measure, the
    measure of a re-run) and ``naive(rep)`` -> measure run it, ``teardown()`` removes what setup built. A job may
    also have ``limit(rep)`` and ``kubectl(rep)`` (runner.OTHER_CONTENDERS)."""
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

    def _get(self, *args):
        """``kubectl get <args> -o json``, decoded."""
        return json.loads(self.cluster.kubectl("get", *args, "-o", "json").stdout)

    def _node_count(self):
        return len(self._get("nodes")["items"])


class LimitContender(object):
    """The *limit* contender of a job with ``_limit_cycle(prefix, concurrency)``: benchmarks/limit.py at_best (the
    concurrency swept at the first run, the best kept)."""

    def limit(self, rep):
        """The job's floor."""
        return limit.at_best(self.__dict__.setdefault("_limit_state", {}), rep, self._limit_cycle)


class CapturedLimit(object):
    """The *limit* contender of a job replayed from ours' own requests (benchmarks/limit.py ``captured_stream``):
    ``_capture_run(env)`` runs ours once, untimed, as the capture user (its writes logged with their bodies) and
    returns its ansible result; ``_replay_cycle(stream, concurrency)`` brings the cluster to the job's starting
    state, replays and checks the end state. The capture is made at the first run, the concurrency swept then."""

    def limit(self, rep):
        """The job's floor: ours' requests, without Ansible, at the best concurrency."""
        state = self.__dict__.setdefault("_limit_state", {})
        if "stream" not in state:
            state["stream"], state["rewritten"] = self._capture()
        m = limit.at_best(state, rep, lambda _prefix, c: self._replay_cycle(state["stream"], c))
        m["rewritten"] = state["rewritten"]
        m["captured_requests"] = len(state["stream"])
        return m

    def _capture(self):
        """(ours' requests as the capture user logged them, how many the replay rewrites)."""
        capture = self.cluster.run_dir / "capture.kubeconfig"
        if not capture.exists():
            raise RuntimeError("%s is missing: the control plane predates the capture user; start a new one" % capture)
        mark = self.cluster.audit.mark()
        res = self._capture_run({"KUBECONFIG": str(capture), "K8S_AUTH_KUBECONFIG": str(capture)})
        events = self.cluster.audit.events_since(mark, users=(CAPTURE_USER,))
        stream, rewritten = limit.captured_stream(events, merge_type, wait_windows(res.data))
        log("%s: captured %d requests of ours (%d writes), %d rewritten for the replay" % (
            type(self).__name__, len(stream), sum(1 for r in stream if r["write"]), rewritten))
        return stream, rewritten

    def _replayed(self, stream, concurrency, check):
        """Replay ``stream`` (the starting state already made) and measure it as the other contenders are."""
        client = limit.BareClient(self.cluster.cp)
        mark = self.cluster.audit.mark()
        wall, waited, reads_unlike = limit.replay(client, stream, concurrency)
        return dict(measured(self.cluster, mark, wall, waited, check), reads_unlike_ours=reads_unlike)
