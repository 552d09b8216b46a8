"""Faults: a process of the control plane dies in the middle of a writing job; the process comes back; a re-run
finishes, and the end state is the one an undisturbed run of the same job leaves, with nothing recorded lost.

One parametrized test, one case per writing job (playbooks/*.yml): install_ebpf, enable_ebpf, upgrade of a Helm, an
operator and a manifest install, owner_references (attach), migrate_host_endpoints, kube_proxy disabled (from IPVS)
and enabled; and owner_references once more with etcd stopped instead of kube-apiserver. Each case:

1. the **undisturbed run**, on a control plane of its own: the job's world is set up (``Job.setup``), the playbook
   runs once; its writes are counted (the audit log: ``admin``'s, the playbooks' identity; no dry run; not the tests'
   own User-Agents nor a stand-in's resources), and what the job owns and what it recorded are read;
2. the **interrupted run**, on a fresh control plane with the same world: the playbook starts; once it has made half
   of the undisturbed run's writes of the case's kind (``Job.kill_on``), the component (kube-apiserver or etcd) is
   killed (ControlPlane.stop_component with ``crash``: SIGKILL at once, so no graceful drain lets the job's requests
   in flight finish) and started again when the playbook has failed or a
   few seconds later (etcd: after kube-apiserver's request timeout). The run must have been cut in the middle: some,
   but not all, of the undisturbed run's writes were made before the component came back (a job with one write is cut
   after it, while it waits for the result: ``Job.hold`` keeps that wait going);
3. the **re-run** finishes (rc 0), and the objects the job owns (the fields of every document it wrote, projected
   from the live objects, and the job's own extras: ``Job.owned``) and its records (ConfigMaps and files, UIDs and
   times normalised: ``Job.records``) equal the undisturbed run's. Each job's own assertions (``Job.check``) hold for
   both runs; ``Job.after`` goes on on the interrupted run's control plane (a third run writes nothing, restore).

Per-case wall times (and each phase's) are printed: ``pytest -rA`` shows them.
"""

import contextlib
import json
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s import yaml_text
from calico_support import SOURCE, TARGET, CalicoNodeStandIn, Install, get, helm, image_tag, release_docs, \
    wait_daemonset
from kube_controllers import HOLD_LABEL, METRICS_OFF, TEST_AGENT, AdmissionHold, HoldAutoHeps, KubeControllers, \
    Releaser, calico_labels
from localcp.api import Api
from localcp.audit import WRITE_VERBS
from localcp.cluster import ControlPlane
from localcp.fixtures import Ansible, Cluster, kill_tree
from test_host_endpoint_migration import HEPS, KCC, STAND_IN_AGENT, apply_crds, old_hep
from test_install_ebpf import _vars as ebpf_vars
from test_kube_proxy import KUBEADM_IPVS_CONF, SELECTOR, create_kube_proxy
from test_owner_references import CALICO, CRDS, calico_refs, coll, record_entries, ref
from test_upgrade import CUSTOM_ENV, OPERATOR_OF, assert_upgraded_manifest, crd, customise, operator_image, record, \
    reported_version, upgrade_vars

pytestmark = pytest.mark.integration

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")
TEST_AGENTS = (TEST_AGENT, STAND_IN_AGENT)
# etcd down longer than kube-apiserver's request timeout (60 s): the writes waiting on it fail (504) instead of
# going through once it is back
ETCD_OUTAGE = 75


def task_result(play, fragment):
    """The result of the task whose name holds ``fragment`` (role tasks are named ``<role> : <task>``)."""
    for task in play.tasks:
        if fragment in task["task"]:
            return task["result"]
    raise AssertionError("no task %r ran:\n%s\n%s" % (fragment, play.stdout[-3000:], play.stderr[-2000:]))


# -- the job's writes, from the audit log -------------------------------------------------------------------------

class Writes(object):
    """The job's successful writes since a mark, read incrementally (cheap enough to poll while the job runs): the
    admin's (the playbooks' identity), no dry run, not the tests' own (User-Agent ``TEST_AGENTS``), not of the
    resources a stand-in writes as admin (``ignore``)."""

    def __init__(self, cluster, ignore=()):
        self.path = cluster.audit.path
        self.offset = cluster.audit.mark()
        self.ignore = set(ignore)
        self.events = []

    def poll(self):
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        data = data[:data.rfind(b"\n") + 1]
        self.offset += len(data)
        for raw in data.splitlines():
            if b'"username":"admin"' not in raw or b'"ResponseComplete"' not in raw:
                continue
            try:
                ev = json.loads(raw)
            except ValueError:  # a line the killed kube-apiserver left unfinished (the restarted one goes on after it)
                continue
            ref_ = ev.get("objectRef") or {}
            if (ev.get("verb") in WRITE_VERBS and "dryRun=" not in (ev.get("requestURI") or "")
                    and (ev.get("responseStatus") or {}).get("code", 500) < 300
                    and ev.get("userAgent") not in TEST_AGENTS and ref_.get("resource") not in self.ignore):
                self.events.append(ev)
        return self.events

    def count(self, resource=None, verb=None):
        return sum(1 for ev in self.poll() if resource in (None, ev["objectRef"].get("resource"))
                   and verb in (None, ev["verb"]))


# -- what the job owns and recorded, comparable across control planes ------------------------------------------

def project(live, wrote):
    """The fields of ``live`` that the document ``wrote`` sets (lists of the same length element by element)."""
    if isinstance(wrote, dict) and isinstance(live, dict):
        return dict((k, project(live.get(k), v)) for k, v in wrote.items())
    if isinstance(wrote, list) and isinstance(live, list) and len(wrote) == len(live):
        return [project(item, w) for item, w in zip(live, wrote)]
    return live


def written_fields(cluster, directory):
    """Every document of the YAML files the job wrote to ``directory`` (its artifacts: what it applies), as the
    live object has it now: (kind, namespace, name) -> the document's fields of the live object (None: missing)."""
    out = {}
    for path in sorted(Path(directory).glob("*.yaml")):
        # ``status`` is the server's (and a controller's): a write of the object never sets it (CRD documents of a
        # release carry one, whose conditions come in the order the API server set them)
        docs = [dict((k, v) for k, v in d.items() if k != "status")
                for d in yaml_text.load_all(path.read_text()) if isinstance(d, dict) and d.get("kind")]
        if not docs:
            continue
        proc = cluster.kubectl("get", "-f", str(path), "-o", "json", "--ignore-not-found")
        got = json.loads(proc.stdout) if proc.stdout.strip() else {}
        items = got.get("items", []) if got.get("kind") == "List" else [got] if got else []
        live = dict(((i["kind"], i["metadata"].get("namespace"), i["metadata"]["name"]), i) for i in items)
        for doc in docs:
            meta = doc["metadata"]
            key = (doc["kind"], meta.get("namespace"), meta["name"])
            obj = live.get(key) or live.get((doc["kind"], "default", meta["name"]))
            out["%s %s %s" % (path.name, key[0], "/".join(x for x in key[1:] if x))] = \
                None if obj is None else project(obj, doc)
    return out


def normalised(value, cluster, workdir):
    """``value`` with what differs between two control planes for the same job replaced: UIDs, times, the API
    server's address, the mirror's, the run's directory."""
    text = json.dumps(value, sort_keys=True, default=str)
    for local, token in ((str(workdir), "<workdir>"), (cluster.server, "<server>"), (cluster.mirror_url, "<mirror>")):
        text = text.replace(local, token)
    return json.loads(TIME.sub("<time>", UUID.sub("<uid>", text)))


def record_configmaps(cluster, namespace, name):
    """The record ConfigMaps of a job (label lifecycle.calico-ops.io/record=<name>): their entries."""
    entries = {}
    items = json.loads(cluster.kubectl("get", "configmap", "-n", namespace, "-l",
                                       "lifecycle.calico-ops.io/record=" + name, "-o", "json").stdout)["items"]
    for cm in items:
        entries.update(json.loads(cm["data"]["record.json"])["entries"])
    return entries


def record_file(path):
    return json.loads(Path(path).read_text()).get("entries") if Path(path).exists() else None


def comparable(entries, history=("outcome",)):
    """A record's entries as a sorted list, UIDs and times replaced (an entry's key is made of UIDs), without the
    fields that tell how an entry got done (``outcome``: "already attached" when the interrupted run did it)."""
    return sorted(TIME.sub("<time>", UUID.sub("<uid>", json.dumps(
        dict((k, v) for k, v in e.items() if k not in history), sort_keys=True))) for e in (entries or {}).values())


# -- the jobs ---------------------------------------------------------------------------------------------------

class Job(object):
    """A writing job and its world. ``setup`` builds the world on a control plane and returns the context (``vars``:
    the playbook's variables); ``running`` holds the stand-ins the job needs while it runs; ``owned`` and ``records``
    read what the job owns and recorded; ``check`` holds the job's own assertions (both runs)."""

    name = None
    playbook = None
    shape = "none"
    kill_on = None  # (resource, verb) of the writes counted to choose the point of the fault; None: any of the job
    ignore = ()  # resources a stand-in writes as admin
    one_write = False  # the job makes one write: the fault comes after it, while ``hold`` keeps the job waiting
    outage = 5  # seconds the component stays down (less when the job fails at once)

    def setup(self, cluster, workdir):
        raise NotImplementedError

    def running(self, cluster, ctx):
        return contextlib.nullcontext()

    def hold(self, cluster, ctx):
        return contextlib.nullcontext()

    def owned(self, cluster, ctx):
        raise NotImplementedError

    def records(self, cluster, ctx):
        return {}

    def interrupted(self, cluster, ctx, rc, log):
        """Assertions on the interrupted run's leftovers (before the re-run); ``rc``: the run's (0 when it rode out
        the outage)."""

    def check(self, cluster, ctx, result):
        """The job's own assertions on the end state (undisturbed run and re-run alike)."""

    def after(self, cluster, ctx, ansible):
        """More of the job, on the control plane of the interrupted run only, after the comparison."""


class OwnerReferencesAttach(Job):
    """owner_references attach after an upgrade (the owners re-created with new UIDs): 2 namespaces x 50 dependents,
    one in two with a second reference; the record (ConfigMap and file) is written before any dependent is patched."""

    name = "owner_references"
    playbook = "playbooks/owner_references.yml"
    kill_on = ("configmaps", "patch")
    namespaces = ("fault-oref-a", "fault-oref-b")
    per_ns = 50  # 100 dependents: half of them (the cut) leaves the patches still to come a margin of ~0.25 s

    def _owners(self, api):
        gnp = api.create(coll(CALICO, "globalnetworkpolicies"), {
            "apiVersion": CALICO, "kind": "GlobalNetworkPolicy", "metadata": {"name": "gnp-fault"}})
        nps = dict((ns, api.create(coll(CALICO, "networkpolicies", ns), {
            "apiVersion": CALICO, "kind": "NetworkPolicy", "metadata": {"name": "np", "namespace": ns}}))
            for ns in self.namespaces)
        return gnp, nps

    @staticmethod
    def wanted_refs(i, gnp, np_owner):
        """What an uninterrupted detach + attach leaves: the recorded references, in order, with the new UIDs."""
        return [ref(np_owner, controller=True, blockOwnerDeletion=True)] + ([ref(gnp)] if i % 2 else [])

    def setup(self, cluster, workdir):
        api = Api(cluster)
        cluster.apply(yaml.safe_dump_all(CRDS))
        for c in CRDS:
            cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/" + c["metadata"]["name"])
        cluster.wait_for(lambda: api.get("/apis/projectcalico.org/v3"), timeout=60, what="projectcalico.org/v3")
        for ns in self.namespaces:
            cluster.kubectl("create", "namespace", ns)
        gnp, nps = self._owners(api)

        def make(args):
            ns, i = args
            api.create(coll("v1", "configmaps", ns), {"metadata": {
                "name": "dep-%04d" % i, "namespace": ns, "labels": {"fault": "1", "keep": "label-%d" % i},
                "ownerReferences": self.wanted_refs(i, gnp, nps[ns])}})
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(make, [(ns, i) for ns in self.namespaces for i in range(self.per_ns)]))
        play_vars = {"owner_references_record_namespace": self.namespaces[0],
                     "owner_references_record_name": "oref-fault",
                     "owner_references_record_path": str(workdir / "record.json")}
        play = Ansible(cluster, workdir).playbook(self.playbook, extra_vars=dict(play_vars,
                                                                                 owner_references_state="detached"))
        assert play.rc == 0, play.stdout[-4000:] + play.stderr[-2000:]
        assert all(calico_refs(d) == [] for d in self.deps(api))
        # the upgrade: same names, new UIDs
        api.delete(coll(CALICO, "globalnetworkpolicies") + "/gnp-fault", wait=True)
        for ns in self.namespaces:
            api.delete(coll(CALICO, "networkpolicies", ns) + "/np", wait=True)
        gnp, nps = self._owners(api)
        return {"vars": dict(play_vars, owner_references_state="attached"), "api": api, "gnp": gnp, "nps": nps}

    def deps(self, api):
        out = []
        for ns in self.namespaces:
            out += api.req("GET", coll("v1", "configmaps", ns), query={"labelSelector": "fault=1"})["items"]
        return out

    def owned(self, cluster, ctx):
        owners = set([ctx["gnp"]["metadata"]["uid"]] + [n["metadata"]["uid"] for n in ctx["nps"].values()])
        out = {}
        for d in self.deps(ctx["api"]):
            refs = [dict(r, uid="the owner's" if r["uid"] in owners else "stale " + r["uid"])
                    for r in d["metadata"].get("ownerReferences") or []]
            out["%s/%s" % (d["metadata"]["namespace"], d["metadata"]["name"])] = {
                "ownerReferences": refs, "labels": d["metadata"]["labels"]}
        return out

    def records(self, cluster, ctx):
        return dict((where, comparable(entries)) for where, entries in self.raw_records(cluster, ctx).items())

    def raw_records(self, cluster, ctx):
        return {"configmaps": record_configmaps(cluster, self.namespaces[0], "oref-fault"),
                "file": record_file(ctx["vars"]["owner_references_record_path"])}

    def interrupted(self, cluster, ctx, rc, log):
        deps = self.deps(ctx["api"])
        attached = sum(1 for d in deps if calico_refs(d))
        assert 0 < attached < len(deps) or (rc == 0 and attached == len(deps)), (rc, attached)
        assert len(deps) == self.per_ns * len(self.namespaces)  # nothing deleted while it was down
        # the entries the interrupted run marked done (in the ConfigMaps or the file): the re-run skips them
        records = self.raw_records(cluster, ctx)
        ctx["done_then"] = set(k for entries in records.values() for k, e in (entries or {}).items() if e["done"])

    def check(self, cluster, ctx, result):
        total = self.per_ns * len(self.namespaces)
        items = self.deps(ctx["api"])
        assert len(items) == total
        for d in items:
            i = int(d["metadata"]["name"].split("-")[1])
            ns = d["metadata"]["namespace"]
            assert d["metadata"]["ownerReferences"] == self.wanted_refs(i, ctx["gnp"], ctx["nps"][ns]), \
                d["metadata"]["name"]
            assert d["metadata"]["labels"] == {"fault": "1", "keep": "label-%d" % i}
        entries = record_entries(ctx["api"], self.namespaces[0], name="oref-fault")
        assert len(entries) == total + total // 2 and all(e["done"] for e in entries.values())
        counts = task_result(result, "Owner references are attached")["counts"]
        # every reference is attached once: by the interrupted run (done in its record) or by this one (attached, or
        # found attached when the interrupted run attached it but could not mark it done)
        assert counts["attached"] + counts["already_attached"] == total + total // 2 - len(ctx.get("done_then", ())), \
            (counts, len(ctx.get("done_then", ())))

    def after(self, cluster, ctx, ansible):
        """A third run has nothing to do."""
        mark = cluster.audit.mark()
        again = ansible.playbook(self.playbook, extra_vars=ctx["vars"])
        assert again.rc == 0 and cluster.audit.writes_since(mark) == []


class HostEndpointMigration(Job):
    """migrate_host_endpoints with the real calico-kube-controllers; its automatic endpoints released one node every
    0.4 s (the migration deletes an old endpoint once its node's automatic one exists), so the fault comes in the
    middle of the deletions. Every node keeps a host endpoint at all times; restored brings every old one back."""

    name = "host_endpoint_migration"
    playbook = "playbooks/migrate_host_endpoints.yml"
    kill_on = ("hostendpoints", "delete")
    count = 8

    def setup(self, cluster, workdir):
        apply_crds(cluster)
        api = Api(cluster)
        nodes = ["fault-%02d" % i for i in range(self.count)]
        node_labels = dict((n, {"rack": "r%d" % (i % 3), HOLD_LABEL: "true"}) for i, n in enumerate(nodes))
        hep_labels = dict((n, {"env": "prod", "hep": n, "rack": "r%d" % (i % 3)}) for i, n in enumerate(nodes))
        cluster.add_nodes([cluster.node_spec(n, labels=node_labels[n]) for n in nodes])
        for n in nodes:
            api.req("POST", HEPS, old_hep(n + "-all", n, hep_labels[n]))
        api.req("POST", coll("crd.projectcalico.org/v1", "kubecontrollersconfigurations"), {
            "apiVersion": "crd.projectcalico.org/v1", "kind": "KubeControllersConfiguration",
            "metadata": {"name": "default"},
            "spec": dict(METRICS_OFF, controllers={"node": {"reconcilerPeriod": "5m", "syncLabels": "Enabled",
                                                            "hostEndpoint": {"autoCreate": "Disabled"}}})})
        before = dict((n, api.get(HEPS + "/" + n + "-all")) for n in nodes)
        play_vars = {"host_endpoint_migration_record_namespace": "kube-system",
                     "host_endpoint_migration_record_name": "hep-fault",
                     "host_endpoint_migration_record_path": str(workdir / "record.json"),
                     "host_endpoint_migration_poll_interval": 0.3, "host_endpoint_migration_wait_timeout": 120}
        return {"vars": play_vars, "api": api, "nodes": nodes, "hep_labels": hep_labels, "before": before,
                "unprotected": []}

    @contextlib.contextmanager
    def running(self, cluster, ctx):
        api, nodes = ctx["api"], ctx["nodes"]
        stop = threading.Event()

        def watch_protection():
            """Every node keeps a host endpoint (its old one or its automatic one) at all times."""
            while not stop.is_set():
                try:
                    names = set(h["metadata"]["name"] for h in api.items(HEPS))
                except Exception:  # noqa: BLE001 - the API server is down for a while
                    stop.wait(0.2)
                    continue
                ctx["unprotected"].extend(n for n in nodes if n + "-all" not in names and n + "-auto-hep" not in names)
                stop.wait(0.2)
        watcher = threading.Thread(target=watch_protection, daemon=True)
        watcher.start()
        try:
            # kube-controllers loses the API server too; the pod runner starts it again when it exits
            with KubeControllers(cluster) as kube_controllers, HoldAutoHeps(cluster), \
                    Releaser(cluster, nodes, every=0.4):
                ctx["kube_controllers"] = kube_controllers
                yield
        finally:
            stop.set()
            watcher.join(timeout=10)

    def owned(self, cluster, ctx):
        api, out = ctx["api"], {}
        for n in ctx["nodes"]:
            labels = api.get("/api/v1/nodes/" + n)["metadata"]["labels"]
            auto = api.get(HEPS + "/" + n + "-auto-hep")
            out[n] = {"node labels": dict((k, labels.get(k)) for k in ctx["hep_labels"][n]),
                      "automatic endpoint labels": None if auto is None else dict(
                          (k, calico_labels(auto).get(k)) for k in ctx["hep_labels"][n]),
                      "old endpoint": api.get(HEPS + "/" + n + "-all") is not None}
        out["autoCreate"] = api.get(KCC)["spec"]["controllers"]["node"]["hostEndpoint"]["autoCreate"]
        return out

    def records(self, cluster, ctx):
        # "deleted" marks may be lost with a run (absence tells): what is compared is what restore brings back
        def endpoints(entries):
            return dict((e["endpoint"]["metadata"]["name"], {"spec": e["endpoint"]["spec"],
                                                              "labels": e["endpoint"]["metadata"]["labels"]})
                        for e in (entries or {}).values())
        return {"configmaps": endpoints(record_configmaps(cluster, "kube-system", "hep-fault")),
                "file": endpoints(record_file(ctx["vars"]["host_endpoint_migration_record_path"]))}

    def interrupted(self, cluster, ctx, rc, log):
        remaining = [n for n in ctx["nodes"] if ctx["api"].get(HEPS + "/" + n + "-all") is not None]
        assert 0 < len(remaining) < self.count or (rc == 0 and not remaining), (rc, remaining)

    def check(self, cluster, ctx, result):
        assert ctx["unprotected"] == [], "nodes without any host endpoint: %s" % sorted(set(ctx["unprotected"]))
        owned = self.owned(cluster, ctx)
        for n in ctx["nodes"]:
            assert owned[n] == {"node labels": ctx["hep_labels"][n], "automatic endpoint labels": ctx["hep_labels"][n],
                                "old endpoint": False}, (n, owned[n])
        assert owned["autoCreate"] == "Enabled"
        recorded = self.records(cluster, ctx)["configmaps"]
        assert sorted(recorded) == sorted(n + "-all" for n in ctx["nodes"])
        for n in ctx["nodes"]:
            assert recorded[n + "-all"] == {"spec": ctx["before"][n]["spec"],
                                            "labels": ctx["before"][n]["metadata"]["labels"]}

    def after(self, cluster, ctx, ansible):
        """Nothing is lost for a way back: restored brings every old endpoint back as it was."""
        play = ansible.playbook(self.playbook, extra_vars=dict(ctx["vars"], host_endpoint_migration_state="restored"))
        assert play.rc == 0, play.stdout[-4000:] + play.stderr[-2000:]
        for n in ctx["nodes"]:
            back = ctx["api"].get(HEPS + "/" + n + "-all")
            assert back is not None, n
            assert back["spec"] == ctx["before"][n]["spec"]
            assert back["metadata"]["labels"] == ctx["before"][n]["metadata"]["labels"]


class Upgrade(Job):
    """upgrade.yml: what every install method shares (the artifacts' documents, the upgrade's record)."""

    playbook = "playbooks/upgrade.yml"

    def owned(self, cluster, ctx):
        return written_fields(cluster, ctx["vars"]["upgrade_artifacts_dir"])

    def records(self, cluster, ctx):
        refs = ctx["vars"]["upgrade_owner_references_record_path"]
        return {"upgrade": record(cluster, ctx["vars"]),
                "owner references": comparable(record_configmaps(
                    cluster, "kube-system", ctx["vars"]["upgrade_owner_references_record_name"])),
                "owner references file": comparable(record_file(refs))}

    def check(self, cluster, ctx, result):
        assert record(cluster, ctx["vars"])["phase"] == "done"


class ManifestUpgrade(Upgrade):
    """calico.yaml v3.27.5 (with the user's changes: an env var on calico-node, the MTU) upgraded to v3.31.4, with
    the calico-node stand-in; the fault comes in the middle of the apply's writes."""

    name = "upgrade_manifest"
    ignore = ("clusterinformations",)  # calico-node's stand-in reports its version

    def setup(self, cluster, workdir):
        install = Install(cluster)
        edit, patches = customise("calico-node", "calico-config")
        install.apply_release(SOURCE, "calico.yaml", edit)
        wait_daemonset(cluster, "calico-node")
        return {"vars": upgrade_vars(cluster, workdir, install, upgrade_manifest_patches=patches, upgrade_timeout=120)}

    @contextlib.contextmanager
    def running(self, cluster, ctx):
        with CalicoNodeStandIn(cluster) as node:
            cluster.wait_for(lambda: (get(cluster, "crd.projectcalico.org/v1", "ClusterInformation", "default") or {})
                             .get("spec", {}).get("calicoVersion") in (SOURCE, TARGET), timeout=30,
                             what="ClusterInformation")
            ctx["node"] = node
            yield
            assert not node.errors, node.errors[:3]

    def interrupted(self, cluster, ctx, rc, log):
        ctx["node"].errors[:] = []  # it could not reach the API server either
        assert "Apply upgrade.yaml server-side" in log[-20000:], log[-3000:]
        assert (record(cluster, ctx["vars"]) or {}).get("phase") == ("done" if rc == 0 else "upgrading")

    def check(self, cluster, ctx, result):
        super().check(cluster, ctx, result)
        # the state of an uninterrupted run (tests/integration/test_upgrade.py::test_manifest_upgrade)
        ds = assert_upgraded_manifest(cluster, "calico.yaml")
        node_env = [c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == "calico-node"][0]["env"]
        assert CUSTOM_ENV in node_env, "the customisation patch was lost"
        assert image_tag(ds["spec"]["template"]["spec"]["containers"][0]["image"]) == TARGET
        assert get(cluster, "v1", "ConfigMap", "calico-config", "kube-system")["data"]["veth_mtu"] == "1440"
        assert get(cluster, "crd.projectcalico.org/v1", "ClusterInformation", "default")["spec"][
            "calicoVersion"] == TARGET


class OperatorUpgrade(Upgrade):
    """v3.29.7 installed with the operator (the real operator v1.36.16 reports it), upgraded to v3.31.4: the fault
    comes in the middle of the operator's CRDs and manifest being applied; the real operator v1.40.7 takes over."""

    name = "upgrade_operator"

    def setup(self, cluster, workdir):
        install = Install(cluster)
        install.apply_release("v3.29.7", "operator-crds.yaml")
        install.apply_release("v3.29.7", "tigera-operator.yaml")
        cluster.wait_for(lambda: crd(cluster, "installations.operator.tigera.io"), timeout=60, what="Installation CRD")
        crs = [d for d in release_docs(cluster.mirror_url, "v3.29.7", "custom-resources.yaml")
               if d["kind"] == "Installation"]
        cluster.apply(yaml.safe_dump_all(crs))
        cluster.wait_for_process("tigera-operator", OPERATOR_OF["v3.29.7"], timeout=120)
        cluster.wait_for(lambda: reported_version(cluster) == "v3.29.7", timeout=300, interval=2,
                         what="the real operator reporting v3.29.7")
        return {"vars": upgrade_vars(cluster, workdir, install, upgrade_goldmane=True, upgrade_whisker=True,
                                     upgrade_apiserver=True, upgrade_tigerastatus_expected=["calico", "apiserver"],
                                     upgrade_timeout=300)}

    def owned(self, cluster, ctx):
        out = super().owned(cluster, ctx)
        out["operator image"] = get(cluster, "apps/v1", "Deployment", "tigera-operator", "tigera-operator")[
            "spec"]["template"]["spec"]["containers"][0]["image"]
        for kind in ("Goldmane", "Whisker", "APIServer"):
            out[kind] = (get(cluster, "operator.tigera.io/v1", kind, "default") or {}).get("spec")
        return out

    def check(self, cluster, ctx, result):
        super().check(cluster, ctx, result)
        assert self.owned(cluster, ctx)["operator image"] == operator_image(cluster, TARGET)
        cluster.wait_for(lambda: reported_version(cluster) == TARGET, timeout=120, interval=2,
                         what="the real operator reporting %s" % TARGET)


class HelmUpgrade(Upgrade):
    """Chart tigera-operator v3.27.5 (the real operator v1.32.12), upgraded to v3.31.4: owner references detached
    and recorded, the operator's CRDs applied, the chart's new release; the fault comes in the middle."""

    name = "upgrade_helm"

    def setup(self, cluster, workdir):
        install = Install(cluster)
        workdir.mkdir(parents=True, exist_ok=True)
        values = workdir / "values.yaml"
        values.write_text(yaml.safe_dump({"podLabels": {"calico-ops-test": "kept"}, "apiServer": {"enabled": False}}))
        helm(cluster, "install", "calico", "tigera-operator", "--repo", cluster.chart_repo_url, "--version", SOURCE,
             "--namespace", "tigera-operator", "--create-namespace", "-f", str(values))
        cluster.wait_for_process("tigera-operator", OPERATOR_OF[SOURCE], timeout=120)
        cluster.wait_for(lambda: reported_version(cluster) == SOURCE, timeout=300, interval=2,
                         what="the real operator reporting %s" % SOURCE)
        return {"vars": upgrade_vars(cluster, workdir, install, upgrade_timeout=300,
                                     upgrade_helm_values={"apiServer": {"enabled": True}})}

    def owned(self, cluster, ctx):
        out = super().owned(cluster, ctx)
        release = [r for r in json.loads(helm(cluster, "list", "-n", "tigera-operator", "-o", "json").stdout)
                   if r["name"] == "calico"][0]
        out["release"] = dict((k, release[k]) for k in ("chart", "status", "app_version"))
        out["values"] = json.loads(helm(cluster, "get", "values", "calico", "-n", "tigera-operator", "-o",
                                        "json").stdout)
        dep = get(cluster, "apps/v1", "Deployment", "tigera-operator", "tigera-operator")
        out["operator"] = {"image": dep["spec"]["template"]["spec"]["containers"][0]["image"],
                           "labels": dep["spec"]["template"]["metadata"]["labels"]}
        return out

    def check(self, cluster, ctx, result):
        super().check(cluster, ctx, result)
        owned = self.owned(cluster, ctx)
        assert owned["release"]["chart"] == "tigera-operator-%s" % TARGET and owned["release"]["status"] == "deployed"
        assert owned["values"].get("podLabels") == {"calico-ops-test": "kept"}
        assert owned["operator"]["image"] == operator_image(cluster, TARGET)
        assert crd(cluster, "goldmanes.operator.tigera.io") is not None


class InstallEbpf(Job):
    """install_ebpf.yml on a kubeadm-shaped control plane (the kube-proxy addon, the node network), the real
    operator: the fault comes in the middle of the endpoint ConfigMap, the operator's CRDs and manifest, the custom
    resources and kube-proxy's nodeSelector being written."""

    name = "install_ebpf"
    playbook = "playbooks/install_ebpf.yml"
    shape = "kubeadm"

    def setup(self, cluster, workdir):
        return {"vars": ebpf_vars(cluster, workdir, ebpf_install_tigerastatus_expected=["calico"],
                                  ebpf_install_timeout=420)}

    def owned(self, cluster, ctx):
        out = written_fields(cluster, ctx["vars"]["ebpf_install_artifacts_dir"])
        cm = get(cluster, "v1", "ConfigMap", "kubernetes-services-endpoint", "tigera-operator")
        out["endpoint"] = cm and cm["data"]
        ds = get(cluster, "apps/v1", "DaemonSet", "kube-proxy", "kube-system")
        out["kube-proxy nodeSelector"] = ds["spec"]["template"]["spec"].get("nodeSelector")
        return out

    def check(self, cluster, ctx, result):
        owned = self.owned(cluster, ctx)
        assert owned["endpoint"] == {"KUBERNETES_SERVICE_HOST": "api.cluster.example",
                                     "KUBERNETES_SERVICE_PORT": "6443"}
        assert owned["kube-proxy nodeSelector"].get("non-calico") == "true"
        inst = get(cluster, "operator.tigera.io/v1", "Installation", "default")
        assert inst["spec"]["calicoNetwork"]["linuxDataplane"] == "BPF"
        cluster.wait_for(lambda: (get(cluster, "crd.projectcalico.org/v1", "FelixConfiguration", "default") or {}).get(
            "spec", {}).get("bpfEnabled") is True, timeout=60, what="the operator to set bpfEnabled")


class EnableEbpf(InstallEbpf):
    """enable_ebpf.yml on an operator install on the Iptables data plane (the real operator reports it Available):
    the endpoint ConfigMap, the Installation's patch, kube-proxy's nodeSelector; the fault comes after the first."""

    name = "enable_ebpf"
    playbook = "playbooks/enable_ebpf.yml"

    def setup(self, cluster, workdir):
        base = "%s/%s/manifests" % (cluster.mirror_url, TARGET)
        cluster.apply(base + "/operator-crds.yaml")
        cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/installations.operator.tigera.io")
        cluster.apply(base + "/tigera-operator.yaml")
        cluster.apply(yaml.safe_dump({"apiVersion": "operator.tigera.io/v1", "kind": "Installation",
                                      "metadata": {"name": "default"},
                                      "spec": {"calicoNetwork": {"linuxDataplane": "Iptables"}}}))
        cluster.wait_for(lambda: any(c["type"] == "Available" and c["status"] == "True" for c in (
            (get(cluster, "operator.tigera.io/v1", "TigeraStatus", "calico") or {}).get("status") or {}).get(
                "conditions") or []), timeout=300, interval=2, what="the operator to report the Iptables install")
        return {"vars": ebpf_vars(cluster, workdir, ebpf_install_tigerastatus_expected=["calico"],
                                  ebpf_install_timeout=420)}

    def owned(self, cluster, ctx):
        out = super().owned(cluster, ctx)
        out["calicoNetwork"] = get(cluster, "operator.tigera.io/v1", "Installation", "default")["spec"][
            "calicoNetwork"]
        return out


class KubeProxy(Job):
    """kube_proxy.yml on a kubeadm-shaped control plane."""

    playbook = "playbooks/kube_proxy.yml"

    def owned(self, cluster, ctx):
        ds = get(cluster, "apps/v1", "DaemonSet", "kube-proxy", "kube-system")
        cm = get(cluster, "v1", "ConfigMap", "kube-proxy", "kube-system")
        template = ds["spec"]["template"]
        return {"nodeSelector": template["spec"].get("nodeSelector"),
                "containers": [dict((k, c.get(k)) for k in ("command", "args")) for c in template["spec"]["containers"]],
                "rolled": "kubectl.kubernetes.io/restartedAt" in (template["metadata"].get("annotations") or {}),
                "config.conf": cm and cm["data"].get("config.conf")}


class KubeProxyDisable(KubeProxy):
    """Disabled from IPVS mode (kube_proxy_switch_ipvs_to_iptables): the mode in ConfigMap kube-proxy, the roll,
    the nodeSelector; the fault comes after the first."""

    name = "kube_proxy_disabled"

    def setup(self, cluster, workdir):
        create_kube_proxy(cluster)
        cm = get(cluster, "v1", "ConfigMap", "kube-proxy", "kube-system")
        cluster.apply(yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                                      "metadata": {"name": "kube-proxy", "namespace": "kube-system"},
                                      "data": dict((cm or {}).get("data") or {"kubeconfig.conf": "apiVersion: v1\n"},
                                                   **{"config.conf": KUBEADM_IPVS_CONF})}))
        return {"vars": {"kube_proxy_state": "disabled", "kube_proxy_platform": "kubeadm",
                         "kube_proxy_switch_ipvs_to_iptables": True, "kube_proxy_timeout": 60,
                         "kube_proxy_poll_interval": 5}}

    def check(self, cluster, ctx, result):
        owned = self.owned(cluster, ctx)
        assert owned["config.conf"] == KUBEADM_IPVS_CONF.replace('mode: "ipvs"', 'mode: "iptables"')
        # the re-run after a run cut between the switch and the roll rolls too (it did not before: issue 18)
        assert owned["rolled"] and owned["nodeSelector"].get("non-calico") == "true", owned
        assert any("restart each node" in str(t["result"].get("msg")) for t in result.tasks), "no reminder"


class KubeProxyEnable(KubeProxy):
    """Enabled again after it was disabled: one write (the nodeSelector), then the wait for every pod; the fault
    comes after the write, while the wait goes on (an admission policy holds kube-proxy's new pods until the API
    server is back; the DaemonSet controller then creates them after its back-off, within the wait or the re-run's)."""

    name = "kube_proxy_enabled"
    one_write = True

    def setup(self, cluster, workdir):
        create_kube_proxy(cluster)
        cluster.kubectl("patch", "daemonset", "kube-proxy", "-n", "kube-system", "--type=merge", "-p",
                        json.dumps({"spec": {"template": {"spec": {"nodeSelector": SELECTOR}}}}))
        cluster.wait_for(lambda: get(cluster, "apps/v1", "DaemonSet", "kube-proxy", "kube-system")["status"].get(
            "currentNumberScheduled") == 0, timeout=120, what="kube-proxy disabled")
        return {"vars": {"kube_proxy_state": "enabled", "kube_proxy_platform": "kubeadm", "kube_proxy_timeout": 180,
                         "kube_proxy_poll_interval": 10}}

    def hold(self, cluster, ctx):
        message = "kube-proxy pods are held by the test"
        name = "test-calico-ops-hold-kube-proxy"
        docs = [{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
                 "metadata": {"name": name},
                 "spec": {"failurePolicy": "Fail",
                          "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                                  "operations": ["CREATE"], "resources": ["pods"]}]},
                          "validations": [{"expression": "!has(object.metadata.labels) || !('k8s-app' in "
                                                         "object.metadata.labels) || "
                                                         "object.metadata.labels['k8s-app'] != 'kube-proxy'",
                                           "message": message}]}},
                {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                 "metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Deny"]}}]
        probe = {"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "hold-probe", "namespace": "kube-system", "labels": {"k8s-app": "kube-proxy"}},
                 "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}
        return AdmissionHold(cluster, docs, "/api/v1/namespaces/kube-system/pods", probe, message)

    def check(self, cluster, ctx, result):
        owned = self.owned(cluster, ctx)
        assert "non-calico" not in (owned["nodeSelector"] or {})
        ds = get(cluster, "apps/v1", "DaemonSet", "kube-proxy", "kube-system")
        assert ds["status"]["numberReady"] == ds["status"]["desiredNumberScheduled"] > 0


JOBS = [InstallEbpf(), EnableEbpf(), HelmUpgrade(), OperatorUpgrade(), ManifestUpgrade(), OwnerReferencesAttach(),
        HostEndpointMigration(), KubeProxyDisable(), KubeProxyEnable()]
CASES = [(job, "kube-apiserver") for job in JOBS] + [(OwnerReferencesAttach(), "etcd")]


# -- the runs ---------------------------------------------------------------------------------------------------

@contextlib.contextmanager
def control_plane(shape):
    cp = ControlPlane(die_with_parent=True)
    cp.start(shape=shape)
    try:
        yield Cluster(cp)
    finally:
        cp.stop(remove_dir=True)


class Run(object):
    """One run of the job on its control plane: what it wrote, owns and recorded."""

    def __init__(self, job, cluster, workdir):
        self.job, self.cluster, self.workdir = job, cluster, workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.ansible = Ansible(cluster, workdir)
        self.ctx = job.setup(cluster, workdir)

    def play(self):
        writes = Writes(self.cluster, self.job.ignore)
        result = self.ansible.playbook(self.job.playbook, extra_vars=self.ctx["vars"])
        assert result.rc == 0, result.stdout[-4000:] + result.stderr[-2000:]
        return result, writes.poll()

    def state(self):
        """What the job owns and recorded, normalised for the comparison with another control plane's."""
        return (normalised(self.job.owned(self.cluster, self.ctx), self.cluster, self.workdir),
                normalised(self.job.records(self.cluster, self.ctx), self.cluster, self.workdir))

    def interrupt(self, component, at, outage, timeout=600):
        """Start the playbook; once it has made ``at`` writes of the job's kind, stop ``component``; start it again
        when the playbook has ended or ``outage`` seconds later (a job may wait through an outage), release the job's
        hold; wait for the playbook to end. Returns the writes made before the component came back, the playbook's
        rc and its log."""
        cp = self.cluster.cp
        with contextlib.ExitStack() as hold:
            hold.enter_context(self.job.hold(self.cluster, self.ctx))
            writes = Writes(self.cluster, self.job.ignore)
            proc = self.ansible.start(self.job.playbook, extra_vars=self.ctx["vars"], callback="default")
            try:
                deadline = time.monotonic() + timeout
                while proc.poll() is None and writes.count(*(self.job.kill_on or (None, None))) < at:
                    assert time.monotonic() < deadline, "the job made no progress"
                    time.sleep(0.05)
                assert proc.poll() is None, "the job ended before its write #%d: %s" % (at, self._log()[-3000:])
                cp.stop_component(component, crash=True)
                back = time.monotonic() + outage
                while proc.poll() is None and time.monotonic() < back:
                    time.sleep(0.2)
                made = list(writes.poll())
                cp.start_component(component)
                hold.close()
                rc = proc.wait(timeout=timeout)
            finally:
                if proc.poll() is None:
                    kill_tree(proc)
                if cp.stopped(component):
                    cp.start_component(component)
        return made, rc, self._log()

    def _log(self):
        logs = sorted(self.workdir.glob("started-*.log"))
        return logs[-1].read_text() if logs else ""


def describe_writes(events):
    return ["%s %s/%s" % (e["verb"], e["objectRef"].get("resource"), e["objectRef"].get("name")) for e in events]


@pytest.mark.parametrize("job, component", CASES, ids=["%s-%s" % (j.name, c) for j, c in CASES])
def test_a_rerun_after_a_fault_mid_job_ends_as_an_undisturbed_run(job, component, tmp_path):
    times = []
    clock = [time.monotonic()]

    def lap(what):
        now = time.monotonic()
        times.append("%s %.0fs" % (what, now - clock[0]))
        clock[0] = now

    # -- 1. the undisturbed run --------------------------------------------------------------------------------------
    with control_plane(job.shape) as cluster:
        reference = Run(job, cluster, tmp_path / "undisturbed")
        lap("undisturbed: setup")
        with job.running(cluster, reference.ctx):
            result, all_writes = reference.play()
        job.check(cluster, reference.ctx, result)
        want = reference.state()
        lap("run")
    kind = job.kill_on or (None, None)
    counted = [e for e in all_writes if kind[0] in (None, e["objectRef"].get("resource")) and kind[1] in (None, e["verb"])]
    assert counted, "the undisturbed run made no write of %s: %s" % (kind, describe_writes(all_writes))
    at = len(counted) if job.one_write else max(1, len(counted) // 2)

    # -- 2. the interrupted run, 3. the re-run ---------------------------------------------------------------------
    with control_plane(job.shape) as cluster:
        run = Run(job, cluster, tmp_path / "interrupted")
        lap("interrupted: setup")
        with job.running(cluster, run.ctx):
            made, rc, log = run.interrupt(component, at, ETCD_OUTAGE if component == "etcd" else job.outage)
            lap("interrupted run (rc %d)" % rc)
            if job.one_write:
                assert len(made) == len(all_writes) == 1, (describe_writes(made), describe_writes(all_writes))
            else:
                assert 0 < len(made) < len(all_writes), (describe_writes(made), describe_writes(all_writes))
            job.interrupted(cluster, run.ctx, rc, log)
            result, _rest = run.play()
            # CRDs the kill left accepted but not established, which the re-run's wait gave an update event
            nudged = sorted(set(n for t in result.tasks for n in t["result"].get("nudged") or []))
            lap("re-run" + (" (nudged %s)" % ", ".join(nudged) if nudged else ""))
        job.check(cluster, run.ctx, result)
        got = run.state()
        differ = sorted(k for k in set(got[0]) | set(want[0]) if got[0].get(k) != want[0].get(k))
        assert not differ, "the objects the job owns differ from an undisturbed run's: %s" % dict(
            (k, (got[0].get(k), want[0].get(k))) for k in differ)
        assert got[1] == want[1], "the records differ from an undisturbed run's"
        job.after(cluster, run.ctx, run.ansible)
        lap("after")
    print("%s, %s stopped after %d of %d writes (%d of %d %s): %s" % (
        job.name, component, len(made), len(all_writes), at, len(counted), "/".join(x for x in kind if x) or "any",
        ", ".join(times)))
