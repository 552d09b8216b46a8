# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a running manifest install changed against the same release's own manifest (calico-node's env, image
registry, volumes, init containers, args, node selector, affinity, tolerations, annotations, resources;
calico-kube-controllers' env and node selector; the CNI configuration), each with what it becomes under the operator
(``maps_to``) or why the operator cannot carry it (``refused``, with the fix). The classes follow what the operator's
own converter of a manifest install accepts (``pkg/controller/migration/convert`` of the Tigera operator): what it
refuses is refused here before any write, so the operator never meets an install it would leave Degraded with a
MigrationError. Pure: the runner reads, this decides."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.objects import container, pod_spec
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.operator_migration.compare import (
    CNI_CONTAINER, IGNORED_ANNOTATION_PREFIXES, MIGRATION_LABEL, NODE_CONTAINER, OS_SELECTORS, annotations_of, cni_json,
    env_entry, env_names, env_text, image_parts, new_item, same, same_env, template_annotations_of)


# calico-node env the operator renders itself (or only checks): same value as the release, or a value it accepts
RENDERED = {
    "DATASTORE_TYPE": "the operator supports the Kubernetes datastore only (checked before this)",
    "WAIT_FOR_DATASTORE": "rendered by the operator",
    "NODENAME": "rendered by the operator (spec.nodeName)",
    "CLUSTER_TYPE": "rendered by the operator (k8s,operator[,bgp])",
    "CALICO_DISABLE_FILE_LOGGING": "rendered by the operator",
    "FELIX_HEALTHENABLED": "rendered by the operator",
    "FELIX_DEFAULTENDPOINTTOHOSTACTION": "rendered by the operator (ACCEPT)",
    "CALICO_NETWORKING_BACKEND": "spec.calicoNetwork.bgp",
    "IP": "spec.calicoNetwork.nodeAddressAutodetectionV4 (IP=autodetect or none)",
    "IP6": "spec.calicoNetwork.nodeAddressAutodetectionV6 (IP6=autodetect or none)",
    "IP_AUTODETECTION_METHOD": "spec.calicoNetwork.nodeAddressAutodetectionV4",
    "IP6_AUTODETECTION_METHOD": "spec.calicoNetwork.nodeAddressAutodetectionV6",
    "FELIX_IPV6SUPPORT": "rendered by the operator from the IPv6 pool",
    "FELIX_IPINIPMTU": "spec.calicoNetwork.mtu",
    "FELIX_VXLANMTU": "spec.calicoNetwork.mtu",
    "FELIX_VXLANMTUV6": "spec.calicoNetwork.mtu",
    "FELIX_WIREGUARDMTU": "spec.calicoNetwork.mtu",
    "FELIX_WIREGUARDMTUV6": "spec.calicoNetwork.mtu",
    "FELIX_BPFENABLED": "spec.calicoNetwork.linuxDataplane (BPF)",
    "FELIX_NFTABLESMODE": "spec.calicoNetwork.linuxDataplane (Nftables)",
    "KUBERNETES_SERVICE_HOST": "ConfigMap kubernetes-services-endpoint of the operator's namespace",
    "KUBERNETES_SERVICE_PORT": "ConfigMap kubernetes-services-endpoint of the operator's namespace",
    "FELIX_PROMETHEUSMETRICSENABLED": "spec.nodeMetricsPort",
    "FELIX_PROMETHEUSMETRICSPORT": "spec.nodeMetricsPort",
    "FELIX_IPTABLESBACKEND": "FelixConfiguration default (moved there by the operator)",
}

for _v in ("4", "6"):
    for _k, _f in (("CIDR", "cidr"), ("BLOCK_SIZE", "blockSize"), ("IPIP", "encapsulation"),
                   ("VXLAN", "encapsulation"), ("NAT_OUTGOING", "natOutgoing"), ("NODE_SELECTOR", "nodeSelector"),
                   ("DISABLE_BGP_EXPORT", "disableBGPExport")):
        RENDERED["CALICO_IPV%sPOOL_%s" % (_v, _k)] = (
            "spec.calicoNetwork.ipPools[].%s (the IPv%s pool as the datastore has it)" % (_f, _v))


# calico-node env the operator's converter accepts but drops (it neither renders nor moves them: seen with v1.40.7,
# FELIX_LOGSEVERITYSCREEN=Debug was not in FelixConfiguration default after the migration) -> FelixConfiguration field
DROPPED = {
    "FELIX_LOGSEVERITYSCREEN": "logSeverityScreen",
    "FELIX_LOGSEVERITYSYS": "logSeveritySys",
    "FELIX_USAGEREPORTINGENABLED": "usageReportingEnabled",
}


CNI_RENDERED = ("CNI_CONF_NAME", "CNI_NETWORK_CONFIG", "KUBERNETES_NODE_NAME", "CNI_MTU", "SLEEP",
                "CALICO_NETWORKING_BACKEND")


# calico-node env the operator's converter refuses unless it has this value (case-insensitive)
REQUIRED_VALUES = {
    "FELIX_DEFAULTENDPOINTTOHOSTACTION": "accept",
    "DATASTORE_TYPE": "kubernetes",
}


KUBE_CONTROLLERS_RENDERED = ("DATASTORE_TYPE", "ENABLED_CONTROLLERS", "AUTO_HOST_ENDPOINTS")


ENABLED_CONTROLLERS_OK = ("node", "node,loadbalancer", "loadbalancer,node")


def _describe_env(entry):
    if entry is None:
        return None
    if "value" in entry:
        return entry.get("value")
    return json.dumps(entry.get("valueFrom"), sort_keys=True)


def _rendered_or_refused(where, name, value, rel_entry, rendered, workload, accept_hint=True):
    """An env var the user changed: what the operator renders in its place (``rendered``: a description), or refused -
    no Installation field carries it."""
    if rendered:
        return new_item(where, name, value, _describe_env(rel_entry), maps_to=rendered)
    hint = " (or accept losing it: operator_migration_accept)" if accept_hint else ""
    return new_item(where, name, value, _describe_env(rel_entry),
                    refused="an Installation has no field for %s %s" % (where, name),
                    fix="remove %s from %s%s" % (name, workload, hint))


def _node_env(running, release, configmaps):
    out = []
    cont, rel = container(running, NODE_CONTAINER), container(release, NODE_CONTAINER)
    for name in env_names(cont):
        entry, rel_entry = env_entry(cont, name), env_entry(rel, name)
        value = env_text(cont, name, configmaps)
        where = "calico-node env"
        required = REQUIRED_VALUES.get(name)
        if required and (value or "").lower() != required:
            out.append(new_item(where, name, value, _describe_env(rel_entry), refused="the operator needs %s=%s"
                                % (name, required), fix="set %s to %s in the DaemonSet, or remove it" % (name, required)))
            continue
        if name == "NODENAME" and "value" in entry:
            out.append(new_item(where, name, value, refused="NODENAME must be unset or the field spec.nodeName",
                                fix="remove NODENAME or set it from the field spec.nodeName"))
            continue
        if name == "IP" and (value or "autodetect") not in ("autodetect", "none"):
            out.append(new_item(where, name, value, refused="the operator supports IP=autodetect or IP=none",
                                fix="remove IP or set it to autodetect"))
            continue
        if name == "IP6" and (value or "none") not in ("autodetect", "none"):
            out.append(new_item(where, name, value, refused="the operator supports IP6=autodetect or IP6=none",
                                fix="remove IP6 or set it to autodetect"))
            continue
        if rel_entry is not None and same_env(entry, rel_entry):
            continue  # as the release sets it: rendered by the operator the same way
        if name in DROPPED:
            out.append(new_item(where, name, value, _describe_env(rel_entry),
                                refused="the operator drops calico-node env %s (it does not move it to "
                                "FelixConfiguration)" % name,
                                fix="set spec.%s of FelixConfiguration default to %s and remove %s from the DaemonSet (or "
                                "accept losing it: operator_migration_accept)" % (DROPPED[name], value, name)))
        else:
            felix = name[len("FELIX_"):] if name.startswith("FELIX_") else None
            moved = felix and "FelixConfiguration default (the operator moves FELIX_%s there: %s)" % (
                felix, felix.lower())
            out.append(_rendered_or_refused(where, name, value, rel_entry, RENDERED.get(name) or moved,
                                            "the calico-node DaemonSet"))
    for name in env_names(rel):
        if env_entry(cont, name) is None and name not in RENDERED and name not in DROPPED \
                and not name.startswith("FELIX_"):
            out.append(new_item("calico-node env", name, None, _describe_env(env_entry(rel, name)),
                                maps_to="rendered by the operator (the manifest removed it; the operator sets its own)"))
    return out


def _cni_env(running, release, configmaps):
    out = []
    cont, rel = _init_container(running, CNI_CONTAINER), _init_container(release, CNI_CONTAINER)
    for name in env_names(cont):
        entry, rel_entry = env_entry(cont, name), env_entry(rel, name)
        if rel_entry is not None and same_env(entry, rel_entry):
            continue
        value = env_text(cont, name, configmaps)
        if name == "KUBERNETES_NODE_NAME" and "value" in entry:
            out.append(new_item("install-cni env", name, value, refused="KUBERNETES_NODE_NAME must be unset or the "
                                "field spec.nodeName", fix="remove it or set it from the field spec.nodeName"))
        else:
            out.append(_rendered_or_refused("install-cni env", name, value, rel_entry, name in CNI_RENDERED and (
                "spec.cni / spec.calicoNetwork (rendered by the operator)"), "the install-cni init container",
                accept_hint=False))
    return out


def _init_container(workload, name):
    return next((c for c in pod_spec(workload).get("initContainers") or [] if c.get("name") == name), None)


def _images(running, release):
    """The registry and image path the running images use, where they differ from the release's."""
    out = []
    for c in (pod_spec(running).get("initContainers") or []) + (pod_spec(running).get("containers") or []):
        rel = next((r for r in (pod_spec(release).get("initContainers") or [])
                    + (pod_spec(release).get("containers") or []) if r.get("name") == c.get("name")), None)
        if rel is None:
            continue
        reg, path, name, _tag = image_parts(c.get("image"))
        rreg, rpath, rname, _rtag = image_parts(rel.get("image"))
        if name != rname:
            out.append(new_item("calico-node image", c.get("name"), c.get("image"), rel.get("image"),
                                refused="the image name differs from the release's (%s)" % rname,
                                fix="use the release's image name, mirrored under a registry of your own"))
        elif (reg, path) != (rreg, rpath):
            out.append(new_item("calico-node image", c.get("name"), c.get("image"), rel.get("image"),
                                maps_to="spec.registry %s and spec.imagePath %s" % (reg or "(default)", path)))
    return out


def _pod_level(running, release, what):
    """Init containers, volumes, args, node selector, affinity, tolerations, annotations of a workload."""
    spec, rspec = pod_spec(running), pod_spec(release)
    return (_init_containers_and_volumes(spec, rspec, what) + _containers(spec, rspec, what)
            + _placement(spec, rspec, what) + _annotation_items(running, release, what))


def _init_containers_and_volumes(spec, rspec, what):
    out = []
    rel_inits = set(c.get("name") for c in rspec.get("initContainers") or [])
    for c in spec.get("initContainers") or []:
        if c.get("name") not in rel_inits and c.get("name") != "flexvol-driver":
            out.append(new_item(what + " init container", c.get("name"), c.get("image"), refused="an init container "
                                "the release does not have", fix="remove it from the %s workload" % what))
    rel_vols = dict((v.get("name"), v) for v in rspec.get("volumes") or [])
    for v in spec.get("volumes") or []:
        name = v.get("name")
        if name == "flexvol-driver-host":
            path = (v.get("hostPath") or {}).get("path")
            if path:
                out.append(new_item(what + " volume", name, path, maps_to="spec.flexVolumePath %s" % path))
            else:
                out.append(new_item(what + " volume", name, None, refused="volume flexvol-driver-host must be a "
                                    "hostPath", fix="make it a hostPath or remove it"))
        elif name not in rel_vols:
            out.append(new_item(what + " volume", name, json.dumps(v, sort_keys=True), refused="a volume the release "
                                "does not have", fix="remove it from the %s workload" % what))
        elif not same(v, rel_vols[name]):
            out.append(new_item(what + " volume", name, json.dumps(v, sort_keys=True),
                                json.dumps(rel_vols[name], sort_keys=True), refused="a volume changed from the release's",
                                fix="restore the release's volume %s" % name))
    return out


def _containers(spec, rspec, what):
    """Containers the release lacks, and args, command and resources changed from the release's."""
    out = []
    for c in spec.get("containers") or []:
        rc = next((r for r in rspec.get("containers") or [] if r.get("name") == c.get("name")), None)
        if rc is None:
            out.append(new_item(what + " container", c.get("name"), c.get("image"), refused="a container the release "
                                "does not have", fix="remove it from the %s workload" % what))
            continue
        for key in ("args", "command"):
            if (c.get(key) or None) != (rc.get(key) or None):
                out.append(new_item("%s %s" % (what, key), c.get("name"), json.dumps(c.get(key)),
                                    json.dumps(rc.get(key)), refused="%s changed from the release's" % key,
                                    fix="restore the release's %s" % key))
        if not same(c.get("resources") or {}, rc.get("resources") or {}):
            out.append(new_item(what + " resources", c.get("name"), json.dumps(c.get("resources"), sort_keys=True),
                                json.dumps(rc.get("resources"), sort_keys=True),
                                maps_to="spec.%s.spec.template.spec.containers[%s].resources" % (
                                    "calicoNodeDaemonSet" if what == "calico-node"
                                    else "calicoKubeControllersDeployment", c.get("name"))))
    return out


def _placement(spec, rspec, what):
    """Node selector, affinity and tolerations against the release's."""
    out = []
    sel = dict((k, v) for k, v in (spec.get("nodeSelector") or {}).items() if k not in OS_SELECTORS
               and k != MIGRATION_LABEL)
    if sel:
        if what == "calico-node":
            out.append(new_item(what + " nodeSelector", ",".join(sorted(sel)), json.dumps(sel, sort_keys=True),
                                refused="the operator runs calico-node on every node (no node selector)",
                                fix="remove the nodeSelector (or accept losing it: operator_migration_accept)"))
        else:
            out.append(new_item(what + " nodeSelector", ",".join(sorted(sel)), json.dumps(sel, sort_keys=True),
                                maps_to="spec.controlPlaneNodeSelector"))
    if not same(spec.get("affinity"), rspec.get("affinity")):
        out.append(new_item(what + " affinity", "affinity", json.dumps(spec.get("affinity"), sort_keys=True),
                            json.dumps(rspec.get("affinity"), sort_keys=True),
                            refused="node affinity is not supported for %s by the operator's migration" % what,
                            fix="remove the affinity"))
    if not same(spec.get("tolerations"), rspec.get("tolerations")):
        out.append(new_item(what + " tolerations", "tolerations", json.dumps(spec.get("tolerations"), sort_keys=True),
                            json.dumps(rspec.get("tolerations"), sort_keys=True),
                            refused="tolerations changed from the release's (the operator renders its own)",
                            fix="restore the release's tolerations (or accept losing them: operator_migration_accept)"))
    return out


def _annotation_items(running, release, what):
    """The workload's and its pod template's annotations the release does not set so."""
    out = []
    for source, annotations in (("", annotations_of(running)), (" pod template", template_annotations_of(running))):
        for key in sorted(annotations):
            if key.startswith(IGNORED_ANNOTATION_PREFIXES):
                continue
            rel = (annotations_of(release) if not source else template_annotations_of(release)).get(key)
            if rel == annotations[key]:
                continue
            out.append(new_item(what + source + " annotation", key, annotations[key], rel,
                                refused="an annotation the operator's migration does not accept",
                                fix="remove the annotation %s" % key))
    return out


def _kube_controllers(running, release, configmaps):
    out = []
    cont, rel = container(running, "calico-kube-controllers"), container(release, "calico-kube-controllers")
    for name in env_names(cont):
        entry, rel_entry = env_entry(cont, name), env_entry(rel, name)
        value = env_text(cont, name, configmaps)
        if name == "ENABLED_CONTROLLERS" and (value or "").replace(" ", "") not in ENABLED_CONTROLLERS_OK:
            out.append(new_item("calico-kube-controllers env", name, value, _describe_env(rel_entry),
                                refused="the operator runs ENABLED_CONTROLLERS node or node,loadbalancer",
                                fix="set ENABLED_CONTROLLERS to node,loadbalancer or remove it"))
            continue
        if rel_entry is not None and same_env(entry, rel_entry):
            continue
        out.append(_rendered_or_refused("calico-kube-controllers env", name, value, rel_entry,
                                        name in KUBE_CONTROLLERS_RENDERED and "rendered by the operator",
                                        "calico-kube-controllers"))
    return out


def _cni_config(configmap, release_configmap):
    """The CNI configuration of ConfigMap calico-config: plugins other than the release's are refused; host-local
    IPAM maps to spec.cni.ipam.type HostLocal."""
    out = []
    try:
        conf, rconf = cni_json(configmap), cni_json(release_configmap)
    except ValueError:
        return [new_item("calico-config cni_network_config", "cni_network_config", None,
                         refused="not valid JSON", fix="restore the release's cni_network_config")]
    types = [p.get("type") for p in conf.get("plugins") or []]
    rtypes = [p.get("type") for p in rconf.get("plugins") or []]
    for t in types:
        if t not in rtypes and t not in ("bandwidth", "tuning"):
            out.append(new_item("calico-config cni_network_config", "plugin " + str(t), t,
                                refused="a CNI plugin the operator does not render",
                                fix="remove the plugin %s from cni_network_config" % t))
    calico = next((p for p in conf.get("plugins") or [] if p.get("type") == "calico"), None)
    if calico is None:
        out.append(new_item("calico-config cni_network_config", "plugin calico", None,
                            refused="no calico CNI plugin (this playbook moves Calico CNI installs only)",
                            fix="use the operator's own install for a non-Calico CNI"))
    else:
        ipam = (calico.get("ipam") or {}).get("type")
        if ipam == "host-local":
            out.append(new_item("calico-config cni_network_config", "ipam", ipam, "calico-ipam",
                                maps_to="spec.cni.ipam.type HostLocal"))
        elif ipam not in (None, "calico-ipam"):
            out.append(new_item("calico-config cni_network_config", "ipam", ipam, "calico-ipam",
                                refused="IPAM %s is not one the operator renders" % ipam,
                                fix="use calico-ipam or host-local"))
    return out


def customisations(observed, release):
    """Everything the running install changed against the release's manifest, each mapped or refused.

    ``observed``: ``node_ds``, ``kube_controllers``, ``config_map`` (the running objects, None when absent);
    ``release``: the same three from the release's manifest."""
    cms = {"calico-config": observed.get("config_map")} if observed.get("config_map") else {}
    out = []
    out += _node_env(observed.get("node_ds"), release.get("node_ds"), cms)
    out += _cni_env(observed.get("node_ds"), release.get("node_ds"), cms)
    out += _images(observed.get("node_ds"), release.get("node_ds"))
    out += _pod_level(observed.get("node_ds"), release.get("node_ds"), "calico-node")
    if observed.get("kube_controllers") is not None:
        out += _kube_controllers(observed.get("kube_controllers"), release.get("kube_controllers"), cms)
        out += _pod_level(observed.get("kube_controllers"), release.get("kube_controllers"),
                          "calico-kube-controllers")
    out += _cni_config(observed.get("config_map"), release.get("config_map"))
    mtu = ((observed.get("config_map") or {}).get("data") or {}).get("veth_mtu")
    rmtu = ((release.get("config_map") or {}).get("data") or {}).get("veth_mtu")
    if mtu != rmtu:
        out.append(new_item("calico-config", "veth_mtu", mtu, rmtu, maps_to="spec.calicoNetwork.mtu"))
    backend = ((observed.get("config_map") or {}).get("data") or {}).get("calico_backend")
    rbackend = ((release.get("config_map") or {}).get("data") or {}).get("calico_backend")
    if backend != rbackend:
        if backend in ("bird", "vxlan", "none"):
            out.append(new_item("calico-config", "calico_backend", backend, rbackend, maps_to="spec.calicoNetwork.bgp"))
        else:
            out.append(new_item("calico-config", "calico_backend", backend, rbackend,
                                refused="calico_backend %s is not bird, vxlan or none" % backend,
                                fix="set calico_backend to bird or vxlan"))
    return out


def refused(items, accept=()):
    """The refused customisations not accepted by name (``accept``: names the user agrees to lose)."""
    return [i for i in items if i.get("refused") and i["name"] not in (accept or ())]


def item_line(item):
    if item.get("refused"):
        return "%s %s=%s: refused, %s; fix: %s" % (item["where"], item["name"], item.get("value"),
                                                   item["refused"], item.get("fix"))
    return "%s %s=%s (release: %s) -> %s" % (item["where"], item["name"], item.get("value"),
                                             item.get("release_value"), item.get("maps_to"))
