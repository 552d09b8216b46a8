"""migrate_to_operator.yml (role operator_migration): a manifest install of Calico v3.31.4 moved to the real Tigera
operator v1.40.7.

Real here: the operator (the pod runner runs the binary of its Deployment's image tag as its ServiceAccount), which
converts the manifest install itself, restricts the manifest's calico-node to nodes labelled ``pre-operator``, moves
the nodes one at a time to its own calico-node in calico-system and then deletes the manifest's calico-node and
calico-kube-controllers; calico-kube-controllers v3.31.4 behind both Deployments. Simulated: calico-node, which
needs a kernel (kwok runs its pods Running and ready, which is all the operator's migration waits for); the
default IP pool it would create at its start is created by the test (``seed``).

The file's tests share one control plane of their own (the Installation, the operator and the CRDs are
cluster-wide); each starts from a fresh manifest install.
"""

import json
import os

import pytest
import yaml

from calico_support import release_docs, remove_operator_install, settle_crds, wipe_operator_resources
from localcp.cluster import ControlPlane
from localcp.fixtures import Ansible, Cluster
from test_install_ebpf import _kill_at_write

pytestmark = pytest.mark.integration

PLAYBOOK = "playbooks/migrate_to_operator.yml"
VERSION = "v3.31.4"
RECORD = "calico-ops-operator-migration"
OPERATOR_USER = "system:serviceaccount:tigera-operator:tigera-operator"


@pytest.fixture(scope="module")
def om_cluster():
    cp = ControlPlane(die_with_parent=True)
    cp.start()
    try:
        yield Cluster(cp)
    finally:
        cp.stop(remove_dir=not os.environ.get("KEEP"))


def _get(cluster, *args):
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def _maybe(cluster, *args):
    proc = cluster.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def _container(ds, name):
    return next(c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == name)


def _env(container):
    return {e["name"]: e.get("value") for e in container.get("env") or []}


def _wipe(cluster):
    """Whatever an earlier test left: the operator install (Calico's uninstall order), the manifest install, the
    record, the migration labels."""
    wipe_operator_resources(cluster, timeout=300)
    remove_operator_install(cluster)
    for version_file in ("calico.yaml",):
        url = "%s/%s/manifests/%s" % (cluster.mirror_url, VERSION, version_file)
        cluster.kubectl("delete", "--ignore-not-found", "--wait=true", "-f", url, check=False, timeout=300)
    cluster.kubectl("delete", "configmap", "-n", "kube-system", RECORD, "--ignore-not-found", check=False)
    cluster.kubectl("label", "nodes", "--all", "projectcalico.org/operator-node-migration-", check=False)
    settle_crds(cluster)


def _manifest_install(cluster, edit_node=None, mtu="1440"):
    """calico.yaml v3.31.4 as a user would have changed it (MTU, a Felix setting, the autodetection method), what
    calico-node creates at its start (FelixConfiguration default, the default IP pool: calico-node cannot run here),
    and policies of every kind the migration must leave alone."""
    docs = release_docs(cluster.mirror_url, VERSION, "calico.yaml")
    for d in docs:
        if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "calico-config":
            d["data"]["veth_mtu"] = mtu
        if d["kind"] == "DaemonSet" and d["metadata"]["name"] == "calico-node":
            c = _container(d, "calico-node")
            c["env"] += [{"name": "FELIX_LOGFILEPATH", "value": "none"},
                         {"name": "IP_AUTODETECTION_METHOD", "value": "interface=eth0"}]
            if edit_node:
                edit_node(d)
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=yaml.safe_dump_all(docs),
                    timeout=300)
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=120s",
                    "crd/ippools.crd.projectcalico.org", "crd/globalnetworkpolicies.crd.projectcalico.org")
    seed = [
        {"apiVersion": "crd.projectcalico.org/v1", "kind": "FelixConfiguration", "metadata": {"name": "default"},
         "spec": {"bpfLogLevel": "", "reportingInterval": "0s"}},
        {"apiVersion": "crd.projectcalico.org/v1", "kind": "IPPool", "metadata": {"name": "default-ipv4-ippool"},
         "spec": {"cidr": "192.168.0.0/16", "ipipMode": "Always", "vxlanMode": "Never", "natOutgoing": True,
                  "blockSize": 26, "nodeSelector": "all()"}},
        {"apiVersion": "crd.projectcalico.org/v1", "kind": "GlobalNetworkPolicy",
         "metadata": {"name": "default.deny-egress-smtp"},
         "spec": {"tier": "default", "order": 100, "selector": "all()", "types": ["Egress"],
                  "egress": [{"action": "Deny", "protocol": "TCP", "destination": {"ports": [25]}}]}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "om-team"}},
        {"apiVersion": "crd.projectcalico.org/v1", "kind": "NetworkPolicy",
         "metadata": {"name": "default.allow-web", "namespace": "om-team"},
         "spec": {"tier": "default", "order": 10, "selector": "app == 'web'", "types": ["Ingress"],
                  "ingress": [{"action": "Allow", "protocol": "TCP", "destination": {"ports": [80]}}]}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
         "metadata": {"name": "deny-all", "namespace": "om-team"},
         "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}},
    ]
    cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(seed))
    cluster.wait_for(lambda: _ready(_maybe(cluster, "daemonset", "calico-node", "-n", "kube-system")), timeout=180,
                     interval=1, what="the manifest's calico-node ready on every node")


def _ready(ds):
    st = (ds or {}).get("status") or {}
    return bool(ds) and st.get("desiredNumberScheduled", 0) > 0 and \
        st.get("numberReady") == st.get("desiredNumberScheduled") == st.get("updatedNumberScheduled")


def _policies(cluster):
    out = {}
    for kind in ("globalnetworkpolicies.crd.projectcalico.org", "networkpolicies.crd.projectcalico.org",
                 "networkpolicies.networking.k8s.io"):
        for item in _get(cluster, kind, "-A")["items"]:
            out[(kind, item["metadata"].get("namespace"), item["metadata"]["name"])] = item["spec"]
    return out


def _vars(cluster, tmp_path, **extra):
    out = {"operator_migration_manifest_url": cluster.mirror_url, "operator_migration_timeout": 300,
           "operator_migration_poll_interval": 5, "operator_migration_artifacts_dir": str(tmp_path / "artifacts")}
    out.update(extra)
    return out


@pytest.fixture
def manifest_install(om_cluster):
    _wipe(om_cluster)
    yield om_cluster
    _wipe(om_cluster)


def test_a_manifest_install_moves_to_the_real_operator(manifest_install, tmp_path):
    """Check mode writes nothing; runs killed right after each step's first write are finished by the next run; the
    real operator moves calico-node node by node; every policy, the MTU, the autodetection and the Felix setting are
    as they were; the manifest's leftovers are recorded and removed; a re-run writes nothing."""
    cluster = manifest_install
    ansible = Ansible(cluster, tmp_path)
    _manifest_install(cluster)
    before = _policies(cluster)
    nodes = sorted(n["metadata"]["name"] for n in _get(cluster, "nodes")["items"])

    mark = cluster.audit.mark()
    check = ansible.playbook(PLAYBOOK, _vars(cluster, tmp_path), check=True, callback="default")
    assert check.rc == 0, check.stdout[-5000:] + check.stderr[-2000:]
    assert cluster.audit.writes_since(mark) == []
    assert "veth_mtu=1440 (release: 0) -> spec.calicoNetwork.mtu" in check.stdout
    assert "FELIX_LOGFILEPATH=none (release: None) -> FelixConfiguration default" in check.stdout
    # the Installation it would create, printed as JSON inside the debug message (quotes escaped)
    assert '\\"mtu\\": 1440' in check.stdout and '\\"interface\\": \\"eth0\\"' in check.stdout

    # runs killed (SIGKILL, the whole process tree) right after each step's first write, one run after another: the
    # record, the operator's CRDs, the operator's Deployment, the Installation; each later run goes on from there
    first = cluster.audit.mark()
    for resource, name, phase in (("configmaps", RECORD, "recorded"), ("customresourcedefinitions", None, "operator"),
                                  ("deployments", "tigera-operator", "operator"),
                                  ("installations", "default", "installation")):
        mark = cluster.audit.mark()
        proc = ansible.start(PLAYBOOK, extra_vars=_vars(cluster, tmp_path))
        assert _kill_at_write(cluster, proc, mark, resource, name), "the run ended before writing %s" % resource
        record = _get(cluster, "configmap", "-n", "kube-system", RECORD)["data"]
        # nothing is lost: the manifest-era objects are in the record from the first write on
        assert record["phase"] == phase and json.loads(record["manifest_era"])[0]["kind"] == "DaemonSet", record
    # the record (the manifest-era objects) was written before the operator's first object
    order = [(w["objectRef"].get("resource"), w["objectRef"].get("name")) for w in cluster.audit.writes_since(first)]
    assert order.index(("configmaps", RECORD)) < order.index(("deployments", "tigera-operator")), order

    resume = cluster.audit.mark()
    res = ansible.playbook(PLAYBOOK, _vars(cluster, tmp_path), callback="default")
    assert res.rc == 0, res.stdout[-6000:] + res.stderr[-2000:]

    # what the real operator did: its own calico-node on every node, the manifest's gone, no migration label left
    assert _maybe(cluster, "daemonset", "calico-node", "-n", "kube-system") is None
    assert _maybe(cluster, "deployment", "calico-kube-controllers", "-n", "kube-system") is None
    node = _get(cluster, "daemonset", "calico-node", "-n", "calico-system")
    assert node["status"]["numberReady"] == len(nodes), node["status"]
    env = _env(_container(node, "calico-node"))
    assert env["FELIX_IPINIPMTU"] == "1440" and env["IP_AUTODETECTION_METHOD"] == "interface=eth0", env
    pods = _get(cluster, "pods", "-n", "calico-system", "-l", "k8s-app=calico-node")["items"]
    assert sorted(p["spec"]["nodeName"] for p in pods) == nodes
    assert not [n for n in _get(cluster, "nodes")["items"]
                if "projectcalico.org/operator-node-migration" in n["metadata"].get("labels", {})]
    assert cluster.audit.writes_since(mark, users=(OPERATOR_USER,)), "the operator wrote nothing"
    felix = _get(cluster, "felixconfigurations.crd.projectcalico.org", "default")
    assert felix["spec"]["logFilePath"] == "none", felix["spec"]  # moved there by the operator
    ts = next(t for t in _get(cluster, "tigerastatus")["items"] if t["metadata"]["name"] == "calico")
    assert {c["type"]: c["status"] for c in ts["status"]["conditions"]}["Available"] == "True"
    assert cluster.wait_for_process("calico-kube-controllers", timeout=60)["namespace"] == "calico-system"

    # every policy as it was; the leftovers recorded, then removed; CRDs kept
    assert _policies(cluster) == before
    record = _get(cluster, "configmap", "-n", "kube-system", RECORD)["data"]
    assert record["phase"] == "done"
    removed = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])
               for o in json.loads(record["removed"])}
    assert ("ConfigMap", "kube-system", "calico-config") in removed
    assert ("ServiceAccount", "kube-system", "calico-node") in removed
    assert all(ns == "kube-system" for _k, ns, _n in removed), removed  # cluster-scoped RBAC is listed, kept
    assert _maybe(cluster, "clusterrole", "calico-tier-getter") is not None
    for kind, ns, name in removed:
        assert _maybe(cluster, kind.lower(), name, *(["-n", ns] if ns else [])) is None, (kind, ns, name)
    assert _maybe(cluster, "crd", "ippools.crd.projectcalico.org") is not None
    # the re-run went on from the record: the operator, left running, is moving the nodes or has moved them all
    plan = [ln.strip() for ln in res.stdout.splitlines() if '"plan: ' in ln]
    assert plan and plan[0].startswith(('"plan: migrate from phase installation',
                                        '"plan: migrate from phase migrated')), plan
    resumed = [(w["objectRef"].get("resource"), w["objectRef"].get("name")) for w in cluster.audit.writes_since(resume)]
    assert ("deployments", "tigera-operator") not in resumed and ("installations", "default") not in resumed, resumed

    # a re-run: nothing to do, nothing written
    mark = cluster.audit.mark()
    again = ansible.playbook(PLAYBOOK, _vars(cluster, tmp_path))
    assert again.rc == 0, again.stdout[-3000:]
    assert again.changed() == 0, [t["task"] for t in again.tasks if t["result"].get("changed")]
    assert cluster.audit.writes_since(mark) == []


def test_a_customisation_the_operator_cannot_carry_is_refused_before_any_write(manifest_install, tmp_path):
    cluster = manifest_install
    ansible = Ansible(cluster, tmp_path)

    def edit(ds):
        _container(ds, "calico-node")["env"] += [{"name": "MY_TUNING", "value": "on"},
                                                 {"name": "FELIX_LOGSEVERITYSCREEN", "value": "Debug"}]
        ds["spec"]["template"]["spec"]["volumes"].append({"name": "scratch", "emptyDir": {}})
    _manifest_install(cluster, edit_node=edit)
    mark = cluster.audit.mark()
    res = ansible.playbook(PLAYBOOK, _vars(cluster, tmp_path), callback="default")
    assert res.rc != 0
    assert "Not migrating: the install has customisations the operator cannot carry" in res.stdout
    assert "calico-node env MY_TUNING=on: refused" in res.stdout and "operator_migration_accept" in res.stdout
    assert "calico-node volume scratch" in res.stdout
    # accepted by the operator's converter but dropped (seen): refused too, with where to set it instead
    assert "set spec.logSeverityScreen of FelixConfiguration default to Debug" in res.stdout
    assert "Traceback" not in res.stdout + res.stderr
    assert cluster.audit.writes_since(mark) == []
    assert _maybe(cluster, "deployment", "tigera-operator", "-n", "tigera-operator") is None
