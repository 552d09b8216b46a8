# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: find out which resource types the API server serves.

``discover(client)`` reads ``GET /api``, ``GET /apis`` and then each group-version's resource list
(``/api/v1``, ``/apis/<group>/<version>``), through the collection's ``Client``. It keeps every
top-level resource type (cluster-scoped and namespaced, built-in and custom resources alike), and
drops subresources (names with ``/``, e.g. ``pods/status``).

A group-version whose resource list cannot be read (an aggregated API whose backing service is down
answers 503, a forbidden one 403) is not silently skipped: it is kept in ``Discovery.failures`` with
the reason, so a caller that must see *every* object can report it, count it and refuse to go on.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError


class ResourceType(object):
    """One served, top-level resource type of one group-version."""

    __slots__ = ("group", "version", "plural", "kind", "namespaced", "verbs", "preferred")

    def __init__(self, group, version, plural, kind, namespaced, verbs, preferred=True):
        self.group = group
        self.version = version
        self.plural = plural
        self.kind = kind
        self.namespaced = bool(namespaced)
        self.verbs = tuple(verbs or ())
        self.preferred = preferred

    @property
    def api_version(self):
        return "%s/%s" % (self.group, self.version) if self.group else self.version

    @property
    def name(self):
        """How the type is reported: ``<apiVersion>/<plural>`` (``v1/configmaps``, ``apps/v1/deployments``)."""
        return "%s/%s" % (self.api_version, self.plural)

    @property
    def listable(self):
        return "list" in self.verbs

    def as_dict(self):
        return {"apiVersion": self.api_version, "resource": self.plural, "kind": self.kind,
                "namespaced": self.namespaced, "verbs": list(self.verbs)}

    def __repr__(self):
        return "ResourceType(%s, kind=%s, namespaced=%s)" % (self.name, self.kind, self.namespaced)


class DiscoveryFailure(object):
    """A group-version (or the group list itself) whose discovery document could not be read."""

    __slots__ = ("group_version", "status", "message")

    def __init__(self, group_version, status, message):
        self.group_version = group_version
        self.status = status
        self.message = message

    def as_dict(self):
        return {"type": self.group_version, "status": self.status, "reason": self.message,
                "stage": "discovery"}


class Discovery(object):
    """What ``discover`` found: every resource type, and every group-version that failed."""

    def __init__(self, resources, failures):
        self.resources = list(resources)
        self.failures = list(failures)
        self._by_kind = {}
        for res in self.resources:
            self._by_kind.setdefault((res.api_version, res.kind), res)

    def listable(self):
        """Types to LIST to see every object once.

        A type served by several versions of one group is the same set of objects: only the version the
        server prefers is kept (the others come after it and are dropped by group + plural).
        """
        seen = set()
        out = []
        ordered = sorted(self.resources, key=lambda r: (r.group, not r.preferred))
        for res in ordered:
            if not res.listable:
                continue
            key = (res.group, res.plural)
            if key in seen:
                continue
            seen.add(key)
            out.append(res)
        return out

    def find(self, api_version, kind):
        """The type serving ``kind`` in ``api_version``, or None."""
        return self._by_kind.get((api_version, kind))

    def served(self, api_version):
        return any(r.api_version == api_version for r in self.resources)

    def failure_for(self, api_version):
        for failure in self.failures:
            if failure.group_version == api_version:
                return failure
        return None


def _group_version_resources(client, path, group, version, preferred):
    doc = client.request("GET", path) or {}
    out = []
    for item in doc.get("resources") or []:
        name = item.get("name") or ""
        if not name or "/" in name:
            continue  # subresource (pods/status, deployments/scale, ...)
        out.append(ResourceType(item.get("group") or group, item.get("version") or version, name,
                                item.get("kind") or "", item.get("namespaced"), item.get("verbs"),
                                preferred=preferred))
    return out


class Kinds(object):
    """kind -> served type of one group-version, one discovery GET per group-version (``/api/v1``,
    ``/apis/<group>/<version>``), remembered; a group-version the server does not serve (404) is ``None``. Safe to
    ``load`` different group-versions from several threads."""

    def __init__(self, client):
        self.client = client
        self._types = {}

    def load(self, api_version, refresh=False):
        """``{kind: ResourceType}`` of ``api_version``, or None when it is not served; read once (again when
        ``refresh``: a CRD just applied)."""
        if refresh or api_version not in self._types:
            path = "/api/%s" % api_version if "/" not in api_version else "/apis/%s" % api_version
            group, version = api_version.rpartition("/")[0::2]
            try:
                types = dict((t.kind, t) for t in _group_version_resources(self.client, path, group, version, True))
            except ClientError as exc:
                if exc.status != 404:
                    raise
                types = None
            self._types[api_version] = types
        return self._types[api_version]

    def loaded(self, api_version):
        """Whether ``api_version`` was read already."""
        return api_version in self._types

    def find(self, api_version, kind):
        """The served type of ``kind`` in ``api_version``, or None."""
        return (self.load(api_version) or {}).get(kind)


def discover(client):
    """Every served resource type, and the group-versions that could not be read (never raises for those).

    The group lists themselves (``/api``, ``/apis``) must be readable: without them nothing is known, so a
    failure there raises ``ClientError``.
    """
    resources = []
    failures = []
    targets = []  # (path, group, version, preferred)
    core = client.request("GET", "/api") or {}
    for version in core.get("versions") or ["v1"]:
        targets.append(("/api/%s" % version, "", version, True))
    groups = client.request("GET", "/apis") or {}
    for group in groups.get("groups") or []:
        name = group.get("name") or ""
        preferred = (group.get("preferredVersion") or {}).get("version")
        for ver in group.get("versions") or []:
            version = ver.get("version")
            gv = ver.get("groupVersion") or "%s/%s" % (name, version)
            targets.append(("/apis/%s" % gv, name, version,
                            version == preferred or preferred is None))
    for path, group, version, preferred in targets:
        try:
            resources.extend(_group_version_resources(client, path, group, version, preferred))
        except ClientError as exc:
            gv = "%s/%s" % (group, version) if group else version
            failures.append(DiscoveryFailure(gv, exc.status, str(exc)))
    return Discovery(resources, failures)


def served_group_versions(client):
    """Every ``group/version`` the API server serves (one GET of /apis)."""
    data = client.request("GET", "/apis") or {}
    out = []
    for group in data.get("groups") or []:
        for version in group.get("versions") or []:
            if version.get("groupVersion"):
                out.append(version["groupVersion"])
    return out
