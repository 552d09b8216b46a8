# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: how kube-proxy is turned off (or back on) per platform, as pure functions.

- kubeadm/generic and EKS: a nodeSelector that matches no node (``{"non-calico": "true"}``) merged into
  DaemonSet ``kube-system/kube-proxy``; ``enabled`` removes only those keys. ``k8s/daemonset.progress`` says when
  the DaemonSet has settled (0 scheduled pods, or all of them ready again).
- OpenShift: ``networks.operator.openshift.io`` ``cluster`` ``spec.deployKubeProxy``.
- AKS with Azure CNI: kube-proxy stays; FelixConfiguration ``default``
  ``spec.bpfKubeProxyIptablesCleanupEnabled: false`` keeps Calico away from its iptables rules.
- kOps: ``spec.kubeProxy.enabled`` in the cluster spec, rolled out with the ``kops`` CLI (``kops_commands``).
- MKE: an install-time flag; nothing to patch.
- IPVS: ``switch_mode_text`` / ``switch_mode_args`` rewrite kube-proxy's mode to iptables.

The mode *reading* is the platform package's (``platform.kube_proxy_mode``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.daemonset import daemonset_status, live_pods
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.kube_proxy_mode import (
    kube_proxy_mode_from_args, kube_proxy_mode_from_config)

try:
    _STRING_TYPES = (str, unicode)  # noqa: F821  pylint: disable=undefined-variable
except NameError:
    _STRING_TYPES = (str,)

STATES = ("disabled", "enabled")
DEFAULT_NODE_SELECTOR = {"non-calico": "true"}
# on the ConfigMap whose mode this collection switched from IPVS: when (UTC); the DaemonSet is rolled after it
SWITCHED_ANNOTATION = "lifecycle.calico-ops.io/kube-proxy-mode-switched-at"
ROLLED_ANNOTATION = "kubectl.kubernetes.io/restartedAt"
FELIX_FIELD = "bpfKubeProxyIptablesCleanupEnabled"
FELIX_V3 = "projectcalico.org/v3"
FELIX_CRD = "crd.projectcalico.org/v1"
MKE_FLAGS = ("--kube-proxy-mode=disabled", "--kube-default-drop-masq-bits")
MKE_ENABLE_FLAG = "--kube-proxy-mode=iptables"
AKS_GAIN_LOST = ("AKS with Azure CNI: kube-proxy cannot be disabled (AKS puts it back), so kube-proxy keeps "
                 "handling Services and the eBPF data plane's performance gain is lost on this cluster. "
                 "FelixConfiguration default sets %s: false so Calico leaves kube-proxy's iptables rules alone "
                 "instead of fighting over them." % FELIX_FIELD)


def _pod_spec(ds):
    return (((ds or {}).get("spec") or {}).get("template") or {}).get("spec") or {}


# -- DaemonSet ------------------------------------------------------------------------------------------

def node_selector(ds):
    return dict(_pod_spec(ds).get("nodeSelector") or {})


def selector_applied(ds, selector):
    """True when every key/value of ``selector`` is in the DaemonSet's pod nodeSelector."""
    current = node_selector(ds)
    return bool(selector) and all(current.get(k) == v for k, v in selector.items())


def selector_patch(state, selector):
    """The merge patch of the DaemonSet: add the non-matching selector (disabled) or remove only its keys
    (enabled; ``null`` removes a key in a JSON merge patch, other keys stay)."""
    if state == "disabled":
        value = dict((k, "%s" % v) for k, v in selector.items())
    else:
        value = dict((k, None) for k in selector)
    return {"spec": {"template": {"spec": {"nodeSelector": value}}}}


# -- IPVS -------------------------------------------------------------------------------------------------

def mode_from_configmap(configmap):
    """``(key, mode)`` of the first data key holding a KubeProxyConfiguration ``mode``; (None, None)."""
    data = (configmap or {}).get("data") or {}
    for key in sorted(data):
        mode = kube_proxy_mode_from_config(data[key])
        if mode is not None:
            return key, mode
    return None, None


def roll_pending(configmap, ds):
    """The ConfigMap's mode was switched by this collection (``SWITCHED_ANNOTATION``) and the DaemonSet's pods were
    not rolled since (its template's ``ROLLED_ANNOTATION`` missing or older): a run cut between the switch and the
    roll, which a re-run must finish. Both are UTC times in the same format, so they compare as strings."""
    switched = (((configmap or {}).get("metadata") or {}).get("annotations") or {}).get(SWITCHED_ANNOTATION)
    if not switched:
        return False
    template = (((ds or {}).get("spec") or {}).get("template") or {}).get("metadata") or {}
    rolled = (template.get("annotations") or {}).get(ROLLED_ANNOTATION)
    return not rolled or rolled < switched


def mode_from_daemonset(ds):
    """``(container name, mode)`` from a container's ``--proxy-mode`` flag; (None, None)."""
    for container in _pod_spec(ds).get("containers") or []:
        mode = kube_proxy_mode_from_args((container.get("command") or []) + (container.get("args") or []))
        if mode is not None:
            return container.get("name"), mode
    return None, None


_MODE_YAML_LINE = re.compile(r"^(mode:[ \t]*)([\"']?)([A-Za-z]*)([\"']?)([ \t]*(?:#.*)?)$", re.M)
_MODE_JSON = re.compile(r"(\"mode\"\s*:\s*\")([A-Za-z]*)(\")")


def switch_mode_text(text, mode="iptables"):
    """The KubeProxyConfiguration text with its top-level ``mode`` set to ``mode`` (YAML or JSON), keeping
    everything else byte for byte; None when the text has no top-level mode."""
    if not isinstance(text, _STRING_TYPES):
        return None
    if _MODE_YAML_LINE.search(text):
        return _MODE_YAML_LINE.sub(lambda m: m.group(1) + m.group(2) + mode + m.group(4) + m.group(5), text,
                                   count=1)
    if _MODE_JSON.search(text):
        return _MODE_JSON.sub(lambda m: m.group(1) + mode + m.group(3), text, count=1)
    return None


def switch_mode_args(args, mode="iptables"):
    """A command line with ``--proxy-mode=<x>`` (or ``--proxy-mode <x>``) set to ``mode``."""
    out = list(args or [])
    for i, arg in enumerate(out):
        if not isinstance(arg, _STRING_TYPES):
            continue
        stripped = arg.strip()
        if stripped.startswith("--proxy-mode="):
            out[i] = "--proxy-mode=%s" % mode
        elif stripped == "--proxy-mode" and i + 1 < len(out):
            out[i + 1] = mode
    return out


def switch_containers(ds, mode="iptables"):
    """The DaemonSet's containers with every ``--proxy-mode`` flag set to ``mode`` (command and args)."""
    containers = copy.deepcopy(_pod_spec(ds).get("containers") or [])
    for container in containers:
        for key in ("command", "args"):
            if container.get(key):
                container[key] = switch_mode_args(container[key], mode)
    return containers


def kube_proxy_running(ds, pods, selector):
    """kube-proxy runs: a DaemonSet not disabled by ``selector`` with pods wanted, or live pods."""
    if live_pods(pods):
        return True
    if ds is None:
        return False
    return not selector_applied(ds, selector) and daemonset_status(ds)["desiredNumberScheduled"] > 0


# -- AKS (FelixConfiguration) -------------------------------------------------------------------------------

def felix_api_version(group_versions):
    """projectcalico.org/v3 when the Calico API server serves it, else crd.projectcalico.org/v1; None when
    neither (Calico not installed)."""
    served = set(group_versions or ())
    if FELIX_V3 in served:
        return FELIX_V3
    if FELIX_CRD in served:
        return FELIX_CRD
    return None


def felix_patch(state, field=FELIX_FIELD):
    """disabled: the field false; enabled: the field removed (back to Calico's default, true)."""
    return {"spec": {field: False if state == "disabled" else None}}


def felix_body(api_version, name="default", field=FELIX_FIELD):
    """FelixConfiguration ``default`` to create when it is missing (state disabled)."""
    return {"apiVersion": api_version, "kind": "FelixConfiguration", "metadata": {"name": name},
            "spec": {field: False}}


# -- OpenShift ----------------------------------------------------------------------------------------------

def openshift_patch(state, field="deployKubeProxy"):
    return {"spec": {field: state == "enabled"}}


# -- kOps -----------------------------------------------------------------------------------------------------

def kops_kube_proxy_enabled(cluster):
    """``spec.kubeProxy.enabled`` of a kOps Cluster document (kOps runs kube-proxy unless it is false)."""
    value = (((cluster or {}).get("spec") or {}).get("kubeProxy") or {}).get("enabled")
    return value is not False


def kops_set_kube_proxy(cluster, enabled):
    """A copy of the Cluster document with ``spec.kubeProxy.enabled`` set."""
    out = copy.deepcopy(cluster or {})
    out.setdefault("spec", {}).setdefault("kubeProxy", {})
    if out["spec"]["kubeProxy"] is None:
        out["spec"]["kubeProxy"] = {}
    out["spec"]["kubeProxy"]["enabled"] = bool(enabled)
    return out


def _quote(text):
    text = "%s" % text
    if re.match(r"^[A-Za-z0-9_./:=@%+,-]+$", text):
        return text
    return "'%s'" % text.replace("'", "'\"'\"'")


def kops_commands(cluster_name, state_store, enabled, binary="kops", spec_file="cluster.yaml"):
    """The exact, non-interactive commands that set ``kubeProxy.enabled`` and roll it out."""
    name = _quote(cluster_name or "<cluster name>")
    store = _quote(state_store or "<state store, e.g. s3://bucket>")
    kops = _quote(binary or "kops")
    spec = _quote(spec_file)
    return [
        "%s get cluster --name %s --state %s -o yaml > %s" % (kops, name, store, spec),
        "yq -i '.spec.kubeProxy.enabled = %s' %s" % ("true" if enabled else "false", spec),
        "%s replace -f %s --state %s" % (kops, spec, store),
        "%s update cluster --name %s --state %s --yes" % (kops, name, store),
        "%s rolling-update cluster --name %s --state %s --yes" % (kops, name, store),
    ]


# -- MKE ------------------------------------------------------------------------------------------------------

def mke_message(state, running):
    """``(failed, message)`` for MKE, where kube-proxy's mode is an install-time flag."""
    if state == "disabled":
        if running:
            return True, ("MKE: kube-proxy runs, and its mode is set when MKE is installed: reinstall (or "
                          "install) MKE with %s; it cannot be changed through the Kubernetes API"
                          % " ".join(MKE_FLAGS))
        return False, ("MKE: no kube-proxy pod or DaemonSet runs through Kubernetes. MKE turns kube-proxy off "
                       "at install time with %s; MKE runs kube-proxy as the ucp-kube-proxy container outside "
                       "Kubernetes, so confirm on a node that no ucp-kube-proxy container runs"
                       % " ".join(MKE_FLAGS))
    return False, ("MKE: kube-proxy's mode is set when MKE is installed (%s runs it again); nothing to change "
                   "through the Kubernetes API" % MKE_ENABLE_FLAG)


# -- how calico-node reaches the API server (Calico's documentation, "Configure Calico to talk directly to the API
# server"): without kube-proxy, the `kubernetes` Service's ClusterIP is served by nobody until Calico's own eBPF
# NAT runs, and Calico needs the API server to start it. Removing kube-proxy is safe only once calico-node dials
# the API server directly (KUBERNETES_SERVICE_HOST/PORT in its container, from the operator's rendering of the
# ConfigMap kubernetes-services-endpoint, or envFrom that ConfigMap in manifest installs).
ENDPOINT_KEYS = ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")


def _container(ds, name="calico-node"):
    containers = (((((ds or {}).get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")) or []
    return next((c for c in containers if c.get("name") == name), containers[0] if containers else None)


SERVICE_NAMES = ("kubernetes", "kubernetes.default", "kubernetes.default.svc")


def through_the_service(host, service_ips=()):
    """True when ``host`` is the ``kubernetes`` Service (one of its ClusterIPs, or its name): kube-proxy serves it."""
    low = (host or "").lower().rstrip(".")
    return low in [ip.lower() for ip in service_ips or ()] or low in SERVICE_NAMES or low.startswith(
        "kubernetes.default.svc.")


def calico_api_path(ds, configmaps, service_ips=()):
    """How the calico-node DaemonSet ``ds`` reaches the API server. ``configmaps``: (namespace, name) -> the
    ConfigMap or None, for the ones its ``envFrom`` names; ``service_ips``: the ``kubernetes`` Service's ClusterIPs
    (without the ConfigMap the operator renders its own KUBERNETES_SERVICE_HOST, which the kubelet set to that
    Service). Returns ``daemonset`` (namespace/name, or None when no calico-node DaemonSet exists), ``direct`` (host
    and port set, and not the Service), ``host``, ``port`` and ``source``."""
    if ds is None:
        return {"daemonset": None, "direct": False, "host": None, "port": None, "source": None}
    meta = ds.get("metadata") or {}
    namespace = meta.get("namespace")
    out = {"daemonset": "%s/%s" % (namespace, meta.get("name")), "direct": False, "host": None, "port": None,
           "source": None}
    container = _container(ds) or {}
    values, source = {}, None
    for ref in container.get("envFrom") or []:
        cm_ref = ref.get("configMapRef") or {}
        cm = configmaps.get((namespace, cm_ref.get("name"))) if cm_ref.get("name") else None
        data = (cm or {}).get("data") or {}
        if any(data.get(k) for k in ENDPOINT_KEYS):
            values.update((k, data.get(k)) for k in ENDPOINT_KEYS if data.get(k))
            source = "ConfigMap %s/%s (envFrom)" % (namespace, cm_ref["name"])
    env = dict((e.get("name"), e.get("value")) for e in container.get("env") or [] if "value" in e)
    if any(env.get(k) for k in ENDPOINT_KEYS):
        values.update((k, env.get(k)) for k in ENDPOINT_KEYS if env.get(k))
        source = "the container's env (rendered from ConfigMap kubernetes-services-endpoint)"
    out.update(host=values.get("KUBERNETES_SERVICE_HOST"), port=values.get("KUBERNETES_SERVICE_PORT"),
               source=source)
    out["direct"] = bool(out["host"] and out["port"]) and not through_the_service(out["host"], service_ips)
    if out["host"] and through_the_service(out["host"], service_ips):
        out["source"] = "%s - the `kubernetes` Service, which kube-proxy serves" % source
    return out


def envfrom_configmaps(ds):
    """(namespace, name) of the ConfigMaps the calico-node container takes its environment from."""
    container = _container(ds) or {}
    namespace = ((ds or {}).get("metadata") or {}).get("namespace")
    return [(namespace, (r.get("configMapRef") or {}).get("name")) for r in container.get("envFrom") or []
            if (r.get("configMapRef") or {}).get("name")]
