"""Nodes for kwok to manage, created from specs so tests can shape the cluster."""

from __future__ import annotations

import copy
import time
from concurrent.futures import ThreadPoolExecutor

DEFAULT_NODE_INFO = {
    "architecture": "amd64",
    "operatingSystem": "linux",
    "osImage": "Ubuntu 22.04.4 LTS",
    "kernelVersion": "5.15.0-105-generic",
    "containerRuntimeVersion": "containerd://1.7.13",
    "kubeletVersion": "v1.33.13",
    "kubeProxyVersion": "",
}


def node_spec(name: str, labels: dict | None = None, taints: list | None = None,
              provider_id: str | None = None, annotations: dict | None = None, **node_info) -> dict:
    """A Node object; keyword arguments override ``status.nodeInfo`` fields (osImage, kernelVersion,
    architecture, operatingSystem, containerRuntimeVersion, ...)."""
    info = dict(DEFAULT_NODE_INFO)
    info.update(node_info)
    all_labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": info["operatingSystem"],
        "kubernetes.io/arch": info["architecture"],
        "beta.kubernetes.io/os": info["operatingSystem"],
        "beta.kubernetes.io/arch": info["architecture"],
        "type": "kwok",
    }
    all_labels.update(labels or {})
    all_annotations = {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}
    all_annotations.update(annotations or {})
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": all_labels, "annotations": all_annotations},
        "spec": {"taints": list(taints or [])},
        "status": {
            "nodeInfo": info,
            "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "250"},
            "capacity": {"cpu": "32", "memory": "256Gi", "pods": "250"},
        },
    }
    if provider_id:
        node["spec"]["providerID"] = provider_id
    return node


def default_specs(count: int = 3) -> list:
    """Three Ubuntu 22.04 amd64 nodes (or ``count``)."""
    return [node_spec(f"node-{i}") for i in range(1, count + 1)]


def _ready(node: dict) -> bool:
    """Ready, and schedulable: the node lifecycle controller removed the not-ready taint."""
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("key") == "node.kubernetes.io/not-ready":
            return False
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def create_nodes(cp, specs: list, timeout: float = 300, workers: int = 16) -> list:
    """Create the nodes (in parallel), put their nodeInfo in place, and wait until kwok made them Ready."""
    from .cluster import api_request

    if not specs:
        return []

    def one(spec):
        spec = copy.deepcopy(spec)
        created = api_request(cp, "POST", "/api/v1/nodes", spec)
        # the status given on create is not kept for every field: set nodeInfo through the status subresource
        # (and the addresses of a node with a network, dataplane.py: kwok keeps the addresses a Node has)
        info = spec["status"]["nodeInfo"]
        status = {"nodeInfo": info}
        if spec["status"].get("addresses"):
            status["addresses"] = spec["status"]["addresses"]
        have = created.get("status") or {}
        if have.get("nodeInfo", {}).get("osImage") != info.get("osImage") or (
                "addresses" in status and have.get("addresses") != status["addresses"]):
            api_request(cp, "PATCH", f"/api/v1/nodes/{spec['metadata']['name']}/status",
                        {"status": status}, content_type="application/merge-patch+json")
        return spec["metadata"]["name"]

    with ThreadPoolExecutor(max_workers=workers) as pool:
        names = list(pool.map(one, specs))
    wait_ready(cp, set(names), timeout)
    return names


def wait_ready(cp, names: set, timeout: float) -> None:
    from .cluster import api_request

    deadline = time.monotonic() + timeout
    pending = set(names)
    while True:
        token = None
        while True:
            path = "/api/v1/nodes?limit=1000" + (f"&continue={token}" if token else "")
            page = api_request(cp, "GET", path)
            for item in page.get("items", []):
                if item["metadata"]["name"] in pending and _ready(item):
                    pending.discard(item["metadata"]["name"])
            token = page.get("metadata", {}).get("continue")
            if not token:
                break
        if not pending:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(pending)} nodes not Ready after {timeout}s (kwok): "
                               f"{sorted(pending)[:10]}")
        time.sleep(0.5)


def delete_nodes(cp, names: list, workers: int = 16) -> None:
    from .cluster import api_request

    def one(name):
        try:
            api_request(cp, "DELETE", f"/api/v1/nodes/{name}")
        except RuntimeError as exc:
            if ": 404 " not in str(exc):
                raise

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, names))
