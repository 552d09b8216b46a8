# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: tell, from the cluster alone, how Calico is installed (read-only).

``read(client, names)`` makes a handful of requests (LISTs and GETs of the objects that matter) and returns
them as plain dicts; ``detect(observed, overrides)`` applies the detection rules to those objects (pure
Python, unit-tested) and returns each fact with the place it came from. A value the user gives overrides
the detected one (the detected one is still reported, under ``detected``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import gzip
import io
import json

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import tigerastatus
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.version import (
    fmt, image_tag, parse_detected)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError

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


# -- small readers of objects -------------------------------------------------------------------------------

def _meta(obj):
    return (obj or {}).get("metadata") or {}


def _ref(kind, obj):
    meta = _meta(obj)
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
        "name": release.get("name") or _meta(secret).get("labels", {}).get("name"),
        "namespace": release.get("namespace") or _meta(secret).get("namespace"),
        "revision": release.get("version"),
        "status": (release.get("info") or {}).get("status"),
        "chart": meta.get("name"),
        "chart_version": meta.get("version"),
        "app_version": meta.get("appVersion"),
        "secret": _meta(secret).get("name"),
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
    for entry in _meta(workload).get("managedFields") or []:
        if entry.get("subresource"):
            continue
        if _fields_owner(entry, path) and entry.get("manager") not in out:
            out.append(entry.get("manager"))
    return out


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
    obs["daemonsets"] = dict((_meta(d).get("name"), d) for d in client.list(
        "apps/v1", "daemonsets", namespace=n["manifest_namespace"]))
    obs["deployments"] = dict((_meta(d).get("name"), d) for d in client.list(
        "apps/v1", "deployments", namespace=n["manifest_namespace"]))
    obs["operator_node_daemonset"] = _get(client, "apps/v1", "daemonsets", "calico-node",
                                          n["operator_node_namespace"])
    obs["configmaps"] = {}
    node_ds = _manifest_node_daemonset(obs)
    if node_ds is not None:
        wanted = set()
        for cont in pod_spec(node_ds).get("containers") or []:
            for item in cont.get("env") or []:
                ref = (item.get("valueFrom") or {}).get("configMapKeyRef") or {}
                if ref.get("name"):
                    wanted.add(ref["name"])
        wanted.add("canal-config" if _meta(node_ds).get("name") != "calico-node" else "calico-config")
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


ETCD_SECRET = "calico-etcd-secrets"
ETCD_CONFIG_KEYS = ("etcd_endpoints", "etcd_ca", "etcd_cert", "etcd_key")


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


def detect_etcd(obs):
    """The live etcd datastore settings of a manifest install: the ConfigMap's ``etcd_endpoints`` and TLS paths,
    and the key names of Secret ``calico-etcd-secrets`` (never their values); None without an etcd ConfigMap."""
    for name, cm in sorted((obs.get("configmaps") or {}).items()):
        data = cm.get("data") or {}
        if "etcd_endpoints" in data:
            return ({"configmap": {"namespace": _meta(cm).get("namespace"), "name": name,
                                   "data": dict((k, data.get(k) or "") for k in ETCD_CONFIG_KEYS)},
                     "secret": obs.get("etcd_secret")},
                    "ConfigMap %s/%s and Secret %s/%s" % (_meta(cm).get("namespace"), name,
                                                          _meta(cm).get("namespace"), ETCD_SECRET))
    return None, "no ConfigMap with etcd_endpoints"


def _manifest_node_daemonset(obs):
    for name in NODE_DAEMONSETS:
        ds = (obs.get("daemonsets") or {}).get(name)
        if ds is not None:
            return ds
    return None


# -- rules --------------------------------------------------------------------------------------------------

def _helm_release(obs):
    chart = obs["names"]["helm_chart"]
    releases = [r for r in obs.get("helm_releases") or [] if r.get("chart") == chart
                and r.get("status") == "deployed"]
    if not releases:
        return None
    return sorted(releases, key=lambda r: int(r.get("revision") or 0))[-1]


def detect_method(obs):
    n = obs["names"]
    rel = _helm_release(obs)
    if rel:
        return "helm", ("Helm release %s/%s revision %s of chart %s %s (Secret %s)"
                        % (rel["namespace"], rel["name"], rel["revision"], rel["chart"], rel["chart_version"],
                           rel["secret"]))
    seen = []
    if obs.get("installation") is not None:
        seen.append("Installation default exists")
    if obs.get("operator_deployment") is not None:
        seen.append("Deployment %s/%s exists" % (n["operator_namespace"], n["operator_deployment"]))
    if seen:
        return "operator", "%s; no deployed Helm release of chart %s in %s" % (
            " and ".join(seen), n["helm_chart"], n["operator_namespace"])
    ds = _manifest_node_daemonset(obs)
    if ds is not None:
        return "manifest", "%s exists; no Tigera operator (no Installation default, no Deployment %s/%s)" % (
            _ref("DaemonSet", ds), n["operator_namespace"], n["operator_deployment"])
    return "none", ("no Helm release of chart %s, no Installation default or operator Deployment, no %s "
                    "DaemonSet in %s" % (n["helm_chart"], "/".join(NODE_DAEMONSETS), n["manifest_namespace"]))


def node_daemonset(obs, method):
    if method in ("helm", "operator"):
        return obs.get("operator_node_daemonset")
    if method == "manifest":
        return _manifest_node_daemonset(obs)
    return _manifest_node_daemonset(obs) or obs.get("operator_node_daemonset")


def detect_datastore(obs, method):
    if method in ("helm", "operator"):
        return "kubernetes", "the Tigera operator installs Calico with the Kubernetes API datastore only"
    ds = node_daemonset(obs, method)
    if ds is None:
        return None, "no calico-node DaemonSet to read the datastore from"
    cont = container(ds, NODE_CONTAINER)
    where = "container %s of %s" % (NODE_CONTAINER, _ref("DaemonSet", ds))
    value, how = env_value(cont, "DATASTORE_TYPE", obs.get("configmaps"))
    if value == "kubernetes":
        return "kubernetes", "env %s of %s" % (how, where)
    if value in ("etcdv3", "etcd"):
        return "etcd", "env %s of %s" % (how, where)
    for name, cm in sorted((obs.get("configmaps") or {}).items()):
        if (cm.get("data") or {}).get("etcd_endpoints"):
            return "etcd", "ConfigMap %s/%s has etcd_endpoints (DATASTORE_TYPE unset in %s)" % (
                _meta(cm).get("namespace"), name, where)
    value, how = env_value(cont, "ETCD_ENDPOINTS", obs.get("configmaps"))
    if how:
        return "etcd", "env %s of %s" % (how, where)
    return "etcd", "DATASTORE_TYPE is not set in %s: calico-node defaults to etcdv3" % where


def detect_flavor(obs, method, datastore):
    if method != "manifest":
        return None, "not a manifest install (method %s)" % method
    ds = node_daemonset(obs, method)
    if ds is None:
        return None, "no calico-node or canal DaemonSet"
    name = _meta(ds).get("name")
    names = [c.get("name") for c in pod_spec(ds).get("containers") or []]
    flannel = [c for c in names if c in FLANNEL_CONTAINERS]
    etcd = datastore == "etcd"
    if name in ("canal", "canal-node") or flannel:
        why = "%s%s" % (_ref("DaemonSet", ds), " with container %s" % flannel[0] if flannel else "")
        if etcd:
            return "canal-etcd.yaml", "%s, etcd datastore" % why
        return "canal.yaml", "%s, Kubernetes API datastore" % why
    if etcd:
        return "calico-etcd.yaml", "%s, etcd datastore" % _ref("DaemonSet", ds)
    cont = container(ds, NODE_CONTAINER)
    backend, how = env_value(cont, "CALICO_NETWORKING_BACKEND", obs.get("configmaps"))
    if backend == "none":
        return "calico-policy-only.yaml", "env %s of %s (policy only, no flannel)" % (how, _ref("DaemonSet", ds))
    typha = (obs.get("deployments") or {}).get("calico-typha")
    if typha is not None:
        return "calico-typha.yaml", "%s exists (networking backend %s)" % (_ref("Deployment", typha), backend)
    svc, how = env_value(cont, "FELIX_TYPHAK8SSERVICENAME", obs.get("configmaps"))
    if svc not in (None, "", "none"):
        return "calico-typha.yaml", "env %s of %s" % (how, _ref("DaemonSet", ds))
    return "calico.yaml", "%s, networking backend %s, no Typha" % (_ref("DaemonSet", ds), backend)


def detect_version(obs, method):
    inst = obs.get("installation")
    value = ((inst or {}).get("status") or {}).get("calicoVersion")
    if parse_detected(value):
        return fmt(parse_detected(value)), "Installation default status.calicoVersion %s" % value
    ci = obs.get("cluster_information")
    value = ((ci or {}).get("spec") or {}).get("calicoVersion")
    if parse_detected(value):
        return fmt(parse_detected(value)), "ClusterInformation default spec.calicoVersion %s (%s)" % (
            value, obs.get("cluster_information_api"))
    ds = node_daemonset(obs, method)
    cont = container(ds, NODE_CONTAINER)
    if cont is not None and parse_detected(image_tag(cont.get("image"))):
        return fmt(parse_detected(image_tag(cont.get("image")))), "image %s of container %s in %s" % (
            cont.get("image"), NODE_CONTAINER, _ref("DaemonSet", ds))
    rel = _helm_release(obs)
    if rel:
        for field in ("app_version", "chart_version"):
            if parse_detected(rel.get(field)):
                return fmt(parse_detected(rel[field])), "Helm release %s/%s chart %s %s %s" % (
                    rel["namespace"], rel["name"], rel["chart"], field.replace("_", " "), rel[field])
    return None, ("none found: no Installation status.calicoVersion, no ClusterInformation default, no "
                  "calico-node image tag%s" % (", no Helm chart version" if method == "helm" else ""))


def detect_variant(obs):
    inst = obs.get("installation")
    for where, value in (("Installation default spec.variant", ((inst or {}).get("spec") or {}).get("variant")),
                         ("Installation default status.variant",
                          ((inst or {}).get("status") or {}).get("variant")),
                         ("ClusterInformation default spec.variant",
                          ((obs.get("cluster_information") or {}).get("spec") or {}).get("variant"))):
        if value:
            return value, "%s %s" % (where, value)
    return "Calico", "default: no variant recorded (no Installation, no ClusterInformation variant): Calico"


def detect_alp(obs, method):
    app = obs.get("application_layer")
    if ((app or {}).get("spec") or {}).get("applicationLayerPolicy") == "Enabled":
        return True, "ApplicationLayer default spec.applicationLayerPolicy Enabled"
    felix = obs.get("felix_configuration")
    prefix = ((felix or {}).get("spec") or {}).get("policySyncPathPrefix")
    if prefix:
        return True, "FelixConfiguration default spec.policySyncPathPrefix %s" % prefix
    ds = node_daemonset(obs, method)
    value, how = env_value(container(ds, NODE_CONTAINER), "FELIX_POLICYSYNCPATHPREFIX", obs.get("configmaps"))
    if value:
        return True, "env %s of %s" % (how, _ref("DaemonSet", ds))
    return False, ("off: no ApplicationLayer default with applicationLayerPolicy Enabled, no "
                   "policySyncPathPrefix in FelixConfiguration default or calico-node's environment")


def detect_istio_version(obs):
    dep = obs.get("istiod")
    if dep is None:
        return None, "no Deployment %s/%s" % (obs["names"]["istio_namespace"], obs["names"]["istiod_deployment"])
    for cont in pod_spec(dep).get("containers") or []:
        tag = image_tag(cont.get("image"))
        parts = (tag or "").lstrip("v").split(".")
        if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
            return "%s.%s" % (parts[0], parts[1]), "image %s of container %s in %s" % (
                cont.get("image"), cont.get("name"), _ref("Deployment", dep))
    return None, "no versioned image in %s" % _ref("Deployment", dep)


def detect_installer(obs, method):
    if method == "manifest":
        ds = node_daemonset(obs, method)
        return image_field_managers(ds, NODE_CONTAINER), (
            "managedFields of %s: owners of container %s's image" % (_ref("DaemonSet", ds), NODE_CONTAINER))
    if method in ("operator", "helm"):
        dep = obs.get("operator_deployment")
        if dep is None:
            return [], "no operator Deployment"
        conts = pod_spec(dep).get("containers") or [{}]
        return image_field_managers(dep, conts[0].get("name")), (
            "managedFields of %s: owners of container %s's image" % (_ref("Deployment", dep), conts[0].get("name")))
    return [], "nothing installed"


OVERRIDABLE = ("method", "datastore", "flavor", "version", "variant", "alp", "istio_version")


def detect(obs, overrides=None):
    """``(facts, sources, detected)``: every fact, where each came from, and for overridden facts what the
    cluster said."""
    overrides = dict((k, v) for k, v in (overrides or {}).items() if v is not None and v != "")
    facts, sources, detected = {}, {}, {}

    def put(key, value, source):
        if key in overrides:
            detected[key] = {"value": value, "source": source}
            value, source = overrides[key], "given by the user (overrides the detected %r)" % (value,)
        facts[key] = value
        sources[key] = source
        return value

    method = put("method", *detect_method(obs))
    datastore = put("datastore", *detect_datastore(obs, method))
    put("flavor", *detect_flavor(obs, method, datastore))
    put("version", *detect_version(obs, method))
    put("variant", *detect_variant(obs))
    alp = put("alp", *detect_alp(obs, method))
    if alp or "istio_version" in overrides:
        put("istio_version", *detect_istio_version(obs))
    else:
        put("istio_version", None, "not looked up: application layer policy is off")
    ds = node_daemonset(obs, method)
    facts["node_daemonset"] = ({"namespace": _meta(ds).get("namespace"), "name": _meta(ds).get("name")}
                               if ds is not None else None)
    sources["node_daemonset"] = ("%s (method %s)" % (_ref("DaemonSet", ds), method) if ds is not None
                                 else "no calico-node/canal DaemonSet")
    rel = _helm_release(obs)
    keys = ("name", "namespace", "revision", "chart", "chart_version", "app_version")
    facts["helm_release"] = dict((k, rel[k]) for k in keys) if rel else None
    sources["helm_release"] = ("Secret %s/%s" % (rel["namespace"], rel["secret"]) if rel
                               else "no deployed Helm release of chart %s in %s" % (
                                   obs["names"]["helm_chart"], obs["names"]["operator_namespace"]))
    ci = obs.get("cluster_information")
    facts["cluster_version"] = ((ci or {}).get("spec") or {}).get("calicoVersion")
    sources["cluster_version"] = ("ClusterInformation default spec.calicoVersion (%s)" % obs.get(
        "cluster_information_api") if ci is not None else
        "no ClusterInformation default served through the Kubernetes API")
    inst = obs.get("installation")
    facts["installation_version"] = ((inst or {}).get("status") or {}).get("calicoVersion")
    sources["installation_version"] = ("Installation default status.calicoVersion" if inst is not None
                                       else "no Installation default")
    ts = obs.get("tigerastatus") or {}
    facts["tigerastatus"] = {"installed": ts.get("installed", False), "ready": ts.get("ready", False),
                             "lines": ts.get("lines", []), "components": ts.get("components", [])}
    sources["tigerastatus"] = ("LIST %s tigerastatuses" % tigerastatus.API_VERSION if ts.get("installed")
                               else "TigeraStatus is not served (no operator CRDs)")
    gnp = obs.get("allow_all_upgrade")
    facts["allow_all_upgrade"] = ({"present": True, "api_version": obs.get("allow_all_upgrade_api"),
                                   "name": _meta(gnp).get("name"),
                                   "selector": (gnp.get("spec") or {}).get("selector")}
                                  if gnp is not None else {"present": False})
    sources["allow_all_upgrade"] = ("GlobalNetworkPolicy %s (%s)" % (_meta(gnp).get("name"),
                                                                     obs.get("allow_all_upgrade_api"))
                                    if gnp is not None else "no GlobalNetworkPolicy %s through the Kubernetes API"
                                    % ALLOW_ALL_UPGRADE)
    facts["etcd"], sources["etcd"] = detect_etcd(obs)
    managers, how = detect_installer(obs, method)
    facts["installer_field_managers"] = managers
    sources["installer_field_managers"] = how
    return facts, sources, detected


def validate_overrides(overrides):
    """Messages for overrides outside the known values."""
    out = []
    choices = {"method": METHODS, "datastore": DATASTORES, "flavor": FLAVORS, "variant": VARIANTS}
    for key, allowed in sorted(choices.items()):
        value = (overrides or {}).get(key)
        if value not in (None, "") and value not in allowed:
            out.append("%s must be one of %s, not %r" % (key, ", ".join(allowed), value))
    version = (overrides or {}).get("version")
    if version not in (None, ""):
        from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.version import (
            VersionError, parse_version)
        try:
            parse_version(version, "version")
        except VersionError as exc:
            out.append(str(exc))
    return out


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
