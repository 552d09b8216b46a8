# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The detection rules of ``calico_facts``, as pure functions over the objects ``facts.read`` returns: install
method, datastore, manifest flavor, version, variant, application layer policy, Istio, installer; ``detect``
applies them and the user's overrides.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import tigerastatus
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.objects import (
    ALLOW_ALL_UPGRADE, DATASTORES, ETCD_CONFIG_KEYS, ETCD_SECRET, FLANNEL_CONTAINERS, FLAVORS, METHODS,
    NODE_CONTAINER, NODE_DAEMONSETS, VARIANTS, container, env_value, image_field_managers, meta_of, pod_spec, ref_of)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.version import fmt, image_tag, parse_detected


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
    ds = manifest_node_daemonset(obs)
    if ds is not None:
        return "manifest", "%s exists; no Tigera operator (no Installation default, no Deployment %s/%s)" % (
            ref_of("DaemonSet", ds), n["operator_namespace"], n["operator_deployment"])
    return "none", ("no Helm release of chart %s, no Installation default or operator Deployment, no %s "
                    "DaemonSet in %s" % (n["helm_chart"], "/".join(NODE_DAEMONSETS), n["manifest_namespace"]))


def node_daemonset(obs, method):
    if method in ("helm", "operator"):
        return obs.get("operator_node_daemonset")
    if method == "manifest":
        return manifest_node_daemonset(obs)
    return manifest_node_daemonset(obs) or obs.get("operator_node_daemonset")


def detect_datastore(obs, method):
    if method in ("helm", "operator"):
        return "kubernetes", "the Tigera operator installs Calico with the Kubernetes API datastore only"
    ds = node_daemonset(obs, method)
    if ds is None:
        return None, "no calico-node DaemonSet to read the datastore from"
    cont = container(ds, NODE_CONTAINER)
    where = "container %s of %s" % (NODE_CONTAINER, ref_of("DaemonSet", ds))
    value, how = env_value(cont, "DATASTORE_TYPE", obs.get("configmaps"))
    if value == "kubernetes":
        return "kubernetes", "env %s of %s" % (how, where)
    if value in ("etcdv3", "etcd"):
        return "etcd", "env %s of %s" % (how, where)
    for name, cm in sorted((obs.get("configmaps") or {}).items()):
        if (cm.get("data") or {}).get("etcd_endpoints"):
            return "etcd", "ConfigMap %s/%s has etcd_endpoints (DATASTORE_TYPE unset in %s)" % (
                meta_of(cm).get("namespace"), name, where)
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
    name = meta_of(ds).get("name")
    names = [c.get("name") for c in pod_spec(ds).get("containers") or []]
    flannel = [c for c in names if c in FLANNEL_CONTAINERS]
    etcd = datastore == "etcd"
    if name in ("canal", "canal-node") or flannel:
        why = "%s%s" % (ref_of("DaemonSet", ds), " with container %s" % flannel[0] if flannel else "")
        if etcd:
            return "canal-etcd.yaml", "%s, etcd datastore" % why
        return "canal.yaml", "%s, Kubernetes API datastore" % why
    if etcd:
        return "calico-etcd.yaml", "%s, etcd datastore" % ref_of("DaemonSet", ds)
    cont = container(ds, NODE_CONTAINER)
    backend, how = env_value(cont, "CALICO_NETWORKING_BACKEND", obs.get("configmaps"))
    if backend == "none":
        return "calico-policy-only.yaml", "env %s of %s (policy only, no flannel)" % (how, ref_of("DaemonSet", ds))
    typha = (obs.get("deployments") or {}).get("calico-typha")
    if typha is not None:
        return "calico-typha.yaml", "%s exists (networking backend %s)" % (ref_of("Deployment", typha), backend)
    svc, how = env_value(cont, "FELIX_TYPHAK8SSERVICENAME", obs.get("configmaps"))
    if svc not in (None, "", "none"):
        return "calico-typha.yaml", "env %s of %s" % (how, ref_of("DaemonSet", ds))
    return "calico.yaml", "%s, networking backend %s, no Typha" % (ref_of("DaemonSet", ds), backend)


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
            cont.get("image"), NODE_CONTAINER, ref_of("DaemonSet", ds))
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
        return True, "env %s of %s" % (how, ref_of("DaemonSet", ds))
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
                cont.get("image"), cont.get("name"), ref_of("Deployment", dep))
    return None, "no versioned image in %s" % ref_of("Deployment", dep)


def detect_installer(obs, method):
    if method == "manifest":
        ds = node_daemonset(obs, method)
        return image_field_managers(ds, NODE_CONTAINER), (
            "managedFields of %s: owners of container %s's image" % (ref_of("DaemonSet", ds), NODE_CONTAINER))
    if method in ("operator", "helm"):
        dep = obs.get("operator_deployment")
        if dep is None:
            return [], "no operator Deployment"
        conts = pod_spec(dep).get("containers") or [{}]
        return image_field_managers(dep, conts[0].get("name")), (
            "managedFields of %s: owners of container %s's image" % (ref_of("Deployment", dep), conts[0].get("name")))
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
    for key, observe in (("node_daemonset", lambda o: detect_node_daemonset(o, method)),
                         ("helm_release", detect_helm_release), ("cluster_version", detect_cluster_version),
                         ("installation_version", detect_installation_version), ("tigerastatus", detect_tigerastatus),
                         ("allow_all_upgrade", detect_allow_all_upgrade), ("etcd", detect_etcd),
                         ("installer_field_managers", lambda o: detect_installer(o, method))):
        facts[key], sources[key] = observe(obs)
    return facts, sources, detected


# -- the facts a user cannot override: ``(value, source)`` each ------------------------------------------------

def detect_node_daemonset(obs, method):
    ds = node_daemonset(obs, method)
    if ds is None:
        return None, "no calico-node/canal DaemonSet"
    return ({"namespace": meta_of(ds).get("namespace"), "name": meta_of(ds).get("name")},
            "%s (method %s)" % (ref_of("DaemonSet", ds), method))


def detect_helm_release(obs):
    rel = _helm_release(obs)
    if not rel:
        return None, "no deployed Helm release of chart %s in %s" % (obs["names"]["helm_chart"],
                                                                     obs["names"]["operator_namespace"])
    keys = ("name", "namespace", "revision", "chart", "chart_version", "app_version")
    return dict((k, rel[k]) for k in keys), "Secret %s/%s" % (rel["namespace"], rel["secret"])


def detect_cluster_version(obs):
    ci = obs.get("cluster_information")
    if ci is None:
        return None, "no ClusterInformation default served through the Kubernetes API"
    return ((ci.get("spec") or {}).get("calicoVersion"),
            "ClusterInformation default spec.calicoVersion (%s)" % obs.get("cluster_information_api"))


def detect_installation_version(obs):
    inst = obs.get("installation")
    if inst is None:
        return None, "no Installation default"
    return (inst.get("status") or {}).get("calicoVersion"), "Installation default status.calicoVersion"


def detect_tigerastatus(obs):
    ts = obs.get("tigerastatus") or {}
    return ({"installed": ts.get("installed", False), "ready": ts.get("ready", False),
             "lines": ts.get("lines", []), "components": ts.get("components", [])},
            "LIST %s tigerastatuses" % tigerastatus.API_VERSION if ts.get("installed")
            else "TigeraStatus is not served (no operator CRDs)")


def detect_allow_all_upgrade(obs):
    gnp = obs.get("allow_all_upgrade")
    if gnp is None:
        return {"present": False}, "no GlobalNetworkPolicy %s through the Kubernetes API" % ALLOW_ALL_UPGRADE
    return ({"present": True, "api_version": obs.get("allow_all_upgrade_api"), "name": meta_of(gnp).get("name"),
             "selector": (gnp.get("spec") or {}).get("selector")},
            "GlobalNetworkPolicy %s (%s)" % (meta_of(gnp).get("name"), obs.get("allow_all_upgrade_api")))


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


def detect_etcd(obs):
    """The live etcd datastore settings of a manifest install: the ConfigMap's ``etcd_endpoints`` and TLS paths,
    and the key names of Secret ``calico-etcd-secrets`` (never their values); None without an etcd ConfigMap."""
    for name, cm in sorted((obs.get("configmaps") or {}).items()):
        data = cm.get("data") or {}
        if "etcd_endpoints" in data:
            return ({"configmap": {"namespace": meta_of(cm).get("namespace"), "name": name,
                                   "data": dict((k, data.get(k) or "") for k in ETCD_CONFIG_KEYS)},
                     "secret": obs.get("etcd_secret")},
                    "ConfigMap %s/%s and Secret %s/%s" % (meta_of(cm).get("namespace"), name,
                                                          meta_of(cm).get("namespace"), ETCD_SECRET))
    return None, "no ConfigMap with etcd_endpoints"


def manifest_node_daemonset(obs):
    for name in NODE_DAEMONSETS:
        ds = (obs.get("daemonsets") or {}).get(name)
        if ds is not None:
            return ds
    return None


# -- the version a rollout ends on ------------------------------------------------------------------------------

def reports_version(facts, version, cluster_information=False):
    """The cluster reports Calico ``version``: the detected version is it, and so is ClusterInformation's - or there
    is no ClusterInformation and ``cluster_information`` (a manifest install with the Kubernetes API datastore, where
    calico-node writes it) does not require one."""
    cluster = facts.get("cluster_version")
    return facts.get("version") == version and (cluster == version or (cluster is None and not cluster_information))


def version_not_reported(facts, sources, version, cluster_information, timeout):
    """One line: the cluster did not report Calico ``version`` within ``timeout`` seconds, quoting what it reports
    and where each value was read."""
    return ("The cluster does not report Calico %s after %ss: version %s (%s); ClusterInformation default "
            "spec.calicoVersion %s (%s%s)" % (
                version, timeout, facts.get("version") or "unknown", sources.get("version") or "",
                facts.get("cluster_version") or "unknown", sources.get("cluster_version") or "",
                ", required for a manifest install with the Kubernetes API datastore" if cluster_information else ""))
