"""The host endpoint migration's world: three nodes with old all-interfaces endpoints, a fourth with an automatic one,
and the record's home, in the in-memory API of fake_k8s (the real Client, a fake transport).

calico-kube-controllers does not run here: ``Controllers`` plays its part (when KubeControllersConfiguration
default says autoCreate Enabled it creates ``<node>-auto-hep`` with the node's labels and the created-by label),
called from the runner's ``sleep`` so the waits take no time. Its writes go straight into the fake's storage,
so ``dyn.writes()`` holds the runner's writes only.

The etcd datastore is driven through ``calicoctl``; no calicoctl binary can be fetched here, so ``Etcd`` writes a
stand-in executable that answers calicoctl's commands (get/create/patch/delete, JSON output) from a JSON file."""

import copy
import json
import os
import stat
import subprocess
import sys

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints import rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.datastore import CalicoctlDatastore, KubeDatastore
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.runner import Runner

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_k8s import FakeDynamic, _error, client


CRD = "crd.projectcalico.org/v1"
V3 = "projectcalico.org/v3"
RECORD = "hep-record"


class Killed(BaseException):
    """The module's process dies here."""


def merge(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


class HepFake(FakeDynamic):
    """FakeDynamic plus JSON merge patches (resourceVersion precondition) and DELETE uid preconditions."""

    def _target(self, path):
        group, version, plural, namespace, name = self._parse(path)
        api_version = "%s/%s" % (group, version) if group else version
        return api_version, plural, namespace, name

    def _handle(self, method, path, body, query, content_type):
        parts = path.strip("/").split("/")
        is_object = not ((parts[0] == "api" and len(parts) <= 2) or (parts[0] == "apis" and len(parts) <= 3))
        if is_object and method == "PATCH" and content_type == "application/merge-patch+json":
            api_version, plural, namespace, name = self._target(path)
            current = self.obj(api_version, plural, name, namespace)
            if current is None:
                raise _error(404, "Not Found", "%s %s not found" % (plural, name))
            rv = (body.get("metadata") or {}).get("resourceVersion")
            if rv and rv != current["metadata"]["resourceVersion"]:
                raise _error(409, "Conflict", "the object has been modified")
            patched = merge(current, body)
            patched["metadata"]["uid"] = current["metadata"]["uid"]
            return self.put(api_version, plural, patched)
        if is_object and method == "DELETE" and body and body.get("preconditions"):
            api_version, plural, namespace, name = self._target(path)
            current = self.obj(api_version, plural, name, namespace)
            if current is not None and current["metadata"]["uid"] != body["preconditions"]["uid"]:
                raise _error(409, "Conflict", "Precondition failed: UID in precondition")
        return super(HepFake, self)._handle(method, path, body, query, content_type)


def hep(name, node, labels=None, interface="*", api=CRD):
    meta = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": api, "kind": "HostEndpoint", "metadata": meta,
            "spec": {"node": node, "interfaceName": interface, "expectedIPs": ["10.0.0.%d" % (len(name) % 250)],
                     "profiles": ["old-profile"]}}


class Controllers(object):
    """calico-kube-controllers' automatic host endpoints, one node per step (``per_step``)."""

    def __init__(self, world, skip=(), per_step=1):
        self.world = world
        self.skip = set(skip)
        self.per_step = per_step
        self.created = []  # (len(dyn.log) at creation, node)

    def step(self):
        w = self.world
        kcc = w.dyn.obj(w.api, "kubecontrollersconfigurations", "default")
        if rules.auto_create_of(kcc) != "Enabled":
            return
        made = 0
        for node in sorted(w.node_names):
            if node in self.skip or w.dyn.obj("v1", "nodes", node) is None:
                continue
            labels = dict(w.dyn.obj("v1", "nodes", node)["metadata"].get("labels") or {})
            labels[rules.CREATED_BY_LABEL] = rules.CREATED_BY_VALUE
            name = node + "-auto-hep"
            current = w.dyn.obj(w.api, "hostendpoints", name)
            if current is not None and current["metadata"].get("labels") == labels:
                continue
            if made >= self.per_step:
                return
            body = hep(name, node, labels, api=w.api)
            body["spec"]["profiles"] = ["projectcalico-default-allow"]
            if current is not None:
                body["metadata"]["uid"] = current["metadata"]["uid"]
            w.dyn.put(w.api, "hostendpoints", body)
            self.created.append((len(w.dyn.log), node))
            made += 1


class World(object):
    """Three nodes with old all-interfaces endpoints, a fourth with an automatic one, and the record's home."""

    def __init__(self, tmp_path, api=CRD, kcc="Disabled", serve_v3=False):
        self.tmp_path = tmp_path
        self.api = api
        self.dyn = dyn = HepFake()
        dyn.add_type("v1", "namespaces", "Namespace", namespaced=False)
        dyn.add_type("v1", "configmaps", "ConfigMap")
        dyn.add_type("v1", "nodes", "Node", namespaced=False)
        groups = [CRD] + ([V3] if serve_v3 or api == V3 else [])
        for group in groups:
            dyn.add_type(group, "hostendpoints", "HostEndpoint", namespaced=False, storage="heps-" + group)
            dyn.add_type(group, "kubecontrollersconfigurations", "KubeControllersConfiguration",
                         namespaced=False, storage="kcc-" + group)
        dyn.put("v1", "namespaces", {"metadata": {"name": "kube-system", "uid": "cluster-uid-1"}})
        self.node_names = ["n1", "n2", "n3", "n4"]
        self.node_labels = {"n1": {"zone": "a"}, "n2": {}, "n3": {"env": "prod"}, "n4": {}}
        for name in self.node_names:
            labels = {"kubernetes.io/hostname": name}
            labels.update(self.node_labels[name])
            dyn.put("v1", "nodes", {"metadata": {"name": name, "labels": labels}})
        self.old = {
            "n1-hep": ("n1", {"env": "prod", "zone": "a", "role": "edge"}),
            "n2-hep": ("n2", {"env": "prod"}),
            "n3-hep": ("n3", {"env": "prod", "tier": "db"}),
        }
        for name, (node, labels) in self.old.items():
            dyn.put(api, "hostendpoints", hep(name, node, labels, api=api))
        # automatic endpoints (one by label, one by name only) and a named-interface one: never touched
        self.untouched = ["n4-auto-hep", "custom-auto", "n1-eth0"]
        dyn.put(api, "hostendpoints", hep("n4-auto-hep", "n4", {"x": "1"}, api=api))
        dyn.put(api, "hostendpoints", hep("custom-auto", "n4", {rules.CREATED_BY_LABEL: rules.CREATED_BY_VALUE},
                                          api=api))
        dyn.put(api, "hostendpoints", hep("n1-eth0", "n1", {"env": "prod"}, interface="eth0", api=api))
        if kcc is not None:
            dyn.put(api, "kubecontrollersconfigurations", {
                "apiVersion": api, "kind": "KubeControllersConfiguration", "metadata": {"name": "default"},
                "spec": {"controllers": {"node": {"syncLabels": "Enabled", "hostEndpoint": {"autoCreate": kcc}},
                                         "policy": {"reconcilerPeriod": "5m"}}}})
        self.controllers = Controllers(self)
        self.clock = [0.0]
        self.slept = []

    @property
    def record_path(self):
        return str(self.tmp_path / "record.json")

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.clock[0] += seconds
        self.controllers.step()

    def runner(self, check_mode=False, diff=False, datastore=None, **kw):
        c = client(self.dyn, check_mode=check_mode)
        params = dict(wait_timeout=30, poll_interval=1, record_namespace="kube-system", record_name=RECORD,
                      record_path=self.record_path, workers=1)
        params.update(kw)
        return Runner(c, datastore or KubeDatastore(c), diff=diff, sleep=self.sleep, clock=lambda: self.clock[0],
                      **params)

    def heps(self):
        return dict(((n, o) for (_ns, n), o in self.dyn.objects["heps-" + self.api].items()))

    def node_labels_now(self, node):
        return self.dyn.obj("v1", "nodes", node)["metadata"].get("labels") or {}

    def record(self):
        cm = self.dyn.obj("v1", "configmaps", RECORD, "kube-system")
        return json.loads(cm["data"]["record.json"])["entries"] if cm else None

    def file_record(self):
        if not os.path.exists(self.record_path):
            return None
        with open(self.record_path) as handle:
            return json.load(handle)["entries"]


def writes(dyn):
    return [(m, p) for m, p, _q in dyn.writes()]


def dry_run(entry):
    """A request of the fake's log that is a server-side dry run (the record location's proof: writes nothing)."""
    return entry[2].get("dryRun") == "All"


# -- the etcd datastore, through a stand-in calicoctl -----------------------------------------------------------

CALICOCTL = r'''#!%(python)s
"""A stand-in for calicoctl (no binary can be fetched here): the commands host_endpoint_migration uses,
answered from a JSON file as calicoctl answers them (JSON output, errors on stderr with rc 1)."""
import json, os, sys, uuid
STATE = %(state)r
args = sys.argv[1:]
with open(STATE) as f:
    state = json.load(f)
state["calls"].append(args)
state.setdefault("datastore_types", []).append(os.environ.get("DATASTORE_TYPE"))
def save():
    with open(STATE, "w") as f:
        json.dump(state, f)
def fail(msg):
    save()
    sys.stderr.write(msg + "\n")
    sys.exit(1)
if "--config=%(config)s" not in args:
    fail("Failed to create Calico API client: no etcd endpoints: use --config")
args = [a for a in args if not a.startswith("--")]
verb = args[0]
if verb == "get" and args[1] == "hostendpoints":
    save()
    print(json.dumps({"kind": "HostEndpointList", "apiVersion": "projectcalico.org/v3",
                      "items": sorted(state["heps"].values(), key=lambda h: h["metadata"]["name"])}))
elif verb == "get" and args[1] == "kubecontrollersconfigurations":
    if state["kcc"] is None:
        fail("resource does not exist: KubeControllersConfiguration(default) with error: "
             "resource does not exist: KubeControllersConfiguration(default)")
    save()
    print(json.dumps(state["kcc"]))
elif verb == "create":
    obj = json.loads(sys.stdin.read())
    obj["metadata"]["uid"] = str(uuid.uuid4())
    if obj["kind"] == "HostEndpoint":
        if obj["metadata"]["name"] in state["heps"]:
            fail("Failed to create any 'HostEndpoint' resources: resource already exists")
        state["heps"][obj["metadata"]["name"]] = obj
    else:
        state["kcc"] = obj
    save()
    print("Successfully created 1 '%%s' resource(s)" %% obj["kind"])
elif verb == "patch":
    patch = json.loads(args[args.index("-p") + 1])
    def merge(t, p):
        for k, v in p.items():
            if isinstance(v, dict) and isinstance(t.get(k), dict):
                merge(t[k], v)
            else:
                t[k] = v
    merge(state["kcc"], patch)
    save()
    print("Successfully patched 1 'KubeControllersConfiguration' resource")
elif verb == "delete" and args[1] == "hostendpoint":
    if args[2] not in state["heps"]:
        fail("Failed to delete any 'HostEndpoint' resources: resource does not exist: HostEndpoint(%%s)" %% args[2])
    del state["heps"][args[2]]
    save()
    print("Successfully deleted 1 'HostEndpoint' resource(s)")
else:
    fail("unexpected command: %%s" %% sys.argv[1:])
'''


def run_command(argv, data, timeout, environ_update):
    """What the module's run_command does for calicoctl (K8sModule.run_command), without a module."""
    env = dict(os.environ, **environ_update)
    proc = subprocess.run(argv, input=data, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    return proc.returncode, proc.stdout, proc.stderr


class Etcd(object):
    """The etcd datastore behind the stand-in calicoctl; Nodes and the record stay in the (fake) Kubernetes API."""

    def __init__(self, tmp_path, kcc="Disabled"):
        self.world = World(tmp_path)
        self.state_path = str(tmp_path / "etcd.json")
        self.config = str(tmp_path / "calicoctl.cfg")
        self.path = str(tmp_path / "calicoctl")
        with open(self.config, "w") as f:
            f.write("apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nmetadata: {}\n"
                    "spec:\n  datastoreType: etcdv3\n  etcdEndpoints: https://etcd.example.com:2379\n")
        with open(self.path, "w") as f:
            f.write(CALICOCTL % {"python": sys.executable, "state": self.state_path, "config": self.config})
        os.chmod(self.path, os.stat(self.path).st_mode | stat.S_IXUSR)
        heps = {}
        for name, (node, labels) in self.world.old.items():
            heps[name] = hep(name, node, labels, api=V3)
            heps[name]["metadata"]["uid"] = "etcd-" + name
        heps["n4-auto-hep"] = hep("n4-auto-hep", "n4", {rules.CREATED_BY_LABEL: rules.CREATED_BY_VALUE}, api=V3)
        self.save({"calls": [], "heps": heps, "kcc": None if kcc is None else {
            "apiVersion": V3, "kind": "KubeControllersConfiguration", "metadata": {"name": "default"},
            "spec": {"controllers": {"node": {"hostEndpoint": {"autoCreate": kcc}}}}}})
        self.world.sleep = self.controllers

    def load(self):
        with open(self.state_path) as f:
            return json.load(f)

    def save(self, state):
        with open(self.state_path, "w") as f:
            json.dump(state, f)

    def controllers(self, seconds):
        """calico-kube-controllers with the etcd datastore: automatic endpoints from the Kubernetes nodes."""
        self.world.clock[0] += seconds
        state = self.load()
        if rules.auto_create_of(state["kcc"]) == "Enabled":
            for node in ("n1", "n2", "n3"):
                labels = dict(self.world.node_labels_now(node))
                labels[rules.CREATED_BY_LABEL] = rules.CREATED_BY_VALUE
                state["heps"][node + "-auto-hep"] = hep(node + "-auto-hep", node, labels, api=V3)
        self.save(state)

    def datastore(self, check_mode=False):
        return CalicoctlDatastore(path=self.path, config=self.config, extra_args=["--allow-version-mismatch"],
                                  check_mode=check_mode, run=run_command, environ={})

    def verbs(self):
        return [[a for a in c if not a.startswith("--")][:2] for c in self.load()["calls"]]
