"""An in-memory stand-in for the API server, behind the collection's real ``Client``.

``FakeDynamic`` replaces the kubernetes ``DynamicClient`` that ``Client`` sends its raw requests through, so
the unit tests run the real ``Client`` (paths, pagination, check-mode refusal, error mapping) against:

* discovery documents (``/api``, ``/apis``, ``/api/v1``, ``/apis/<group>/<version>``) built from the types
  registered with ``add_type``; a group-version can be made to fail (503 aggregated API, 403);
* objects: GET, LIST (``limit``/``continue``, ``labelSelector`` of ``k=v`` and ``k`` terms joined by ``,``), POST,
  PUT (resourceVersion precondition), PATCH with ``application/json-patch+json`` (add/replace/remove/test, 422 on a failed test),
  DELETE;
* server-side apply only as a dry run, answered by the test's ``on_dry_apply(live, body)`` (422 without it);
* ``Accept: ...;as=PartialObjectMetadata[List]``: only the metadata, as the API server answers it;
* hooks: ``before_write(method, path, body)`` may change state or raise, to play a concurrent writer or a
  crash; every request is logged in ``log``.
"""

import copy
import json
import uuid

from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import api_exception

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import Client


class _Resp(object):
    def __init__(self, data):
        if isinstance(data, _Text):
            self.data = data.encode("utf-8")
        else:
            self.data = json.dumps(data).encode("utf-8") if data is not None else b""


class _Text(str):
    """A body that is text, not JSON (a pod's log)."""


def _error(status, reason, message):
    return api_exception(ApiException(status=status, reason=reason,
                                      body=json.dumps({"kind": "Status", "message": message})))


class FakeDynamic(object):
    def __init__(self):
        self.types = {}        # (group, version, plural) -> dict(kind, namespaced, verbs, preferred)
        self.groups = []       # ordered group names (excluding core)
        self.preferred = {}    # group -> version
        self.storage_of = {}   # (group, plural) -> storage key (two groups can serve the same objects)
        self.objects = {}      # storage key -> {(namespace, name): obj}
        self.failing = {}      # "group/version" -> (status, reason)
        self.list_failing = {}  # "group/version/plural" -> (status, reason)
        self.log = []
        self.accepts = []      # (method, path, Accept header)
        self.before_write = None
        self.on_dry_apply = None  # (live object, applied body) -> the dry run's answer
        self.logs = {}  # (namespace, pod, container) -> the log's text; a missing one is a 400 as the API server's
        self.rv = 100

    # -- setup -------------------------------------------------------------------------------------

    def add_type(self, api_version, plural, kind, namespaced=True, verbs=None, preferred=True, storage=None,
                 subresources=()):
        group, version = api_version.split("/") if "/" in api_version else ("", api_version)
        if group and group not in self.groups:
            self.groups.append(group)
        if preferred or group not in self.preferred:
            if preferred:
                self.preferred[group] = version
        self.types[(group, version, plural)] = {
            "kind": kind, "namespaced": namespaced,
            "verbs": verbs if verbs is not None else ["create", "delete", "get", "list", "patch", "update",
                                                      "watch"]}
        for sub in subresources:
            self.types[(group, version, "%s/%s" % (plural, sub))] = {"kind": kind, "namespaced": namespaced,
                                                                     "verbs": ["get", "patch", "update"]}
        key = storage or "%s/%s" % (group, plural)
        self.storage_of[(group, plural)] = key
        self.objects.setdefault(key, {})

    def put(self, api_version, plural, obj):
        """Store an object as the server would (uid, resourceVersion filled in); return the stored copy."""
        group = api_version.split("/")[0] if "/" in api_version else ""
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", str(uuid.uuid4()))
        self.rv += 1
        meta["resourceVersion"] = str(self.rv)
        store = self.objects[self.storage_of[(group, plural)]]
        store[(meta.get("namespace"), meta["name"])] = obj
        return copy.deepcopy(obj)

    def obj(self, api_version, plural, name, namespace=None):
        group = api_version.split("/")[0] if "/" in api_version else ""
        found = self.objects[self.storage_of[(group, plural)]].get((namespace, name))
        return copy.deepcopy(found)

    def remove(self, api_version, plural, name, namespace=None):
        group = api_version.split("/")[0] if "/" in api_version else ""
        self.objects[self.storage_of[(group, plural)]].pop((namespace, name), None)

    def writes(self):
        """The requests that change something (a server-side dry run does not: the audit log's rule too)."""
        return [entry for entry in self.log if entry[0] not in ("GET", "HEAD") and entry[2].get("dryRun") != "All"]

    # -- the DynamicClient.request surface that Client uses ----------------------------------------

    def request(self, method, path, body=None, **params):
        query = dict(params.get("query_params") or [])
        self.log.append((method, path, query))
        accept = (params.get("header_params") or {}).get("Accept") or ""
        self.accepts.append((method, path, accept))
        if method != "GET" and self.before_write is not None:
            self.before_write(method, path, body)
        if method == "GET" and path.endswith("/log"):
            return _Resp(self._log(path, query))
        out = self._handle(method, path, body, query, params.get("content_type"))
        if "as=PartialObjectMetadata" in accept and isinstance(out, dict):  # any verb, as the API server
            out = self._metadata_only(out)
        return _Resp(out)

    def _log(self, path, query):
        """``GET .../pods/<name>/log?container=&tailLines=``: the last lines of a log set in ``logs``."""
        parts = path.strip("/").split("/")
        namespace, pod = parts[3], parts[5]
        key = (namespace, pod, query.get("container"))
        if key not in self.logs:
            raise _error(400, "Bad Request", "container %s of pod %s is not available" % (key[2], pod))
        lines = self.logs[key].splitlines(True)
        tail = int(query.get("tailLines") or 0)
        return _Text("".join(lines[-tail:] if tail else lines))

    @staticmethod
    def _metadata_only(out):
        """What the API server answers to ``Accept: ...;as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1``."""
        if "items" in out:
            return {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": out["metadata"],
                    "items": [{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                               "metadata": copy.deepcopy(i.get("metadata") or {})} for i in out["items"]]}
        if "metadata" in out and out.get("kind") not in ("APIResourceList", "APIGroupList", "APIVersions"):
            return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                    "metadata": copy.deepcopy(out["metadata"])}
        return out

    def _discovery(self, path):
        if path == "/api":
            return {"kind": "APIVersions", "versions": ["v1"]}
        if path == "/apis":
            groups = []
            for group in self.groups:
                versions = sorted(set(v for (g, v, _p) in self.types if g == group))
                pref = self.preferred.get(group, versions[0])
                versions.sort(key=lambda v: v != pref)
                groups.append({"name": group, "versions": [{"groupVersion": "%s/%s" % (group, v), "version": v}
                                                           for v in versions],
                               "preferredVersion": {"groupVersion": "%s/%s" % (group, pref), "version": pref}})
            return {"kind": "APIGroupList", "groups": groups}
        gv = path[len("/api/"):] if path.startswith("/api/") else path[len("/apis/"):]
        if gv in self.failing:
            status, reason = self.failing[gv]
            raise _error(status, reason, "the server is currently unable to handle the request")
        group, version = gv.split("/") if "/" in gv else ("", gv)
        resources = [{"name": p, "kind": t["kind"], "namespaced": t["namespaced"], "verbs": t["verbs"]}
                     for (g, v, p), t in sorted(self.types.items()) if g == group and v == version]
        if not resources:
            raise _error(404, "Not Found", "the server could not find the requested resource")
        return {"kind": "APIResourceList", "groupVersion": gv, "resources": resources}

    def _parse(self, path):
        parts = path.strip("/").split("/")
        if parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        else:
            group, version, rest = parts[1], parts[2], parts[3:]
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        plural = rest[0]
        name = rest[1] if len(rest) > 1 else None
        if (group, version, plural) not in self.types:
            raise _error(404, "Not Found", "the server could not find the requested resource")
        return group, version, plural, namespace, name

    def _handle(self, method, path, body, query, content_type):
        parts = path.strip("/").split("/")
        if (parts[0] == "api" and len(parts) <= 2) or (parts[0] == "apis" and len(parts) <= 3):
            return self._discovery(path)
        group, version, plural, namespace, name = self._parse(path)
        key = "%s/%s/%s" % (group, version, plural) if group else "%s/%s" % (version, plural)
        if method == "GET" and name is None and key in self.list_failing:
            status, reason = self.list_failing[key]
            raise _error(status, reason, "%s is not allowed" % key)
        store = self.objects[self.storage_of[(group, plural)]]
        kind = self.types[(group, version, plural)]["kind"]
        api_version = "%s/%s" % (group, version) if group else version
        if method == "GET" and name is None:
            items = sorted((v for (ns, _n), v in store.items() if namespace is None or ns == namespace),
                           key=lambda o: (o["metadata"].get("namespace") or "", o["metadata"]["name"]))
            selector = query.get("labelSelector")
            for term in (selector or "").split(","):  # every term must hold, as the API server's ``,``
                if "=" in term:
                    k, v = term.split("=", 1)
                    items = [o for o in items if (o["metadata"].get("labels") or {}).get(k) == v]
                elif term:  # existence: ``k``
                    items = [o for o in items if term in (o["metadata"].get("labels") or {})]
            start = int(query.get("continue") or 0)
            limit = int(query.get("limit") or 0) or len(items) or 1
            page = items[start:start + limit]
            more = start + limit < len(items)
            out = []
            for o in page:
                o = copy.deepcopy(o)
                if group:  # built-in types come without apiVersion/kind in a list, custom resources with them
                    o["apiVersion"], o["kind"] = api_version, kind
                out.append(o)
            meta = {"resourceVersion": str(self.rv), "continue": str(start + limit) if more else None}
            if more and not selector:  # as the API server: the count left, for an unfiltered list only
                meta["remainingItemCount"] = len(items) - start - limit
            return {"kind": kind + "List", "apiVersion": api_version, "items": out, "metadata": meta}
        current = store.get((namespace, name)) if name else None
        if method == "GET":
            if current is None:
                raise _error(404, "Not Found", "%s %s not found" % (plural, name))
            return copy.deepcopy(current)
        dry_run = query.get("dryRun") == "All"  # answered as the write would be, nothing stored
        if method == "POST":
            meta = body.get("metadata") or {}
            if (namespace, meta.get("name")) in store:
                raise _error(409, "Conflict", "%s %s already exists" % (plural, meta.get("name")))
            body = copy.deepcopy(body)
            body["metadata"]["namespace"] = namespace
            return body if dry_run else self.put(api_version, plural, body)
        if current is None:
            raise _error(404, "Not Found", "%s %s not found" % (plural, name))
        if method == "PUT":
            rv = (body.get("metadata") or {}).get("resourceVersion")
            if rv and rv != current["metadata"]["resourceVersion"]:
                raise _error(409, "Conflict", "the object has been modified")
            body = copy.deepcopy(body)
            body["metadata"]["uid"] = current["metadata"]["uid"]
            return body if dry_run else self.put(api_version, plural, body)
        if method == "PATCH" and content_type == "application/apply-patch+yaml":
            # no server-side apply here: only its dry run, answered by the test's ``on_dry_apply(live, body)``
            assert query.get("dryRun") == "All", "the fake only dry-runs server-side apply"
            answer = self.on_dry_apply(copy.deepcopy(current), body) if self.on_dry_apply else None
            if answer is None:
                raise _error(422, "Unprocessable Entity", "the fake cannot apply this")
            return answer
        if method == "PATCH":
            assert content_type == "application/json-patch+json", content_type
            patched = apply_json_patch(current, body)
            return self.put(api_version, plural, patched)
        if method == "DELETE":
            store.pop((namespace, name))
            return {"kind": "Status", "status": "Success"}
        raise _error(405, "Method Not Allowed", method)


def _pointer(path):
    return [p.replace("~1", "/").replace("~0", "~") for p in path.lstrip("/").split("/")]


def apply_json_patch(obj, ops):
    obj = copy.deepcopy(obj)
    for op in ops:
        parts = _pointer(op["path"])
        parent = obj
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent.get(p)
            if parent is None:
                raise _error(422, "Unprocessable Entity", "missing path %s" % op["path"])
        last = parts[-1]
        if op["op"] == "test":
            if not isinstance(parent, dict) or last not in parent or parent[last] != op["value"]:
                raise _error(422, "Unprocessable Entity", "the test operation failed at %s" % op["path"])
        elif op["op"] in ("add", "replace"):
            if op["op"] == "replace" and last not in parent:
                raise _error(422, "Unprocessable Entity", "replace: missing %s" % op["path"])
            parent[last] = copy.deepcopy(op["value"])
        elif op["op"] == "remove":
            if last not in parent:
                raise _error(422, "Unprocessable Entity", "remove: missing %s" % op["path"])
            del parent[last]
        else:
            raise _error(422, "Unprocessable Entity", "unsupported op %s" % op["op"])
    return obj


def standard_api():
    """A cluster with core, apps, a Calico-like projectcalico.org/v3 and a custom resource group."""
    dyn = FakeDynamic()
    dyn.add_type("v1", "namespaces", "Namespace", namespaced=False)
    dyn.add_type("v1", "configmaps", "ConfigMap")
    dyn.add_type("v1", "secrets", "Secret")
    dyn.add_type("v1", "pods", "Pod", subresources=("status", "log"))
    dyn.add_type("v1", "events", "Event", storage="events")
    dyn.add_type("v1", "bindings", "Binding", verbs=["create"])
    dyn.add_type("apps/v1", "deployments", "Deployment", subresources=("scale", "status"))
    dyn.add_type("events.k8s.io/v1", "events", "Event", storage="events")
    dyn.add_type("projectcalico.org/v3", "networkpolicies", "NetworkPolicy")
    dyn.add_type("projectcalico.org/v3", "globalnetworkpolicies", "GlobalNetworkPolicy", namespaced=False)
    dyn.add_type("example.com/v1", "widgets", "Widget", storage="widgets")
    dyn.add_type("example.com/v1beta1", "widgets", "Widget", preferred=False, storage="widgets")
    dyn.put("v1", "namespaces", {"metadata": {"name": "kube-system", "uid": "cluster-uid-1"}})
    return dyn


def client(dyn, check_mode=False):
    return Client(dyn, check_mode=check_mode)


class NoClient(object):
    """Any request is a failure of the test: bad input is refused before the first one."""
    check_mode = False

    def __getattr__(self, name):
        raise AssertionError("the job used the client (%s) with bad input" % name)
