"""The owner references job's world: Calico owners (NetworkPolicy, GlobalNetworkPolicy) and a non-Calico Deployment,
their dependents, in the in-memory API of fake_k8s; shared by owner_references/test_runner.py and test_attach.py.
``peak_of`` counts the requests of a kind that are in flight at once."""

import threading
import time

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.owner_references.runner import Runner

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_k8s import client, standard_api


CALICO = "projectcalico.org/v3"


class Killed(BaseException):
    """The module's process dies here."""


def ref(owner, controller=None, block=None):
    out = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
           "uid": owner["metadata"]["uid"]}
    if controller is not None:
        out["controller"] = controller
    if block is not None:
        out["blockOwnerDeletion"] = block
    return out


class World(object):
    """Owners (Calico NetworkPolicy + GlobalNetworkPolicy, a non-Calico Deployment) and their dependents."""

    def __init__(self):
        self.dyn = dyn = standard_api()
        self.np = dyn.put(CALICO, "networkpolicies", {"apiVersion": CALICO, "kind": "NetworkPolicy",
                                                      "metadata": {"name": "np1", "namespace": "a"}})
        self.np_b = dyn.put(CALICO, "networkpolicies", {"apiVersion": CALICO, "kind": "NetworkPolicy",
                                                        "metadata": {"name": "np1", "namespace": "b"}})
        self.gnp = dyn.put(CALICO, "globalnetworkpolicies", {"apiVersion": CALICO, "kind": "GlobalNetworkPolicy",
                                                             "metadata": {"name": "gnp1"}})
        self.other = dyn.put("apps/v1", "deployments", {"metadata": {"name": "keeper", "namespace": "a"}})
        self.other["apiVersion"], self.other["kind"] = "apps/v1", "Deployment"
        self.other_ref = ref(self.other, controller=False)
        self.dependents = {
            ("v1", "configmaps", "a", "cm1"): [ref(self.np, controller=True, block=True)],
            ("v1", "configmaps", "a", "cm2"): [self.other_ref, ref(self.np)],
            ("v1", "secrets", "b", "s1"): [ref(self.np_b), ref(self.gnp)],
            ("apps/v1", "deployments", "a", "d1"): [ref(self.gnp, block=True)],
            ("example.com/v1", "widgets", "b", "w1"): [ref(self.np_b, controller=True)],
            ("v1", "namespaces", None, "c"): [ref(self.gnp)],
        }
        for (av, plural, ns, name), refs in self.dependents.items():
            meta = {"name": name, "ownerReferences": refs}
            if ns:
                meta["namespace"] = ns
            dyn.put(av, plural, {"metadata": meta})
        dyn.put("v1", "configmaps", {"metadata": {"name": "plain", "namespace": "a"}})
        dyn.put("v1", "events", {"metadata": {"name": "ev", "namespace": "a",
                                              "ownerReferences": [self.other_ref]}})

    def refs(self, av, plural, ns, name):
        return (self.dyn.obj(av, plural, name, ns)["metadata"]).get("ownerReferences")

    def recreate_owners(self):
        """What the v3.28 upgrade does: same owners, new UIDs."""
        for plural, owner in (("networkpolicies", self.np), ("networkpolicies", self.np_b),
                              ("globalnetworkpolicies", self.gnp)):
            meta = owner["metadata"]
            self.dyn.remove(CALICO, plural, meta["name"], meta.get("namespace"))
            fresh = dict(owner, metadata={k: v for k, v in meta.items() if k not in ("uid", "resourceVersion")})
            owner["metadata"]["uid"] = self.dyn.put(CALICO, plural, fresh)["metadata"]["uid"]

    def runner(self, tmp_path, check_mode=False, **kw):
        kw.setdefault("record_path", str(tmp_path / "record.json"))
        return Runner(client(self.dyn, check_mode=check_mode), **kw)


def calico_refs(refs):
    return [r for r in refs or [] if r["apiVersion"] == CALICO]


def peak_of(w, is_counted):
    """Wrap the fake API's requests: (peak of the counted ones in flight at once, their paths)."""
    plain = w.dyn.request
    active, peak, seen, lock = [0], [0], [], threading.Lock()

    def request(method, path, body=None, **params):
        counted = is_counted(method, path, params)
        if counted:
            with lock:
                seen.append(path)
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            time.sleep(0.02)
        try:
            return plain(method, path, body, **params)
        finally:
            if counted:
                with lock:
                    active[0] -= 1
    w.dyn.request = request
    return peak, seen
