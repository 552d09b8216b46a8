# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Calico's objects as the facts see them: the API versions, the known install methods, datastores, manifest
flavors and variants, the default object names, and small pure readers of workloads (pod spec, container,
environment value, Helm release, image field managers).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import gzip
import io
import json


OPERATOR_API = "operator.tigera.io/v1"
CRD_API = "crd.projectcalico.org/v1"
V3_API = "projectcalico.org/v3"

METHODS = ("helm", "operator", "manifest", "none")
DATASTORES = ("kubernetes", "etcd")
FLAVORS = ("calico.yaml", "calico-typha.yaml", "canal.yaml", "calico-policy-only.yaml", "calico-etcd.yaml",
           "canal-etcd.yaml")
VARIANTS = ("Calico", "TigeraSecureEnterprise")
NODE_DAEMONSETS = ("calico-node", "canal", "canal-node")
NODE_CONTAINER = "calico-node"
FLANNEL_CONTAINERS = ("kube-flannel", "flannel")
ALLOW_ALL_UPGRADE = "allow-all-upgrade"

DEFAULT_NAMES = {
    "operator_namespace": "tigera-operator",
    "operator_deployment": "tigera-operator",
    "helm_chart": "tigera-operator",
    "manifest_namespace": "kube-system",
    "operator_node_namespace": "calico-system",
    "istio_namespace": "istio-system",
    "istiod_deployment": "istiod",
}

ETCD_SECRET = "calico-etcd-secrets"
ETCD_CONFIG_KEYS = ("etcd_endpoints", "etcd_ca", "etcd_cert", "etcd_key")


# -- small readers of objects -------------------------------------------------------------------------------

def meta_of(obj):
    return (obj or {}).get("metadata") or {}


def ref_of(kind, obj):
    meta = meta_of(obj)
    if meta.get("namespace"):
        return "%s %s/%s" % (kind, meta["namespace"], meta.get("name"))
    return "%s %s" % (kind, meta.get("name"))


def pod_spec(workload):
    return (((workload or {}).get("spec") or {}).get("template") or {}).get("spec") or {}


def container(workload, name):
    for item in pod_spec(workload).get("containers") or []:
        if item.get("name") == name:
            return item
    return None


def env_value(cont, name, configmaps=None):
    """``(value, how)`` of an env var of a container: a literal, or a ConfigMap key resolved through
    ``configmaps`` (``{name: ConfigMap}``). ``(None, None)`` when unset."""
    for item in (cont or {}).get("env") or []:
        if item.get("name") != name:
            continue
        if "value" in item:
            return item.get("value"), "%s=%s" % (name, item.get("value"))
        ref = (item.get("valueFrom") or {}).get("configMapKeyRef") or {}
        if ref:
            cm = (configmaps or {}).get(ref.get("name"))
            if cm is not None:
                value = (cm.get("data") or {}).get(ref.get("key"))
                return value, "%s=%s (ConfigMap %s key %s)" % (name, value, ref.get("name"), ref.get("key"))
            return None, "%s from ConfigMap %s key %s (not readable)" % (name, ref.get("name"), ref.get("key"))
        return None, "%s (from a source other than a literal or a ConfigMap)" % name
    return None, None


# annotations the API server or kubectl set, not the user: left out of a document to apply again
SERVER_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration", "deprecated.daemonset.template.generation",
                      "deployment.kubernetes.io/revision")


def applyable(obj, api_version=None, kind=None):
    """A live Kubernetes object as a document to apply again: every top-level field but ``status``, and of the
    metadata only name, namespace, labels and the user's annotations. The object is not changed."""
    meta = obj.get("metadata") or {}
    annotations = dict((k, v) for k, v in (meta.get("annotations") or {}).items() if k not in SERVER_ANNOTATIONS)
    out = {"apiVersion": api_version or obj.get("apiVersion"), "kind": kind or obj.get("kind"),
           "metadata": dict((k, meta[k]) for k in ("name", "namespace", "labels") if meta.get(k))}
    if annotations:
        out["metadata"]["annotations"] = annotations
    for field, value in obj.items():
        if field not in ("apiVersion", "kind", "metadata", "status"):
            out[field] = value
    return out


def decode_helm_release(secret):
    """A Helm 3 release Secret -> ``{name, namespace, revision, status, chart, chart_version, app_version,
    secret}``; None when it cannot be decoded. The release's values are not returned (they may hold secrets)."""
    data = ((secret or {}).get("data") or {}).get("release")
    if not data:
        return None
    try:
        raw = base64.b64decode(base64.b64decode(data))
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.GzipFile(fileobj=io.BytesIO(raw)).read()
        release = json.loads(raw.decode("utf-8"))
    except (ValueError, TypeError, IOError, OSError):
        return None
    meta = ((release.get("chart") or {}).get("metadata")) or {}
    return {
        "name": release.get("name") or meta_of(secret).get("labels", {}).get("name"),
        "namespace": release.get("namespace") or meta_of(secret).get("namespace"),
        "revision": release.get("version"),
        "status": (release.get("info") or {}).get("status"),
        "chart": meta.get("name"),
        "chart_version": meta.get("version"),
        "app_version": meta.get("appVersion"),
        "secret": meta_of(secret).get("name"),
    }


def _fields_owner(entry, path):
    """Whether a managedFields entry's fieldsV1 holds ``path`` (a list of keys; ``("k", name)`` matches an
    associative list item by its ``name``)."""
    node = entry.get("fieldsV1") or {}
    for step in path:
        if isinstance(step, tuple):
            found = None
            for key, value in node.items():
                if not key.startswith("k:"):
                    continue
                try:
                    keyobj = json.loads(key[2:])
                except ValueError:
                    continue
                if isinstance(keyobj, dict) and keyobj.get("name") == step[1]:
                    found = value
                    break
            if found is None:
                return False
            node = found
        else:
            if step not in node:
                return False
            node = node[step]
        if not isinstance(node, dict):
            return False
    return True


def image_field_managers(workload, container_name):
    """The field managers that own the image of ``container_name`` in a workload's pod template: whoever
    applied the manifest the workload came from."""
    path = ["f:spec", "f:template", "f:spec", "f:containers", ("k", container_name), "f:image"]
    out = []
    for entry in meta_of(workload).get("managedFields") or []:
        if entry.get("subresource"):
            continue
        if _fields_owner(entry, path) and entry.get("manager") not in out:
            out.append(entry.get("manager"))
    return out
