# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade job's user patches to a release manifest, as pure functions: a strategic-merge-like patch (lists
merged by key as Kubernetes merges them) and RFC 6902 JSON patches, each aimed at documents by a selector.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.manifest import ManifestError


# -- upgrade manifests: user patches, etcd settings ---------------------------------------------------------

# Lists merged item by item (by this key) in a strategic-merge-like patch, as Kubernetes does for these fields
# (their ``patchMergeKey``); any other list of objects that all carry ``name`` merges by ``name``; every other list
# is replaced. ``ports`` depends on where it is (``PORT_KEYS``).
MERGE_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name", "env": "name",
    "volumes": "name", "volumeMounts": "mountPath", "volumeDevices": "devicePath",
    "imagePullSecrets": "name", "hostAliases": "ip", "envFrom": None, "tolerations": None, "args": None,
    "command": None,
}
# ``ports`` of a container merge by ``containerPort``, a Service's ``spec.ports`` by ``port`` (ServicePort's merge
# key: keyed by ``containerPort`` they matched nothing and a patch of one port replaced them all); any other
# ``ports`` (a NetworkPolicy rule's, an EndpointSlice's) is replaced whole, as the API server does.
CONTAINER_FIELDS = ("containers", "initContainers", "ephemeralContainers")


class PatchError(ManifestError):
    """A user patch is malformed, matches no document, or cannot be applied."""


def _merge_key(field, base, patch, path=(), kind=None):
    if field == "ports":
        if len(path) >= 2 and path[-2] == "*" and len(path) >= 3 and path[-3] in CONTAINER_FIELDS:
            return "containerPort"
        if kind == "Service" and path == ("spec", "ports"):
            return "port"
        return None
    if field in MERGE_KEYS:
        return MERGE_KEYS[field]
    items = list(base or []) + list(patch or [])
    if items and all(isinstance(i, dict) and "name" in i for i in items):
        return "name"
    return None


def strategic_merge(base, patch, field=None, path=(), kind=None):
    """A copy of ``base`` with ``patch`` merged the way ``kubectl patch --type strategic`` does for the usual
    fields: maps merge key by key (``null`` deletes a key, ``$patch: replace`` replaces the map), lists of
    containers, env, volumes, ports ... merge item by item on their merge key (``$patch: delete`` in an item
    removes it), other lists are replaced. ``path``: where ``base`` is in the document (``*`` for a list item),
    ``kind``: the document's kind (read from ``base`` at the top)."""
    if kind is None and not path and isinstance(base, dict):
        kind = base.get("kind")
    if isinstance(patch, dict):
        if patch.get("$patch") == "replace":
            return dict((k, copy.deepcopy(v)) for k, v in patch.items() if k != "$patch")
        if patch.get("$patch") == "delete":
            return None
        out = copy.deepcopy(base) if isinstance(base, dict) else {}
        for key, value in patch.items():
            if key == "$patch":
                continue
            if value is None:
                out.pop(key, None)
            elif isinstance(value, (dict, list)):
                merged = strategic_merge(out.get(key), value, key, path + (key,), kind)
                if merged is None:
                    out.pop(key, None)
                else:
                    out[key] = merged
            else:
                out[key] = copy.deepcopy(value)
        return out
    if isinstance(patch, list):
        key = _merge_key(field, base if isinstance(base, list) else [], patch, path, kind)
        if not key or not isinstance(base, list) or not all(isinstance(i, dict) and key in i for i in patch):
            return [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and i.get("$patch") == "delete")]
        out = copy.deepcopy(base)
        for item in patch:
            index = next((i for i, cur in enumerate(out) if isinstance(cur, dict) and cur.get(key) == item[key]),
                         None)
            if item.get("$patch") == "delete":
                if index is not None:
                    del out[index]
                continue
            if index is None:
                out.append(strategic_merge({}, item, None, path + ("*",), kind))
            else:
                out[index] = strategic_merge(out[index], item, None, path + ("*",), kind)
        return out
    return copy.deepcopy(patch)


def _pointer(path):
    if path == "":
        return []
    if not isinstance(path, str) or not path.startswith("/"):
        raise PatchError("a JSON patch path must start with '/': %r" % (path,))
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc, parts, path):
    node = doc
    for part in parts:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise PatchError("path %s does not exist (no %r)" % (path, part))
    return node


def _container_and_key(doc, path, op):
    parts = _pointer(path)
    if not parts:
        raise PatchError("%s on the whole document is not supported" % op)
    return _walk(doc, parts[:-1], path), parts[-1]


def json_patch(doc, ops):
    """A copy of ``doc`` with the RFC 6902 operations applied (add, remove, replace, move, copy, test);
    a path that does not exist (or a failed test) raises PatchError."""
    out = copy.deepcopy(doc)
    if not isinstance(ops, list):
        raise PatchError("json_patch must be a list of operations")
    for op in ops:
        if not isinstance(op, dict) or op.get("op") not in ("add", "remove", "replace", "move", "copy", "test"):
            raise PatchError("not a JSON patch operation: %r" % (op,))
        name, path = op["op"], op.get("path")
        if name in ("add", "replace", "test") and "value" not in op:
            raise PatchError("%s %s needs a value" % (name, path))
        if name == "test":
            if _walk(out, _pointer(path), path) != op["value"]:
                raise PatchError("test failed: %s is not %r" % (path, op["value"]))
            continue
        if name in ("move", "copy"):
            value = copy.deepcopy(_walk(out, _pointer(op.get("from")), op.get("from")))
            if name == "move":
                parent, key = _container_and_key(out, op.get("from"), name)
                if isinstance(parent, list):
                    del parent[int(key)]
                else:
                    del parent[key]
            name, op = "add", dict(op, value=value)
        parent, key = _container_and_key(out, path, name)
        if isinstance(parent, dict):
            if name != "add" and key not in parent:
                raise PatchError("path %s does not exist" % path)
            if name == "remove":
                del parent[key]
            else:
                parent[key] = copy.deepcopy(op["value"])
        elif isinstance(parent, list):
            if name == "add" and key == "-":
                parent.append(copy.deepcopy(op["value"]))
                continue
            if not key.isdigit() or int(key) > len(parent) or (name != "add" and int(key) >= len(parent)):
                raise PatchError("path %s does not exist (list of %d)" % (path, len(parent)))
            if name == "add":
                parent.insert(int(key), copy.deepcopy(op["value"]))
            elif name == "remove":
                del parent[int(key)]
            else:
                parent[int(key)] = copy.deepcopy(op["value"])
        else:
            raise PatchError("path %s does not lead into an object or a list" % path)
    return out


def selector_matches(doc, sel):
    meta = doc.get("metadata") or {}
    return (isinstance(doc, dict) and doc.get("kind") == sel.get("kind") and meta.get("name") == sel.get("name")
            and (not sel.get("namespace") or meta.get("namespace") == sel.get("namespace"))
            and (not sel.get("apiVersion") or doc.get("apiVersion") == sel.get("apiVersion")))


def describe_selector(sel):
    return "%s %s%s" % (sel.get("kind"), (sel.get("namespace") + "/") if sel.get("namespace") else "",
                        sel.get("name"))


def check_patches(patches):
    """Messages for malformed patch entries (kind and name required, exactly one of patch and json_patch)."""
    out = []
    for index, entry in enumerate(patches or []):
        label = "upgrade_manifest_patches[%d]" % index
        if not isinstance(entry, dict):
            out.append("%s must be a dict with kind, name and patch or json_patch" % label)
            continue
        unknown = sorted(set(entry) - set(("kind", "name", "namespace", "apiVersion", "patch", "json_patch")))
        if unknown:
            out.append("%s has unknown keys: %s" % (label, ", ".join(unknown)))
        if not entry.get("kind") or not entry.get("name"):
            out.append("%s needs kind and name" % label)
        if ("patch" in entry) == ("json_patch" in entry):
            out.append("%s needs exactly one of patch (strategic merge) and json_patch (RFC 6902)" % label)
        elif "patch" in entry and not isinstance(entry["patch"], dict):
            out.append("%s: patch must be a dict" % label)
        elif "json_patch" in entry and not isinstance(entry["json_patch"], list):
            out.append("%s: json_patch must be a list of operations" % label)
    return out
