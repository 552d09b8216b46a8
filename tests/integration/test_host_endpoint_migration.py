"""host_endpoint_migration on the local control plane, with Calico v3.31.4's real CRDs and the real
calico-kube-controllers.

The crd.projectcalico.org CRDs come from ``operator-crds.yaml`` of the release mirror (server-side applied).
calico-kube-controllers v3.31.4 runs for real behind its Deployment (calico.yaml's, see kube_controllers.py; the
pod runner runs the binary as its ServiceAccount): while KubeControllersConfiguration ``default`` says
``autoCreate: Enabled`` it creates ``<node>-auto-hep`` for every node, keeping the node's labels in the
``projectcalico.org/metadata`` annotation. Its writes are its ServiceAccount's in the audit log, the module's are
``admin``'s; the tests' own writes while a job runs carry the User-Agent ``TEST_AGENT``. Where a test needs an
automatic endpoint to appear late or never, an admission policy refuses the controller's create for held nodes
(``HoldAutoHeps``), as a policy engine of a real cluster can.

* three nodes (pristine control plane; kube-controllers installed but scaled to 0, so KubeControllersConfiguration
  default does not exist yet): check mode writes nothing; the migration copies the labels, creates ``default``
  with autoCreate Enabled (kube-controllers is scaled up once it exists), records each old endpoint and deletes
  it only after that node's automatic endpoint exists (held nodes released one every 3 s; order checked in the
  audit log), never touches automatic endpoints, reports an endpoint whose node is missing; a re-run writes
  nothing; ``restored`` brings the deleted endpoints back; a second ``restored`` writes nothing;
* a label conflict: the play fails listing it and nothing is written; ``overwrite`` and ``skip`` each do what
  they say;
* a node whose automatic endpoint never appears (kube-controllers' create refused for it) keeps its old endpoint
  and the play fails naming it;
* with ``projectcalico.org/v3`` served (CRDs of the same schema standing in for the Calico API server, on a
  control plane of the test's own) the module reads and writes there, not in the crd.projectcalico.org CRDs.
"""

import json
import threading
import time
import urllib.request
import uuid

import pytest
import yaml

from kube_controllers import HOLD_LABEL, TEST_AGENT, HoldAutoHeps, KubeControllers, Releaser, calico_crd_docs, \
    METRICS_OFF, calico_labels, delete_automatic_endpoints, running_config_auto_create
from kube_controllers import USER as KC_USER
from localcp.api import Api
from localcp.fixtures import Ansible

pytestmark = pytest.mark.integration

CRD = "crd.projectcalico.org/v1"
CRD_NAMES = ("hostendpoints.crd.projectcalico.org", "kubecontrollersconfigurations.crd.projectcalico.org")
PLAYBOOK = "playbooks/migrate_host_endpoints.yml"
STAND_IN_AGENT = "calico-kube-controllers-stand-in"  # the v3 test's stand-in only
V3 = "projectcalico.org/v3"
CREATED_BY = {"projectcalico.org/created-by": "calico-kube-controllers"}
TASK = "Host endpoints are"


def coll(api_version, plural, namespace=None):
    base = "/api/%s" % api_version if "/" not in api_version else "/apis/%s" % api_version
    return base + ("/namespaces/%s" % namespace if namespace else "") + "/" + plural


HEPS = coll(CRD, "hostendpoints")
KCC = coll(CRD, "kubecontrollersconfigurations") + "/default"


def crd_docs(mirror_url):
    with urllib.request.urlopen(mirror_url + "/v3.31.4/manifests/operator-crds.yaml", timeout=120) as resp:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        docs = [d for d in yaml.load_all(resp.read(), Loader=loader)
                if d and d.get("kind") == "CustomResourceDefinition" and d["metadata"]["name"] in CRD_NAMES]
    assert sorted(d["metadata"]["name"] for d in docs) == sorted(CRD_NAMES)
    return docs


def apply_crds(cluster):
    """Server-side apply every crd.projectcalico.org CRD (kube-controllers needs them all to start); return the
    names of those that did not exist before."""
    existing = set(cluster.kubectl("get", "crd", "-o", "name").stdout.split())
    docs = calico_crd_docs(cluster.mirror_url)
    assert set(CRD_NAMES) <= set(d["metadata"]["name"] for d in docs)
    cluster.apply(yaml.safe_dump_all(docs))
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=120s",
                    *["crd/" + d["metadata"]["name"] for d in docs])
    api = Api(cluster)
    cluster.wait_for(lambda: set(r["name"] for r in (api.get("/apis/" + CRD) or {}).get("resources", []))
                     >= {"hostendpoints", "kubecontrollersconfigurations"}, timeout=60, what="the CRDs in discovery")
    return [d["metadata"]["name"] for d in docs
            if "customresourcedefinition.apiextensions.k8s.io/" + d["metadata"]["name"] not in existing]


def delete_crds(cluster, names):
    if not names:
        return
    cluster.kubectl("delete", "crd", "--wait=false", *names)
    cluster.wait_for(lambda: not set("customresourcedefinition.apiextensions.k8s.io/" + n for n in names)
                     & set(cluster.kubectl("get", "crd", "-o", "name").stdout.split()),
                     timeout=300, what="the CRDs of this test file to be deleted")


# The only stand-in left: projectcalico.org/v3 here is CRDs of their own storage (no Calico API server), which the real
# kube-controllers (it writes crd.projectcalico.org/v1 only) never reads nor writes.
class V3KubeControllersStandIn(threading.Thread):
    """calico-kube-controllers' automatic host endpoints in projectcalico.org/v3, for the nodes it is given: while
    KubeControllersConfiguration default (v3) has autoCreate Enabled, ``<node>-auto-hep`` with the node's labels
    and the created-by label. Its requests carry the User-Agent ``STAND_IN_AGENT``."""

    def __init__(self, cluster, nodes, interval=0.3):
        super(V3KubeControllersStandIn, self).__init__(daemon=True)
        self.api = Api(cluster, user_agent=STAND_IN_AGENT)
        self.heps = coll(V3, "hostendpoints")
        self.kcc = coll(V3, "kubecontrollersconfigurations") + "/default"
        self.nodes = set(nodes)
        self.interval = interval
        self.halt = threading.Event()
        self.errors = []

    def run(self):
        while not self.halt.is_set():
            try:
                self.step()
            except Exception as exc:  # noqa: BLE001 - keep playing; the test checks errors at the end
                self.errors.append(repr(exc))
            self.halt.wait(self.interval)

    def stop(self):
        self.halt.set()
        self.join(timeout=30)
        assert not self.errors, self.errors[:5]

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.halt.set()
        self.join(timeout=30)

    def step(self):
        kcc = self.api.get(self.kcc)
        hep = ((((kcc or {}).get("spec") or {}).get("controllers") or {}).get("node") or {}).get("hostEndpoint") or {}
        if hep.get("autoCreate") != "Enabled":
            return
        for node in self.api.items("/api/v1/nodes", limit=5000):
            name = node["metadata"]["name"]
            if name in self.nodes and self.api.get(self.heps + "/" + name + "-auto-hep") is None:
                labels = dict(node["metadata"].get("labels") or {})
                labels.update(CREATED_BY)
                self.api.req("POST", self.heps, {
                    "apiVersion": V3, "kind": "HostEndpoint", "metadata": {"name": name + "-auto-hep", "labels": labels},
                    "spec": {"node": name, "interfaceName": "*", "expectedIPs": ["10.0.0.1"],
                             "profiles": ["projectcalico-default-allow"]}})


def old_hep(name, node, labels, interface="*", api_version=CRD):
    return {"apiVersion": api_version, "kind": "HostEndpoint", "metadata": {"name": name, "labels": labels},
            "spec": {"node": node, "interfaceName": interface, "expectedIPs": ["192.0.2.%d" % (len(name) % 200 + 1)],
                     "profiles": ["manual-profile"]}}


def module_result(play):
    for task in play.tasks:
        if task["task"].split(" : ", 1)[-1].startswith(TASK):  # role tasks are named "<role> : <task>"
            return task["result"]
    raise AssertionError("the host_endpoint_migration task did not run:\n%s\n%s"
                         % (play.stdout[-3000:], play.stderr[-3000:]))


def play_vars(tmp_path, record_namespace="kube-system", **extra):
    out = {"host_endpoint_migration_record_namespace": record_namespace,
           "host_endpoint_migration_record_name": "hep-record",
           "host_endpoint_migration_record_path": str(tmp_path / "record.json"),
           "host_endpoint_migration_poll_interval": 0.5,
           "host_endpoint_migration_wait_timeout": 60,
           # every endpoint and node listed: the control plane is shared, other tests' may come first
           "host_endpoint_migration_report_limit": 100000}
    out.update(extra)
    return out


def module_writes(events):
    """The writes of the job: the admin's, but for the tests' own (User-Agent TEST_AGENT, or the v3 stand-in's)."""
    return [e for e in events if e.get("verb") in ("create", "update", "patch", "delete")
            and (e.get("user") or {}).get("username") == "admin"
            and e.get("userAgent") not in (STAND_IN_AGENT, TEST_AGENT) and "dryRun=" not in (e.get("requestURI") or "")]


def where(ev):
    ref = ev.get("objectRef") or {}
    return "%s %s/%s" % (ev["verb"], ref.get("resource"), ref.get("name"))


def labels_of(api, path):
    """The labels of a Node, or of a Calico object as Calico reads them (metadata annotation included)."""
    return calico_labels(api.get(path))


# -- three nodes, from nothing (a control plane of the test's own) --------------------------------------------------

def test_three_nodes_migrate_then_restore_with_the_real_kube_controllers(pristine_cluster, tmp_path):
    cluster = pristine_cluster
    ansible = Ansible(cluster, tmp_path)
    apply_crds(cluster)
    api = Api(cluster)
    # installed, scaled to 0: it would create KubeControllersConfiguration default (autoCreate Disabled) on start
    kube_controllers = KubeControllers(cluster, replicas=0).start()
    nodes = ["node-1", "node-2", "node-3"]  # the control plane's own kwok nodes
    labels = {"node-1": {"env": "prod", "zone": "a", "hep": "node-1"},
              "node-2": {"env": "prod", "zone": "b", "hep": "node-2"},
              "node-3": {"env": "prod", "zone": "c", "tier": "db"}}
    cluster.kubectl("label", "node", "node-1", "zone=a")  # one label already in place: not written again
    for node in nodes:  # kube-controllers' create of their automatic endpoints is refused until released
        cluster.kubectl("label", "node", node, HOLD_LABEL + "=true")
    for node in nodes:
        api.req("POST", HEPS, old_hep(node + "-all", node, labels[node]))
    # left alone: an endpoint whose node is missing, a named-interface endpoint, two automatic ones (the one
    # labelled created-by, of a node that does not exist, is the real kube-controllers' to delete: not the module's)
    api.req("POST", HEPS, old_hep("ghost-all", "ghost-node", {"env": "prod"}))
    untouched = [
        api.req("POST", HEPS, old_hep("node-1-eth0", "node-1", {"env": "prod"}, interface="eth0")),
        api.req("POST", HEPS, old_hep("node-9-auto-hep", "node-9", {"env": "old"})),
    ]
    api.req("POST", HEPS, old_hep("custom", "node-9", dict(CREATED_BY, env="old")))
    assert api.get(KCC) is None
    before = dict((n + "-all", api.get(HEPS + "/" + n + "-all")) for n in nodes)

    # -- check mode: the plan, no write --------------------------------------------------------------------
    mark = cluster.audit.mark()
    play = ansible.playbook(PLAYBOOK, extra_vars=play_vars(tmp_path), check=True, diff=True)
    assert [where(e) for e in cluster.audit.writes_since(mark)] == []
    assert play.rc == 0, play.stdout[-4000:] + play.stderr[-2000:]
    res = module_result(play)
    assert res["changed"] is True and res["kube_controllers"]["action"] == "would create"
    assert res["labels"] == {"node-1": {"env": "prod", "hep": "node-1"}, "node-2": labels["node-2"],
                             "node-3": labels["node-3"]}
    assert res["counts"]["old"] == 4 and res["counts"]["automatic"] == 2 and res["counts"]["other"] == 1
    assert res["missing_nodes"] == [{"endpoint": "ghost-all", "node": "ghost-node"}]
    assert api.get(KCC) is None and not (tmp_path / "record.json").exists()

    # -- the migration ---------------------------------------------------------------------------------------
    progress = tmp_path / "progress.log"
    # kube-controllers is scaled up once the module has created default; the held nodes are released one every
    # 3 s once it runs with autoCreate Enabled, so the automatic endpoints appear one node at a time
    with HoldAutoHeps(cluster), Releaser(cluster, nodes, every=3.0, kube_controllers=kube_controllers):
        mark = cluster.audit.mark()
        play = ansible.playbook(PLAYBOOK, extra_vars=play_vars(
            tmp_path, host_endpoint_migration_progress_path=str(progress)), diff=True)
        assert play.rc == 0, play.stdout[-4000:] + play.stderr[-2000:] + kube_controllers.log()
        events = cluster.audit.events_since(mark, users=("admin", KC_USER))
    # the order, from the audit log: each old endpoint deleted only after its replacement was created (by the real
    # kube-controllers), and recorded before that; per node (before the next node's replacement even existed)
    writes = module_writes(events)
    seq = [where(e) for e in writes]
    created = dict((e["objectRef"]["name"][:-len("-auto-hep")], i) for i, e in enumerate(events)
                   if e["user"]["username"] == KC_USER and e["verb"] == "create"
                   and e["objectRef"]["resource"] == "hostendpoints" and e["responseStatus"]["code"] == 201)
    deleted = [(events.index(e), e["objectRef"]["name"]) for e in writes
               if e["verb"] == "delete" and e["objectRef"]["resource"] == "hostendpoints"]
    assert [n for _i, n in deleted] == [n + "-all" for n in nodes], seq
    for k, node in enumerate(nodes):
        at = deleted[k][0]
        assert node in created and created[node] < at, "%s-all deleted before %s-auto-hep existed: %s" % (
            node, node, seq)
        if k + 1 < len(nodes):
            assert nodes[k + 1] in created and at < created[nodes[k + 1]], seq
        record_writes = [i for i, e in enumerate(events[:at])
                         if e in writes and e["objectRef"]["resource"] == "configmaps"]
        assert record_writes, "nothing recorded before %s-all was deleted: %s" % (node, seq)
    assert all(e["responseStatus"]["code"] == 200 for e in writes if e["verb"] == "delete")
    assert sorted(seq[:3]) == ["patch nodes/node-1", "patch nodes/node-2", "patch nodes/node-3"]  # in parallel
    assert seq[3] == "create kubecontrollersconfigurations/default"
    assert not [s for s in seq if "auto-hep" in s or "/custom" in s or "eth0" in s or "ghost" in s], seq
    assert api.get(HEPS + "/custom") is None and [where(e) for e in events if e["user"]["username"] == KC_USER
                                                  and where(e) == "delete hostendpoints/custom"]
    assert "node node-2: automatic host endpoint node-2-auto-hep present after" in progress.read_text()

    res = module_result(play)
    assert res["changed"] is True
    assert res["counts"]["deleted"] == 3 and res["counts"]["missing_nodes"] == 1
    assert res["kube_controllers"]["action"] == "created"
    assert any("ghost-all (node ghost-node)" in w for w in res.get("warnings", [])), res.get("warnings")
    kcc = api.get(KCC)
    assert kcc["spec"]["controllers"]["node"]["hostEndpoint"]["autoCreate"] == "Enabled"
    # Calico's defaults, not a stub (kube-controllers writes its status back with Go's duration spelling)
    assert kcc["spec"]["controllers"]["policy"]["reconcilerPeriod"] in ("5m", "5m0s")
    assert running_config_auto_create(kcc) == "Enabled"  # what the real kube-controllers runs with
    for node in nodes:
        node_labels = labels_of(api, "/api/v1/nodes/" + node)
        auto = api.get(HEPS + "/" + node + "-auto-hep")
        assert auto is not None, node
        assert auto["spec"]["interfaceName"] == "*" and auto["spec"]["profiles"] == ["projectcalico-default-allow"]
        for key, value in labels[node].items():
            assert node_labels[key] == value
            assert calico_labels(auto)[key] == value
        assert api.get(HEPS + "/" + node + "-all") is None
    assert api.get(HEPS + "/ghost-all") is not None
    for obj in untouched:
        now = api.get(HEPS + "/" + obj["metadata"]["name"])
        assert now["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]

    # the record: in the cluster and in the file
    cm = api.get(coll("v1", "configmaps", "kube-system") + "/hep-record")
    entries = json.loads(cm["data"]["record.json"])["entries"]
    assert sorted(e["endpoint"]["metadata"]["name"] for e in entries.values()) == [n + "-all" for n in nodes]
    assert all(e["deleted"] and not e["done"] for e in entries.values())
    with open(str(tmp_path / "record.json")) as f:
        assert json.load(f)["entries"] == entries

    # -- re-run: nothing to do -------------------------------------------------------------------------------
    mark = cluster.audit.mark()
    again = ansible.playbook(PLAYBOOK, extra_vars=play_vars(tmp_path))
    assert again.rc == 0, again.stdout[-4000:]
    assert again.changed() == 0 and module_result(again)["changed"] is False
    assert cluster.audit.writes_since(mark) == []

    # -- restored ----------------------------------------------------------------------------------------------
    mark = cluster.audit.mark()
    play = ansible.playbook(PLAYBOOK, extra_vars=play_vars(tmp_path, host_endpoint_migration_state="restored",
                                                           host_endpoint_migration_report_limit=2), diff=True)
    assert play.rc == 0, play.stdout[-4000:] + play.stderr[-2000:]
    res = module_result(play)
    assert res["changed"] is True and res["counts"]["restored"] == 3
    # two of the three listed, the third counted (and restored: below)
    assert len(res["endpoints"]) == 2 and res["not_listed"] == {"endpoints": 1}
    assert sorted(where(e) for e in cluster.audit.writes_since(mark)
                  if e["objectRef"]["resource"] == "hostendpoints") == [
        "create hostendpoints/%s-all" % n for n in nodes]
    for name, old in before.items():
        back = api.get(HEPS + "/" + name)
        assert back["metadata"]["labels"] == old["metadata"]["labels"]
        assert back["spec"] == old["spec"]
        assert back["metadata"]["uid"] != old["metadata"]["uid"]
    for node in nodes:
        assert api.get(HEPS + "/" + node + "-auto-hep") is not None  # automatic ones stay
    mark = cluster.audit.mark()
    again = ansible.playbook(PLAYBOOK, extra_vars=play_vars(tmp_path, host_endpoint_migration_state="restored"))
    assert again.rc == 0 and again.changed() == 0
    assert cluster.audit.writes_since(mark) == []


def v3_crds(mirror_url):
    """The same two CRDs serving group projectcalico.org, version v3: a stand-in for the Calico API server."""
    out = []
    for doc in crd_docs(mirror_url):
        doc["spec"]["group"] = "projectcalico.org"
        doc["metadata"] = {"name": doc["spec"]["names"]["plural"] + ".projectcalico.org"}
        doc["spec"]["versions"][0]["name"] = "v3"
        out.append(doc)
    return out


def test_projectcalico_v3_is_used_when_served_with_a_kube_controllers_stand_in(pristine_cluster, tmp_path):
    """With projectcalico.org/v3 served (CRDs of the same schema stand in for the Calico API server), every read
    and write of host endpoints and KubeControllersConfiguration goes there, although the crd.projectcalico.org
    CRDs exist too (with a decoy old endpoint that must stay)."""
    cluster = pristine_cluster
    ansible = Ansible(cluster, tmp_path)
    apply_crds(cluster)
    cluster.apply(yaml.safe_dump_all(v3_crds(cluster.mirror_url)))
    api = Api(cluster)
    v3 = "projectcalico.org/v3"
    cluster.wait_for(lambda: set(r["name"] for r in (api.get("/apis/" + v3) or {}).get("resources", []))
                     >= {"hostendpoints", "kubecontrollersconfigurations"}, timeout=60, what="projectcalico.org/v3")
    heps = coll(v3, "hostendpoints")
    api.req("POST", coll(v3, "kubecontrollersconfigurations"), {
        "apiVersion": v3, "kind": "KubeControllersConfiguration", "metadata": {"name": "default"},
        "spec": {"controllers": {"node": {"hostEndpoint": {"autoCreate": "Disabled"}}}}})
    for node in ("node-1", "node-2"):
        api.req("POST", heps, old_hep(node + "-all", node, {"env": "v3"}, api_version=v3))
    decoy = api.req("POST", HEPS, old_hep("decoy-all", "node-3", {"env": "crd"}))
    with V3KubeControllersStandIn(cluster, ["node-1", "node-2"]) as stand_in:
        mark = cluster.audit.mark()
        play = ansible.playbook(PLAYBOOK, extra_vars=play_vars(tmp_path))
        events = cluster.audit.events_since(mark)
        stand_in.stop()
    assert play.rc == 0, play.stdout[-4000:] + play.stderr[-2000:]
    res = module_result(play)
    assert res["datastore"] == {"datastore": "kubernetes", "api_version": v3}
    assert res["counts"]["deleted"] == 2 and res["counts"]["old"] == 2
    calico = [e for e in events if e.get("userAgent") != STAND_IN_AGENT
              and (e.get("objectRef") or {}).get("resource") in ("hostendpoints", "kubecontrollersconfigurations")]
    assert calico and set(e["objectRef"]["apiGroup"] for e in calico) == {"projectcalico.org"}
    assert api.get(heps + "/node-1-all") is None and api.get(heps + "/node-2-all") is None
    assert api.get(HEPS + "/decoy-all")["metadata"]["resourceVersion"] == decoy["metadata"]["resourceVersion"]
    assert api.get(coll(v3, "kubecontrollersconfigurations") + "/default")["spec"]["controllers"]["node"][
        "hostEndpoint"]["autoCreate"] == "Enabled"
    assert labels_of(api, "/api/v1/nodes/node-3").get("env") is None  # the decoy's labels are not copied


# -- the shared control plane ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def calico_crds(cluster):
    created = apply_crds(cluster)
    yield
    delete_crds(cluster, created)


@pytest.fixture
def world(cluster, calico_crds):
    """Nodes of this test's own, KubeControllersConfiguration default as Calico creates it (autoCreate Disabled);
    everything removed afterwards."""
    api = Api(cluster)
    tag = uuid.uuid4().hex[:5]
    w = {"api": api, "tag": tag, "nodes": [], "kube_controllers": []}
    if api.get(KCC) is not None:
        pytest.fail("KubeControllersConfiguration default exists already: another test left it behind")
    api.req("POST", coll(CRD, "kubecontrollersconfigurations"), {
        "apiVersion": CRD, "kind": "KubeControllersConfiguration", "metadata": {"name": "default"},
        "spec": dict(METRICS_OFF, controllers={"node": {"reconcilerPeriod": "5m", "syncLabels": "Enabled",
                                                        "hostEndpoint": {"autoCreate": "Disabled"}}})})

    def add_nodes(specs):
        names = ["hep-%s-%s" % (tag, n) for n in specs]
        w["nodes"].extend(names)
        cluster.add_nodes([cluster.node_spec(name, labels=labels) for name, labels in zip(names, specs.values())])
        return names
    w["add_nodes"] = add_nodes

    def kube_controllers():
        """The real calico-kube-controllers, running until the end of the test."""
        kc = KubeControllers(cluster)
        w["kube_controllers"].append(kc)
        return kc.start()
    w["kube_controllers_start"] = kube_controllers
    try:
        yield w
    finally:
        for kc in w["kube_controllers"]:
            kc.stop()  # before default goes: it would create it again
        api.delete(KCC)
        delete_automatic_endpoints(cluster)  # of every node: it serves the whole cluster
        for hep in api.items(HEPS):
            if hep["spec"].get("node") in w["nodes"]:
                api.delete(HEPS + "/" + hep["metadata"]["name"])
        cluster.remove_nodes(w["nodes"])


def test_a_label_conflict_writes_nothing_and_is_listed(cluster, world, ansible, namespace, tmp_path):
    api = world["api"]
    n1, n2 = world["add_nodes"]({"1": {"env": "prod"}, "2": {}})
    api.req("POST", HEPS, old_hep(n1 + "-all", n1, {"env": "staging", "zone": "a"}))
    api.req("POST", HEPS, old_hep(n2 + "-all", n2, {"env": "prod"}))
    mark = cluster.audit.mark()
    play = ansible.playbook(PLAYBOOK, extra_vars=play_vars(tmp_path, namespace))
    assert play.rc != 0
    res = module_result(play)
    assert cluster.audit.writes_since(mark) == []
    assert "1 label conflict(s), nothing was written" in res["msg"]
    assert "node %s: label env is 'prod' on the node, 'staging' on host endpoint %s-all" % (n1, n1) in res["msg"]
    assert res["conflicts"] == [{"node": n1, "key": "env", "node_value": "prod",
                                 "endpoint_values": {n1 + "-all": "staging"}, "kind": "node",
                                 "resolution": "blocking"}]
    assert api.get(HEPS + "/" + n1 + "-all") and api.get(HEPS + "/" + n2 + "-all")
    assert "zone" not in labels_of(api, "/api/v1/nodes/" + n1)
    assert api.get(KCC)["spec"]["controllers"]["node"]["hostEndpoint"]["autoCreate"] == "Disabled"


@pytest.mark.parametrize("policy", ["overwrite", "skip"])
def test_overwrite_and_skip_with_the_real_kube_controllers(cluster, world, ansible, namespace, tmp_path, policy):
    api = world["api"]
    n1, n2 = world["add_nodes"]({"1": {"env": "prod"}, "2": {}})
    api.req("POST", HEPS, old_hep(n1 + "-all", n1, {"env": "staging", "zone": "a"}))
    api.req("POST", HEPS, old_hep(n2 + "-all", n2, {"env": "prod"}))
    kube_controllers = world["kube_controllers_start"]()
    play = ansible.playbook(PLAYBOOK, extra_vars=play_vars(
        tmp_path, namespace, host_endpoint_migration_label_conflicts=policy))
    assert play.rc == 0, play.stdout[-4000:] + play.stderr[-2000:] + kube_controllers.log()
    res = module_result(play)
    assert res["conflicts"][0]["resolution"] == policy
    expected_env = "staging" if policy == "overwrite" else "prod"
    assert labels_of(api, "/api/v1/nodes/" + n1)["env"] == expected_env
    assert labels_of(api, "/api/v1/nodes/" + n1)["zone"] == "a"
    assert labels_of(api, HEPS + "/" + n1 + "-auto-hep")["env"] == expected_env
    assert labels_of(api, "/api/v1/nodes/" + n2)["env"] == "prod"
    assert api.get(HEPS + "/" + n1 + "-all") is None and api.get(HEPS + "/" + n2 + "-all") is None
    n1_result = [n for n in res["nodes"] if n["node"] == n1][0]
    assert n1_result["skipped_labels"] == ([] if policy == "overwrite" else ["env"])


def test_a_node_whose_automatic_endpoint_never_appears_keeps_its_old_endpoint_with_the_real_kube_controllers(
        cluster, world, ansible, namespace, tmp_path):
    """kube-controllers runs, but an admission policy refuses its automatic endpoint for n2 (held)."""
    api = world["api"]
    n1, n2 = world["add_nodes"]({"1": {}, "2": {HOLD_LABEL: "true"}})
    api.req("POST", HEPS, old_hep(n1 + "-all", n1, {"env": "prod"}))
    api.req("POST", HEPS, old_hep(n2 + "-all", n2, {"env": "prod"}))
    with HoldAutoHeps(cluster):
        kube_controllers = world["kube_controllers_start"]()
        play = ansible.playbook(PLAYBOOK, extra_vars=play_vars(
            tmp_path, namespace, host_endpoint_migration_wait_timeout=30))
        assert "held by the test" in kube_controllers.log(tail=200000)  # it tried, and was refused
    assert play.rc != 0
    res = module_result(play)
    assert "1 node(s) kept their old host endpoint(s)" in res["msg"]
    assert "%s (no automatic host endpoint)" % n2 in res["msg"]
    assert res["not_replaced"] == [{"node": n2, "endpoints": [n2 + "-all"], "reason": "no automatic host endpoint"}]
    assert api.get(HEPS + "/" + n2 + "-all") is not None
    assert api.get(HEPS + "/" + n1 + "-all") is None and api.get(HEPS + "/" + n1 + "-auto-hep") is not None
    assert labels_of(api, "/api/v1/nodes/" + n2)["env"] == "prod"  # labels copied all the same


# -- issue 36: datastore etcd, but calicoctl would work on the Kubernetes datastore ----------------------------------

CLUSTER_INFORMATION = coll(CRD, "clusterinformations") + "/default"
WRAPPER = """#!/bin/sh
# calicoctl as a wrapper some hosts have: its own settings (the Kubernetes datastore), whatever it is given
for a in "$@"; do shift; case "$a" in --config=*) ;; *) set -- "$@" "$a";; esac; done
exec env -u CALICO_DATASTORE_TYPE DATASTORE_TYPE=kubernetes KUBECONFIG={kubeconfig} {calicoctl} "$@"
"""


def test_etcd_declared_while_calicoctl_reaches_the_kubernetes_datastore_writes_nothing(cluster, world, ansible,
                                                                                      namespace, tmp_path):
    """The Kubernetes datastore holds host endpoints; the job is told datastore=etcd. calicoctl v3.31 with no etcd
    settings falls back to the Kubernetes datastore (libcalico-go applyConfigDefaults), and a wrapper that carries
    its own settings reaches it whatever it is given: both must fail before any write, naming the variable, and leave
    the endpoints and the nodes as they were. The second case is seen by the real calicoctl reading the Kubernetes
    API's ClusterInformation (its clusterGUID compared with what the module reads there itself)."""
    api = world["api"]
    n1, = world["add_nodes"]({"1": {}})
    api.req("POST", HEPS, old_hep(n1 + "-all", n1, {"env": "kdd"}))
    created_ci = api.get(CLUSTER_INFORMATION) is None
    if created_ci:
        api.req("POST", coll(CRD, "clusterinformations"), {
            "apiVersion": CRD, "kind": "ClusterInformation", "metadata": {"name": "default"},
            "spec": {"clusterGUID": "kdd-" + world["tag"], "clusterType": "k8s,kdd", "datastoreReady": True,
                     "calicoVersion": "v3.31.4"}})
    wrapper = tmp_path / "calicoctl-wrapper"
    wrapper.write_text(WRAPPER.format(kubeconfig=cluster.kubeconfig, calicoctl=cluster.bin("calicoctl")))
    wrapper.chmod(0o755)
    etcd_cfg = tmp_path / "etcd-calicoctl.cfg"
    etcd_cfg.write_text(yaml.safe_dump({"apiVersion": "projectcalico.org/v3", "kind": "CalicoAPIConfig",
                                        "metadata": {}, "spec": {"datastoreType": "etcdv3",
                                                                 "etcdEndpoints": cluster.cp.state["etcd"]}}))
    cases = [
        ({"host_endpoint_migration_calicoctl_path": cluster.bin("calicoctl")},
         "host_endpoint_migration_datastore is etcd but calicoctl has no etcd settings"),
        ({"host_endpoint_migration_calicoctl_path": str(wrapper),
          "host_endpoint_migration_calicoctl_config": str(etcd_cfg)},
         "host_endpoint_migration_datastore is etcd but calicoctl (%s) reaches the Kubernetes datastore" % wrapper),
    ]
    try:
        for extra, needle in cases:
            mark = cluster.audit.mark()
            play = ansible.playbook(PLAYBOOK, extra_vars=play_vars(tmp_path, namespace,
                                                                   host_endpoint_migration_datastore="etcd", **extra))
            assert play.rc != 0
            res = module_result(play)
            assert needle in res["msg"] and res["msg"].endswith("nothing was written"), res["msg"]
            assert cluster.audit.writes_since(mark) == []
            assert api.get(HEPS + "/" + n1 + "-all") is not None
            assert labels_of(api, "/api/v1/nodes/" + n1).get("env") is None
            assert api.get(KCC)["spec"]["controllers"]["node"]["hostEndpoint"]["autoCreate"] == "Disabled"
    finally:
        if created_ci:
            api.delete(CLUSTER_INFORMATION)
