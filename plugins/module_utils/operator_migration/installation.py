# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Installation ``spec`` a running manifest install amounts to (IP pools as the datastore has them, MTU,
encapsulation, BGP, node address autodetection, registry and image path, the control plane node selector, FlexVolume
path, CNI and IPAM, the Linux data plane): what the operator's converter derives, so the spec the playbook applies
changes nothing the install runs with; and how a live Installation differs from it. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.objects import container, pod_spec
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.operator_migration.compare import (
    NODE_CONTAINER, OS_SELECTORS, cni_json, env_text, image_parts)


def _encapsulation(pool_spec):
    ipip = pool_spec.get("ipipMode") or "Never"
    vxlan = pool_spec.get("vxlanMode") or "Never"
    table = {("Never", "Never"): "None", ("Never", "Always"): "VXLAN", ("Never", "CrossSubnet"): "VXLANCrossSubnet",
             ("Always", "Never"): "IPIP", ("CrossSubnet", "Never"): "IPIPCrossSubnet"}
    return table.get((ipip, vxlan))


def _is_v6(cidr):
    return ":" in (cidr or "")


def select_pool(pools, v6=False):
    """The pool the operator's converter takes for one IP family: an enabled ``default-ipv*`` pool first, else the
    first enabled pool of that family (in the datastore's order)."""
    family = [p for p in pools or [] if not (p.get("spec") or {}).get("disabled")
              and _is_v6((p.get("spec") or {}).get("cidr")) == v6]
    named = [p for p in family if ((p.get("metadata") or {}).get("name") or "").startswith("default-ipv")]
    return (named or family or [None])[0]


def convert_pool(pool):
    spec = pool.get("spec") or {}
    enc = _encapsulation(spec)
    if enc is None:
        raise ValueError("IPPool %s mixes IPIP (%s) and VXLAN (%s), which an Installation cannot express" % (
            pool["metadata"]["name"], spec.get("ipipMode"), spec.get("vxlanMode")))
    out = {"name": pool["metadata"]["name"], "cidr": spec.get("cidr"), "encapsulation": enc,
           "natOutgoing": "Enabled" if spec.get("natOutgoing") else "Disabled",
           "nodeSelector": spec.get("nodeSelector") or "all()",
           "disableBGPExport": bool(spec.get("disableBGPExport"))}
    if spec.get("blockSize"):
        out["blockSize"] = spec["blockSize"]
    return out


def _autodetection(method):
    method = method or ""
    if method in ("", "first-found"):
        return {"firstFound": True}
    for prefix, key in (("interface=", "interface"), ("can-reach=", "canReach"), ("skip-interface=", "skipInterface")):
        if method.startswith(prefix):
            return {key: method[len(prefix):]}
    if method.startswith("cidr="):
        return {"cidrs": method[len("cidr="):].split(",")}
    if method == "kubernetes-internal-ip":
        return {"kubernetes": "NodeInternalIP"}
    raise ValueError("IP autodetection method %s is not one an Installation can express" % method)


def derive_installation(observed, release):
    """The Installation ``spec`` of the running install (what the operator's converter derives)."""
    ds = observed.get("node_ds")
    cms = {"calico-config": observed.get("config_map")} if observed.get("config_map") else {}
    node = container(ds, NODE_CONTAINER)
    net = {}
    chosen = (select_pool(observed.get("ippools")), select_pool(observed.get("ippools"), v6=True))
    pools = [convert_pool(p) for p in chosen if p]
    if pools:
        net["ipPools"] = pools
    data = (observed.get("config_map") or {}).get("data") or {}
    mtu = data.get("veth_mtu")
    if mtu and str(mtu).isdigit() and int(mtu) > 0:
        net["mtu"] = int(mtu)
    backend = env_text(node, "CALICO_NETWORKING_BACKEND", cms) or data.get("calico_backend") or "bird"
    net["bgp"] = "Enabled" if backend == "bird" else "Disabled"
    ip = env_text(node, "IP", cms) or "autodetect"
    if ip == "autodetect":
        net["nodeAddressAutodetectionV4"] = _autodetection(env_text(node, "IP_AUTODETECTION_METHOD", cms))
    ip6 = env_text(node, "IP6", cms) or "none"
    if ip6 == "autodetect":
        net["nodeAddressAutodetectionV6"] = _autodetection(env_text(node, "IP6_AUTODETECTION_METHOD", cms))
    if (env_text(node, "FELIX_BPFENABLED", cms) or "").lower() == "true":
        net["linuxDataplane"] = "BPF"
    elif (env_text(node, "FELIX_NFTABLESMODE", cms) or "").lower() == "enabled":
        net["linuxDataplane"] = "Nftables"
    else:
        net["linuxDataplane"] = "Iptables"
    spec = {"calicoNetwork": net, "cni": {"type": "Calico", "ipam": {"type": "Calico"}}}
    try:
        conf = cni_json(observed.get("config_map"))
    except ValueError:
        conf = {}
    calico = next((p for p in conf.get("plugins") or [] if p.get("type") == "calico"), {})
    if (calico.get("ipam") or {}).get("type") == "host-local":
        spec["cni"]["ipam"]["type"] = "HostLocal"
    reg, path, _name, _tag = image_parts((node or {}).get("image"))
    rreg, rpath, _rname, _rtag = image_parts((container(release.get("node_ds"), NODE_CONTAINER) or {}).get("image"))
    if (reg, path) != (rreg, rpath):
        if reg:
            spec["registry"] = reg
        spec["imagePath"] = path
    flex = next((v for v in pod_spec(ds).get("volumes") or [] if v.get("name") == "flexvol-driver-host"), None)
    spec["flexVolumePath"] = ((flex or {}).get("hostPath") or {}).get("path") or "None"
    kc = observed.get("kube_controllers")
    if kc is not None:
        sel = dict((k, v) for k, v in (pod_spec(kc).get("nodeSelector") or {}).items() if k not in OS_SELECTORS)
        if sel:
            spec["controlPlaneNodeSelector"] = sel
    port = env_text(node, "FELIX_PROMETHEUSMETRICSPORT", cms)
    if (env_text(node, "FELIX_PROMETHEUSMETRICSENABLED", cms) or "").lower() == "true":
        spec["nodeMetricsPort"] = int(port) if (port or "").isdigit() else 9091
    return spec


def services_endpoint(observed):
    """``{"host", "port"}`` calico-node reaches the API server at (its KUBERNETES_SERVICE_HOST/PORT, set for the
    eBPF data plane), which the operator reads from ConfigMap kubernetes-services-endpoint; None when unset."""
    node = container(observed.get("node_ds"), NODE_CONTAINER)
    cms = {"calico-config": observed.get("config_map")} if observed.get("config_map") else {}
    host, port = env_text(node, "KUBERNETES_SERVICE_HOST", cms), env_text(node, "KUBERNETES_SERVICE_PORT", cms)
    return {"host": host, "port": port or "443"} if host else None


def installation_differences(want, computed, path="spec"):
    """Where the operator's computed Installation differs from what was derived (only the derived fields count;
    the operator adds its defaults)."""
    out = []
    if isinstance(want, dict):
        for key in sorted(want):
            out += installation_differences(want[key], (computed or {}).get(key) if isinstance(computed, dict)
                                            else None, "%s.%s" % (path, key))
    elif isinstance(want, list):
        if not isinstance(computed, list) or len(computed) < len(want):
            out.append("%s: derived %s, the operator has %s" % (path, json.dumps(want), json.dumps(computed)))
        else:
            for i, w in enumerate(want):
                out += installation_differences(w, computed[i], "%s[%d]" % (path, i))
    elif want != computed:
        out.append("%s: derived %s, the operator has %s" % (path, json.dumps(want), json.dumps(computed)))
    return out
