"""A small in-memory transport for the read-only runners (services_endpoint_info, kube_proxy_info, choose_platform):
GET of objects by path, LIST of collections, /apis from a list of group-versions; any other method fails the test."""

import copy
import json

from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import api_exception

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import Client


class _Resp(object):
    def __init__(self, data):
        self.data = json.dumps(data).encode()


class Transport(object):
    """GET of objects by path, LIST of collections (labelSelector k=v[,k=v]), /apis from ``groups``."""

    def __init__(self, objects=None, groups=()):
        self.objects = copy.deepcopy(objects or {})
        self.groups = list(groups)
        self.log = []

    def request(self, method, path, body=None, **params):
        self.log.append((method, path))
        assert method == "GET", "a read-only runner sent %s %s" % (method, path)
        if path == "/apis":
            by_group = {}
            for gv in self.groups:
                group, version = gv.split("/")
                by_group.setdefault(group, []).append({"groupVersion": gv, "version": version})
            return _Resp({"groups": [{"name": g, "versions": v} for g, v in by_group.items()]})
        if path in self.objects:
            return _Resp(self.objects[path])
        prefix = path + "/"
        items = [o for p, o in self.objects.items() if p.startswith(prefix) and "/" not in p[len(prefix):]]
        query = dict(params.get("query_params") or [])
        if items or path.endswith(("/nodes", "/pods")):
            selector = query.get("labelSelector")
            if selector:
                wanted = dict(kv.split("=", 1) for kv in selector.split(","))
                items = [o for o in items
                         if all((o["metadata"].get("labels") or {}).get(k) == v for k, v in wanted.items())]
            return _Resp({"kind": "List", "metadata": {}, "items": items})
        raise api_exception(ApiException(status=404, reason="Not Found"))


def node(name, labels=None, provider_id=""):
    return {"metadata": {"name": name, "labels": dict(labels or {})}, "spec": {"providerID": provider_id},
            "status": {"nodeInfo": {"osImage": "Ubuntu 22.04.4 LTS", "kernelVersion": "5.15.0",
                                    "architecture": "amd64", "operatingSystem": "linux",
                                    "kubeletVersion": "v1.33.1"}}}


def nodes(*objs):
    return dict(("/api/v1/nodes/%s" % o["metadata"]["name"], o) for o in objs)


def client(transport):
    return Client(transport, check_mode=True)
