"""Faults: the API server stops in the middle of a job (ControlPlane.stop_apiserver, on a control plane of the test's
own, so the shared one is never down); the job fails; the API server comes back; a re-run finishes, and the final
state is the one an uninterrupted run leaves: no ownerReference, label or host endpoint is lost.

(a) owner_references attach (playbooks/owner_references.yml), (b) host endpoint migration
(playbooks/migrate_host_endpoints.yml, with the real calico-kube-controllers behind its Deployment, its automatic
endpoints released one node at a time as in the integration tests),
(c) the manifest upgrade's apply (playbooks/upgrade.yml, with the calico-node stand-in of the integration tests).
"""

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml

from calico_support import SOURCE, TARGET, CalicoNodeStandIn, Install, get, image_tag, wait_daemonset
from localcp.fixtures import Ansible, kill_tree
from kube_controllers import HOLD_LABEL, METRICS_OFF, HoldAutoHeps, KubeControllers, Releaser, calico_labels
from test_host_endpoint_migration import HEPS, KCC, apply_crds, old_hep
from test_host_endpoint_migration import Api as HepApi
from test_owner_references import CALICO, CRDS, Api, calico_refs, coll, record_entries, ref
from test_upgrade import CUSTOM_ENV, assert_upgraded_manifest, customise, record, upgrade_vars

pytestmark = pytest.mark.integration

OWNER_REFERENCES = "playbooks/owner_references.yml"
MIGRATE = "playbooks/migrate_host_endpoints.yml"
UPGRADE = "playbooks/upgrade.yml"


def task_result(play, fragment):
    """The result of the task whose name holds ``fragment`` (role tasks are named ``<role> : <task>``)."""
    for task in play.tasks:
        if fragment in task["task"]:
            return task["result"]
    raise AssertionError("no task %r ran:\n%s\n%s" % (fragment, play.stdout[-3000:], play.stderr[-3000:]))


class AuditCounter(object):
    """Counts, cheaply, the admin's successful requests whose audit line holds every one of ``needles`` (and none of
    ``exclude``) since a mark: the trigger of the fault, with no JSON parsing of the whole log while the job runs."""

    def __init__(self, cluster, *needles, exclude=()):
        self.path = cluster.audit.path
        self.mark = cluster.audit.mark()
        self.needles = list(needles) + ['"username":"admin"', '"stage":"ResponseComplete"', '"code":20']
        self.exclude = list(exclude)

    def count(self):
        n = 0
        with open(self.path, "rb") as f:
            f.seek(self.mark)
            for raw in f:
                line = raw.decode(errors="replace")
                if all(x in line for x in self.needles) and not any(x in line for x in self.exclude):
                    n += 1
        return n


def interrupt(cluster, ansible, playbook, extra_vars, progress, at_least, timeout=300):
    """Start the playbook; once ``progress()`` reaches ``at_least``, stop the API server; wait for the playbook to end
    (it must fail); start the API server again. Returns (rc, progress when stopped, log of the run)."""
    proc = ansible.start(playbook, extra_vars=extra_vars, callback="default")
    try:
        deadline = time.monotonic() + timeout
        while proc.poll() is None and progress() < at_least:
            assert time.monotonic() < deadline, "the job made no progress"
            time.sleep(0.05)
        assert proc.poll() is None, "the job finished before the API server could be stopped"
        cluster.cp.stop_apiserver()
        stopped_at = progress()
        rc = proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            kill_tree(proc)
        if "kube-apiserver" not in cluster.cp.state.get("pids", {}):
            cluster.cp.start_apiserver()
    logs = sorted(ansible.workdir.glob("started-*.log"))
    return rc, stopped_at, logs[-1].read_text() if logs else ""


# -- (a) owner_references attach ------------------------------------------------------------------------------------

def test_api_server_stopped_during_owner_references_attach(pristine_cluster, tmp_path):
    cluster = pristine_cluster
    ansible = Ansible(cluster, tmp_path)
    api = Api(cluster)
    cluster.apply(yaml.safe_dump_all(CRDS))
    for crd in CRDS:
        cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/" + crd["metadata"]["name"])
    cluster.wait_for(lambda: api.get("/apis/projectcalico.org/v3"), timeout=60, what="projectcalico.org/v3")
    namespaces = ["fault-oref-a", "fault-oref-b"]
    for ns in namespaces:
        cluster.kubectl("create", "namespace", ns)
    per_ns = 200

    def owners():
        gnp = api.create(coll(CALICO, "globalnetworkpolicies"), {
            "apiVersion": CALICO, "kind": "GlobalNetworkPolicy", "metadata": {"name": "gnp-fault"}})
        nps = dict((ns, api.create(coll(CALICO, "networkpolicies", ns), {
            "apiVersion": CALICO, "kind": "NetworkPolicy", "metadata": {"name": "np", "namespace": ns}}))
            for ns in namespaces)
        return gnp, nps

    def wanted_refs(i, gnp, np_owner):
        """What an uninterrupted detach + attach leaves: the recorded references, in order, with the new UIDs."""
        return [ref(np_owner, controller=True, blockOwnerDeletion=True)] + ([ref(gnp)] if i % 2 else [])

    gnp, nps = owners()

    def make(args):
        ns, i = args
        api.create(coll("v1", "configmaps", ns), {"metadata": {
            "name": "dep-%04d" % i, "namespace": ns, "labels": {"fault": "1", "keep": "label-%d" % i},
            "ownerReferences": wanted_refs(i, gnp, nps[ns])}})
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(make, [(ns, i) for ns in namespaces for i in range(per_ns)]))
    total = per_ns * len(namespaces)
    total_refs = total + total // 2
    play_vars = {"owner_references_record_namespace": namespaces[0], "owner_references_record_name": "oref-fault",
                 "owner_references_record_path": str(tmp_path / "record.json")}

    def deps():
        out = []
        for ns in namespaces:
            out += api.req("GET", coll("v1", "configmaps", ns), query={"labelSelector": "fault=1"})["items"]
        return out

    play = ansible.playbook(OWNER_REFERENCES, extra_vars=dict(play_vars, owner_references_state="detached"))
    assert play.rc == 0, play.stdout[-4000:] + play.stderr[-2000:]
    assert all(calico_refs(d) == [] for d in deps())
    # the upgrade: same names, new UIDs
    api.delete(coll(CALICO, "globalnetworkpolicies") + "/gnp-fault", wait=True)
    for ns in namespaces:
        api.delete(coll(CALICO, "networkpolicies", ns) + "/np", wait=True)
    gnp, nps = owners()

    # -- attach, the API server stopped part-way ---------------------------------------------------------------------
    patches = AuditCounter(cluster, '"verb":"patch"', '"resource":"configmaps"')
    rc, stopped_at, log = interrupt(cluster, ansible, OWNER_REFERENCES, dict(play_vars, owner_references_state="attached"),
                                    patches.count, at_least=total // 5)
    assert rc != 0, log[-3000:]
    attached_then = sum(1 for d in deps() if calico_refs(d))
    assert 0 < attached_then < total, (attached_then, stopped_at)
    assert len(deps()) == total  # nothing deleted while it was down

    # -- the re-run finishes --------------------------------------------------------------------------------------
    play = ansible.playbook(OWNER_REFERENCES, extra_vars=dict(play_vars, owner_references_state="attached"))
    assert play.rc == 0, play.stdout[-4000:] + play.stderr[-2000:]
    res = task_result(play, "Owner references are attached")
    print("API server stopped after %d patches, %d/%d dependents attached; re-run: %s"
          % (stopped_at, attached_then, total, res["counts"]))
    assert res["counts"]["attached"] + res["counts"]["already_attached"] >= total_refs - attached_then
    items = deps()
    assert len(items) == total
    for d in items:
        i = int(d["metadata"]["name"].split("-")[1])
        ns = d["metadata"]["namespace"]
        assert d["metadata"]["ownerReferences"] == wanted_refs(i, gnp, nps[ns]), d["metadata"]["name"]
        assert d["metadata"]["labels"] == {"fault": "1", "keep": "label-%d" % i}
    entries = record_entries(api, namespaces[0], name="oref-fault")
    assert len(entries) == total_refs and all(e["done"] for e in entries.values())
    # and a third run has nothing to do
    mark = cluster.audit.mark()
    again = ansible.playbook(OWNER_REFERENCES, extra_vars=dict(play_vars, owner_references_state="attached"))
    assert again.rc == 0 and cluster.audit.writes_since(mark) == []


# -- (b) host endpoint migration ------------------------------------------------------------------------------------

def test_api_server_stopped_during_host_endpoint_migration(pristine_cluster, tmp_path):
    cluster = pristine_cluster
    ansible = Ansible(cluster, tmp_path)
    apply_crds(cluster)
    api = HepApi(cluster)
    count = 24
    nodes = ["fault-%02d" % i for i in range(count)]
    # held: kube-controllers' automatic endpoints are refused until the test releases the nodes one by one
    node_labels = dict((n, {"rack": "r%d" % (i % 3), HOLD_LABEL: "true"}) for i, n in enumerate(nodes))
    hep_labels = dict((n, {"env": "prod", "hep": n, "rack": "r%d" % (i % 3)}) for i, n in enumerate(nodes))
    cluster.add_nodes([cluster.node_spec(n, labels=node_labels[n]) for n in nodes])
    for n in nodes:
        api.req("POST", HEPS, old_hep(n + "-all", n, hep_labels[n]))
    api.req("POST", coll("crd.projectcalico.org/v1", "kubecontrollersconfigurations"), {
        "apiVersion": "crd.projectcalico.org/v1", "kind": "KubeControllersConfiguration", "metadata": {"name": "default"},
        "spec": dict(METRICS_OFF, controllers={"node": {"reconcilerPeriod": "5m", "syncLabels": "Enabled",
                                                        "hostEndpoint": {"autoCreate": "Disabled"}}})})
    before = dict((n, api.get(HEPS + "/" + n + "-all")) for n in nodes)
    play_vars = {"host_endpoint_migration_record_namespace": "kube-system",
                 "host_endpoint_migration_record_name": "hep-fault",
                 "host_endpoint_migration_record_path": str(tmp_path / "record.json"),
                 "host_endpoint_migration_poll_interval": 0.3, "host_endpoint_migration_wait_timeout": 120}
    unprotected = []

    def watch_protection(stop):
        """Every node keeps a host endpoint (its old one or its automatic one) at all times."""
        while not stop.is_set():
            try:
                names = set(h["metadata"]["name"] for h in api.items(HEPS))
            except Exception:  # noqa: BLE001 - the API server is down for a while
                stop.wait(0.2)
                continue
            unprotected.extend(n for n in nodes if n + "-all" not in names and n + "-auto-hep" not in names)
            stop.wait(0.2)

    stop = threading.Event()
    watcher = threading.Thread(target=watch_protection, args=(stop,), daemon=True)
    watcher.start()
    deletes = AuditCounter(cluster, '"verb":"delete"', '"resource":"hostendpoints"')
    # the real kube-controllers; one node released every 0.4 s: the migration is still under way when the API
    # server stops (kube-controllers loses it too, and the pod runner starts it again when it exits)
    with KubeControllers(cluster) as kube_controllers, HoldAutoHeps(cluster), Releaser(cluster, nodes, every=0.4):
        rc, stopped_at, log = interrupt(cluster, ansible, MIGRATE, play_vars, deletes.count, at_least=count // 4)
        assert rc != 0, log[-3000:]
        remaining = [n for n in nodes if api.get(HEPS + "/" + n + "-all") is not None]
        assert 0 < len(remaining) < count, (stopped_at, remaining)
        # -- the re-run finishes ---------------------------------------------------------------------------------
        play = ansible.playbook(MIGRATE, extra_vars=play_vars)
        kc_log = kube_controllers.log()
    stop.set()
    watcher.join(timeout=10)
    assert play.rc == 0, play.stdout[-4000:] + play.stderr[-2000:] + kc_log
    res = task_result(play, "Host endpoints are migrated")
    print("API server stopped after %d deletions, %d old endpoints left; re-run: %s"
          % (stopped_at, len(remaining), res["counts"]))
    assert unprotected == [], "nodes without any host endpoint: %s" % sorted(set(unprotected))
    # the state of an uninterrupted run: labels on nodes and automatic endpoints, no old endpoint, all recorded
    for n in nodes:
        labels = api.get("/api/v1/nodes/" + n)["metadata"]["labels"]
        for key, value in hep_labels[n].items():
            assert labels[key] == value, (n, key)
        auto = api.get(HEPS + "/" + n + "-auto-hep")
        assert auto is not None, n
        for key, value in hep_labels[n].items():
            assert calico_labels(auto)[key] == value, (n, key)
        assert api.get(HEPS + "/" + n + "-all") is None, n
    assert api.get(KCC)["spec"]["controllers"]["node"]["hostEndpoint"]["autoCreate"] == "Enabled"
    cm = api.get(coll("v1", "configmaps", "kube-system") + "/hep-fault")
    entries = json.loads(cm["data"]["record.json"])["entries"]
    recorded = dict((e["endpoint"]["metadata"]["name"], e) for e in entries.values())
    assert sorted(recorded) == sorted(n + "-all" for n in nodes)
    for n in nodes:  # what restore brings back ("deleted" marks may be lost with a run: absence tells)
        assert recorded[n + "-all"]["endpoint"]["spec"] == before[n]["spec"]
        assert recorded[n + "-all"]["endpoint"]["metadata"]["labels"] == before[n]["metadata"]["labels"]
    # and nothing is lost for a way back: restored brings every old endpoint back as it was
    play = ansible.playbook(MIGRATE, extra_vars=dict(play_vars, host_endpoint_migration_state="restored"))
    assert play.rc == 0, play.stdout[-4000:] + play.stderr[-2000:]
    for n in nodes:
        back = api.get(HEPS + "/" + n + "-all")
        assert back is not None, n
        assert back["spec"] == before[n]["spec"] and back["metadata"]["labels"] == before[n]["metadata"]["labels"]


# -- (c) the manifest upgrade's apply -----------------------------------------------------------------------------

def test_api_server_stopped_during_the_manifest_upgrade_apply(pristine_cluster, tmp_path):
    """calico.yaml v3.27.5 (with the user's changes: an env var on calico-node, the MTU) upgraded to v3.31.4; the API
    server stops after the apply's first writes. (Check mode and the no-op re-run of upgrade.yml:
    tests/integration/test_upgrade.py::test_manifest_upgrade.)"""
    cluster = pristine_cluster
    ansible = Ansible(cluster, tmp_path)
    install = Install(cluster)
    edit, patches = customise("calico-node", "calico-config")
    install.apply_release(SOURCE, "calico.yaml", edit)
    wait_daemonset(cluster, "calico-node")
    variables = upgrade_vars(cluster, tmp_path, install, upgrade_manifest_patches=patches, upgrade_timeout=120)
    with CalicoNodeStandIn(cluster) as node:
        cluster.wait_for(lambda: (get(cluster, "crd.projectcalico.org/v1", "ClusterInformation", "default") or {})
                         .get("spec", {}).get("calicoVersion") == SOURCE, timeout=30, what="ClusterInformation")
        # the apply's writes: server-side apply with force (not its dry runs)
        applies = AuditCounter(cluster, '"verb":"patch"', "fieldManager=calico-ops", "force=true", exclude=["dryRun"])
        rc, stopped_at, log = interrupt(cluster, ansible, UPGRADE, variables, applies.count, at_least=3)
        assert rc != 0, log[-3000:]
        assert "Apply upgrade.yaml server-side" in log[-20000:], log[-3000:]
        assert (record(cluster, variables) or {}).get("phase") == "upgrading"
        node.errors[:] = []  # it could not reach the API server either
        play = ansible.playbook(UPGRADE, extra_vars=variables)
        assert play.rc == 0, play.stdout[-4000:] + play.stderr[-2000:]
        assert not node.errors, node.errors[:3]
    print("API server stopped after %d applied objects; the re-run finished" % stopped_at)
    # the state of an uninterrupted run (tests/integration/test_upgrade.py::test_manifest_upgrade)
    ds = assert_upgraded_manifest(cluster, "calico.yaml")
    node_env = [c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == "calico-node"][0]["env"]
    assert CUSTOM_ENV in node_env, "the customisation patch was lost"
    assert image_tag(ds["spec"]["template"]["spec"]["containers"][0]["image"]) == TARGET
    assert get(cluster, "v1", "ConfigMap", "calico-config", "kube-system")["data"]["veth_mtu"] == "1440"
    assert get(cluster, "crd.projectcalico.org/v1", "ClusterInformation", "default")["spec"]["calicoVersion"] == TARGET
    assert record(cluster, variables)["phase"] == "done"
