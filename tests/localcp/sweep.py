"""Taking down what a test put on a shared control plane, through one API client in the test's own process.

The tests' cleanups ran one kubectl process per step (``kubectl get``, ``delete``, ``patch``), and polled with
``kubectl get -f <release file URL>`` every second: each poll fetched and parsed the release's files again (2.6 MB of
CRDs in operator-crds.yaml: about 0.5 s of CPU per run). Measured 2026-12-07 with ``localcp.cpu_log``: 3,773 kubectl
runs in one integration step, 1,099 of them in test_upgrade.py alone, most of them in these cleanups. Here every
request goes through one client per control plane and thread, the release files are parsed once per process, and a
wait polls what it waits for (a GET of the object's metadata, a LIST of a type) twice a second.

The requests carry the User-Agent ``AGENT``, the tests' own (the audit-log readers leave them out of a job's writes).
"""

from __future__ import annotations

import json
import threading
import time

AGENT = "calico-ops-test-setup"
BACKGROUND = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
MERGE = "application/merge-patch+json"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

_CLIENTS = threading.local()


def base(api_version: str) -> str:
    return "/api/" + api_version if "/" not in api_version else "/apis/" + api_version


class Sweeper:
    """Raw JSON requests of one kubeconfig; 404 is an answer (None / False), anything else raises."""

    def __init__(self, kubeconfig: str):
        from kubernetes import config, dynamic
        api = config.new_client_from_config(config_file=kubeconfig)
        api.user_agent = AGENT
        self.dyn = dynamic.DynamicClient(api)
        self._types = {}

    def req(self, method, path, body=None, ctype="application/json", query=None, accept="application/json"):
        from kubernetes.dynamic.exceptions import NotFoundError
        try:
            resp = self.dyn.request(method, path, body=body, serialize=False, content_type=ctype,
                                    header_params={"Accept": accept}, query_params=list((query or {}).items()))
        except NotFoundError:
            return None
        return json.loads(resp.data) if resp.data else {}

    def get(self, path: str, metadata: bool = False):
        return self.req("GET", path, accept=METADATA if metadata else "application/json")

    def items(self, path: str):
        """The objects of a collection; None when the type is not served."""
        doc = self.req("GET", path)
        return None if doc is None else doc.get("items") or []

    def delete(self, path: str) -> bool:
        """DELETE an object, or every object of a collection (background propagation); False when not found."""
        return self.req("DELETE", path, BACKGROUND) is not None

    def patch(self, path: str, body: dict) -> bool:
        return self.req("PATCH", path, body, ctype=MERGE) is not None

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

    def wait(self, done, timeout: float, interval: float = 0.5):
        """``done()`` until it is true or ``timeout`` seconds have passed; its last value."""
        deadline = time.monotonic() + timeout
        while True:
            value = done()
            if value or time.monotonic() >= deadline:
                return value
            time.sleep(interval)

    def wait_gone(self, paths, timeout: float, interval: float = 0.5) -> list:
        """Until no object of ``paths`` is left (a metadata GET each); what is left at the timeout."""
        left = list(paths)

        def gone():
            left[:] = [p for p in left if self.get(p, metadata=True) is not None]
            return not left
        self.wait(gone, timeout, interval)
        return left


def of(cluster) -> Sweeper:
    """The sweeper of a control plane (``cluster.kubeconfig``), one per thread: the kubernetes client's discovery
    cache is not thread-safe."""
    clients = getattr(_CLIENTS, "by_kubeconfig", None)
    if clients is None:
        clients = _CLIENTS.by_kubeconfig = {}
    key = str(cluster.kubeconfig)
    if key not in clients:
        clients[key] = Sweeper(key)
    return clients[key]
