"""playbooks/migrate_datastore.yml (role datastore_migration): etcd -> Kubernetes datastore with real calicoctl.

Real here: calicoctl v3.31.4 (built from ../shared/third_party) locks, exports, imports and unlocks; etcd is the
control plane's own (Calico's keys under /calico, beside Kubernetes' /registry); the Kubernetes datastore is this
API server with the crd.projectcalico.org CRDs calicoctl's import creates; calico-kube-controllers v3.31.4 runs
as a real process behind its pod (etcd first, then the Kubernetes datastore after the switch). Simulated:
calico-node, which needs a kernel (CalicoNodeStandIn writes the ClusterInformation it would write at start-up).
"""

import base64
import json
import re
import subprocess
import time
import uuid

import pytest
import yaml

from calico_support import CalicoNodeStandIn, Install, get, release_docs, wipe_calico
from localcp.audit import describe

pytestmark = pytest.mark.integration

PLAYBOOK = "playbooks/migrate_datastore.yml"
VERSION = "v3.31.4"
CRD_GROUP = "crd.projectcalico.org"


def etcd_call(url, path, body):
    import urllib.request
    req = urllib.request.Request(url.rstrip("/") + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def wipe_calico_etcd(url):
    """Every Calico key of the shared etcd (``/calico`` prefix); Kubernetes' ``/registry`` is left alone."""
    b64 = lambda s: base64.b64encode(s.encode()).decode()  # noqa: E731
    etcd_call(url, "/v3/kv/deleterange", {"key": b64("/calico"), "range_end": b64("/calicp")})


def delete_calico_crds(cluster):
    names = [n for n in cluster.kubectl("get", "crd", "-o", "name", check=False).stdout.split()
             if n.endswith("." + CRD_GROUP)]
    if names:
        cluster.kubectl("delete", "--wait=true", *names, check=False, timeout=300)


class Migration:
    """An etcd manifest install of Calico v3.31.4 on the control plane's etcd, seeded with real calicoctl."""

    def __init__(self, cluster, tmp_path):
        self.cluster, self.tmp = cluster, tmp_path
        self.etcd = cluster.cp.state["etcd"]
        self.calicoctl = cluster.bin("calicoctl")
        self.install = Install(cluster)
        self.suffix = uuid.uuid4().hex[:6]
        self.record = "calico-ops-dsm-" + self.suffix
        self.namespace = "dsm-" + self.suffix
        self.etcd_cfg = tmp_path / "seed-etcd.cfg"
        self.kdd_cfg = tmp_path / "seed-kdd.cfg"
        self.etcd_cfg.write_text(yaml.safe_dump({"apiVersion": "projectcalico.org/v3", "kind": "CalicoAPIConfig",
                                                 "metadata": {}, "spec": {"datastoreType": "etcdv3",
                                                                          "etcdEndpoints": self.etcd}}))
        self.kdd_cfg.write_text(yaml.safe_dump({"apiVersion": "projectcalico.org/v3", "kind": "CalicoAPIConfig",
                                                "metadata": {}, "spec": {"datastoreType": "kubernetes",
                                                                         "kubeconfig": str(cluster.kubeconfig)}}))

    def ctl(self, *args, datastore="etcd", stdin=None, check=True):
        cfg = self.etcd_cfg if datastore == "etcd" else self.kdd_cfg
        out = subprocess.run([self.calicoctl, *args, "--config", str(cfg)], input=stdin, capture_output=True,
                             text=True, timeout=120, check=False)
        if check:
            assert out.returncode == 0, (args, out.stdout, out.stderr)
        return out

    def objects(self, plural, datastore, namespaced=False):
        out = self.ctl("get", plural, "-o", "json", *(["--all-namespaces"] if namespaced else []),
                       datastore=datastore)
        return json.loads(out.stdout).get("items") or []

    def setup(self, nodes=3):
        """``nodes``: how many Kubernetes nodes get a Calico Node in etcd (the benchmark seeds every node)."""
        wipe_calico(self.cluster)
        wipe_calico_etcd(self.etcd)
        delete_calico_crds(self.cluster)
        self.cluster.kubectl("create", "namespace", self.namespace)

        def on_the_real_etcd(doc):
            if doc["kind"] == "ConfigMap" and doc["metadata"]["name"] == "calico-config":
                doc["data"]["etcd_endpoints"] = self.etcd
            return doc
        docs = [on_the_real_etcd(d) for d in release_docs(self.cluster.mirror_url, VERSION, "calico-etcd.yaml")]
        self.install.files.append((VERSION, "calico-etcd.yaml"))
        self.install.forget_later(VERSION, "calico.yaml")
        self.cluster.apply(yaml.safe_dump_all(docs), server_side=False)  # as users do: kubectl apply -f
        nodes = sorted(n["metadata"]["name"] for n in self.cluster.k8s.resources.get(api_version="v1", kind="Node")
                       .get().to_dict()["items"])[:nodes]
        self.nodes = nodes
        seed = [
            {"kind": "IPPool", "metadata": {"name": "pool-a"},
             "spec": {"cidr": "10.77.0.0/16", "vxlanMode": "Always", "ipipMode": "Never", "natOutgoing": True,
                      "nodeSelector": "all()"}},
            {"kind": "GlobalNetworkPolicy", "metadata": {"name": "deny-egress-db", "labels": {"team": "a"}},
             "spec": {"selector": "role == 'db'", "types": ["Egress"], "order": 10,
                      "egress": [{"action": "Deny", "destination": {"nets": ["10.1.0.0/16"]}}]}},
            {"kind": "NetworkPolicy", "metadata": {"name": "allow-web", "namespace": self.namespace},
             "spec": {"selector": "app == 'web'", "types": ["Ingress"],
                      "ingress": [{"action": "Allow", "protocol": "TCP", "destination": {"ports": [80]}}]}},
            {"kind": "StagedNetworkPolicy", "metadata": {"name": "try-deny", "namespace": self.namespace},
             "spec": {"selector": "app == 'web'", "types": ["Ingress"]}},
            {"kind": "GlobalNetworkSet", "metadata": {"name": "partners", "labels": {"kind": "partner"}},
             "spec": {"nets": ["192.0.2.0/24"]}},
            {"kind": "HostEndpoint", "metadata": {"name": nodes[0] + "-eth0", "labels": {"host": "yes"}},
             "spec": {"node": nodes[0], "interfaceName": "eth0", "expectedIPs": ["10.0.0.10"]}},
            {"kind": "FelixConfiguration", "metadata": {"name": "default"},
             "spec": {"logSeverityScreen": "Info", "reportingInterval": "0s"}},
            {"kind": "BGPConfiguration", "metadata": {"name": "default"},
             "spec": {"asNumber": 64512, "nodeToNodeMeshEnabled": True}},
            {"kind": "BGPPeer", "metadata": {"name": "tor"}, "spec": {"peerIP": "10.0.0.254", "asNumber": 64513}},
        ]
        # calico-node's own Nodes in etcd (a real one writes them at start-up; it needs a kernel): names as the
        # host knows itself, with the k8s orchestrator reference the export renames them by
        for i, name in enumerate(nodes):
            seed.append({"kind": "Node", "metadata": {"name": "host-%d.example" % i},
                         "spec": {"bgp": {"ipv4Address": "10.0.%d.%d/16" % (i // 250, i % 250 + 1)},
                                  "orchRefs": [{"orchestrator": "k8s", "nodeName": name}]}})
        seed.append({"kind": "FelixConfiguration", "metadata": {"name": "node.host-0.example"},
                     "spec": {"logSeverityScreen": "Debug"}})
        text = yaml.safe_dump_all([dict(d, apiVersion="projectcalico.org/v3") for d in seed])
        self.ctl("apply", "-f", "-", stdin=text)
        self.ctl("ipam", "configure", "--strictaffinity=true")
        self.install.configmaps.append(("kube-system", self.record))
        return self

    def cleanup(self):
        self.install.cleanup()
        delete_calico_crds(self.cluster)
        wipe_calico_etcd(self.etcd)
        self.cluster.kubectl("delete", "namespace", self.namespace, "--ignore-not-found", "--wait=false",
                             check=False)

    def variables(self, **extra):
        out = {"datastore_migration_calicoctl": self.calicoctl,
               "datastore_migration_dir": str(self.tmp / "migration"),
               "datastore_migration_calicoctl_kubeconfig": str(self.cluster.kubeconfig),
               "datastore_migration_manifest_url": self.cluster.mirror_url,
               "datastore_migration_record_name": self.record,
               "datastore_migration_timeout": 120,
               "datastore_migration_poll_interval": 5}
        out.update(extra)
        return out

    def record_data(self):
        return (get(self.cluster, "v1", "ConfigMap", self.record, "kube-system") or {}).get("data") or {}

    def node_env(self):
        ds = get(self.cluster, "apps/v1", "DaemonSet", "calico-node", "kube-system")
        c = [c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == "calico-node"][0]
        return dict((e["name"], e.get("value", "(valueFrom)")) for e in c.get("env") or [])

    def cluster_version(self):
        out = self.ctl("get", "clusterinformation", "default", "-o", "json", check=False)
        return json.loads(out.stdout)["spec"].get("calicoVersion") if out.returncode == 0 else None

    def locked(self, datastore):
        info = json.loads(self.ctl("get", "clusterinformation", "default", "-o", "json",
                                   datastore=datastore).stdout)
        return not info["spec"].get("datastoreReady", False)


@pytest.fixture
def migration(cluster, tmp_path):
    m = Migration(cluster, tmp_path).setup()
    with CalicoNodeStandIn(cluster) as node:
        m.node = node
        wait_for(lambda: m.cluster_version() == VERSION, 60, "calico-node's ClusterInformation in etcd")
        yield m
    m.cleanup()


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))
        time.sleep(0.5)


def run(ansible, variables, check=False, ok=True, tags=None):
    res = ansible.playbook(PLAYBOOK, extra_vars=variables, check=check,
                           extra_args=(["--tags", tags] if tags else []))
    if ok:
        assert res.rc == 0, res.stdout[-8000:] + res.stderr[-3000:]
    return res


def failure(res):
    return " ".join(str(t["result"].get("msg", "")) for t in res.tasks if t["result"].get("failed")
                    and t["result"].get("failed_when_result") is not False)


def ran(res):
    return [t["task"].split(" : ", 1)[-1] for t in res.tasks if not t["result"].get("skipped")]


def writes_of(writes, resource):
    return [i for i, e in enumerate(writes) if e["objectRef"].get("resource") == resource]


def test_migrates_etcd_to_the_kubernetes_datastore_in_the_documented_order(cluster, ansible, migration):
    m = migration
    # check mode first: the plan, and nothing written (etcd not locked, no record)
    mark = cluster.audit.mark()
    planned = run(ansible, m.variables(), check=True)
    assert cluster.audit.writes_since(mark) == [], [describe(e) for e in cluster.audit.writes_since(mark)]
    assert not m.locked("etcd") and not m.record_data()
    assert "check mode: would migrate from phase etcd" in planned.stdout

    mark = cluster.audit.mark()
    res = run(ansible, m.variables())
    writes = cluster.audit.writes_since(mark)
    assert not m.node.errors, m.node.errors

    # calico-node and calico-kube-controllers on the Kubernetes datastore, the etcd settings gone
    env = m.node_env()
    assert env.get("DATASTORE_TYPE") == "kubernetes" and "ETCD_ENDPOINTS" not in env, env
    config = get(cluster, "v1", "ConfigMap", "calico-config", "kube-system")["data"]
    assert "etcd_endpoints" not in config, config
    # every seeded object in the Kubernetes datastore, read back with real calicoctl
    assert [p["spec"]["cidr"] for p in m.objects("ippools", "kdd")] == ["10.77.0.0/16"]
    gnp = {p["metadata"]["name"]: p for p in m.objects("globalnetworkpolicies", "kdd")}
    assert gnp["deny-egress-db"]["spec"]["egress"][0]["destination"]["nets"] == ["10.1.0.0/16"]
    assert gnp["deny-egress-db"]["metadata"]["labels"]["team"] == "a"
    nps = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in m.objects("networkpolicies", "kdd", True)}
    assert (m.namespace, "allow-web") in nps
    # calicoctl's export leaves this one out (namespace other than default): the role carries it
    staged = {(p["metadata"]["namespace"], p["metadata"]["name"])
              for p in m.objects("stagednetworkpolicies", "kdd", True)}
    assert (m.namespace, "try-deny") in staged
    assert "Create what the export left out" in ran(res)
    felix = {f["metadata"]["name"]: f["spec"] for f in m.objects("felixconfigurations", "kdd")}
    assert felix["node.%s" % m.nodes[0]]["logSeverityScreen"] == "Debug"  # renamed after its k8s node
    nodes = {n["metadata"]["name"]: n["spec"] for n in m.objects("nodes", "kdd")}
    assert nodes[m.nodes[1]]["bgp"]["ipv4Address"] == "10.0.0.2/16"
    assert [h["metadata"]["name"] for h in m.objects("hostendpoints", "kdd")] == [m.nodes[0] + "-eth0"]

    # the verification compared every kind
    verified = [t["result"] for t in res.tasks
                if t["task"].endswith("Compare every kind the export carries, etcd against the Kubernetes datastore")]
    assert verified and verified[0]["comparison"]["ok"], verified
    assert "stagednetworkpolicies: 1 in etcd, 1 in the Kubernetes datastore" in verified[0]["comparison"]["lines"]

    # the Kubernetes datastore unlocked, etcd left locked (nothing uses it; the way back is closed)
    assert not m.locked("kdd") and m.locked("etcd")
    rec = m.record_data()
    assert rec["phase"] == "done" and json.loads(rec["etcd_era"])[0]["kind"] == "DaemonSet", rec.keys()
    assert (m.tmp / "migration" / "etcd-data").stat().st_mode & 0o777 == 0o600

    # order, from the audit log: the import (CRDs, then Calico objects) before the DaemonSet switch, the unlock
    # (ClusterInformation datastoreReady true) after it
    crd_writes = writes_of(writes, "customresourcedefinitions")
    ds_writes = [i for i in writes_of(writes, "daemonsets") if writes[i]["objectRef"].get("name") == "calico-node"]
    info_writes = writes_of(writes, "clusterinformations")
    pool_writes = writes_of(writes, "ippools")
    assert crd_writes and ds_writes and pool_writes and info_writes, [describe(e) for e in writes]
    assert max(crd_writes) < min(pool_writes) < min(ds_writes) < max(info_writes), [describe(e) for e in writes]

    # a second run: nothing to do, nothing written
    mark = cluster.audit.mark()
    again = run(ansible, m.variables())
    assert cluster.audit.writes_since(mark) == [], [describe(e) for e in cluster.audit.writes_since(mark)]
    assert again.changed() == 0, again.stats
    assert "the migration is complete" in json.dumps(again.data)


def test_a_rerun_after_an_import_cut_short_removes_it_and_finishes(cluster, ansible, migration):
    """A run cut after the import wrote to the Kubernetes datastore and before it was recorded complete: calicoctl
    would refuse to import again (resources exist); the re-run removes them (etcd, locked, is still what
    calico-node reads) and imports from a fresh export."""
    m = migration
    run(ansible, m.variables(), tags="lock,import")
    assert m.record_data()["phase"] == "imported" and m.locked("etcd")
    assert m.node_env().get("DATASTORE_TYPE") != "kubernetes"
    # the cut: the record says the import started, not that it finished
    cluster.kubectl("patch", "configmap", "-n", "kube-system", m.record, "--type=merge",
                    "-p", json.dumps({"data": {"phase": "import-started"}}))
    res = run(ansible, m.variables())
    assert "Delete the crd.projectcalico.org CRDs (their objects with them)" in ran(res)
    assert m.node_env().get("DATASTORE_TYPE") == "kubernetes"
    assert m.record_data()["phase"] == "done" and not m.locked("kdd")
    assert [p["spec"]["cidr"] for p in m.objects("ippools", "kdd")] == ["10.77.0.0/16"]


def test_abort_after_the_switch_puts_calico_back_on_etcd_unlocked(cluster, ansible, migration):
    m = migration
    run(ansible, m.variables(), tags="lock,import,verify,switch")
    assert m.node_env().get("DATASTORE_TYPE") == "kubernetes" and m.locked("kdd")
    res = run(ansible, m.variables(datastore_migration_abort=True))
    env = m.node_env()
    assert "DATASTORE_TYPE" not in env and "ETCD_ENDPOINTS" in env, env  # calico-etcd.yaml's calico-node again
    config = get(cluster, "v1", "ConfigMap", "calico-config", "kube-system")["data"]
    assert config.get("etcd_endpoints") == m.etcd, config
    assert not any(n.endswith("." + CRD_GROUP) for n in cluster.kubectl("get", "crd", "-o", "name").stdout.split())
    assert not m.locked("etcd")
    assert m.record_data()["phase"] == "aborted"
    assert [p["spec"]["cidr"] for p in m.objects("ippools", "etcd")] == ["10.77.0.0/16"]
    assert "Unlock the etcd datastore (etcd is authoritative again)" in ran(res)
    # and a second abort has nothing to do
    mark = cluster.audit.mark()
    run(ansible, m.variables(datastore_migration_abort=True))
    assert cluster.audit.writes_since(mark) == []
    # a new migration after the way back starts a fresh record: it keeps the etcd-era workloads of its own time
    run(ansible, m.variables())
    assert m.node_env().get("DATASTORE_TYPE") == "kubernetes" and not m.locked("kdd")
    era = json.loads(m.record_data()["etcd_era"])
    node = [c for c in era[0]["spec"]["template"]["spec"]["containers"] if c["name"] == "calico-node"][0]
    assert "DATASTORE_TYPE" not in [e["name"] for e in node.get("env") or []], node.get("env")


def test_refuses_calico_resources_it_did_not_import_before_any_write(cluster, ansible, migration):
    m = migration
    crds = [d for d in release_docs(cluster.mirror_url, VERSION, "calico.yaml") if d["kind"] == "CustomResourceDefinition"]
    cluster.apply(yaml.safe_dump_all(crds))
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                    *["crd/" + d["metadata"]["name"] for d in crds])
    m.ctl("apply", "-f", "-", datastore="kdd", stdin=yaml.safe_dump(
        {"apiVersion": "projectcalico.org/v3", "kind": "GlobalNetworkSet", "metadata": {"name": "stray"},
         "spec": {"nets": ["198.51.100.0/24"]}}))
    mark = cluster.audit.mark()
    res = run(ansible, m.variables(), ok=False)
    assert res.rc != 0
    assert re.search(r"already holds Calico resources \(globalnetworksets 1(, tiers 3)?\)", failure(res)), failure(res)
    assert cluster.audit.writes_since(mark) == [], [describe(e) for e in cluster.audit.writes_since(mark)]
