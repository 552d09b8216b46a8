"""Taking down what a test put on a shared control plane, through one API client in the test's own process.

The tests' cleanups ran one kubectl process per step (``kubectl get``, ``delete``, ``patch``), and polled with
``kubectl get -f <release file URL>`` every second: each poll fetched and parsed the release's files again (2.6 MB of
CRDs in operator-crds.yaml: about 0.5 s of CPU per run). Measured 2026-12-07 with ``localcp.cpu_log``: 3,773 kubectl
runs in one integration step, 1,099 of them in test_upgrade.py alone, most of them in these cleanups. Here every
request goes through one client per control plane and thread, the release files are parsed once per process, and a
wait polls what it waits for (a LIST of the metadata of each collection it waits on) twice a second.

The requests carry the User-Agent ``AGENT``, the tests' own (the audit-log readers leave them out of a job's writes).
"""

from __future__ import annotations

from . import api

AGENT = "calico-ops-test-setup"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def base(api_version: str) -> str:
    return "/api/" + api_version if "/" not in api_version else "/apis/" + api_version


class Sweeper(api.Api):
    """The tests' own client (User-Agent ``AGENT``) with what a cleanup needs besides: the REST path of a manifest's
    object, finalizers dropped, and a wait until objects are gone."""

    def __init__(self, kubeconfig, user_agent: str = AGENT):
        super().__init__(kubeconfig, user_agent)
        self._types = {}

    def drop_finalizers(self, path: str) -> bool:
        return self.patch(path, {"metadata": {"finalizers": None}})

    def path_of(self, doc: dict):
        """The REST path of a manifest's object; None when its type is not served (a CRD gone, a removed API)."""
        key = (doc.get("apiVersion"), doc.get("kind"))
        if key not in self._types:
            from kubernetes.dynamic.exceptions import ResourceNotFoundError
            try:
                res = self.dyn.resources.get(api_version=key[0], kind=key[1])
                self._types[key] = (res.name, res.namespaced)
            except ResourceNotFoundError:
                return None  # not remembered: the type may be served later (its CRD applied again)
        plural, namespaced = self._types[key]
        meta = doc.get("metadata") or {}
        where = "/namespaces/%s" % (meta.get("namespace") or "default") if namespaced else ""
        return "%s%s/%s/%s" % (base(key[0]), where, plural, meta["name"])

    def wait_gone(self, paths, timeout: float, interval: float = 0.5, each=None) -> list:
        """Until no object of ``paths`` is left (one LIST of metadata per collection and poll: a type no longer
        served has none left); what is left at the timeout. ``each(left)``: after every poll that found some left
        (to unblock them: finalizers, a CRD the API server must be nudged to forget)."""
        left = list(paths)

        def gone():
            by_collection = {}
            for path in left:
                by_collection.setdefault(path.rsplit("/", 1)[0], []).append(path)
            still = []
            for collection, members in by_collection.items():
                names = self.names(collection) or set()
                still += [p for p in members if p.rsplit("/", 1)[1] in names]
            left[:] = still
            if left and each:
                each(list(left))
            return not left
        self.wait(gone, timeout, interval)
        return left


def of(cluster) -> Sweeper:
    """The sweeper of a control plane (``cluster.kubeconfig``), one per thread (``localcp.api.of``)."""
    return api.of(cluster, AGENT, Sweeper)
