"""The real calico-kube-controllers (v3.31.4) behind its Deployment, for the host endpoint migration tests.

``KubeControllers`` applies what calico.yaml v3.31.4 of the release mirror ships for it - the ServiceAccount,
ClusterRole and ClusterRoleBinding ``calico-kube-controllers`` and the Deployment (namespace ``kube-system``,
env ``ENABLED_CONTROLLERS=node,loadbalancer``, ``DATASTORE_TYPE=kubernetes``), unchanged - and the pod runner
(tests/localcp/podrunner.py) runs the real binary behind its pod, as that ServiceAccount. It needs every
crd.projectcalico.org CRD of operator-crds.yaml (it initialises ClusterInformation and the Tiers, and syncs
IPAM blocks and IP pools, before any controller runs): ``calico_crd_docs``.

What it does that a test relies on (calico-3.31.4/kube-controllers/pkg/controllers/node/hostendpoints.go):
creates KubeControllersConfiguration ``default`` (autoCreate Disabled) when it starts and finds none; exits when
that object changes (the pod runner starts it again); while autoCreate is Enabled creates ``<node>-auto-hep``
(interface ``*``, profile projectcalico-default-allow) for every node it knows, all at once; deletes the
endpoints labelled ``projectcalico.org/created-by: calico-kube-controllers`` whose node is gone or that it would
not create; writes the node's labels into the ``projectcalico.org/metadata`` annotation (only
``projectcalico.org/`` labels stay in ``metadata.labels`` of the crd.projectcalico.org/v1 object). Its writes are
``USER``'s in the audit log.

Its metrics server: every process of the pod runner shares this machine's ports (a pod would have its own network
namespace), and kube-controllers binds ``prometheusMetricsPort`` of KubeControllersConfiguration default (9094 by
default) or exits; another control plane's kube-controllers may hold 9094 already. So the tests set that field to 0
(metrics off, as Calico documents it): ``METRICS_OFF``, in the object they create, or ``metrics_off`` once the
module has created it.

``HoldAutoHeps``: an admission policy (ValidatingAdmissionPolicy, as a cluster's policy engine would have) that
refuses the creation of a host endpoint for a node labelled ``HOLD_LABEL``: the real controller's create fails and
is tried again when the node changes. A node kept held never gets its automatic endpoint; releasing held nodes one
at a time makes the endpoints appear one at a time.
"""

import json
import time
import urllib.request

import yaml

from localcp import sweep
from localcp.api import Api
from localcp.api import of as client_of

NAMESPACE = "kube-system"
NAME = "calico-kube-controllers"
USER = "system:serviceaccount:%s:%s" % (NAMESPACE, NAME)
VERSION = "v3.31.4"
CREATED_BY = "projectcalico.org/created-by=calico-kube-controllers"
HOLD_LABEL = "test.calico-ops.io/hold-auto-hep"
HOLD_POLICY = "test-calico-ops-hold-auto-hep"
TEST_AGENT = sweep.AGENT  # the User-Agent of the tests' own writes while a job runs (and of their cleanups)
KCC_PATH = "/apis/crd.projectcalico.org/v1/kubecontrollersconfigurations/default"
HEPS_PATH = "/apis/crd.projectcalico.org/v1/hostendpoints"
METRICS_OFF = {"prometheusMetricsPort": 0}  # see the module's docstring: port 9094 is this machine's, not a pod's


def _docs(mirror_url, name):
    with urllib.request.urlopen("%s/%s/manifests/%s" % (mirror_url, VERSION, name), timeout=120) as resp:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        return [d for d in yaml.load_all(resp.read(), Loader=loader) if d]


def release_docs(mirror_url):
    """calico.yaml's ServiceAccount, ClusterRole, ClusterRoleBinding and Deployment calico-kube-controllers."""
    docs = [d for d in _docs(mirror_url, "calico.yaml") if d["metadata"]["name"] == NAME
            and d["kind"] in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment")]
    assert sorted(d["kind"] for d in docs) == ["ClusterRole", "ClusterRoleBinding", "Deployment", "ServiceAccount"]
    return docs


def calico_crd_docs(mirror_url):
    """Every crd.projectcalico.org CRD of operator-crds.yaml."""
    return [d for d in _docs(mirror_url, "operator-crds.yaml")
            if d.get("kind") == "CustomResourceDefinition" and d["spec"]["group"] == "crd.projectcalico.org"]


class KubeControllers(object):
    """calico-kube-controllers' Deployment; ``with KubeControllers(cluster):`` runs it for the block."""

    def __init__(self, cluster, replicas=1):
        self.cluster = cluster
        self.replicas = replicas
        self.docs = release_docs(cluster.mirror_url)
        self.started = False

    def start(self):
        cluster = self.cluster
        have = cluster.kubectl("get", "deployment", NAME, "-n", NAMESPACE, "--ignore-not-found", "-o", "name").stdout
        assert not have.strip(), "a Deployment %s/%s exists already (an install left behind?)" % (NAMESPACE, NAME)
        docs = []
        for doc in self.docs:
            if doc["kind"] == "Deployment":
                doc = dict(doc, spec=dict(doc["spec"], replicas=self.replicas))
            docs.append(doc)
        cluster.apply(yaml.safe_dump_all(docs))
        self.started = True
        if self.replicas:
            self.wait_running()
        return self

    def wait_running(self, timeout=120):
        return self.cluster.wait_for_process(NAME, VERSION, timeout=timeout)

    def scale(self, replicas, agent=None):
        """Scale the Deployment (a merge patch of spec.replicas, by the tests' own User-Agent)."""
        client_of(self.cluster, agent or TEST_AGENT).req(
            "PATCH", "/apis/apps/v1/namespaces/%s/deployments/%s" % (NAMESPACE, NAME),
            {"spec": {"replicas": replicas}}, ctype="application/merge-patch+json")
        if replicas:
            self.wait_running()

    def log(self, tail=4000):
        out = []
        for proc in self.cluster.processes(NAME):
            try:
                with open(proc["log"]) as f:
                    out.append(f.read()[-tail:])
            except OSError:
                pass
        return "\n".join(out)

    def stop(self):
        """Delete the Deployment (its process stops with its pod) and the RBAC objects."""
        if not self.started:
            return
        cluster = self.cluster
        cluster.kubectl("delete", "deployment", NAME, "-n", NAMESPACE, "--ignore-not-found", "--wait=false",
                        check=False)
        cluster.wait_for(lambda: not [p for p in cluster.processes(NAME)
                                      if p["namespace"] == NAMESPACE and p["pid"]],
                         timeout=120, what="calico-kube-controllers' process to stop")
        for doc in self.docs:
            if doc["kind"] != "Deployment":
                args = ["delete", doc["kind"].lower(), NAME, "--ignore-not-found"]
                if doc["kind"] == "ServiceAccount":
                    args += ["-n", NAMESPACE]
                cluster.kubectl(*args, check=False)
        self.started = False

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def delete_automatic_endpoints(cluster):
    """The endpoints calico-kube-controllers created (it would delete them itself with autoCreate Disabled): one
    DELETE of the collection with its label selector, by the tests' own User-Agent (``kubectl delete -l`` sends one
    DELETE per object and waits for each: 1,000 endpoints took 204 s). Nothing to do when the CRD is not there."""
    client_of(cluster, TEST_AGENT).delete(HEPS_PATH, query={"labelSelector": CREATED_BY})


HOLD_DOCS = [
    {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
     "metadata": {"name": HOLD_POLICY},
     "spec": {"failurePolicy": "Fail",
              "matchConstraints": {"resourceRules": [{
                  "apiGroups": ["crd.projectcalico.org"], "apiVersions": ["*"], "operations": ["CREATE"],
                  "resources": ["hostendpoints"]}]},
              # kube-controllers writes the node's labels into the projectcalico.org/metadata annotation
              "validations": [{
                  "expression": "!has(object.metadata.annotations) || "
                                "!('projectcalico.org/metadata' in object.metadata.annotations) || "
                                "!object.metadata.annotations['projectcalico.org/metadata'].contains('\"%s\"')"
                                % HOLD_LABEL,
                  "message": "the node is held by the test (label %s)" % HOLD_LABEL}]}},
    {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
     "metadata": {"name": HOLD_POLICY}, "spec": {"policyName": HOLD_POLICY, "validationActions": ["Deny"]}},
]


class AdmissionHold(object):
    """An admission policy (``docs``: a ValidatingAdmissionPolicy and its binding, as a cluster's policy engine would
    have) in force while the ``with`` block runs: enforced once a dry-run POST of ``probe`` to ``path`` is refused
    with ``message``; removed at the end."""

    def __init__(self, cluster, docs, path, probe, message):
        self.cluster, self.docs, self.path, self.probe, self.message = cluster, docs, path, probe, message

    def __enter__(self):
        self.cluster.apply(yaml.safe_dump_all(self.docs))
        self._wait_enforced()
        return self

    def _wait_enforced(self, timeout=60):
        """A policy is enforced a moment after it is created: probe with a dry-run create."""
        from kubernetes.client.exceptions import ApiException
        api = Api(self.cluster, user_agent=TEST_AGENT)
        deadline = time.monotonic() + timeout
        while True:
            try:
                api.req("POST", self.path, self.probe, query={"dryRun": "All"})
            except ApiException as exc:
                if exc.status in (400, 403, 422) and self.message in str(exc.body):
                    return
                raise
            assert time.monotonic() < deadline, "the hold policy is not enforced after %ss" % timeout
            time.sleep(0.5)

    def __exit__(self, *exc):
        for doc in reversed(self.docs):
            self.cluster.kubectl("delete", doc["kind"].lower(), doc["metadata"]["name"], "--ignore-not-found",
                                 check=False)


class HoldAutoHeps(AdmissionHold):
    """The admission policy refusing automatic endpoints of nodes labelled ``HOLD_LABEL``."""

    def __init__(self, cluster):
        probe = {"apiVersion": "crd.projectcalico.org/v1", "kind": "HostEndpoint",
                 "metadata": {"name": "hold-probe", "annotations": {
                     "projectcalico.org/metadata": '{"labels":{"%s":"true"}}' % HOLD_LABEL}},
                 "spec": {"node": "hold-probe", "interfaceName": "*"}}
        super().__init__(cluster, HOLD_DOCS, HEPS_PATH, probe,
                         "held by the test")


def release(cluster, node, agent=TEST_AGENT):
    """Remove the hold label from a node (a merge patch by the tests' own User-Agent)."""
    client_of(cluster, agent).req("PATCH", "/api/v1/nodes/" + node,
                                       {"metadata": {"labels": {HOLD_LABEL: None}}},
                                       ctype="application/merge-patch+json")


def metrics_off(cluster, agent=TEST_AGENT):
    """prometheusMetricsPort 0 in KubeControllersConfiguration default (a merge patch by the tests' User-Agent)."""
    client_of(cluster, agent).req("PATCH", KCC_PATH, {"spec": METRICS_OFF}, ctype="application/merge-patch+json")


def running_config_auto_create(kcc):
    """What kube-controllers reports it runs with: status.runningConfig...hostEndpoint.autoCreate."""
    rc = ((kcc or {}).get("status") or {}).get("runningConfig") or {}
    return (((rc.get("controllers") or {}).get("node") or {}).get("hostEndpoint") or {}).get("autoCreate")


def calico_labels(obj):
    """A Calico object's labels as Calico reads them from crd.projectcalico.org/v1: ``metadata.labels`` merged with
    the labels kept in the ``projectcalico.org/metadata`` annotation (those win)."""
    meta = (obj or {}).get("metadata") or {}
    labels = dict(meta.get("labels") or {})
    raw = (meta.get("annotations") or {}).get("projectcalico.org/metadata")
    if raw:
        labels.update(json.loads(raw).get("labels") or {})
    return labels


class Releaser(object):
    """Once KubeControllersConfiguration ``default`` exists (``scale_up``: then scale kube-controllers to 1) and
    kube-controllers runs with autoCreate Enabled, release the held ``nodes`` one every ``every`` seconds. API
    errors (the API server may be stopped on purpose) are retried."""

    def __init__(self, cluster, nodes, every, kube_controllers=None):
        import threading
        self.cluster, self.nodes, self.every, self.kc = cluster, list(nodes), every, kube_controllers
        self.api = Api(cluster, user_agent=TEST_AGENT)
        self.halt = threading.Event()
        self.released = {}  # node -> time.monotonic()
        self.errors = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _kcc(self):
        return self.api.get(KCC_PATH)

    def _retry(self, fn):
        while not self.halt.is_set():
            try:
                return fn()
            except Exception as exc:  # noqa: BLE001 - the API server may be down for a while
                self.errors.append(repr(exc)[:300])
                self.halt.wait(0.3)
        return None

    def _run(self):
        while not self.halt.is_set() and not self._retry(self._kcc):
            self.halt.wait(0.2)
        if self.kc is not None and not self.halt.is_set():
            self._retry(lambda: metrics_off(self.cluster) or True)
            self._retry(lambda: self.kc.scale(1) or True)
        while not self.halt.is_set() and self._retry(lambda: running_config_auto_create(self._kcc())) != "Enabled":
            self.halt.wait(0.2)
        for node in self.nodes:
            if self.halt.is_set():
                return
            self._retry(lambda: release(self.cluster, node) or True)
            self.released[node] = time.monotonic()
            self.halt.wait(self.every)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.halt.set()
        self.thread.join(timeout=30)
