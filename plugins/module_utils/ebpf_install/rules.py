# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The two ways of Calico v3.31 to the eBPF data plane, and the mixes the Tigera operator refuses (pure rules).

* ``configmap``: Calico's documented "Install in eBPF mode" / "Enable eBPF on an existing cluster" steps:
  ConfigMap ``kubernetes-services-endpoint`` (the API server's stable host and port) before the operator starts,
  ``linuxDataplane: BPF``, and kube-proxy disabled by this collection the way each platform needs.
* ``operator``: v3.31's ``calicoNetwork.bpfNetworkBootstrap: Enabled`` with ``kubeProxyManagement: Enabled``
  (``custom-resources-bpf.yaml``): the operator takes the API server's addresses from the EndpointSlices of
  Service ``default/kubernetes`` and disables kube-proxy itself (a nodeSelector on DaemonSet
  ``kube-system/kube-proxy``) once FelixConfiguration has ``bpfEnabled: true``.

What operator v1.40 refuses (its ``BPFBootstrapRequirements`` and kube-proxy controller), checked here before
any write so that a play never leaves an operator reporting TigeraStatus Degraded.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.objects.merge_patch import apply_merge_patch

MODES = ("configmap", "operator")
CONFIGMAP = "kubernetes-services-endpoint"
DISABLE_KUBE_PROXY_KEY = "operator.tigera.io/disable-kube-proxy"
OPERATOR_FIELDS = {"bpfNetworkBootstrap": "Enabled", "kubeProxyManagement": "Enabled"}
# bpfNetworkBootstrap and kubeProxyManagement exist from Calico v3.31 (Calico Enterprise v3.22)
MINIMUM = {"Calico": (3, 31, 0), "TigeraSecureEnterprise": (3, 22, 0)}
# the operator's validateDaemonSetUnmanaged: a kube-proxy with one of these is left alone (Degraded)
MANAGED_LABELS = ("app.kubernetes.io/managed-by", "addonmanager.kubernetes.io/mode")
MANAGED_ANNOTATIONS = ("argocd.argoproj.io/tracking-id",)


def installation_overrides(mode):
    """What the mode sets in the Installation's ``spec.calicoNetwork`` (nothing for ``configmap``)."""
    return dict(OPERATOR_FIELDS) if mode == "operator" else {}


def _version(text):
    m = re.match(r"^v?(\d+)\.(\d+)\.(\d+)$", str(text or ""))
    return tuple(int(x) for x in m.groups()) if m else None


def _calico_network(installation):
    return ((installation or {}).get("spec") or {}).get("calicoNetwork") or {}


def _ready_addresses(slices):
    out = []
    for s in slices or []:
        for ep in s.get("endpoints") or []:
            if (ep.get("conditions") or {}).get("ready") is False:
                continue
            out.extend(ep.get("addresses") or [])
    return out


def problems(mode, installation, configmap=None, endpoint_slices=None, kube_proxy=None, version=None,
             variant="Calico", configmap_namespace="tigera-operator", disable_kube_proxy=True):
    """Messages, one per reason the install would end with the operator refusing it; empty when it may go on.

    ``installation``: the Installation document the play is about to apply (after every edit);
    ``configmap``: ConfigMap kubernetes-services-endpoint as found in the cluster (None: absent) - in
    ``configmap`` mode the play writes it, so only its absence matters in ``operator`` mode;
    ``endpoint_slices``: the EndpointSlices of Service default/kubernetes; ``kube_proxy``: DaemonSet
    kube-system/kube-proxy (None: absent); ``version``: the Calico (or Enterprise) release installed."""
    if mode not in MODES:
        return ["ebpf_install_bootstrap: must be one of %s (got %r)" % (", ".join(MODES), mode)]
    net = _calico_network(installation)
    if mode == "configmap":
        return _configmap_mode_problems(net, configmap_namespace, disable_kube_proxy)
    return (_operator_mode_problems(net, configmap, endpoint_slices, version, variant, configmap_namespace)
            + _kube_proxy_problems(kube_proxy))


def _configmap_mode_problems(net, configmap_namespace, disable_kube_proxy):
    """configmap mode: the Installation must leave bpfNetworkBootstrap (and, when this collection disables
    kube-proxy, kubeProxyManagement) to the ConfigMap path."""
    out = []
    if net.get("bpfNetworkBootstrap") == "Enabled":
        out.append(
            "ebpf_install_bootstrap is configmap, but the Installation sets calicoNetwork.bpfNetworkBootstrap: "
            "Enabled (from the custom resources file or ebpf_install_installation_spec): the operator refuses "
            "that while ConfigMap %s/%s defines the endpoint (TigeraStatus calico Degraded, "
            "ResourceValidationError). Use ebpf_install_bootstrap: operator, or drop bpfNetworkBootstrap."
            % (configmap_namespace, CONFIGMAP))
    if net.get("kubeProxyManagement") == "Enabled" and disable_kube_proxy:
        out.append(
            "ebpf_install_bootstrap is configmap with ebpf_install_disable_kube_proxy: true, but the "
            "Installation sets calicoNetwork.kubeProxyManagement: Enabled: kube-proxy would be managed twice "
            "(by this collection and by the operator). Use ebpf_install_bootstrap: operator, or drop "
            "kubeProxyManagement.")
    return out


def _operator_mode_problems(net, configmap, endpoint_slices, version, variant, configmap_namespace):
    """operator mode: a release that has the fields, the fields Enabled, no endpoint ConfigMap, and a ready address
    for Service default/kubernetes."""
    out = []
    minimum = MINIMUM.get(variant, MINIMUM["Calico"])
    have = _version(version)
    if have is not None and have < minimum:
        out.append("ebpf_install_bootstrap: operator needs %s v%d.%d.%d or later (bpfNetworkBootstrap and "
                   "kubeProxyManagement are new in it); the release installed is %s. Use "
                   "ebpf_install_bootstrap: configmap." % ((variant,) + minimum + (version,)))
    for field in ("bpfNetworkBootstrap", "kubeProxyManagement"):
        if net.get(field) not in (None, "Enabled"):
            out.append("ebpf_install_bootstrap is operator, but ebpf_install_installation_spec (or the custom "
                       "resources file) sets calicoNetwork.%s: %s; the operator path needs it Enabled."
                       % (field, net.get(field)))
    if configmap is not None:
        out.append(
            "ebpf_install_bootstrap is operator, but ConfigMap %s/%s exists: the operator refuses "
            "bpfNetworkBootstrap while that ConfigMap defines the endpoint (\"kubernetes service endpoint is "
            "defined by the kubernetes-service-endpoints ConfigMap\"). Delete the ConfigMap, or use "
            "ebpf_install_bootstrap: configmap." % (configmap_namespace, CONFIGMAP))
    if not _ready_addresses(endpoint_slices):
        out.append(
            "ebpf_install_bootstrap is operator, but Service default/kubernetes has no EndpointSlice with a ready "
            "address: the operator takes the API server's addresses from there (it would report \"failed to get "
            "kubernetes endpoint slices\"). Use ebpf_install_bootstrap: configmap.")
    return out


def _kube_proxy_problems(kube_proxy):
    """operator mode: a kube-proxy DaemonSet the operator will manage (there, and not marked as another tool's)."""
    if kube_proxy is None:
        return [
            "ebpf_install_bootstrap is operator, but DaemonSet kube-system/kube-proxy does not exist: with "
            "kubeProxyManagement: Enabled the operator reports TigeraStatus kubeproxy-monitor Degraded "
            "(\"failed to retrieve kube-proxy DaemonSet\"). Use ebpf_install_bootstrap: configmap."]
    out = []
    meta = kube_proxy.get("metadata") or {}
    for key in MANAGED_LABELS:
        if key in (meta.get("labels") or {}):
            out.append("ebpf_install_bootstrap is operator, but DaemonSet kube-system/kube-proxy has label "
                       "%s=%s: the operator leaves a kube-proxy managed by another tool alone and reports "
                       "kubeproxy-monitor Degraded. Use ebpf_install_bootstrap: configmap."
                       % (key, meta["labels"][key]))
    for key in MANAGED_ANNOTATIONS:
        if key in (meta.get("annotations") or {}):
            out.append("ebpf_install_bootstrap is operator, but DaemonSet kube-system/kube-proxy has annotation "
                       "%s: the operator leaves it alone (kubeproxy-monitor Degraded). Use "
                       "ebpf_install_bootstrap: configmap." % key)
    return out


def expected_status(mode):
    """TigeraStatus names the mode adds to the wait (the operator's kube-proxy controller reports its own)."""
    return ["kubeproxy-monitor"] if mode == "operator" else []


def _env_of(container):
    return dict((e.get("name"), e.get("value")) for e in (container or {}).get("env") or [] if "value" in e)


def _container(ds, name, init=False):
    spec = (((ds or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
    for c in spec.get("initContainers" if init else "containers") or []:
        if c.get("name") == name:
            return c
    return None


def report_objects(entries):
    """The objects of ``cluster_report`` from objects_info's entries: the Installation, the FelixConfiguration, and the
    DaemonSets in the order read (calico-node's, then kube-proxy's); each the first object found, or None."""
    def first(entry):
        return ((entry or {}).get("resources") or [None])[0]

    by_kind = {}
    for entry in entries or []:
        by_kind.setdefault(entry.get("kind"), []).append(entry)
    daemonsets = by_kind.get("DaemonSet", []) + [None, None]
    return {"installation": first((by_kind.get("Installation") or [None])[0]),
            "felix": first((by_kind.get("FelixConfiguration") or [None])[0]),
            "calico_node": first(daemonsets[0]), "kube_proxy": first(daemonsets[1])}


def cluster_report(installation=None, felix=None, calico_node=None, kube_proxy=None):
    """Lines saying, from the objects the cluster holds, what the eBPF install amounts to: the Installation,
    FelixConfiguration's bpfEnabled, how the operator rendered calico-node (the API server endpoint it gave it),
    and where kube-proxy runs."""
    lines = []
    if installation:
        net = _calico_network(installation)
        status = installation.get("status") or {}
        lines.append("Installation default: linuxDataplane %s, bpfNetworkBootstrap %s, kubeProxyManagement %s; "
                     "operator reports variant %s, Calico %s" % (
                         net.get("linuxDataplane", "(unset)"), net.get("bpfNetworkBootstrap", "(unset)"),
                         net.get("kubeProxyManagement", "(unset)"), status.get("variant") or "(none yet)",
                         status.get("calicoVersion") or "(none yet)"))
    else:
        lines.append("Installation default: not found")
    spec = (felix or {}).get("spec") or {}
    lines.append("FelixConfiguration default: bpfEnabled %s" % (
        str(spec["bpfEnabled"]).lower() if "bpfEnabled" in spec else "(not set)") if felix
        else "FelixConfiguration default: not created (yet)")
    if calico_node:
        meta = calico_node.get("metadata") or {}
        node = _env_of(_container(calico_node, "calico-node"))
        boot = _env_of(_container(calico_node, "ebpf-bootstrap", init=True))
        st = calico_node.get("status") or {}
        parts = ["DaemonSet %s/%s (rendered by the operator): %s/%s pods ready" % (
            meta.get("namespace"), meta.get("name"), st.get("numberReady", 0), st.get("desiredNumberScheduled", 0))]
        if node.get("KUBERNETES_SERVICE_HOST"):
            parts.append("API server for calico-node %s:%s" % (node.get("KUBERNETES_SERVICE_HOST"),
                                                               node.get("KUBERNETES_SERVICE_PORT")))
        if boot.get("KUBERNETES_APISERVER_ENDPOINTS"):
            parts.append("init container ebpf-bootstrap with KUBERNETES_APISERVER_ENDPOINTS=%s" % (
                boot["KUBERNETES_APISERVER_ENDPOINTS"],))
        lines.append(", ".join(parts))
    else:
        lines.append("calico-node: not rendered (yet)")
    if kube_proxy:
        tmpl = ((kube_proxy.get("spec") or {}).get("template") or {}).get("spec") or {}
        st = kube_proxy.get("status") or {}
        selector = ", ".join("%s=%s" % kv for kv in sorted((tmpl.get("nodeSelector") or {}).items()))
        lines.append("kube-proxy DaemonSet: %s pods scheduled, %s ready (nodeSelector %s)" % (
            st.get("desiredNumberScheduled", 0), st.get("numberReady", 0), selector or "none"))
    else:
        lines.append("kube-proxy DaemonSet: none in kube-system")
    return lines


def enable_pending(installation, patch_spec, kube_proxy_running=False):
    """Whether enable_ebpf has anything left to change: Installation ``default``'s spec is not yet what the job's
    merge patch makes it, or kube-proxy still runs where the job is to disable it (``kube_proxy_running``). A
    re-run at the end state deploys no probe workload (it would measure a change that is not made)."""
    spec = (installation or {}).get("spec") or {}
    return apply_merge_patch(spec, patch_spec or {}) != spec or bool(kube_proxy_running)
