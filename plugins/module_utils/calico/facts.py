# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: tell, from the cluster alone, how Calico is installed (read-only).

``read(client, names)`` makes a handful of requests (LISTs and GETs of the objects that matter) and returns
them as plain dicts; ``facts_rules.detect(observed, overrides)`` applies the detection rules to those objects
(pure Python, unit-tested) and returns each fact with the place it came from. A value the user gives overrides
the detected one (the detected one is still reported, under ``detected``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import tigerastatus
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.facts_rules import (
    OVERRIDABLE, detect, manifest_node_daemonset, validate_overrides)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.objects import (
    ALLOW_ALL_UPGRADE, CRD_API, DEFAULT_NAMES, ETCD_SECRET, OPERATOR_API, V3_API, decode_helm_release, meta_of,
    pod_spec)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError

# -- reads --------------------------------------------------------------------------------------------------


def _get(client, api_version, plural, name, namespace=None):
    try:
        return client.get(api_version, plural, name, namespace=namespace)
    except ClientError as exc:
        if exc.status in (403, 503):
            return None
        raise


def read(client, names=None):
    """The objects the rules look at (a handful of requests)."""
    n = dict(DEFAULT_NAMES)
    n.update(dict((k, v) for k, v in (names or {}).items() if v))
    obs = {"names": n}
    secrets = client.list("v1", "secrets", namespace=n["operator_namespace"],
                          label_selector="owner=helm,status=deployed")
    obs["helm_releases"] = [r for r in (decode_helm_release(s) for s in secrets) if r]
    obs["installation"] = _get(client, OPERATOR_API, "installations", "default")
    obs["operator_deployment"] = _get(client, "apps/v1", "deployments", n["operator_deployment"],
                                      n["operator_namespace"])
    obs["daemonsets"] = dict((meta_of(d).get("name"), d) for d in client.list(
        "apps/v1", "daemonsets", namespace=n["manifest_namespace"]))
    obs["deployments"] = dict((meta_of(d).get("name"), d) for d in client.list(
        "apps/v1", "deployments", namespace=n["manifest_namespace"]))
    obs["operator_node_daemonset"] = _get(client, "apps/v1", "daemonsets", "calico-node",
                                          n["operator_node_namespace"])
    obs["configmaps"] = {}
    node_ds = manifest_node_daemonset(obs)
    if node_ds is not None:
        wanted = set()
        for cont in pod_spec(node_ds).get("containers") or []:
            for item in cont.get("env") or []:
                ref = (item.get("valueFrom") or {}).get("configMapKeyRef") or {}
                if ref.get("name"):
                    wanted.add(ref["name"])
        wanted.add("canal-config" if meta_of(node_ds).get("name") != "calico-node" else "calico-config")
        for name in sorted(wanted):
            cm = _get(client, "v1", "configmaps", name, n["manifest_namespace"])
            if cm is not None:
                obs["configmaps"][name] = cm
    obs["etcd_secret"] = _etcd_secret_keys(client, obs["configmaps"], n["manifest_namespace"])
    obs["cluster_information"], obs["cluster_information_api"] = None, None
    for api in (CRD_API, V3_API):
        ci = _get(client, api, "clusterinformations", "default")
        if ci is not None:
            obs["cluster_information"], obs["cluster_information_api"] = ci, api
            break
    obs["felix_configuration"] = _get(client, CRD_API, "felixconfigurations", "default")
    obs["application_layer"] = _get(client, OPERATOR_API, "applicationlayers", "default")
    obs["istiod"] = _get(client, "apps/v1", "deployments", n["istiod_deployment"], n["istio_namespace"])
    obs["tigerastatus"] = tigerastatus.read(client)
    obs["allow_all_upgrade"], obs["allow_all_upgrade_api"] = None, None
    for api, name in ((CRD_API, ALLOW_ALL_UPGRADE), (CRD_API, "default." + ALLOW_ALL_UPGRADE),
                      (V3_API, ALLOW_ALL_UPGRADE)):
        gnp = _get(client, api, "globalnetworkpolicies", name)
        if gnp is not None:
            obs["allow_all_upgrade"], obs["allow_all_upgrade_api"] = gnp, api
            break
    return obs


def _etcd_secret_keys(client, configmaps, namespace):
    """With an etcd ConfigMap: whether Secret ``calico-etcd-secrets`` exists and the names of its non-empty keys.
    Only the names leave this function, never a value; ``keys`` is None when the Secret cannot be read."""
    if not any("etcd_endpoints" in ((cm.get("data") or {})) for cm in (configmaps or {}).values()):
        return None
    try:
        secret = client.get("v1", "secrets", ETCD_SECRET, namespace=namespace)
    except ClientError as exc:
        if exc.status in (403, 503):
            return {"namespace": namespace, "name": ETCD_SECRET, "exists": None, "keys": None,
                    "reason": "cannot be read (%s)" % exc.status}
        raise
    if secret is None:
        return {"namespace": namespace, "name": ETCD_SECRET, "exists": False, "keys": []}
    keys = sorted(k for k, v in (secret.get("data") or {}).items() if v)
    return {"namespace": namespace, "name": ETCD_SECRET, "exists": True, "keys": keys}


def run(client, params):
    """The module's work: read, detect, and report the request count."""
    overrides = dict((k, params.get(k)) for k in OVERRIDABLE)
    problems = validate_overrides(overrides)
    if problems:
        raise ValueError("; ".join(problems))
    names = dict((k, params.get(k)) for k in DEFAULT_NAMES)
    obs = read(client, names)
    facts, sources, detected = detect(obs, overrides)
    return {"changed": False, "facts": facts, "sources": sources, "detected": detected,
            "requests": dict(client.requests)}
