"""playbooks/upgrade.yml (role calico_ops.lifecycle.upgrade) on the local control plane.

Real release files (served by the harness's mirror), real server-side applies, real rollouts of the
DaemonSets and Deployments on kwok nodes, the audit log for "no writes". What no real Calico component can do
here is played by the stand-ins of calico_support.py (ClusterInformation from calico-node, Installation
status and TigeraStatus from the operator). The manifests create cluster-scoped objects and workloads in
kube-system, so every test installs, upgrades and removes its own install, one after another.
"""

import base64
import collections
import contextlib
import functools
import hashlib
import http.server
import json
import os
import re
import subprocess
import threading
import uuid
from pathlib import Path

import pytest
import yaml

from calico_support import (OPERATOR_SOURCE, SOURCE, TARGET, CalicoNodeStandIn, Install, drop_foreign_operator_crds,
                            get, helm, image_tag, node_ds_name, release_docs, release_text, wait_daemonset, wipe_calico)
from localcp.audit import describe
from localcp.fixtures import NO_NETWORK_VARS, ansible_bin, ansible_python, kill_tree
from localcp.mirror import REPO_ROOT

pytestmark = pytest.mark.integration

PLAYBOOK = "playbooks/upgrade.yml"
CUSTOM_ENV = {"name": "FELIX_LOGSEVERITYSCREEN", "value": "debug"}


@pytest.fixture
def install(cluster):
    wipe_calico(cluster)
    inst = Install(cluster)
    yield inst
    if not os.environ.get("KEEP"):
        inst.cleanup()


def upgrade_vars(cluster, tmp_path, install, **extra):
    suffix = uuid.uuid4().hex[:6]
    out = {
        "upgrade_manifest_url": cluster.mirror_url,
        "upgrade_chart_repo_url": cluster.chart_repo_url,
        "upgrade_artifacts_dir": str(tmp_path / "artifacts"),
        "upgrade_timeout": 60,
        "upgrade_poll_interval": 5,
        "upgrade_record_name": "calico-ops-upgrade-" + suffix,
        "upgrade_owner_references_record_name": "calico-ops-owner-refs-" + suffix,
        "upgrade_owner_references_record_path": str(tmp_path / "owner-references.json"),
    }
    install.configmaps += [("kube-system", out["upgrade_record_name"]),
                           ("kube-system", out["upgrade_owner_references_record_name"])]
    out.update(extra)
    return out


def _profile(res):
    """With UPGRADE_PROFILE=1 (and pytest -s): the slowest tasks of a run."""
    from datetime import datetime
    spans = []
    for play in res.data.get("plays", []):
        for t in play.get("tasks", []):
            d = t["task"].get("duration") or {}
            if d.get("start") and d.get("end"):
                secs = (datetime.fromisoformat(d["end"].rstrip("Z")) - datetime.fromisoformat(d["start"].rstrip("Z")))
                spans.append((secs.total_seconds(), t["task"]["name"]))
    for secs, name in sorted(spans, reverse=True)[:8]:
        print("  %6.1fs %s" % (secs, name))


def run(ansible, variables, check=False, ok=True):
    res = ansible.playbook(PLAYBOOK, extra_vars=variables, check=check)
    if os.environ.get("UPGRADE_PROFILE"):
        _profile(res)
    if ok:
        assert res.rc == 0, res.stdout[-6000:] + res.stderr[-3000:]
    return res


def task_name(t):
    return t["task"].split(" : ", 1)[-1]


def task(res, prefix):
    """The result of the first task (role prefix removed) whose name starts with ``prefix``."""
    for t in res.tasks:
        if task_name(t).startswith(prefix):
            return t["result"]
    raise KeyError("no task starting with %r in: %s" % (prefix, [task_name(t) for t in res.tasks]))


def ran(res):
    """Names of the tasks that ran (not skipped), in order."""
    return [task_name(t) for t in res.tasks if not t["result"].get("skipped")]


def failure(res):
    return " ".join(str(t["result"].get("msg", "")) for t in res.tasks if t["result"].get("failed")
                    and not t["result"].get("failed_when_result") is False)


def record(cluster, variables):
    cm = get(cluster, "v1", "ConfigMap", variables["upgrade_record_name"], "kube-system")
    return (cm or {}).get("data")


def customise(ds_name, cm_name):
    """The user's changes to the original manifest: an env var on calico-node and the MTU."""
    def edit(doc):
        meta = doc["metadata"]
        if doc["kind"] == "DaemonSet" and meta["name"] == ds_name:
            for cont in doc["spec"]["template"]["spec"]["containers"]:
                if cont["name"] == "calico-node":
                    cont["env"].append(dict(CUSTOM_ENV))
        if doc["kind"] == "ConfigMap" and meta["name"] == cm_name:
            doc["data"]["veth_mtu"] = "1440"
        return doc
    patches = [
        {"kind": "DaemonSet", "name": ds_name, "namespace": "kube-system",
         "patch": {"spec": {"template": {"spec": {"containers": [{"name": "calico-node", "env": [CUSTOM_ENV]}]}}}}},
        {"kind": "ConfigMap", "name": cm_name,
         "json_patch": [{"op": "replace", "path": "/data/veth_mtu", "value": "1440"}]},
    ]
    return edit, patches


def pods_of(cluster, ds):
    labels = ds["spec"]["selector"]["matchLabels"]
    pods = cluster.k8s.resources.get(api_version="v1", kind="Pod").get(
        namespace=ds["metadata"]["namespace"], label_selector=",".join("%s=%s" % kv for kv in labels.items()))
    return [p for p in pods.to_dict()["items"] if not p["metadata"].get("deletionTimestamp")]


def assert_upgraded_manifest(cluster, flavor, datastore="kubernetes"):
    """Everything of the target manifest is in place, rolled out, and nothing of the old release is left."""
    target_docs = release_docs(cluster.mirror_url, TARGET, flavor)
    ds_name = node_ds_name(flavor)
    ds = get(cluster, "apps/v1", "DaemonSet", ds_name, "kube-system")
    spec = ds["spec"]["template"]["spec"]
    want = [d for d in target_docs if d["kind"] == "DaemonSet"][0]["spec"]["template"]["spec"]
    assert [c["name"] for c in spec.get("initContainers", [])] == [c["name"] for c in want.get("initContainers", [])]
    assert [c["name"] for c in spec["containers"]] == [c["name"] for c in want["containers"]]
    for cont in spec.get("initContainers", []) + spec["containers"]:
        if "/calico/" in cont["image"]:
            assert image_tag(cont["image"]) == TARGET, cont
    st = ds["status"]
    assert st["observedGeneration"] == ds["metadata"]["generation"]
    assert st["updatedNumberScheduled"] == st["desiredNumberScheduled"] == st["numberAvailable"] > 0
    pods = pods_of(cluster, ds)
    assert len(pods) == st["desiredNumberScheduled"]
    for pod in pods:
        node = [c for c in pod["spec"]["containers"] if c["name"] == "calico-node"][0]
        assert image_tag(node["image"]) == TARGET
        assert pod["status"]["phase"] == "Running"
        ready = sum(1 for c in pod["status"]["containerStatuses"] if c["ready"])
        assert ready == len(pod["spec"]["containers"]) or (datastore == "etcd" and ready >= 1), pod["status"]
    for doc in target_docs:
        if doc["kind"] == "Deployment":
            dep = get(cluster, "apps/v1", "Deployment", doc["metadata"]["name"], "kube-system")
            assert image_tag(dep["spec"]["template"]["spec"]["containers"][0]["image"]) == TARGET
            conds = dict((c["type"], c["status"]) for c in dep["status"]["conditions"])
            assert conds.get("Available") == "True" and dep["status"]["availableReplicas"] == dep["spec"]["replicas"]
    return ds


@contextlib.contextmanager
def file_server(root):
    """Serve directory ``root`` on 127.0.0.1 (a calicoctl download site); yields the base URL."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield "http://127.0.0.1:%d" % server.server_address[1]
    finally:
        server.shutdown()


def assert_one_write_per_object(res, writes):
    """Each object of the release is written once; a second write only where the field handover was needed (the
    new release dropped a field the installer owned: without the handover the apply would leave it behind)."""
    ours = collections.Counter()
    for ev in writes:
        ref = ev.get("objectRef") or {}
        name = ref.get("name") or ""
        if ref.get("resource") == "clusterinformations" or name.startswith("calico-ops-"):
            continue  # calico-node's stand-in reports its version; the upgrade's own records
        ours[(ref.get("resource"), ref.get("namespace"), name)] += 1
    handover = task(res, "Hand the installer's fields over")
    adopted = set((o["kind"], o["name"]) for o in handover["objects"] if o["action"] == "adopted")
    kinds = dict((o["name"], o["kind"]) for o in handover["objects"])
    twice = [k for k, n in ours.items() if n > 1]
    assert [k for k, n in ours.items() if n > 2] == [], ours
    assert all((kinds.get(name), name) in adopted for _r, _ns, name in twice), (twice, adopted)
    assert handover["counts"]["covered"] > 0, handover["counts"]
    # calico.yaml v3.31 dropped the init container mount-bpffs: calico-node had to be handed over
    assert ("DaemonSet", "calico-node") in adopted, handover["objects"]
    assert len(adopted) < len(ours) / 2, (sorted(adopted), len(ours))


# -- manifest, Kubernetes API datastore -----------------------------------------------------------------------

@pytest.mark.parametrize("flavor", [pytest.param("calico.yaml", marks=pytest.mark.oldest_core), "calico-typha.yaml",
                                    "canal.yaml", "calico-policy-only.yaml"])
def test_manifest_upgrade(cluster, ansible, install, tmp_path, flavor):
    ds_name = node_ds_name(flavor)
    cm_name = "canal-config" if flavor.startswith("canal") else "calico-config"
    edit, patches = customise(ds_name, cm_name)
    install.apply_release(SOURCE, flavor, edit)
    install.forget_later(TARGET, flavor)
    wait_daemonset(cluster, ds_name)
    variables = upgrade_vars(cluster, tmp_path, install, upgrade_manifest_patches=patches)
    full = flavor == "calico.yaml"  # check mode and the re-run once; they are the same for every flavor

    with CalicoNodeStandIn(cluster, daemonset=ds_name) as node:
        cluster.wait_for(lambda: (get(cluster, "crd.projectcalico.org/v1", "ClusterInformation", "default") or {})
                         .get("spec", {}).get("calicoVersion") == SOURCE, timeout=30, what="ClusterInformation")
        if full:
            mark = cluster.audit.mark()
            res = run(ansible, variables, check=True)
            writes = cluster.audit.writes_since(mark)
            assert writes == [], [describe(e) for e in writes]
            assert res.changed() > 0
            assert image_tag(get(cluster, "apps/v1", "DaemonSet", ds_name, "kube-system")["spec"]["template"]["spec"]
                             ["containers"][0]["image"]) == SOURCE

        mark = cluster.audit.mark()
        res = run(ansible, variables)
        assert res.changed() > 0
        assert not node.errors, node.errors
        writes = cluster.audit.writes_since(mark)

    ds = assert_upgraded_manifest(cluster, flavor)
    if full:
        assert_one_write_per_object(res, writes)
    node_env = [c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == "calico-node"][0]["env"]
    assert CUSTOM_ENV in node_env, "the customisation patch did not survive the upgrade"
    assert get(cluster, "v1", "ConfigMap", cm_name, "kube-system")["data"]["veth_mtu"] == "1440"
    ci = get(cluster, "crd.projectcalico.org/v1", "ClusterInformation", "default")
    assert ci["spec"]["calicoVersion"] == TARGET
    assert record(cluster, variables)["phase"] == "done"
    assert record(cluster, variables)["source_version"] == SOURCE
    artifact = (tmp_path / "artifacts" / "upgrade.yaml").read_text()
    assert "FELIX_LOGSEVERITYSCREEN" in artifact
    assert (tmp_path / "artifacts" / ("%s-%s" % (TARGET, flavor))).read_text() == \
        release_text(cluster.mirror_url, TARGET, flavor)
    names = ran(res)
    detach = [i for i, n in enumerate(names) if n.startswith("Detach owner references")]
    apply = [i for i, n in enumerate(names) if n.startswith("Apply upgrade.yaml server-side")]
    attach = [i for i, n in enumerate(names) if n.startswith("Re-attach owner references")]
    assert detach and apply and attach and detach[0] < apply[0] < attach[0], names

    if full:
        mark = cluster.audit.mark()
        again = run(ansible, variables)
        assert again.changed() == 0
        writes = cluster.audit.writes_since(mark)
        assert writes == [], [describe(e) for e in writes]
        assert task(again, "Report what was found")["msg"][-1].startswith("plan: noop")


# -- manifest, etcd datastore ---------------------------------------------------------------------------------

KEY_PEM = "-----BEGIN PRIVATE KEY-----\ncalico-ops-test-key-%s\n-----END PRIVATE KEY-----\n" % uuid.uuid4().hex
CERT_PEM = "-----BEGIN CERTIFICATE-----\ncalico-ops-test-cert\n-----END CERTIFICATE-----\n"


@pytest.mark.parametrize("flavor, config", [("calico-etcd.yaml", "calico-config"), ("canal-etcd.yaml", "canal-config")])
def test_etcd_datastore_upgrade(cluster, ansible, install, tmp_path, flavor, config):
    def old_endpoints(doc):
        if doc["kind"] == "ConfigMap" and doc["metadata"]["name"] == config:
            doc["data"]["etcd_endpoints"] = "http://127.0.0.1:12379"
        return doc
    install.apply_release(SOURCE, flavor, old_endpoints)
    install.forget_later(TARGET, flavor)
    wait_daemonset(cluster, node_ds_name(flavor))
    endpoints = ["http://127.0.0.1:22379", "http://127.0.0.1:22380"]
    variables = upgrade_vars(cluster, tmp_path, install, upgrade_etcd_endpoints=endpoints,
                             upgrade_etcd_key=KEY_PEM, upgrade_etcd_cert=CERT_PEM)

    res = run(ansible, variables)

    report = task(res, "Report what was found")["msg"]
    assert "datastore: etcd" in report[1] and "flavor: %s" % flavor in report[2]
    assert_upgraded_manifest(cluster, flavor, datastore="etcd")
    cm = get(cluster, "v1", "ConfigMap", config, "kube-system")["data"]
    assert cm["etcd_endpoints"] == ",".join(endpoints)
    assert (cm["etcd_key"], cm["etcd_cert"], cm["etcd_ca"]) == ("/calico-secrets/etcd-key",
                                                                "/calico-secrets/etcd-cert", "")
    secret = get(cluster, "v1", "Secret", "calico-etcd-secrets", "kube-system")["data"]
    import base64
    assert base64.b64decode(secret["etcd-key"]).decode() == KEY_PEM
    assert KEY_PEM.split("\n")[1] not in res.stdout + res.stderr, "the etcd key was shown"
    assert KEY_PEM.split("\n")[1] not in (tmp_path / "artifacts" / "upgrade.yaml").read_text()
    verify = task(res, "Wait until the cluster reports Calico")
    assert verify["facts"]["version"] == TARGET and "image" in verify["sources"]["version"]
    assert record(cluster, variables)["phase"] == "done"


def test_etcd_endpoints_are_required_and_validated(cluster, ansible, install, tmp_path):
    install.apply_release(SOURCE, "calico-etcd.yaml")
    wait_daemonset(cluster, "calico-node")
    for extra, words in (({}, "upgrade_etcd_endpoints is required"),
                         ({"upgrade_etcd_endpoints": ["127.0.0.1:2379"]},
                          "upgrade_etcd_endpoints[0] must be an http:// or https:// URL")):
        variables = upgrade_vars(cluster, tmp_path, install, **extra)
        mark = cluster.audit.mark()
        res = run(ansible, variables, ok=False)
        assert res.rc != 0 and words in failure(res), failure(res)
        writes = cluster.audit.writes_since(mark)
        assert writes == [], [describe(e) for e in writes]


CA_PEM = "-----BEGIN CERTIFICATE-----\ncalico-ops-test-ca-%s\n-----END CERTIFICATE-----\n" % uuid.uuid4().hex
LIVE_KEY_PEM = "-----BEGIN PRIVATE KEY-----\ncalico-ops-live-key-%s\n-----END PRIVATE KEY-----\n" % uuid.uuid4().hex


def live_etcd_tls(config, endpoints="http://127.0.0.1:12379", ca_path="/calico-secrets/etcd-ca", secret_ca=True):
    """A source install on etcd with TLS, as an operator set it up: the endpoints and the three paths in the
    ConfigMap, the material in Secret calico-etcd-secrets (without the CA when ``secret_ca`` is false)."""
    def edit(doc):
        if doc["kind"] == "ConfigMap" and doc["metadata"]["name"] == config:
            doc["data"].update(etcd_endpoints=endpoints, etcd_ca=ca_path, etcd_cert="/calico-secrets/etcd-cert",
                               etcd_key="/calico-secrets/etcd-key")
        if doc["kind"] == "Secret" and doc["metadata"]["name"] == "calico-etcd-secrets":
            material = {"etcd-key": LIVE_KEY_PEM, "etcd-cert": CERT_PEM}
            if secret_ca:
                material["etcd-ca"] = CA_PEM
            doc["data"] = dict((k, base64.b64encode(v.encode()).decode()) for k, v in material.items())
        return doc
    return edit


@pytest.mark.parametrize("flavor, config, given", [("calico-etcd.yaml", "calico-config", True),
                                                   ("canal-etcd.yaml", "canal-config", False)])
def test_live_etcd_tls_settings_are_carried_when_not_given(cluster, ansible, install, tmp_path, flavor, config, given):
    """Issue 23: endpoints given (or not) but no TLS material: the live paths and Secret are kept, never emptied."""
    install.apply_release(SOURCE, flavor, live_etcd_tls(config))
    install.forget_later(TARGET, flavor)
    wait_daemonset(cluster, node_ds_name(flavor))
    secret_before = get(cluster, "v1", "Secret", "calico-etcd-secrets", "kube-system")["data"]
    endpoints = ["http://127.0.0.1:22379"]
    extra = {"upgrade_etcd_endpoints": endpoints} if given else {}
    variables = upgrade_vars(cluster, tmp_path, install, **extra)

    res = run(ansible, variables)

    assert_upgraded_manifest(cluster, flavor, datastore="etcd")
    cm = get(cluster, "v1", "ConfigMap", config, "kube-system")["data"]
    assert cm["etcd_endpoints"] == (",".join(endpoints) if given else "http://127.0.0.1:12379")
    assert (cm["etcd_ca"], cm["etcd_cert"], cm["etcd_key"]) == ("/calico-secrets/etcd-ca", "/calico-secrets/etcd-cert",
                                                                "/calico-secrets/etcd-key")
    assert get(cluster, "v1", "Secret", "calico-etcd-secrets", "kube-system")["data"] == secret_before
    shown = res.stdout + res.stderr + (tmp_path / "artifacts" / "upgrade.yaml").read_text()
    for pem in (LIVE_KEY_PEM, CA_PEM):
        assert pem.split("\n")[1] not in shown and secret_before["etcd-key"] not in shown
    carried = task(res, "Show what was carried from the live etcd settings")["msg"]
    assert any("etcd_ca (/calico-secrets/etcd-ca) kept from ConfigMap kube-system/%s" % config in n for n in carried)
    assert record(cluster, variables)["phase"] == "done"


def test_etcd_tls_material_that_cannot_be_carried_stops_before_any_write(cluster, ansible, install, tmp_path):
    """The CA is a file on the nodes' disks (not in the Secret): it cannot be carried, so nothing is written."""
    install.apply_release(SOURCE, "calico-etcd.yaml",
                          live_etcd_tls("calico-config", ca_path="/etc/etcd/pki/ca.pem", secret_ca=False))
    install.forget_later(TARGET, "calico-etcd.yaml")
    wait_daemonset(cluster, "calico-node")
    variables = upgrade_vars(cluster, tmp_path, install, upgrade_etcd_endpoints=["http://127.0.0.1:22379"])
    mark = cluster.audit.mark()
    res = run(ansible, variables, ok=False)
    writes = cluster.audit.writes_since(mark)
    msg = failure(res)
    assert res.rc != 0 and writes == [], (msg, [describe(e) for e in writes])
    assert "sets etcd_ca to /etc/etcd/pki/ca.pem" in msg and "has no etcd-ca" in msg, msg
    assert "give upgrade_etcd_ca" in msg, msg
    assert get(cluster, "v1", "ConfigMap", "calico-config", "kube-system")["data"]["etcd_ca"] == "/etc/etcd/pki/ca.pem"
    assert LIVE_KEY_PEM.split("\n")[1] not in res.stdout + res.stderr


# -- operator and Helm ------------------------------------------------------------------------------------------

def operator_image(cluster, version):
    dep = [d for d in release_docs(cluster.mirror_url, version, "tigera-operator.yaml") if d["kind"] == "Deployment"]
    return dep[0]["spec"]["template"]["spec"]["containers"][0]["image"]


def crd(cluster, name):
    return get(cluster, "apiextensions.k8s.io/v1", "CustomResourceDefinition", name)


OPERATOR_USER = "system:serviceaccount:tigera-operator:tigera-operator"
OPERATOR_OF = {"v3.27.5": "v1.32.12", "v3.29.7": "v1.36.16", "v3.31.4": "v1.40.7"}


def reported_version(cluster):
    return ((get(cluster, "operator.tigera.io/v1", "Installation", "default") or {}).get("status") or {}).get(
        "calicoVersion")


def calico_node_tag(cluster):
    ds = get(cluster, "apps/v1", "DaemonSet", "calico-node", "calico-system")
    if not ds:
        return None
    return image_tag([c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == "calico-node"][0]["image"])


def assert_the_operator_rolled_calico(cluster, version, mark):
    """What the real operator did: the process of the new release runs (the old one is gone), calico-node in
    calico-system carries the release's image, the Installation reports it - all written by the operator's
    ServiceAccount, not by us."""
    procs = [p for p in cluster.processes("tigera-operator") if p["pid"]]
    assert [p["version"] for p in procs] == [OPERATOR_OF[version]], procs
    assert calico_node_tag(cluster) == version
    assert reported_version(cluster) == version
    theirs = [e for e in cluster.audit.writes_since(mark, users=(OPERATOR_USER,))
              if (e["objectRef"].get("resource"), e["objectRef"].get("name")) == ("daemonsets", "calico-node")]
    assert theirs, "the operator did not write DaemonSet calico-node"


@pytest.mark.oldest_core  # also on ansible-core 2.16 in make test (tests/integration/conftest.py)
def test_operator_upgrade(cluster, ansible, install, tmp_path):
    """v3.29.7 installed with the operator (the real operator v1.36.16 reconciles and reports it), upgraded through
    the collection to v3.31.4: tigera-operator.yaml replaced, the real operator v1.40.7 takes over and rolls
    calico-system to v3.31.4."""
    # the operator CRDs of later releases are the upgrade's to create: an earlier test on this control plane may have
    # left v3.31.4's (seen in full runs: goldmanes there before the upgrade; managementclusterconnections, which makes
    # operator v1.36.16 start its Enterprise controllers and never report: calico_support.drop_foreign_operator_crds)
    drop_foreign_operator_crds(cluster, OPERATOR_SOURCE)
    install.apply_release(OPERATOR_SOURCE, "operator-crds.yaml")
    install.apply_release(OPERATOR_SOURCE, "tigera-operator.yaml")
    install.forget_later(TARGET, "operator-crds.yaml")
    install.forget_later(TARGET, "tigera-operator.yaml")
    cluster.wait_for(lambda: get(cluster, "apiextensions.k8s.io/v1", "CustomResourceDefinition",
                                 "installations.operator.tigera.io"), timeout=60, what="Installation CRD")
    # APIServer left out: only calico-apiserver v3.31.4 is built here, a v3.29.7 one could not serve its APIService
    crs = [d for d in release_docs(cluster.mirror_url, OPERATOR_SOURCE, "custom-resources.yaml")
           if d["kind"] == "Installation"]
    cluster.apply(yaml.safe_dump_all(crs))
    assert crd(cluster, "goldmanes.operator.tigera.io") is None  # new in v3.30
    cluster.wait_for_process("tigera-operator", OPERATOR_OF[OPERATOR_SOURCE], timeout=120)
    cluster.wait_for(lambda: reported_version(cluster) == OPERATOR_SOURCE, timeout=240, interval=2,
                     what="the real operator %s reporting %s" % (OPERATOR_OF[OPERATOR_SOURCE], OPERATOR_SOURCE))
    assert calico_node_tag(cluster) == OPERATOR_SOURCE
    # upgrade_apiserver: the v3.31 operator updates v3.29's IP pools only through the Calico API server (without it,
    # the real operator reports ippools Degraded "Unable to modify IP pools while Calico API server is unavailable")
    variables = upgrade_vars(cluster, tmp_path, install, upgrade_goldmane=True, upgrade_whisker=True,
                             upgrade_apiserver=True, upgrade_tigerastatus_expected=["calico", "apiserver"],
                             upgrade_timeout=300)
    # check mode: dry runs only - Goldmane and Whisker, whose CRDs the dry run of operator-crds.yaml would
    # create, are reported instead of dry-run
    mark = cluster.audit.mark()
    checked = run(ansible, variables, check=True)
    writes = cluster.audit.writes_since(mark)
    assert writes == [], [describe(e) for e in writes]
    assert checked.changed() > 0 and crd(cluster, "goldmanes.operator.tigera.io") is None
    assert task(checked, "Check mode - report the flow-log objects")["results"][0]["msg"] == \
        "Would create Goldmane default once its CRD is applied"
    mark = cluster.audit.mark()
    res = run(ansible, variables)

    report = task(res, "Report what was found")["msg"]
    assert report[0].startswith("method: operator") and "version: %s" % OPERATOR_SOURCE in report[3]
    dep = get(cluster, "apps/v1", "Deployment", "tigera-operator", "tigera-operator")
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == operator_image(cluster, TARGET)
    assert dep["status"]["updatedReplicas"] == dep["status"]["availableReplicas"] == 1
    new_crd = [d for d in release_docs(cluster.mirror_url, TARGET, "operator-crds.yaml")
               if d["metadata"]["name"] == "installations.operator.tigera.io"][0]
    live = crd(cluster, "installations.operator.tigera.io")
    assert live["spec"]["versions"][0]["schema"] == new_crd["spec"]["versions"][0]["schema"]
    assert crd(cluster, "goldmanes.operator.tigera.io") is not None
    assert get(cluster, "operator.tigera.io/v1", "Goldmane", "default") is not None
    assert get(cluster, "operator.tigera.io/v1", "Whisker", "default") is not None
    assert get(cluster, "operator.tigera.io/v1", "APIServer", "default") is not None
    assert_the_operator_rolled_calico(cluster, TARGET, mark)
    assert cluster.processes("calico-apiserver"), "the real calico-apiserver v3.31.4 serves projectcalico.org/v3"
    names = ran(res)
    assert not any(n.startswith("Detach owner references") for n in names), "v3.29.7 needs no detach"
    assert any(n.startswith("Wait for every TigeraStatus") for n in names)
    assert record(cluster, variables)["phase"] == "done"

    mark = cluster.audit.mark()
    again = run(ansible, variables)
    assert again.changed() == 0
    writes = cluster.audit.writes_since(mark)
    assert writes == [], [describe(e) for e in writes]


def helm_release(cluster, name="calico", namespace="tigera-operator"):
    proc = helm(cluster, "list", "-n", namespace, "-o", "json")
    return [r for r in json.loads(proc.stdout) if r["name"] == name][0]


@pytest.mark.oldest_core  # also on ansible-core 2.16 in make test (tests/integration/conftest.py)
def test_helm_upgrade(cluster, ansible, install, tmp_path):
    """Chart tigera-operator v3.27.5 (the real operator v1.32.12 reconciles it), upgraded through the collection:
    the chart's new release, the real operator v1.40.7 rolls calico-system to v3.31.4."""
    values = tmp_path / "values.yaml"
    # apiServer off: only calico-apiserver v3.31.4 is built here, a v3.27.5 one could not serve its APIService
    values.write_text(yaml.safe_dump({"podLabels": {"calico-ops-test": "kept"}, "apiServer": {"enabled": False}}))
    helm(cluster, "install", "calico", "tigera-operator", "--repo", cluster.chart_repo_url, "--version", SOURCE,
         "--namespace", "tigera-operator", "--create-namespace", "-f", str(values))
    install.helm_releases.append(("calico", "tigera-operator"))
    install.forget_later(TARGET, "operator-crds.yaml")
    install.forget_later(SOURCE, "operator-crds.yaml")
    before = helm_release(cluster)
    assert before["chart"] == "tigera-operator-%s" % SOURCE and before["revision"] == "1"
    # the Calico API server on for the target (the v3.31 operator updates earlier IP pools only through it)
    variables = upgrade_vars(cluster, tmp_path, install, upgrade_timeout=300,
                             upgrade_helm_values={"apiServer": {"enabled": True}})
    cluster.wait_for_process("tigera-operator", OPERATOR_OF[SOURCE], timeout=120)
    cluster.wait_for(lambda: reported_version(cluster) == SOURCE, timeout=240, interval=2,
                     what="the real operator %s reporting %s" % (OPERATOR_OF[SOURCE], SOURCE))
    # check mode first: the plan, no write (audit log), the release untouched
    mark = cluster.audit.mark()
    check = run(ansible, variables, check=True)
    writes = cluster.audit.writes_since(mark)
    assert writes == [], [describe(e) for e in writes]
    assert helm_release(cluster)["revision"] == "1"
    assert task(check, "Report what was found")["msg"][0].startswith("method: helm")
    mark = cluster.audit.mark()
    res = run(ansible, variables)

    assert task(res, "Report what was found")["msg"][0].startswith("method: helm")
    after = helm_release(cluster)
    assert after["chart"] == "tigera-operator-%s" % TARGET and int(after["revision"]) == 2
    assert after["status"] == "deployed"
    kept = json.loads(helm(cluster, "get", "values", "calico", "-n", "tigera-operator", "-o", "json").stdout)
    assert kept.get("podLabels") == {"calico-ops-test": "kept"}
    dep = get(cluster, "apps/v1", "Deployment", "tigera-operator", "tigera-operator")
    assert dep["spec"]["template"]["metadata"]["labels"].get("calico-ops-test") == "kept"
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == operator_image(cluster, TARGET)
    assert crd(cluster, "goldmanes.operator.tigera.io") is not None  # operator-crds.yaml applied first
    cluster.wait_for(lambda: reported_version(cluster) == TARGET, timeout=120, interval=2,
                     what="the real operator v1.40.7 reporting %s" % TARGET)
    assert_the_operator_rolled_calico(cluster, TARGET, mark)
    names = ran(res)
    assert any(n.startswith("Detach owner references") for n in names)
    assert record(cluster, variables)["phase"] == "done"


# -- guards -----------------------------------------------------------------------------------------------------

def retag(tag):
    def edit(doc):
        if doc["kind"] in ("DaemonSet", "Deployment"):
            spec = doc["spec"]["template"]["spec"]
            for cont in spec.get("initContainers", []) + spec["containers"]:
                cont["image"] = cont["image"].rsplit(":", 1)[0] + ":" + tag
        return doc
    return edit


@pytest.mark.parametrize("tag, words", [("v3.14.2", "older than v3.15.0"), ("v3.32.0", "downgrades are not supported")])
def test_guard_refuses_without_writing(cluster, ansible, install, tmp_path, tag, words):
    install.apply_release(SOURCE, "calico.yaml", retag(tag))
    wait_daemonset(cluster, "calico-node")
    variables = upgrade_vars(cluster, tmp_path, install)
    mark = cluster.audit.mark()
    res = run(ansible, variables, ok=False)
    writes = cluster.audit.writes_since(mark)
    assert res.rc != 0 and words in failure(res) and tag in failure(res), failure(res)
    assert writes == [], [describe(e) for e in writes]
    assert record(cluster, variables) is None


@pytest.mark.parametrize("where, words", [
    ({"upgrade_record_namespace": "no-such-namespace"},
     "upgrade_record_namespace: the record namespace 'no-such-namespace' does not exist"),
    ({"upgrade_owner_references_record_namespace": "no-such-namespace"},
     "upgrade_owner_references_record_namespace: the record namespace 'no-such-namespace' does not exist"),
    ({"upgrade_owner_references_record_path": "{a_file}/owner-references.json"},
     "upgrade_owner_references_record_path: the record file {a_file}/owner-references.json cannot be created"),
])
def test_an_unusable_record_location_stops_the_upgrade_before_any_write(cluster, ansible, install, tmp_path, where,
                                                                         words):
    """Issue 36: the upgrade keeps its own record and, from a source older than v3.28, the owner references' record;
    both locations are proven (a dry run of each write, the file's path) before the first write."""
    install.apply_release(SOURCE, "calico.yaml")
    wait_daemonset(cluster, "calico-node")
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory\n")
    where = dict((k, v.replace("{a_file}", str(a_file))) for k, v in where.items())
    variables = upgrade_vars(cluster, tmp_path, install, **where)
    mark = cluster.audit.mark()
    res = run(ansible, variables, ok=False)
    writes = cluster.audit.writes_since(mark)
    assert res.rc != 0 and words.replace("{a_file}", str(a_file)) in failure(res), failure(res)
    assert failure(res).endswith("nothing was written"), failure(res)
    assert writes == [], [describe(e) for e in writes]
    assert record(cluster, variables) is None


def test_guard_noop_at_the_target(cluster, ansible, install, tmp_path):
    install.apply_release(TARGET, "calico.yaml")
    wait_daemonset(cluster, "calico-node")
    # Switches as a survey or `-e key=false` gives them: strings. "false" must read as false (validate.yml once
    # took the string as true and asked for a calicoctl checksum).
    variables = upgrade_vars(cluster, tmp_path, install, upgrade_calicoctl_install="false",
                             upgrade_calicoctl_write_config="false", upgrade_remove_allow_all_upgrade="false")
    mark = cluster.audit.mark()
    res = ansible.playbook(PLAYBOOK, extra_vars=variables, env={"ANSIBLE_SHOW_CUSTOM_STATS": "1"})
    assert res.rc == 0, res.stdout[-6000:] + res.stderr[-3000:]
    writes = cluster.audit.writes_since(mark)
    assert writes == [], [describe(e) for e in writes]
    assert res.changed() == 0
    assert task(res, "Report what was found")["msg"][-1].startswith("plan: noop: Calico is already at v3.31.4")
    assert not any(n.startswith("Record the upgrade") for n in ran(res))
    # the summary is published for AWX (set_stats)
    stats = res.data["global_custom_stats"]["calico_ops_upgrade"]
    assert (stats["action"], stats["method"], stats["datastore"], stats["version"]) == ("noop", "manifest", "kubernetes",
                                                                                        TARGET), stats


@pytest.mark.parametrize("extra, words", [
    ({"upgrade_target_version": "3.31"}, "upgrade_target_version must be a release version vX.Y.Z"),
    ({"upgrade_target_version": "v3.31.4.1"}, "upgrade_target_version must be a release version vX.Y.Z"),
    ({"upgrade_current_version": "v3.27"}, "upgrade_current_version must be a release version"),
    ({"upgrade_manifest_url": "ftp://example.com"}, "upgrade_manifest_url must be an http:// or https:// URL"),
    ({"upgrade_timeout": 5, "upgrade_poll_interval": 10}, "upgrade_poll_interval must be positive"),
    # issue 23: an explicitly empty list where at least one item is needed
    ({"upgrade_etcd_endpoints": []}, "upgrade_etcd_endpoints is an empty list: give at least one etcd URL"),
    # issue 23: the supported target range
    ({"upgrade_target_version": "v3.14.9"}, "upgrade_target_version v3.14.9 is older than v3.15.0"),
])
def test_invalid_variables_are_refused_by_name(cluster, ansible, tmp_path, extra, words):
    variables = {"upgrade_manifest_url": cluster.mirror_url, "upgrade_artifacts_dir": str(tmp_path)}
    variables.update(extra)
    mark = cluster.audit.mark()
    res = ansible.playbook(PLAYBOOK, extra_vars=variables)
    assert res.rc != 0 and words in failure(res), failure(res) or res.stdout[-3000:]
    assert cluster.audit.writes_since(mark) == []


def test_a_patch_that_matches_nothing_stops_before_any_write(cluster, ansible, install, tmp_path):
    install.apply_release(SOURCE, "calico.yaml")
    wait_daemonset(cluster, "calico-node")
    patches = [{"kind": "DaemonSet", "name": "calico-node", "namespace": "calico-system",
                "patch": {"metadata": {"labels": {"x": "y"}}}}]
    variables = upgrade_vars(cluster, tmp_path, install, upgrade_manifest_patches=patches)
    mark = cluster.audit.mark()
    res = run(ansible, variables, ok=False)
    assert res.rc != 0
    assert "upgrade_manifest_patches[0] (DaemonSet calico-system/calico-node) matches no document" in failure(res)
    writes = cluster.audit.writes_since(mark)
    assert writes == [], [describe(e) for e in writes]


# -- issue 23: every document dry-run before the first write; the supported target range -------------------------

INVALID_PORT = {"name": "calico-node", "ports": [{"containerPort": 70000, "name": "bad-port"}]}


def test_a_document_the_api_server_rejects_stops_the_upgrade_before_any_write(cluster, ansible, install, tmp_path):
    """A user patch makes calico-node's DaemonSet invalid: the server-side dry run of every document of upgrade.yaml
    rejects it before the first write - no object of the target, no upgrade record, no detach, no handover."""
    install.apply_release(SOURCE, "calico.yaml")
    install.forget_later(TARGET, "calico.yaml")
    wait_daemonset(cluster, "calico-node")
    patches = [{"kind": "DaemonSet", "name": "calico-node", "namespace": "kube-system",
                "patch": {"spec": {"template": {"spec": {"containers": [INVALID_PORT]}}}}}]
    variables = upgrade_vars(cluster, tmp_path, install, upgrade_manifest_patches=patches)
    mark = cluster.audit.mark()
    res = run(ansible, variables, ok=False)
    writes = cluster.audit.writes_since(mark)
    msg = failure(res)
    assert res.rc != 0
    assert writes == [], [describe(e) for e in writes]
    assert "DaemonSet kube-system/calico-node (apps/v1)" in msg, msg
    assert "70000" in msg and "must be between 1 and 65535" in msg, msg  # the API server's own message
    assert "nothing was written" in msg and str(tmp_path / "artifacts" / "upgrade.yaml") in msg, msg
    assert record(cluster, variables) is None
    ds = get(cluster, "apps/v1", "DaemonSet", "calico-node", "kube-system")
    assert image_tag(ds["spec"]["template"]["spec"]["containers"][0]["image"]) == SOURCE


def untested_release(cluster, root, version):
    """A release newer than the newest tested, served from ``root``: v3.31.4's calico.yaml retagged, whose
    calico-node DaemonSet the API server rejects (what the acceptance run met: a 422 after ~30 writes)."""
    docs = release_docs(cluster.mirror_url, TARGET, "calico.yaml")
    out = []
    for doc in docs:
        doc = retag(version)(doc)
        if doc["kind"] == "DaemonSet" and doc["metadata"]["name"] == "calico-node":
            for cont in doc["spec"]["template"]["spec"]["containers"]:
                if cont["name"] == "calico-node":
                    cont["ports"] = [{"containerPort": 70000, "name": "bad-port"}]
        out.append(doc)
    path = root / version / "manifests" / "calico.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump_all(out))


def test_a_target_beyond_the_tested_range_needs_the_opt_in_and_is_still_dry_run_whole(cluster, ansible, install,
                                                                                       tmp_path):
    install.apply_release(SOURCE, "calico.yaml")
    install.forget_later(TARGET, "calico.yaml")  # the untested release has the same objects
    wait_daemonset(cluster, "calico-node")
    untested_release(cluster, tmp_path / "srv", "v3.32.0")
    with file_server(tmp_path / "srv") as url:
        variables = upgrade_vars(cluster, tmp_path, install, upgrade_manifest_url=url, upgrade_target_version="v3.32.0")
        mark = cluster.audit.mark()
        res = run(ansible, variables, ok=False)
        writes = cluster.audit.writes_since(mark)
        msg = failure(res)
        assert res.rc != 0 and writes == [], (msg, [describe(e) for e in writes])
        assert "upgrade_target_version v3.32.0 is newer than v3.31.4" in msg, msg
        assert "upgrade_allow_untested_target: true" in msg, msg

        # opted in: the same full dry run stops it before any write
        variables["upgrade_allow_untested_target"] = True
        mark = cluster.audit.mark()
        res = run(ansible, variables, ok=False)
        writes = cluster.audit.writes_since(mark)
        msg = failure(res)
    assert res.rc != 0 and writes == [], (msg, [describe(e) for e in writes])
    assert "DaemonSet kube-system/calico-node (apps/v1)" in msg and "must be between 1 and 65535" in msg, msg
    assert record(cluster, variables) is None


# -- waits, interruption ------------------------------------------------------------------------------------------

def test_rollout_timeout_quotes_the_daemonset_status(cluster, ansible, install, tmp_path):
    install.apply_release(SOURCE, "calico.yaml")
    install.forget_later(TARGET, "calico.yaml")
    wait_daemonset(cluster, "calico-node")
    unschedulable = [{"kind": "DaemonSet", "name": "calico-node", "patch": {"spec": {"template": {"spec": {
        "containers": [{"name": "calico-node", "resources": {"requests": {"cpu": "1000"}}}]}}}}}]
    variables = upgrade_vars(cluster, tmp_path, install, upgrade_manifest_patches=unschedulable,
                             upgrade_timeout=8, upgrade_poll_interval=2)
    res = run(ansible, variables, ok=False)
    msg = failure(res)
    assert res.rc != 0 and "not rolled out: DaemonSet kube-system/calico-node" in msg, msg
    assert "pods updated" in msg and "Pending" in msg, msg
    assert record(cluster, variables)["phase"] == "upgrading"


def _playbook_cmd(cluster, tmp_path, variables):
    vars_file = tmp_path / ("vars-%s.json" % uuid.uuid4().hex[:6])
    vars_file.write_text(json.dumps(variables))
    # kwok's nodes carry no packet: no connectivity check or prober around the job (as fixtures.Ansible does)
    return [ansible_bin("ansible-playbook"), str(REPO_ROOT / PLAYBOOK), "-i", "localhost,",
            "-c", "local", "-e", "ansible_python_interpreter=%s" % ansible_python(), "-e", json.dumps(NO_NETWORK_VARS),
            "-e", "@%s" % vars_file]


def test_a_rerun_after_an_interruption_finishes(cluster, ansible, install, tmp_path):
    install.apply_release(SOURCE, "calico-typha.yaml")
    install.forget_later(TARGET, "calico-typha.yaml")
    wait_daemonset(cluster, "calico-node")
    variables = upgrade_vars(cluster, tmp_path, install, upgrade_timeout=120)
    env = dict(cluster.env, ANSIBLE_NOCOLOR="1")
    # No calico-node stand-in yet: ClusterInformation never reports the target, so the play sits in its
    # post-check after the apply - and is killed there.
    proc = subprocess.Popen(_playbook_cmd(cluster, tmp_path, variables), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env, cwd=str(REPO_ROOT),
                            start_new_session=True)
    # the play's own output says when the apply is over: the rollout wait's banner follows it (the DaemonSet's
    # image alone is not enough: under load the kill once landed between the DaemonSet and a later document)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        def applied():
            ds = get(cluster, "apps/v1", "DaemonSet", "calico-node", "kube-system")
            return (record(cluster, variables) or {}).get("phase") == "upgrading" and \
                image_tag(ds["spec"]["template"]["spec"]["containers"][0]["image"]) == TARGET and \
                any("Wait for the rollout" in line for line in list(lines))
        cluster.wait_for(applied, timeout=120, interval=0.5, what="the upgrade to be applied")
    finally:
        kill_tree(proc)
    assert record(cluster, variables)["phase"] == "upgrading"

    with CalicoNodeStandIn(cluster):
        res = run(ansible, variables)
    assert task(res, "Report what was found")["msg"][-1].startswith("plan: upgrade (resume)")
    # the interrupted run had applied everything: the resumed one writes none of it again (dry runs only)
    counts = task(res, "Apply upgrade.yaml server-side")["counts"]
    assert counts["created"] == counts["updated"] == 0 and counts["unchanged"] > 0, counts
    assert any(n.startswith("Re-attach owner references") for n in ran(res)), "the resumed run must re-attach"
    assert_upgraded_manifest(cluster, "calico-typha.yaml")
    assert record(cluster, variables)["phase"] == "done"
    assert record(cluster, variables)["source_version"] == SOURCE


# -- application layer policy, allow-all-upgrade, calicoctl configuration ----------------------------------------

def _deployment(name, namespace, image, labels):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "main", "image": image}]}}}}


def test_alp_allow_all_upgrade_and_calicoctl_config(cluster, ansible, install, tmp_path, namespace):
    install.apply_release(SOURCE, "calico.yaml")
    install.forget_later(TARGET, "calico.yaml")
    wait_daemonset(cluster, "calico-node")
    cluster.wait_for(lambda: cluster.kubectl("get", "namespace", "istio-system", check=False).returncode != 0,
                     timeout=180, what="namespace istio-system of an earlier run to be gone")
    cluster.kubectl("create", "namespace", "istio-system")
    try:
        cluster.apply(yaml.safe_dump_all([
            {"apiVersion": "crd.projectcalico.org/v1", "kind": "FelixConfiguration", "metadata": {"name": "default"},
             "spec": {"policySyncPathPrefix": "/var/run/nodeagent"}},
            {"apiVersion": "crd.projectcalico.org/v1", "kind": "GlobalNetworkPolicy",
             "metadata": {"name": "default.allow-all-upgrade"},
             "spec": {"selector": "has(host-endpoint-upgrade)", "ingress": [{"action": "Log"}, {"action": "Allow"}]}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "istio-sidecar-injector",
                                                                   "namespace": "istio-system"},
             "data": {"config": "old injector template", "values": "{}"}},
            _deployment("istiod", "istio-system", "docker.io/istio/pilot:1.15.7", {"app": "istiod"}),
            _deployment("productpage", namespace, "docker.io/istio/examples-bookinfo-productpage-v1:1.17.0",
                        {"app": "productpage"}),
        ]))
        cluster.wait_for(lambda: (get(cluster, "apps/v1", "Deployment", "productpage", namespace)["status"]
                                  .get("availableReplicas") == 1), timeout=60, what="productpage available")
        before = get(cluster, "apps/v1", "Deployment", "productpage", namespace)
        cfg = tmp_path / "etc" / "calicoctl.cfg"
        # the real calicoctl v3.31.4 (built from ../shared/third_party), served like its release download
        real = Path(cluster.bin("calicoctl")).read_bytes()
        served = tmp_path / "srv" / TARGET / "calicoctl-linux-amd64"
        served.parent.mkdir(parents=True)
        served.write_bytes(real)
        old = tmp_path / "old" / "calicoctl"
        old.parent.mkdir()
        old.write_text("#!/bin/sh\necho 'Cluster Version: %s'\n" % SOURCE)
        installed = tmp_path / "bin" / "calicoctl"
        with file_server(tmp_path / "srv") as url:
            variables = upgrade_vars(cluster, tmp_path, install, upgrade_alp_deployments=[
                {"namespace": namespace, "name": "productpage"}], upgrade_remove_allow_all_upgrade=True,
                upgrade_calicoctl_write_config=True, upgrade_calicoctl_config_path=str(cfg),
                upgrade_calicoctl_kubeconfig=cluster.kubeconfig, upgrade_calicoctl_install=True,
                upgrade_calicoctl_url=url, upgrade_calicoctl_checksum="sha256:" + hashlib.sha256(real).hexdigest(),
                upgrade_calicoctl_path=str(installed), upgrade_calicoctl_remove_paths=[str(old)])
            with CalicoNodeStandIn(cluster):
                res = run(ansible, variables)

        report = task(res, "Report what was found")["msg"]
        assert "application layer policy: True" in report[5]
        injector = yaml.safe_load(release_text(cluster.mirror_url, TARGET, "alp/istio-inject-configmap-1.15.yaml"))
        live = get(cluster, "v1", "ConfigMap", "istio-sidecar-injector", "istio-system")["data"]
        assert live["config"] == injector["data"]["config"] and live["values"] == "{}"
        after = get(cluster, "apps/v1", "Deployment", "productpage", namespace)
        assert after["spec"]["template"]["metadata"]["annotations"]["calico-ops.io/alp-upgraded-to"] == TARGET
        assert after["metadata"]["generation"] > before["metadata"]["generation"]
        assert after["status"]["updatedReplicas"] == after["status"]["availableReplicas"] == 1
        assert get(cluster, "crd.projectcalico.org/v1", "GlobalNetworkPolicy", "default.allow-all-upgrade") is None
        names = ran(res)
        assert names.index(next(n for n in names if n.startswith("Report GlobalNetworkPolicy"))) < \
            names.index(next(n for n in names if n.startswith("Delete GlobalNetworkPolicy")))
        written = yaml.safe_load(cfg.read_text())
        assert written == {"apiVersion": "projectcalico.org/v3", "kind": "CalicoAPIConfig", "metadata": {},
                           "spec": {"datastoreType": "kubernetes", "kubeconfig": cluster.kubeconfig}}
        # the target's calicoctl replaced the old one, and says the cluster runs the target version
        assert installed.read_bytes() == real and os.access(str(installed), os.X_OK) and not old.exists()
        version = task(res, "Ask calicoctl for the cluster version")
        # what calicoctl itself prints: its own version, and the Cluster Version it read (ClusterInformation)
        assert re.search(r"^Client Version:\s+%s$" % re.escape(TARGET), version["stdout"], re.M), version
        assert re.search(r"^Cluster Version:\s+%s$" % re.escape(TARGET), version["stdout"], re.M), version
        assert any(n.startswith("The Cluster Version calicoctl shows must be") for n in names)
        assert not any(n.startswith("Say that calicoctl was not checked") for n in names)
    finally:
        cluster.kubectl("delete", "namespace", "istio-system", "--ignore-not-found", "--wait=false", check=False)


def test_post_check_waits_for_cluster_information(cluster, ansible, install, tmp_path):
    """No calico-node reports the new version (no stand-in): the post-check times out quoting what it saw."""
    install.apply_release(SOURCE, "calico.yaml")
    install.forget_later(TARGET, "calico.yaml")
    wait_daemonset(cluster, "calico-node")
    variables = upgrade_vars(cluster, tmp_path, install, upgrade_timeout=4, upgrade_poll_interval=1)
    res = run(ansible, variables, ok=False)
    msg = failure(res)
    assert res.rc != 0 and "The cluster does not report Calico %s after 4s" % TARGET in msg, msg
    assert "no ClusterInformation default served through the Kubernetes API" in msg or "ClusterInformation" in msg
    assert record(cluster, variables)["phase"] == "upgrading"
    assert not any(n.startswith("Re-attach owner references") for n in ran(res))


def test_calicoctl_with_a_wrong_checksum_stops_before_any_write(cluster, ansible, install, tmp_path):
    """calicoctl is downloaded (checksum verified) while preparing: a mismatch stops the run before any write.
    (No calicoctl binary can be fetched here, so the file served is not one; it is never run.)"""
    install.apply_release(SOURCE, "calico.yaml")
    wait_daemonset(cluster, "calico-node")
    served = tmp_path / "srv" / TARGET / "calicoctl-linux-amd64"
    served.parent.mkdir(parents=True)
    served.write_bytes(b"these bytes are not calicoctl")
    old = tmp_path / "old-calicoctl"
    old.write_text("old")
    with file_server(tmp_path / "srv") as url:
        wrong = "sha256:" + hashlib.sha256(b"something else").hexdigest()
        variables = upgrade_vars(cluster, tmp_path, install, upgrade_calicoctl_install=True, upgrade_calicoctl_url=url,
                                 upgrade_calicoctl_checksum=wrong, upgrade_calicoctl_path=str(tmp_path / "calicoctl"),
                                 upgrade_calicoctl_remove_paths=[str(old)])
        mark = cluster.audit.mark()
        res = run(ansible, variables, ok=False)
        writes = cluster.audit.writes_since(mark)
    assert res.rc != 0 and "checksum" in failure(res).lower(), failure(res)
    assert writes == [], [describe(e) for e in writes]
    assert not (tmp_path / "calicoctl").exists() and old.exists()


def test_real_calicoctl_reads_the_etcd_datastore_after_the_upgrade(cluster, ansible, install, tmp_path):
    """calico-etcd.yaml on the control plane's own etcd (plain http): the upgrade installs the real calicoctl
    v3.31.4, writes its etcdv3 configuration, and calicoctl reads the Cluster Version from that etcd - where
    calico-node writes ClusterInformation at start-up (its stand-in here: calico-node needs a kernel)."""
    etcd = cluster.cp.state["etcd"]

    def on_the_real_etcd(doc):
        if doc["kind"] == "ConfigMap" and doc["metadata"]["name"] == "calico-config":
            doc["data"]["etcd_endpoints"] = etcd
        return doc
    install.apply_release(SOURCE, "calico-etcd.yaml", on_the_real_etcd)
    install.forget_later(TARGET, "calico-etcd.yaml")
    wait_daemonset(cluster, "calico-node")
    real = Path(cluster.bin("calicoctl")).read_bytes()
    served = tmp_path / "srv" / TARGET / "calicoctl-linux-amd64"
    served.parent.mkdir(parents=True)
    served.write_bytes(real)
    cfg = tmp_path / "etc" / "calicoctl.cfg"
    installed = tmp_path / "bin" / "calicoctl"
    with file_server(tmp_path / "srv") as url:
        variables = upgrade_vars(cluster, tmp_path, install, upgrade_etcd_endpoints=[etcd],
                                 upgrade_calicoctl_write_config=True, upgrade_calicoctl_config_path=str(cfg),
                                 upgrade_calicoctl_install=True, upgrade_calicoctl_url=url,
                                 upgrade_calicoctl_checksum="sha256:" + hashlib.sha256(real).hexdigest(),
                                 upgrade_calicoctl_path=str(installed))
        with CalicoNodeStandIn(cluster) as node:
            res = run(ansible, variables)
    assert not node.errors, node.errors
    assert yaml.safe_load(cfg.read_text())["spec"] == {"datastoreType": "etcdv3", "etcdEndpoints": etcd}
    version = task(res, "Ask calicoctl for the cluster version")
    assert re.search(r"^Cluster Version:\s+%s$" % re.escape(TARGET), version["stdout"], re.M), version
    # calicoctl itself, on the etcd datastore: the object calico-node keeps there
    out = subprocess.run([str(installed), "get", "clusterinformation", "default", "-o", "json", "--config", str(cfg)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["spec"]["calicoVersion"] == TARGET
