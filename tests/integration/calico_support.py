"""Shared by test_upgrade.py and test_calico_facts.py: Calico installs on the shared local control plane.

Nothing of Calico really runs here: kwok runs the pods (Running, ready), so two small threads play the
components whose writes the upgrade looks at, the way those components behave:

* ``CalicoNodeStandIn`` plays calico-node's start-up: once a pod of DaemonSet ``calico-node`` (or ``canal``)
  runs with image tag X, ClusterInformation ``default`` ``spec.calicoVersion`` says X (Kubernetes API
  datastore only - with etcd that object is not in the Kubernetes API);
* ``OperatorStandIn`` plays the Tigera operator's reporting: once the operator Deployment has rolled out
  image I, Installation ``default`` ``status.calicoVersion`` is the Calico release whose
  ``tigera-operator.yaml`` carries I (read from the release files), and TigeraStatus ``calico`` is Available.

Installs are made with server-side apply under the field manager ``test-setup`` (as a user would, with kubectl)
and removed afterwards: one control plane serves the whole test run.
"""

import copy
import functools
import subprocess
import threading
import time
import urllib.request

import yaml
from kubernetes.dynamic.exceptions import NotFoundError

SOURCE = "v3.27.5"
TARGET = "v3.31.4"
OPERATOR_SOURCE = "v3.29.7"
VERSIONS = ("v3.27.5", "v3.29.7", "v3.31.4")
NODE_DAEMONSETS = ("calico-node", "canal", "canal-node")
KUBE_SYSTEM_DEPLOYMENTS = ("calico-kube-controllers", "calico-typha")
TS_API = "operator.tigera.io/v1"
CRD_API = "crd.projectcalico.org/v1"


@functools.lru_cache(maxsize=None)
def release_text(mirror_url, version, name):
    with urllib.request.urlopen("%s/%s/manifests/%s" % (mirror_url, version, name), timeout=60) as resp:
        return resp.read().decode()


def release_docs(mirror_url, version, name):
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [d for d in yaml.load_all(release_text(mirror_url, version, name), Loader=loader) if d]


def image_tag(image):
    return image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else None


def node_ds_name(flavor):
    if flavor == "canal-etcd.yaml":
        return "canal-node"
    return "canal" if flavor.startswith("canal") else "calico-node"


def get(cluster, api_version, kind, name, namespace=None):
    try:
        res = cluster.k8s.resources.get(api_version=api_version, kind=kind)
        return res.get(name=name, namespace=namespace).to_dict()
    except NotFoundError:
        return None
    except Exception as exc:  # noqa: BLE001 - the type is not served (yet)
        if "not found" in str(exc).lower() or "ResourceNotFound" in type(exc).__name__:
            return None
        raise


def ds_rolled_out(ds):
    st = (ds or {}).get("status") or {}
    meta = (ds or {}).get("metadata") or {}
    desired = st.get("desiredNumberScheduled") or 0
    return (ds is not None and desired > 0 and (st.get("observedGeneration") or 0) >= meta.get("generation", 0)
            and st.get("updatedNumberScheduled") == desired and st.get("numberAvailable") == desired)


def wait_daemonset(cluster, name, namespace="kube-system", timeout=120):
    return cluster.wait_for(lambda: ds_rolled_out(get(cluster, "apps/v1", "DaemonSet", name, namespace)),
                            timeout=timeout, what="DaemonSet %s/%s rolled out" % (namespace, name))


def helm(cluster, *args, check=True):
    proc = subprocess.run([cluster.bin("helm"), "--kubeconfig", cluster.kubeconfig, *args], capture_output=True,
                          text=True, timeout=300, env=cluster.env, check=False)
    if check and proc.returncode != 0:
        raise AssertionError("helm %s failed (%d):\n%s" % (" ".join(args), proc.returncode, proc.stderr))
    return proc


def wipe_calico(cluster):
    """Every cluster-wide Calico singleton and workload these tests (and the eBPF tests) create."""
    cluster.kubectl("delete", "installations.operator.tigera.io,apiservers.operator.tigera.io,"
                    "goldmanes.operator.tigera.io,whiskers.operator.tigera.io,tigerastatuses.operator.tigera.io,"
                    "clusterinformations.crd.projectcalico.org", "--all", "--ignore-not-found", "--wait=true",
                    check=False)
    cluster.kubectl("delete", "daemonset", *NODE_DAEMONSETS, "-n", "kube-system", "--ignore-not-found", check=False)
    cluster.kubectl("delete", "deployment", *KUBE_SYSTEM_DEPLOYMENTS, "-n", "kube-system", "--ignore-not-found",
                    check=False)
    cluster.kubectl("delete", "namespace", "tigera-operator", "calico-system", "--ignore-not-found", "--wait=true",
                    check=False, timeout=180)


def nudge_crds(cluster, names):
    """Requeue the deletion of CRDs whose finalizer gave up for now. Deleted seconds after it was created or
    changed, a CRD can meet its storage still initialising: the API server's CRD finalizer then fails to list
    the instances ("could not list instances: storage is (re)initializing", condition Terminating, reason
    InstanceDeletionFailed) and retries only minutes later. An update of the CRD's metadata requeues it at once
    (its spec, and so its storage, is left alone)."""
    for name in names:
        crd = get(cluster, "apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
        conds = ((crd or {}).get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Terminating" and c.get("reason") == "InstanceDeletionFailed" for c in conds):
            cluster.kubectl("annotate", "--overwrite", "customresourcedefinition", name,
                            "calico-ops.io/deletion-retry=%d" % int(time.time()), check=False)


class Install(object):
    """Release files applied for a test, removed (with the target release's files) at the end."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.files = []
        self.configmaps = []  # (namespace, name) written by the role: the upgrade and owner reference records
        self.helm_releases = []

    def apply_release(self, version, name, edit=None):
        docs = release_docs(self.cluster.mirror_url, version, name)
        if edit:
            docs = [edit(copy.deepcopy(d)) for d in docs]
        self.files.append((version, name))
        self.cluster.apply(yaml.safe_dump_all(docs))
        return docs

    def forget_later(self, version, name):
        self.files.append((version, name))

    def cleanup(self):
        started = time.monotonic()
        for release, namespace in self.helm_releases:
            helm(self.cluster, "uninstall", release, "-n", namespace, "--wait", check=False)
        for namespace, name in self.configmaps:
            self.cluster.kubectl("delete", "configmap", "-n", namespace, name, "--ignore-not-found", check=False)
        # `kubectl delete --wait` sometimes sits for minutes on a watch after everything is gone: delete without
        # it, then poll until `kubectl get` finds none of the objects (a CRD still terminating cannot be re-created).
        urls = ["%s/%s/manifests/%s" % (self.cluster.mirror_url, version, name) for version, name in self.files]
        args = [a for url in reversed(urls) for a in ("-f", url)]
        if urls:
            self.cluster.kubectl("delete", "--ignore-not-found", "--wait=false", *args, check=False, timeout=300)
            def gone():
                left = self.cluster.kubectl("get", "--ignore-not-found", "-o", "name", *args, check=False).stdout.split()
                nudge_crds(self.cluster, [n.split("/", 1)[1] for n in left if n.startswith("customresourcedefinition")])
                return not left
            self.cluster.wait_for(gone, timeout=300, interval=1, what="the release files' objects to be gone")
        files = time.monotonic()
        wipe_calico(self.cluster)
        print("[cleanup] release files %.1fs, singletons %.1fs" % (files - started, time.monotonic() - files))


class StandIn(threading.Thread):
    def __init__(self, cluster, interval=0.5):
        super().__init__(daemon=True)
        self.cluster = cluster
        self.interval = interval
        self.halt = threading.Event()
        self.errors = []
        self.writes = 0

    def run(self):
        while not self.halt.is_set():
            try:
                self.step()
            except Exception as exc:  # noqa: BLE001 - keep playing; report at the end
                self.errors.append(repr(exc))
            self.halt.wait(self.interval)

    def stop(self):
        self.halt.set()
        self.join(timeout=10)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()


class CalicoNodeStandIn(StandIn):
    """calico-node's start-up: ClusterInformation default reports the version of the running calico-node."""

    def __init__(self, cluster, daemonset="calico-node", namespace="kube-system", **kw):
        super().__init__(cluster, **kw)
        self.daemonset, self.namespace = daemonset, namespace

    def step(self):
        ds = get(self.cluster, "apps/v1", "DaemonSet", self.daemonset, self.namespace)
        if ds is None:
            return
        labels = ds["spec"]["selector"]["matchLabels"]
        pods = self.cluster.k8s.resources.get(api_version="v1", kind="Pod").get(
            namespace=self.namespace, label_selector=",".join("%s=%s" % kv for kv in labels.items())).to_dict()
        running = [p for p in pods["items"] if (p.get("status") or {}).get("phase") == "Running"
                   and not p["metadata"].get("deletionTimestamp")]
        running.sort(key=lambda p: p["metadata"]["creationTimestamp"])
        if not running:
            return
        node = [c for c in running[-1]["spec"]["containers"] if c["name"] == "calico-node"]
        version = image_tag(node[0]["image"]) if node else None
        try:
            res = self.cluster.k8s.resources.get(api_version=CRD_API, kind="ClusterInformation")
        except Exception:  # noqa: BLE001 - the CRD is not installed (etcd datastore)
            return
        try:
            current = res.get(name="default").to_dict()
        except NotFoundError:
            res.create(body={"apiVersion": CRD_API, "kind": "ClusterInformation", "metadata": {"name": "default"},
                             "spec": {"calicoVersion": version, "clusterType": "k8s,bgp,kdd",
                                      "datastoreReady": True}})
            self.writes += 1
            return
        if (current.get("spec") or {}).get("calicoVersion") != version:
            res.patch(name="default", body={"spec": {"calicoVersion": version}},
                      content_type="application/merge-patch+json")
            self.writes += 1


class OperatorStandIn(StandIn):
    """The operator's reporting: Installation status.calicoVersion and TigeraStatus calico."""

    def __init__(self, cluster, namespace="tigera-operator", deployment="tigera-operator", **kw):
        super().__init__(cluster, **kw)
        self.namespace, self.deployment = namespace, deployment
        self.by_image = {}
        for version in VERSIONS:
            for doc in release_docs(cluster.mirror_url, version, "tigera-operator.yaml"):
                if doc["kind"] == "Deployment":
                    self.by_image[doc["spec"]["template"]["spec"]["containers"][0]["image"]] = version

    def step(self):
        dep = get(self.cluster, "apps/v1", "Deployment", self.deployment, self.namespace)
        inst = get(self.cluster, TS_API, "Installation", "default")
        if dep is None or inst is None:
            return
        st = dep.get("status") or {}
        if st.get("observedGeneration", 0) < dep["metadata"]["generation"] or st.get("availableReplicas") != \
                dep["spec"].get("replicas", 1) or st.get("updatedReplicas") != dep["spec"].get("replicas", 1):
            return
        version = self.by_image.get(dep["spec"]["template"]["spec"]["containers"][0]["image"])
        if version and (inst.get("status") or {}).get("calicoVersion") != version:
            res = self.cluster.k8s.resources.get(api_version=TS_API, kind="Installation")
            res.status.patch(name="default", body={"status": {"calicoVersion": version, "variant": "Calico"}},
                             content_type="application/merge-patch+json")
            self.writes += 1
        ts = self.cluster.k8s.resources.get(api_version=TS_API, kind="TigeraStatus")
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        conds = [{"type": t, "status": s, "reason": "AllObjectsAvailable" if s == "True" else "",
                  "message": "All objects are available" if s == "True" else "", "lastTransitionTime": now}
                 for t, s in (("Available", "True"), ("Progressing", "False"), ("Degraded", "False"))]
        try:
            current = ts.get(name="calico").to_dict()
        except NotFoundError:
            ts.create(body={"apiVersion": TS_API, "kind": "TigeraStatus", "metadata": {"name": "calico"}})
            current = {}
            self.writes += 1
        have = [(c.get("type"), c.get("status")) for c in (current.get("status") or {}).get("conditions") or []]
        if have != [(c["type"], c["status"]) for c in conds]:
            ts.status.patch(name="calico", body={"status": {"conditions": conds}},
                            content_type="application/merge-patch+json")
            self.writes += 1
