"""What calico/facts.py ``read`` returns for a cluster (``observed``), built from the workloads and ConfigMaps of the
real release manifests (``release_docs``) or by hand, and a Helm release Secret (``helm_secret``)."""

import base64
import copy
import functools
import gzip
import json

import yaml

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import objects

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.calico_releases import release_text


@functools.lru_cache(maxsize=None)
def release_docs(version, name):
    """The workloads and ConfigMaps of a release file (CRDs and RBAC left out: the rules do not look at them)."""
    text = release_text(version, name)
    return tuple(d for d in yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
                 if d and d.get("kind") in ("DaemonSet", "Deployment", "ConfigMap", "Secret"))


def observed(docs=(), **extra):
    """What ``read`` would return for a cluster holding ``docs`` (namespaced workloads in kube-system)."""
    obs = {"names": dict(objects.DEFAULT_NAMES), "helm_releases": [], "installation": None, "operator_deployment": None,
           "daemonsets": {}, "deployments": {}, "operator_node_daemonset": None, "configmaps": {},
           "cluster_information": None, "cluster_information_api": None, "felix_configuration": None,
           "application_layer": None, "istiod": None, "tigerastatus": {"installed": False},
           "allow_all_upgrade": None, "allow_all_upgrade_api": None}
    for doc in docs:
        meta = doc["metadata"]
        if meta.get("namespace") != "kube-system":
            continue
        key = {"DaemonSet": "daemonsets", "Deployment": "deployments", "ConfigMap": "configmaps"}.get(doc["kind"])
        if key:
            obs[key][meta["name"]] = copy.deepcopy(doc)
    obs.update(extra)
    return obs


def helm_secret(chart="tigera-operator", version="v3.27.5", revision=1, status="deployed"):
    release = {"name": "calico", "namespace": "tigera-operator", "version": revision,
               "info": {"status": status}, "config": {"podLabels": {"a": "b"}},
               "chart": {"metadata": {"name": chart, "version": version, "appVersion": version}}}
    inner = base64.b64encode(gzip.compress(json.dumps(release).encode()))
    return {"metadata": {"name": "sh.helm.release.v1.calico.v%d" % revision, "namespace": "tigera-operator",
                         "labels": {"owner": "helm", "name": "calico", "status": status}},
            "data": {"release": base64.b64encode(inner).decode()}}
