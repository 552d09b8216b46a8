"""The tests' own API client: raw JSON requests through a kubernetes client independent of the code under test.

One class for what the tests and their cleanups send themselves (``localcp.sweep`` builds on it): a test reads the
cluster it checks, writes the world a job starts from, and takes it down again. The User-Agent tells these requests
from the job's in the audit log (``sweep.AGENT`` for the tests' own, a stand-in's own name for a stand-in's).
"""

from __future__ import annotations

import json
import threading
import time

JSON = "application/json"
METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
MERGE = "application/merge-patch+json"
BACKGROUND = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}

_CLIENTS = threading.local()


def poll(read, timeout: float, interval: float = 0.5, until=bool):
    """``read()`` every ``interval`` seconds until ``until(value)`` holds or ``timeout`` seconds have passed; its last
    value either way (the caller names what did not come: ``Cluster.wait_for`` raises, a cleanup reports)."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if until(value) or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


class WaitTimeout(AssertionError):
    """A wait of the tests' own client ran out of time (the message names what was waited for)."""


class Api:
    """Raw JSON requests of one kubeconfig (``kubeconfig``: a path, or an object with a ``kubeconfig``, such as the
    tests' ``Cluster``). ``req`` raises the client's ``NotFoundError`` on 404; the helpers answer it (``get``: None,
    ``items``: None for a type the server does not serve, ``delete`` and ``patch``: False)."""

    def __init__(self, kubeconfig, user_agent: str | None = None):
        from kubernetes import config, dynamic
        api = config.new_client_from_config(config_file=str(getattr(kubeconfig, "kubeconfig", kubeconfig)))
        if user_agent:
            api.user_agent = user_agent
        self.dyn = dynamic.DynamicClient(api)

    def req(self, method, path, body=None, ctype=JSON, query=None, accept=JSON):
        resp = self.dyn.request(method, path, body=body, serialize=False, content_type=ctype,
                                header_params={"Accept": accept}, query_params=list((query or {}).items()))
        return json.loads(resp.data) if resp.data else {}

    def _answer(self, method, path, body=None, ctype=JSON, query=None, accept=JSON):
        """``req``, with None for 404."""
        from kubernetes.dynamic.exceptions import NotFoundError
        try:
            return self.req(method, path, body, ctype=ctype, query=query, accept=accept)
        except NotFoundError:
            return None

    def get(self, path: str, metadata: bool = False):
        """The object (only its metadata with ``metadata``); None when there is none."""
        return self._answer("GET", path, accept=METADATA if metadata else JSON)

    def items(self, path: str, **query):
        """The objects of a collection (``query``: labelSelector, ...); None when the type is not served."""
        doc = self._answer("GET", path, query=query)
        return None if doc is None else doc.get("items") or []

    def names(self, collection: str):
        """The names of a collection's objects (one LIST of their metadata only: a CRD list is 4 MB in full); None
        when the type is not served."""
        doc = self._answer("GET", collection, accept=METADATA_LIST)
        return None if doc is None else {item["metadata"]["name"] for item in doc.get("items") or []}

    def create(self, collection: str, body: dict) -> dict:
        return self.req("POST", collection, body)

    def patch(self, path: str, body: dict) -> bool:
        """A JSON merge patch; False when there is no such object."""
        return self._answer("PATCH", path, body, ctype=MERGE) is not None

    def delete(self, path: str, wait: bool = False, query=None, timeout: float = 120) -> bool:
        """DELETE an object (background propagation); False when there was none. ``path`` may be a collection,
        with ``query`` (a labelSelector): one DELETE of every object it selects (not with ``wait``). ``wait``: until
        the object is gone, at most ``timeout`` seconds (then WaitTimeout names it and its finalizers)."""
        assert not (wait and query), "wait is for one object"
        if self._answer("DELETE", path, BACKGROUND, query=query) is None:
            return False
        if wait:
            left = poll(lambda: self.get(path, metadata=True), timeout, 0.2, until=lambda obj: obj is None)
            if left is not None:
                raise WaitTimeout("%s still there after %ss (finalizers: %s)"
                                  % (path, timeout, (left.get("metadata") or {}).get("finalizers")))
        return True

    wait = staticmethod(poll)


def of(cluster, user_agent: str, cls=Api):
    """The client of ``cluster``'s kubeconfig with ``user_agent`` (of class ``cls``), one per thread: the kubernetes
    client's discovery cache is not thread-safe, and building a client (the kubeconfig, its TLS context) costs more
    than most requests."""
    clients = getattr(_CLIENTS, "by_key", None)
    if clients is None:
        clients = _CLIENTS.by_key = {}
    key = (str(getattr(cluster, "kubeconfig", cluster)), user_agent, cls)
    if key not in clients:
        clients[key] = cls(key[0], user_agent)
    return clients[key]
