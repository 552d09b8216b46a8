# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: the rules of the move to automatic host endpoints, as pure functions (no API calls).

* ``is_automatic`` / ``is_old``: an automatic host endpoint carries the label
  ``projectcalico.org/created-by: calico-kube-controllers`` or has a name ending in ``-auto-hep``; an *old*
  one is an all-interfaces endpoint (``spec.interfaceName: "*"``) that is not automatic. Automatic ones are
  never touched.
* ``plan``: for each old endpoint, the labels to copy onto its node (``spec.node``). A node that has one of
  those keys with another value is a *conflict*, and so are two old endpoints of one node that disagree on a
  key. ``label_conflicts`` says what happens: ``fail`` (the plan is blocked: nothing may be written),
  ``overwrite`` (the endpoint's value replaces the node's; a disagreement between endpoints stays blocking,
  there is no value to prefer) or ``skip`` (the key is not copied, the node keeps its value). An endpoint
  whose node does not exist is reported and left alone.
* ``automatic_ready``: a node's old endpoints may go once an automatic all-interfaces endpoint of that node
  exists and carries every copied label.
* ``kube_controllers_change``: KubeControllersConfiguration ``default`` with
  ``spec.controllers.node.hostEndpoint.autoCreate: Enabled`` (created with Calico's defaults when missing).
* ``restore_body``: a recorded endpoint as it can be created again.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

CREATED_BY_LABEL = "projectcalico.org/created-by"
CREATED_BY_VALUE = "calico-kube-controllers"
AUTO_SUFFIX = "-auto-hep"
ALL_INTERFACES = "*"
CONFLICT_POLICIES = ("fail", "overwrite", "skip")
KCC_NAME = "default"
KCC_KIND = "KubeControllersConfiguration"
KCC_PLURAL = "kubecontrollersconfigurations"
HEP_KIND = "HostEndpoint"
HEP_PLURAL = "hostendpoints"
ENABLED = "Enabled"
# What calico-kube-controllers writes when it creates KubeControllersConfiguration default itself (Calico's
# reference sample), with automatic host endpoints on. Used only when the object does not exist: a partial
# object would switch the other controllers off.
KCC_DEFAULT_SPEC = {
    "logSeverityScreen": "Info",
    "healthChecks": "Enabled",
    "etcdV3CompactionPeriod": "10m",
    "prometheusMetricsPort": 9094,
    "controllers": {
        "node": {"reconcilerPeriod": "5m", "syncLabels": "Enabled", "hostEndpoint": {"autoCreate": ENABLED}},
        "policy": {"reconcilerPeriod": "5m"},
        "workloadEndpoint": {"reconcilerPeriod": "5m"},
        "serviceAccount": {"reconcilerPeriod": "5m"},
        "namespace": {"reconcilerPeriod": "5m"},
    },
}
AUTO_CREATE_PATCH = {"spec": {"controllers": {"node": {"hostEndpoint": {"autoCreate": ENABLED}}}}}
# metadata the API server sets; a re-created object must not carry them
SERVER_METADATA = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
                   "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences",
                   "finalizers")
CRD_METADATA_ANNOTATION = "projectcalico.org/metadata"

JOB = "host_endpoint_migration"


class HostEndpointMigrationError(Exception):
    """The job stopped or finished with problems; ``result`` is what it did and found."""

    def __init__(self, message, result):
        super(HostEndpointMigrationError, self).__init__(message)
        self.result = result


def _meta(obj):
    return (obj or {}).get("metadata") or {}


def name_of(obj):
    return _meta(obj).get("name") or ""


def uid_of(obj):
    return _meta(obj).get("uid") or ""


def labels_of(obj):
    return dict(_meta(obj).get("labels") or {})


def endpoint_labels(ep):
    """A HostEndpoint's labels as Calico reads them. Through crd.projectcalico.org/v1, what Calico itself
    writes (calico-kube-controllers' automatic endpoints, calicoctl) keeps only ``projectcalico.org/`` labels
    in ``metadata.labels`` and the others in the JSON of the ``projectcalico.org/metadata`` annotation;
    libcalico-go merges the two, the annotation's values winning. Through projectcalico.org/v3 there is no
    such annotation and this is ``metadata.labels``."""
    labels = labels_of(ep)
    raw = (_meta(ep).get("annotations") or {}).get(CRD_METADATA_ANNOTATION)
    if raw:
        try:
            stored = json.loads(raw)
        except ValueError:
            stored = None
        if isinstance(stored, dict) and isinstance(stored.get("labels"), dict):
            labels.update(stored["labels"])
    return labels


def node_of(ep):
    return ((ep or {}).get("spec") or {}).get("node") or ""


def interface_of(ep):
    return ((ep or {}).get("spec") or {}).get("interfaceName")


def is_automatic(ep):
    """Created by calico-kube-controllers: its label, or its name."""
    return (endpoint_labels(ep).get(CREATED_BY_LABEL) == CREATED_BY_VALUE
            or name_of(ep).endswith(AUTO_SUFFIX))


def is_old(ep):
    """A manually created all-interfaces host endpoint: what the migration replaces."""
    return interface_of(ep) == ALL_INTERFACES and not is_automatic(ep)


def entry_key(ep):
    """The record key of an endpoint: its name and UID (a re-created endpoint is a new entry)."""
    return "|".join(["hostendpoint", name_of(ep), uid_of(ep)])


def brief(ep):
    return {"name": name_of(ep), "node": node_of(ep), "labels": endpoint_labels(ep), "uid": uid_of(ep)}


def plan(endpoints, nodes, label_conflicts="fail"):
    """The migration plan.

    ``endpoints``: every HostEndpoint (dicts as the API returns them); ``nodes``: node name -> labels of
    every Node. Returns a dict:

    * ``old``: the old endpoints (sorted by name), ``automatic``: how many automatic ones there are,
      ``other``: how many endpoints are neither (named interfaces: left alone);
    * ``nodes``: node -> ``{"endpoints": [names], "copy": {key: value}, "set": {key: value},
      "skipped": [keys]}`` for nodes that exist: ``copy`` is what the automatic endpoint must carry,
      ``set`` what has to be written to the node (the keys it lacks or holds with another value);
    * ``conflicts``: ``{"node", "key", "node_value", "endpoint_values": {endpoint: value}, "kind", "resolution"}``
      where ``kind`` is ``node`` (the node holds another value) or ``endpoints`` (the node's old endpoints
      disagree) and ``resolution`` is ``blocking``, ``overwrite`` or ``skip``;
    * ``blocked``: whether a conflict blocks every write;
    * ``missing_nodes``: ``{"endpoint", "node"}`` of old endpoints whose node does not exist.
    """
    if label_conflicts not in CONFLICT_POLICIES:
        raise ValueError("label_conflicts must be one of %s, not %r"
                         % (", ".join(CONFLICT_POLICIES), label_conflicts))
    old = sorted((ep for ep in endpoints if is_old(ep)), key=name_of)
    automatic = sum(1 for ep in endpoints if is_automatic(ep))
    by_node = {}
    missing = []
    for ep in old:
        node = node_of(ep)
        if not node or node not in nodes:
            missing.append({"endpoint": name_of(ep), "node": node})
            continue
        by_node.setdefault(node, []).append(ep)
    conflicts = []
    out = {}
    for node in sorted(by_node):
        out[node] = _node_plan(node, by_node[node], nodes[node] or {}, label_conflicts, conflicts)
    return {"old": old, "automatic": automatic, "other": len(endpoints) - len(old) - automatic,
            "nodes": out, "conflicts": conflicts,
            "blocked": any(c["resolution"] == "blocking" for c in conflicts),
            "missing_nodes": missing}


def _node_plan(node, eps, current, label_conflicts, conflicts):
    """One node's part of the plan: the labels its old endpoints ``eps`` carry, compared with the node's own
    ``current`` labels; the conflicts found are added to ``conflicts``."""
    values = {}  # key -> {endpoint: value}
    for ep in eps:
        for key, value in sorted(endpoint_labels(ep).items()):
            values.setdefault(key, {})[name_of(ep)] = value
    copy_, set_, skipped = {}, {}, []
    for key in sorted(values):
        by_ep = values[key]
        distinct = set(by_ep.values())
        if len(distinct) > 1:
            resolution = "skip" if label_conflicts == "skip" else "blocking"
            conflicts.append({"node": node, "key": key, "node_value": current.get(key),
                              "endpoint_values": dict(by_ep), "kind": "endpoints",
                              "resolution": resolution})
            skipped.append(key)
            continue
        value = distinct.pop()
        if key in current and current[key] != value:
            resolution = "blocking" if label_conflicts == "fail" else label_conflicts
            conflicts.append({"node": node, "key": key, "node_value": current[key],
                              "endpoint_values": dict(by_ep), "kind": "node", "resolution": resolution})
            if label_conflicts != "overwrite":
                skipped.append(key)
                continue
        copy_[key] = value
        if current.get(key) != value:
            set_[key] = value
    return {"endpoints": [name_of(ep) for ep in eps], "copy": copy_, "set": set_, "skipped": skipped}


def node_labels_plan(current, wanted, label_conflicts="fail"):
    """For one node re-read after a concurrent change: (labels to set, blocking conflicts) for ``wanted``
    (key -> value planned to be copied) against the node's ``current`` labels."""
    to_set = {}
    blocking = []
    for key in sorted(wanted):
        value = wanted[key]
        if key not in current:
            to_set[key] = value
            continue
        if current[key] == value:
            continue
        if label_conflicts == "overwrite":
            to_set[key] = value
        elif label_conflicts == "fail":
            blocking.append({"key": key, "node_value": current[key], "endpoint_value": value})
        # skip: leave the node's value
    return to_set, blocking


def _pointer(key):
    return key.replace("~", "~0").replace("/", "~1")


def label_patch(current, to_set, resource_version=None):
    """A JSON patch adding ``to_set`` to a node's labels, guarded by a test of the labels it was planned
    against (``current``): a concurrent change of the labels fails the test (422), anything else (status
    heartbeats) does not. A node without labels is guarded by its resourceVersion instead."""
    if current is None:
        return [{"op": "test", "path": "/metadata/resourceVersion", "value": resource_version},
                {"op": "add", "path": "/metadata/labels", "value": dict(to_set)}]
    ops = [{"op": "test", "path": "/metadata/labels", "value": current}]
    for key in sorted(to_set):
        ops.append({"op": "add", "path": "/metadata/labels/" + _pointer(key), "value": to_set[key]})
    return ops


def automatic_by_node(endpoints):
    """node -> the automatic all-interfaces endpoints of that node."""
    out = {}
    for ep in endpoints:
        if is_automatic(ep) and interface_of(ep) == ALL_INTERFACES and node_of(ep):
            out.setdefault(node_of(ep), []).append(ep)
    return out


def automatic_ready(candidates, wanted):
    """(endpoint, None) when one of ``candidates`` (automatic endpoints of a node) carries every label of
    ``wanted``; else (None, reason)."""
    if not candidates:
        return None, "no automatic host endpoint"
    best_missing = None
    for ep in sorted(candidates, key=name_of):
        labels = endpoint_labels(ep)
        missing = sorted(k for k, v in wanted.items() if labels.get(k) != v)
        if not missing:
            return ep, None
        if best_missing is None or len(missing) < len(best_missing[1]):
            best_missing = (ep, missing)
    return None, "automatic host endpoint %s lacks the label(s) %s" % (
        name_of(best_missing[0]), ", ".join(best_missing[1]))


def auto_create_of(kcc):
    node = ((((kcc or {}).get("spec") or {}).get("controllers") or {}).get("node") or {})
    return (node.get("hostEndpoint") or {}).get("autoCreate")


def kube_controllers_change(kcc, api_version):
    """(action, payload, problem) for KubeControllersConfiguration ``default``.

    ``action``: ``create`` (payload: the object), ``patch`` (payload: a merge patch) or ``unchanged``.
    ``problem``: why the migration cannot go on (``createDefaultHostEndpoint: Disabled`` means no
    all-interfaces automatic endpoint would ever be created), else None.
    """
    if kcc is None:
        body = {"apiVersion": api_version, "kind": KCC_KIND, "metadata": {"name": KCC_NAME},
                "spec": copy.deepcopy(KCC_DEFAULT_SPEC)}
        return "create", body, None
    node = ((((kcc.get("spec") or {}).get("controllers") or {}).get("node")) or {})
    if (node.get("hostEndpoint") or {}).get("createDefaultHostEndpoint") == "Disabled":
        return None, None, ("KubeControllersConfiguration default sets "
                            "spec.controllers.node.hostEndpoint.createDefaultHostEndpoint: Disabled, so "
                            "calico-kube-controllers would create no all-interfaces automatic host endpoint "
                            "to replace the old ones")
    if auto_create_of(kcc) == ENABLED:
        return "unchanged", None, None
    return "patch", copy.deepcopy(AUTO_CREATE_PATCH), None


def _dict_at(obj, path):
    """The dict at ``path`` in ``obj``, made (as a merge patch would) where it is missing or not a dict."""
    for key in path:
        if not isinstance(obj.get(key), dict):
            obj[key] = {}
        obj = obj[key]
    return obj


def kcc_after(kcc, action, payload):
    """KubeControllersConfiguration default as it is (would be) after ``action``."""
    if action == "create":
        return copy.deepcopy(payload)
    out = copy.deepcopy(kcc)
    if action == "patch":
        _dict_at(out, ("spec", "controllers", "node", "hostEndpoint"))["autoCreate"] = ENABLED
    return out


def recordable(ep):
    """An endpoint as kept in the record: what it takes to create it again, plus its name and UID."""
    meta = _meta(ep)
    keep = {"name": meta.get("name"), "uid": meta.get("uid")}
    if meta.get("labels"):
        keep["labels"] = dict(meta["labels"])
    if meta.get("annotations"):
        keep["annotations"] = dict(meta["annotations"])
    return {"apiVersion": ep.get("apiVersion"), "kind": ep.get("kind") or HEP_KIND, "metadata": keep,
            "spec": copy.deepcopy(ep.get("spec") or {})}


def restore_body(recorded, api_version):
    """The recorded endpoint as a create request for ``api_version`` (server-set metadata dropped; the
    CRD backend's own metadata annotation dropped when the endpoint is created through another API)."""
    body = copy.deepcopy(recorded)
    meta = dict(body.get("metadata") or {})
    for key in SERVER_METADATA:
        meta.pop(key, None)
    if body.get("apiVersion") != api_version and meta.get("annotations"):
        annotations = dict(meta["annotations"])
        annotations.pop(CRD_METADATA_ANNOTATION, None)
        meta["annotations"] = annotations
        if not annotations:
            meta.pop("annotations")
    body["metadata"] = meta
    body["apiVersion"] = api_version
    body["kind"] = HEP_KIND
    return body
